//! The OS keyring through `keyring-core`: Secret Service over D-Bus on Linux (GNOME
//! Keyring, KWallet), the Keychain on macOS, the Credential Manager on Windows. Each
//! credential is one item (service `agent`, user = the credential's id) holding its JSON.
//! `open` checks that a keyring answers before the agent relies on it; when none does
//! (no session bus, no Secret Service daemon, a headless machine) the store falls back to
//! `auth.json` and says so.

use super::error::AuthError;
use keyring_core::{CredentialStore, Entry, Error};
use std::sync::Arc;

const SERVICE: &str = "agent";
/// An id nothing is stored under: reading it tells whether the keyring answers.
const PROBE: &str = "agent-keyring-probe";

pub struct Keyring {
    store: Arc<CredentialStore>,
    pub name: &'static str,
}

/// The platform's keyring, if one answers; `Err` says why not.
pub fn open() -> Result<Keyring, String> {
    let (store, name) = platform_store()?;
    let keyring = Keyring { store, name };
    match keyring
        .entry(PROBE)
        .and_then(|entry| match entry.get_secret() {
            Ok(_) | Err(Error::NoEntry) => Ok(()),
            Err(e) => Err(e),
        }) {
        Ok(()) => Ok(keyring),
        Err(e) => Err(format!("the {name} does not answer: {e}")),
    }
}

#[cfg(target_os = "linux")]
fn platform_store() -> Result<(Arc<CredentialStore>, &'static str), String> {
    // Connecting fails at once without a session bus; with one but no Secret Service
    // daemon, the probe read fails.
    if std::env::var_os("DBUS_SESSION_BUS_ADDRESS").is_none() {
        return Err("no D-Bus session bus (DBUS_SESSION_BUS_ADDRESS is not set)".to_string());
    }
    let store = dbus_secret_service_keyring_store::Store::new()
        .map_err(|e| format!("the Secret Service is not reachable: {e}"))?;
    Ok((store, "Secret Service keyring"))
}

#[cfg(target_os = "macos")]
fn platform_store() -> Result<(Arc<CredentialStore>, &'static str), String> {
    let store = apple_native_keyring_store::keychain::Store::new()
        .map_err(|e| format!("the Keychain is not reachable: {e}"))?;
    Ok((store, "macOS Keychain"))
}

#[cfg(target_os = "windows")]
fn platform_store() -> Result<(Arc<CredentialStore>, &'static str), String> {
    let store = windows_native_keyring_store::Store::new()
        .map_err(|e| format!("the Credential Manager is not reachable: {e}"))?;
    Ok((store, "Windows Credential Manager"))
}

#[cfg(not(any(target_os = "linux", target_os = "macos", target_os = "windows")))]
fn platform_store() -> Result<(Arc<CredentialStore>, &'static str), String> {
    Err("no OS keyring is supported on this platform".to_string())
}

impl Keyring {
    fn entry(&self, id: &str) -> Result<Entry, Error> {
        Entry::new_in_store(&self.store, SERVICE, id)
    }

    fn fail(&self, doing: &str, id: &str, e: Error) -> AuthError {
        AuthError::store(format!("cannot {doing} `{id}` in the {}: {e}", self.name))
    }

    pub fn get(&self, id: &str) -> Result<Option<String>, AuthError> {
        let entry = self.entry(id).map_err(|e| self.fail("read", id, e))?;
        match entry.get_password() {
            Ok(text) => Ok(Some(text)),
            Err(Error::NoEntry) => Ok(None),
            Err(e) => Err(self.fail("read", id, e)),
        }
    }

    pub fn set(&self, id: &str, text: &str) -> Result<(), AuthError> {
        let entry = self.entry(id).map_err(|e| self.fail("store", id, e))?;
        entry
            .set_password(text)
            .map_err(|e| self.fail("store", id, e))
    }

    pub fn delete(&self, id: &str) -> Result<bool, AuthError> {
        let entry = self.entry(id).map_err(|e| self.fail("remove", id, e))?;
        match entry.delete_credential() {
            Ok(()) => Ok(true),
            Err(Error::NoEntry) => Ok(false),
            Err(e) => Err(self.fail("remove", id, e)),
        }
    }
}
