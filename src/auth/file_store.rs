//! `$AGENT_HOME/auth.json`: credentials when no OS keyring is reachable, and the list of
//! which ids live in the keyring (not secret). The file is mode 0600 in a directory
//! created 0700, replaced atomically (a temporary file beside it, renamed over it), and
//! only ever changed under the store's lock, so two agents never lose each other's
//! writes. A file that does not parse is reported and never overwritten.

use super::credential::Credential;
use super::error::AuthError;
use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, BTreeSet};
use std::io::Write;
use std::path::{Path, PathBuf};

#[derive(Default, Serialize, Deserialize)]
pub struct AuthFile {
    #[serde(default)]
    pub credentials: BTreeMap<String, Credential>,
    /// Ids whose credential is in the OS keyring (the keyring cannot be listed portably).
    #[serde(default, skip_serializing_if = "BTreeSet::is_empty")]
    pub in_keyring: BTreeSet<String>,
}

pub fn path(home: &Path) -> PathBuf {
    home.join("auth.json")
}

pub fn read(home: &Path) -> Result<AuthFile, AuthError> {
    let path = path(home);
    let text = match std::fs::read_to_string(&path) {
        Ok(text) => text,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(AuthFile::default()),
        Err(e) => {
            return Err(AuthError::store(format!(
                "cannot read {}: {e}",
                path.display()
            )));
        }
    };
    serde_json::from_str(&text).map_err(|e| {
        AuthError::store(format!(
            "{} is not a credentials file the agent can read ({e}); it was left as it is",
            path.display()
        ))
    })
}

/// Replace the file atomically, mode 0600. Call only under the store's lock.
pub fn write(home: &Path, file: &AuthFile) -> Result<(), AuthError> {
    let path = path(home);
    let fail =
        |e: std::io::Error| AuthError::store(format!("cannot write {}: {e}", path.display()));
    create_private_dir(home).map_err(fail)?;
    let text = serde_json::to_vec_pretty(file)
        .map_err(|e| AuthError::store(format!("cannot encode credentials: {e}")))?;
    // tempfile creates the file 0600 (O_EXCL), so the secret is never readable by others,
    // not even for a moment.
    let mut temporary = tempfile::NamedTempFile::new_in(home).map_err(fail)?;
    temporary.write_all(&text).map_err(fail)?;
    temporary.as_file().sync_all().map_err(fail)?;
    set_private(temporary.path()).map_err(fail)?;
    temporary.persist(&path).map_err(|e| fail(e.error))?;
    Ok(())
}

pub fn create_private_dir(dir: &Path) -> std::io::Result<()> {
    if dir.is_dir() {
        return Ok(());
    }
    let mut builder = std::fs::DirBuilder::new();
    builder.recursive(true);
    #[cfg(unix)]
    std::os::unix::fs::DirBuilderExt::mode(&mut builder, 0o700);
    builder.create(dir)
}

fn set_private(path: &Path) -> std::io::Result<()> {
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o600))?;
    }
    #[cfg(not(unix))]
    let _ = path;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn written_private_and_a_bad_file_is_kept() {
        let dir = tempfile::tempdir().unwrap();
        let home = dir.path().join("home");
        let mut file = AuthFile::default();
        file.credentials.insert(
            "provider/openai".into(),
            Credential::ApiKey {
                key: "sk-test-123456789".into(),
            },
        );
        write(&home, &file).unwrap();
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            let mode = std::fs::metadata(path(&home)).unwrap().permissions().mode();
            assert_eq!(mode & 0o777, 0o600);
            let mode = std::fs::metadata(&home).unwrap().permissions().mode();
            assert_eq!(mode & 0o777, 0o700);
        }
        assert_eq!(read(&home).unwrap().credentials.len(), 1);
        std::fs::write(path(&home), "{ torn").unwrap();
        let err = read(&home).err().unwrap().to_string();
        assert!(err.contains("left as it is"), "{err}");
        assert_eq!(std::fs::read_to_string(path(&home)).unwrap(), "{ torn");
    }
}
