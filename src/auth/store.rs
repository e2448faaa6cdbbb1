//! Where credentials live: the OS keyring when one answers, else `$AGENT_HOME/auth.json`
//! (`AGENT_CREDENTIAL_STORE=file` chooses the file, `=keyring` insists on the keyring).
//! Reads look in both (a credential saved while the keyring was away is still found);
//! a save goes to the keyring and falls back to the file when the keyring refuses.
//!
//! Every change, and every renewal of a token, happens under one lock
//! (`$AGENT_HOME/auth.lock`, an advisory whole-file lock): two agents — or two sub-agents
//! of one — that find the same token about to expire take turns, and the second finds the
//! token the first renewed (`refresh`).
//!
//! Every secret read or written here is registered with `crate::secrets`, so it is masked
//! in the log, sessions, events and tool output like any configured key.

use super::credential::Credential;
use super::error::AuthError;
use super::file_store;
use super::keyring_store::{self, Keyring};
use std::path::{Path, PathBuf};

pub struct Store {
    home: PathBuf,
    keyring: Option<Keyring>,
    /// Why the keyring is not used, for `agent auth status` and `agent login`.
    no_keyring: Option<String>,
}

/// Where a credential is (or was put).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Location {
    Keyring(&'static str),
    File(PathBuf),
}

impl std::fmt::Display for Location {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Location::Keyring(name) => write!(f, "the {name}"),
            Location::File(path) => write!(f, "{} (mode 0600)", path.display()),
        }
    }
}

/// Held while credentials change: the store's lock. Released when dropped.
pub struct StoreLock {
    _file: std::fs::File,
}

/// The id of a provider's credential (its default account).
pub fn provider_id(provider: &str) -> String {
    format!("provider/{provider}")
}

/// The id of the credential of `provider`'s `account` (`agent login --account`, a
/// profile's `account`): `provider/NAME` for the default account — where every credential
/// stored before accounts existed already is — and `provider/NAME@ACCOUNT` for a named one,
/// so two accounts of one provider sit side by side.
pub fn account_id(provider: &str, account: Option<&str>) -> String {
    match account.filter(|a| !a.is_empty()) {
        Some(account) => format!("provider/{provider}@{account}"),
        None => provider_id(provider),
    }
}

/// The provider and the account (`None`: the default one) of a provider credential's id;
/// `None` for any other id.
pub fn parse_provider_id(id: &str) -> Option<(&str, Option<&str>)> {
    let rest = id.strip_prefix("provider/")?;
    Some(match rest.split_once('@') {
        Some((provider, account)) => (provider, Some(account)),
        None => (rest, None),
    })
}

/// Why `account` cannot name an account: empty, or with characters that would make its
/// credential's id ambiguous.
pub fn check_account(account: &str) -> Result<(), String> {
    let fine = !account.is_empty()
        && account
            .chars()
            .all(|c| c.is_alphanumeric() || matches!(c, '-' | '_' | '.' | '+'));
    if fine {
        Ok(())
    } else {
        Err(format!(
            "`{account}` is not an account name: use letters, digits, `-`, `_`, `.` and `+`"
        ))
    }
}

/// The id of an MCP server's credential.
pub fn mcp_id(server: &str) -> String {
    format!("mcp/{server}")
}

impl Store {
    /// The store under `home`, choosing the keyring or the file as described above.
    pub fn open(home: &Path) -> Store {
        let choice = std::env::var("AGENT_CREDENTIAL_STORE").unwrap_or_default();
        let (keyring, no_keyring) = if choice == "file" {
            (None, Some("AGENT_CREDENTIAL_STORE=file".to_string()))
        } else {
            match keyring_store::open() {
                Ok(keyring) => (Some(keyring), None),
                Err(why) => (None, Some(why)),
            }
        };
        Store {
            home: home.to_path_buf(),
            keyring,
            no_keyring,
        }
    }

    /// Whether `AGENT_CREDENTIAL_STORE=keyring` asked for a keyring that is not there.
    pub fn keyring_required_but_missing(&self) -> Option<String> {
        let required = std::env::var("AGENT_CREDENTIAL_STORE").is_ok_and(|v| v == "keyring");
        match (required, &self.no_keyring) {
            (true, Some(why)) => Some(format!(
                "AGENT_CREDENTIAL_STORE=keyring, but no OS keyring is available: {why}"
            )),
            _ => None,
        }
    }

    /// Where new credentials go, and why not the keyring when it is the file.
    pub fn describe(&self) -> String {
        match (&self.keyring, &self.no_keyring) {
            (Some(keyring), _) => format!("the {}", keyring.name),
            (None, why) => format!(
                "{} (mode 0600; no OS keyring: {})",
                file_store::path(&self.home).display(),
                why.as_deref().unwrap_or("unknown")
            ),
        }
    }

    pub fn home(&self) -> &Path {
        &self.home
    }

    /// Take the store's lock, waiting for another agent that holds it. Blocking: async
    /// callers run it on a blocking thread (`lock_async`).
    pub fn lock(&self) -> Result<StoreLock, AuthError> {
        let fail = |e: std::io::Error| {
            AuthError::store(format!(
                "cannot lock the credentials in {}: {e}",
                self.home.display()
            ))
        };
        file_store::create_private_dir(&self.home).map_err(fail)?;
        let mut options = std::fs::OpenOptions::new();
        options.create(true).truncate(false).write(true);
        #[cfg(unix)]
        std::os::unix::fs::OpenOptionsExt::mode(&mut options, 0o600);
        let file = options.open(self.home.join("auth.lock")).map_err(fail)?;
        file.lock().map_err(fail)?;
        Ok(StoreLock { _file: file })
    }

    pub async fn lock_async(home: PathBuf) -> Result<StoreLock, AuthError> {
        crate::tasks::spawn_blocking(move || Store::file_only(&home).lock())
            .await
            .map_err(|e| AuthError::store(format!("cannot lock the credentials: {e}")))?
    }

    /// The store in `auth.json` alone, never the keyring (locking; tests).
    pub fn file_only(home: &Path) -> Store {
        Store {
            home: home.to_path_buf(),
            keyring: None,
            no_keyring: Some("the file store was asked for".to_string()),
        }
    }

    /// The credential stored under `id` and where it is.
    pub fn load(&self, id: &str) -> Result<Option<(Credential, Location)>, AuthError> {
        if let Some(keyring) = &self.keyring
            && let Some(text) = keyring.get(id)?
        {
            let credential: Credential = serde_json::from_str(&text).map_err(|e| {
                AuthError::store(format!(
                    "the credential `{id}` in the {} cannot be read ({e}): sign in again",
                    keyring.name
                ))
            })?;
            register(&credential);
            return Ok(Some((credential, Location::Keyring(keyring.name))));
        }
        let file = file_store::read(&self.home)?;
        Ok(file.credentials.get(id).map(|credential| {
            register(credential);
            (
                credential.clone(),
                Location::File(file_store::path(&self.home)),
            )
        }))
    }

    /// Store `credential` under `id`, replacing what was there. Call with the lock held.
    pub fn save(
        &self,
        _lock: &StoreLock,
        id: &str,
        credential: &Credential,
    ) -> Result<Location, AuthError> {
        register(credential);
        let mut file = file_store::read(&self.home)?;
        if let Some(keyring) = &self.keyring {
            let text = serde_json::to_string(credential)
                .map_err(|e| AuthError::store(format!("cannot encode the credential: {e}")))?;
            match keyring.set(id, &text) {
                Ok(()) => {
                    let had_file_copy = file.credentials.remove(id).is_some();
                    if file.in_keyring.insert(id.to_string()) || had_file_copy {
                        file_store::write(&self.home, &file)?;
                    }
                    return Ok(Location::Keyring(keyring.name));
                }
                Err(e) => {
                    tracing::warn!(target: "auth", error = %e, "keyring refused a credential; using auth.json")
                }
            }
        }
        file.credentials.insert(id.to_string(), credential.clone());
        file_store::write(&self.home, &file)?;
        Ok(Location::File(file_store::path(&self.home)))
    }

    /// Remove `id` wherever it is; whether anything was there. Call with the lock held.
    pub fn remove(&self, _lock: &StoreLock, id: &str) -> Result<bool, AuthError> {
        let mut removed = false;
        if let Some(keyring) = &self.keyring {
            removed |= keyring.delete(id)?;
        }
        let mut file = file_store::read(&self.home)?;
        let in_file = file.credentials.remove(id).is_some();
        let indexed = file.in_keyring.remove(id);
        if in_file || indexed {
            file_store::write(&self.home, &file)?;
        }
        Ok(removed || in_file)
    }

    /// Every id stored (in the file, or listed there as kept in the keyring), sorted.
    pub fn ids(&self) -> Result<Vec<String>, AuthError> {
        let file = file_store::read(&self.home)?;
        let mut ids: Vec<String> = file.credentials.keys().cloned().collect();
        ids.extend(file.in_keyring.iter().cloned());
        ids.sort();
        ids.dedup();
        Ok(ids)
    }
}

fn register(credential: &Credential) {
    for secret in credential.secrets() {
        crate::secrets::register(secret);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn file_store_round_trip_under_the_lock() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::file_only(dir.path());
        let lock = store.lock().unwrap();
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            let lock_file = std::fs::metadata(dir.path().join("auth.lock")).unwrap();
            assert_eq!(lock_file.permissions().mode() & 0o777, 0o600);
        }
        let key = Credential::ApiKey {
            key: "sk-round-trip-1234".into(),
        };
        let at = store.save(&lock, &provider_id("openai"), &key).unwrap();
        assert!(matches!(at, Location::File(_)));
        let (loaded, _) = store.load(&provider_id("openai")).unwrap().unwrap();
        assert_eq!(loaded, key);
        assert_eq!(store.ids().unwrap(), ["provider/openai"]);
        assert!(store.remove(&lock, &provider_id("openai")).unwrap());
        assert!(store.load(&provider_id("openai")).unwrap().is_none());
        assert!(crate::secrets::redact("x sk-round-trip-1234").contains(crate::secrets::REDACTED));
    }

    #[test]
    fn a_named_account_sits_beside_the_default_one() {
        assert_eq!(account_id("openai", None), "provider/openai");
        assert_eq!(account_id("openai", Some("")), "provider/openai");
        assert_eq!(account_id("openai", Some("work")), "provider/openai@work");
        assert_eq!(
            parse_provider_id("provider/openai@work"),
            Some(("openai", Some("work")))
        );
        assert_eq!(parse_provider_id("provider/openai"), Some(("openai", None)));
        assert_eq!(parse_provider_id("mcp/files"), None);
        assert!(check_account("work-2").is_ok());
        assert!(check_account("a@b").is_err());
        assert!(check_account("").is_err());
        assert!(check_account("a/b").is_err());
    }
}
