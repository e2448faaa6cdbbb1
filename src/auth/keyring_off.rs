//! The OS keyring in a build without the `keyring` feature: there is none, so the store
//! keeps credentials in `$AGENT_HOME/auth.json` (0600) and `agent auth status` says why —
//! which feature brings the keyring back. (`AGENT_CREDENTIAL_STORE=keyring` then fails
//! rather than fall back, as it does on a machine without one.)

use super::error::AuthError;

/// Never made: `open` always says why not.
pub struct Keyring {
    pub name: &'static str,
    never: std::convert::Infallible,
}

pub fn open() -> Result<Keyring, String> {
    Err(crate::features::KEYRING.missing())
}

impl Keyring {
    pub fn get(&self, _id: &str) -> Result<Option<String>, AuthError> {
        match self.never {}
    }

    pub fn set(&self, _id: &str, _text: &str) -> Result<(), AuthError> {
        match self.never {}
    }

    pub fn delete(&self, _id: &str) -> Result<bool, AuthError> {
        match self.never {}
    }
}
