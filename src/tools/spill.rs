//! Where tools keep output too long to show whole (bash's full output, a long MCP result),
//! so the model can read the rest later. With a session file the files live beside it, in
//! `<session file without .jsonl>.files/`, and stay as long as the session does; without
//! one (`--no-session`) in a private temporary directory (mode 0700), removed when the
//! conversation is dropped or the agent exits. Nothing is created until the first file is
//! needed, and a session directory whose session file never came to exist (a `!command`
//! before the first message) is removed like a private one. The interface keeps the images
//! pasted with ctrl+v here too (`clipboard-N.png`).

use std::fs::File;
use std::os::unix::fs::{DirBuilderExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Mutex, PoisonError};

/// The spill directory of one conversation.
#[derive(Debug, Default)]
pub struct SpillDir {
    /// The session file the directory belongs to; `None`: a private directory.
    session: Option<PathBuf>,
    /// The directory, once made.
    made: Mutex<Option<PathBuf>>,
}

/// Every directory this process made and has not cleaned up yet, with its session file:
/// what `clean_up_at_exit` looks at.
static MADE: Mutex<Vec<(PathBuf, Option<PathBuf>)>> = Mutex::new(Vec::new());
/// Set by `clean_up_at_exit`: no new directory is made after it.
static CLOSED: AtomicBool = AtomicBool::new(false);

impl SpillDir {
    /// Beside the session file `session`, or private when there is none.
    pub fn for_session(session: Option<&Path>) -> SpillDir {
        SpillDir {
            session: session.map(Path::to_path_buf),
            made: Mutex::new(None),
        }
    }

    /// The directory beside a session file: its name without `.jsonl`, plus `.files`.
    pub fn beside(session: &Path) -> PathBuf {
        let name = session.file_name().unwrap_or(session.as_os_str());
        let name = name.to_string_lossy();
        let stem = name.strip_suffix(".jsonl").unwrap_or(&name);
        session.with_file_name(format!("{stem}.files"))
    }

    /// The directory, if a file was put in it.
    pub fn made(&self) -> Option<PathBuf> {
        self.made
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }

    /// A new file (mode 0600) named `<prefix><random><suffix>`, and its path.
    pub fn create(&self, prefix: &str, suffix: &str) -> std::io::Result<(File, PathBuf)> {
        let dir = self.dir()?;
        let file = tempfile::Builder::new()
            .prefix(prefix)
            .suffix(suffix)
            .tempfile_in(&dir)?;
        file.keep().map_err(|e| e.error)
    }

    /// A new file (mode 0600) named `<stem>-<n>.<extension>` with the first `n` from 1 not
    /// taken, and its path (a clipboard image: `clipboard-1.png`).
    pub fn create_numbered(&self, stem: &str, extension: &str) -> std::io::Result<(File, PathBuf)> {
        use std::os::unix::fs::OpenOptionsExt;
        let dir = self.dir()?;
        for n in 1..10_000 {
            let path = dir.join(format!("{stem}-{n}.{extension}"));
            match std::fs::OpenOptions::new()
                .write(true)
                .create_new(true)
                .mode(0o600)
                .open(&path)
            {
                Ok(file) => return Ok((file, path)),
                Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => continue,
                Err(e) => return Err(e),
            }
        }
        self.create(&format!("{stem}-"), &format!(".{extension}"))
    }

    /// The directory, made (0700) on first use.
    fn dir(&self) -> std::io::Result<PathBuf> {
        let mut made = self.made.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some(dir) = made.as_ref()
            && dir.is_dir()
        {
            return Ok(dir.clone());
        }
        if CLOSED.load(Ordering::SeqCst) {
            return Err(std::io::Error::other("the agent is exiting"));
        }
        let dir = match &self.session {
            Some(session) => {
                let dir = SpillDir::beside(session);
                std::fs::DirBuilder::new()
                    .recursive(true)
                    .mode(0o700)
                    .create(&dir)?;
                dir
            }
            None => tempfile::Builder::new()
                .prefix("agent-output-")
                .permissions(std::fs::Permissions::from_mode(0o700))
                .tempdir()?
                .keep(),
        };
        let mut all = lock_made();
        all.retain(|(earlier, _)| Some(earlier) != made.as_ref());
        all.push((dir.clone(), self.session.clone()));
        *made = Some(dir.clone());
        Ok(dir)
    }
}

impl Drop for SpillDir {
    fn drop(&mut self) {
        let Some(dir) = self.made() else {
            return;
        };
        // Cleaned while the list is held, and only then taken off it: a drop on another
        // thread that the exit cuts short leaves the directory listed, so
        // `clean_up_at_exit` (which waits for the list) still removes it.
        let mut all = lock_made();
        clean_up(&dir, self.session.as_deref());
        all.retain(|(made, _)| *made != dir);
    }
}

fn lock_made() -> std::sync::MutexGuard<'static, Vec<(PathBuf, Option<PathBuf>)>> {
    MADE.lock().unwrap_or_else(PoisonError::into_inner)
}

/// A private directory goes; a session's goes only when its session file does not exist.
fn clean_up(dir: &Path, session: Option<&Path>) {
    if session.is_none_or(|file| !file.exists())
        && let Err(error) = std::fs::remove_dir_all(dir)
        && error.kind() != std::io::ErrorKind::NotFound
    {
        tracing::warn!(dir = %dir.display(), %error, "could not remove a tool output directory");
    }
}

/// The agent is exiting: clean up every directory still in use (the conversations may not
/// be dropped on the way out), and make no new one.
pub fn clean_up_at_exit() {
    CLOSED.store(true, Ordering::SeqCst);
    for (dir, session) in std::mem::take(&mut *lock_made()) {
        clean_up(&dir, session.as_deref());
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    fn mode(path: &Path) -> u32 {
        std::fs::metadata(path).unwrap().permissions().mode() & 0o777
    }

    #[test]
    fn a_session_keeps_its_files_beside_it() {
        let root = tempfile::tempdir().unwrap();
        let session = root.path().join("20260101T000000_abc.jsonl");
        std::fs::write(&session, "{}\n").unwrap();
        let spill = SpillDir::for_session(Some(&session));
        assert_eq!(spill.made(), None, "nothing is made before it is needed");
        let (mut file, path) = spill.create("bash-", ".log").unwrap();
        file.write_all(b"all of it").unwrap();
        let dir = root.path().join("20260101T000000_abc.files");
        assert_eq!(path.parent(), Some(dir.as_path()));
        assert_eq!(mode(&dir), 0o700);
        assert_eq!(mode(&path), 0o600);
        drop(spill);
        assert_eq!(std::fs::read_to_string(&path).unwrap(), "all of it");
    }

    #[test]
    fn numbered_files_take_the_first_free_number() {
        let root = tempfile::tempdir().unwrap();
        let session = root.path().join("s.jsonl");
        std::fs::write(&session, "{}\n").unwrap();
        let spill = SpillDir::for_session(Some(&session));
        let (_, first) = spill.create_numbered("clipboard", "png").unwrap();
        let (_, second) = spill.create_numbered("clipboard", "png").unwrap();
        assert_eq!(first, root.path().join("s.files/clipboard-1.png"));
        assert_eq!(second, root.path().join("s.files/clipboard-2.png"));
        assert_eq!(mode(&second), 0o600);
        std::fs::remove_file(&first).unwrap();
        let (_, again) = spill.create_numbered("clipboard", "png").unwrap();
        assert_eq!(again, first);
    }

    #[test]
    fn a_session_file_that_never_came_to_exist_takes_its_files_with_it() {
        let root = tempfile::tempdir().unwrap();
        let session = root.path().join("s.jsonl");
        let spill = SpillDir::for_session(Some(&session));
        let (_, path) = spill.create("bash-", ".log").unwrap();
        assert!(path.exists());
        drop(spill);
        assert!(!root.path().join("s.files").exists());
    }

    #[test]
    fn a_private_directory_is_removed_with_the_conversation() {
        let spill = SpillDir::for_session(None);
        let (_, first) = spill.create("bash-", ".log").unwrap();
        let (_, second) = spill.create("bash-", ".log").unwrap();
        let dir = spill.made().unwrap();
        assert_eq!(first.parent(), Some(dir.as_path()));
        assert_eq!(second.parent(), Some(dir.as_path()));
        assert_eq!(mode(&dir), 0o700);
        drop(spill);
        assert!(!dir.exists());
    }

    #[test]
    fn names_beside_a_session_file() {
        assert_eq!(
            SpillDir::beside(Path::new("/s/a_b.jsonl")),
            Path::new("/s/a_b.files")
        );
        assert_eq!(
            SpillDir::beside(Path::new("/s/named")),
            Path::new("/s/named.files")
        );
    }
}
