//! What the model last saw of each file: a fingerprint (length and a hash of the contents)
//! taken when `read` returned the file, or when `write` or `edit` produced it. `write`
//! refuses to replace a file that changed since then (a user's edit, a formatter, a build
//! step), so the model cannot overwrite work it never saw; reading the file again makes it
//! known. `edit` needs no such check — its `oldText` must match the current contents — but
//! it records what it wrote, like `write`. One memory per conversation; files are keyed by
//! where they really are, so a path through a symbolic link is the same file.

use std::collections::HashMap;
use std::hash::Hasher;
use std::io::Read;
use std::path::{Path, PathBuf};
use std::sync::{Mutex, PoisonError};

/// A file's length and a hash of its bytes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Fingerprint {
    len: u64,
    hash: u64,
}

/// Builds a fingerprint from a file's bytes, block by block.
#[derive(Default)]
pub struct Hashing {
    hasher: std::collections::hash_map::DefaultHasher,
    len: u64,
}

impl Hashing {
    pub fn update(&mut self, bytes: &[u8]) {
        self.hasher.write(bytes);
        self.len = self
            .len
            .saturating_add(u64::try_from(bytes.len()).unwrap_or(u64::MAX));
    }

    pub fn finish(self) -> Fingerprint {
        Fingerprint {
            len: self.len,
            hash: self.hasher.finish(),
        }
    }
}

impl Fingerprint {
    pub fn of_bytes(bytes: &[u8]) -> Fingerprint {
        let mut hashing = Hashing::default();
        hashing.update(bytes);
        hashing.finish()
    }
}

/// Why a file may not be replaced.
#[derive(Debug, PartialEq, Eq)]
pub struct Changed {
    /// Its length when the model last saw it, and now.
    pub seen_len: u64,
    pub now_len: u64,
}

/// The fingerprints of the files the model has seen in this conversation.
#[derive(Debug, Default)]
pub struct FileMemory {
    seen: Mutex<HashMap<PathBuf, Fingerprint>>,
}

impl FileMemory {
    /// The model has seen `path` as `fingerprint` (it read it, or wrote it so).
    pub fn saw(&self, path: &Path, fingerprint: Fingerprint) {
        self.lock().insert(key(path), fingerprint);
    }

    /// `Err` when the model saw `path` before and the file is different now. A file the
    /// model never saw, or one that no longer exists, may be written.
    pub fn check_unchanged(&self, path: &Path) -> Result<(), Changed> {
        let Some(seen) = self.lock().get(&key(path)).copied() else {
            return Ok(());
        };
        let now = match fingerprint_of_file(path) {
            Ok(Some(now)) => now,
            // Gone, or unreadable (the write will say why): nothing to protect.
            Ok(None) | Err(_) => return Ok(()),
        };
        if now == seen {
            Ok(())
        } else {
            Err(Changed {
                seen_len: seen.len,
                now_len: now.len,
            })
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<PathBuf, Fingerprint>> {
        self.seen.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

/// Where `path` really is: the key of the memory.
fn key(path: &Path) -> PathBuf {
    super::path::real_path(path)
}

/// The fingerprint of the regular file at `path`; `None` when there is none.
fn fingerprint_of_file(path: &Path) -> std::io::Result<Option<Fingerprint>> {
    let (mut file, _) = match super::regular::open(path) {
        Ok(opened) => opened,
        Err(super::regular::OpenError::NotFound) => return Ok(None),
        Err(super::regular::OpenError::Io(e)) => return Err(e),
        Err(_) => return Ok(None),
    };
    let mut hashing = Hashing::default();
    let mut block = vec![0u8; 64 * 1024];
    loop {
        let n = file.read(&mut block)?;
        if n == 0 {
            return Ok(Some(hashing.finish()));
        }
        hashing.update(&block[..n]);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_file_changed_since_it_was_seen_is_reported() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("a.txt");
        let memory = FileMemory::default();
        std::fs::write(&path, "one").unwrap();
        assert_eq!(memory.check_unchanged(&path), Ok(()), "never seen");
        memory.saw(&path, Fingerprint::of_bytes(b"one"));
        assert_eq!(memory.check_unchanged(&path), Ok(()));
        // Same length, other bytes: still a change.
        std::fs::write(&path, "two").unwrap();
        assert_eq!(
            memory.check_unchanged(&path),
            Err(Changed {
                seen_len: 3,
                now_len: 3
            })
        );
        // Seen through a link, the same file.
        std::os::unix::fs::symlink(&path, dir.path().join("link")).unwrap();
        memory.saw(&dir.path().join("link"), Fingerprint::of_bytes(b"two"));
        assert_eq!(memory.check_unchanged(&path), Ok(()));
        std::fs::remove_file(&path).unwrap();
        assert_eq!(memory.check_unchanged(&path), Ok(()), "gone");
    }
}
