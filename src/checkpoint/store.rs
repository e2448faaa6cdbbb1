//! The content-addressed object store under `$AGENT_HOME/checkpoints/objects/`: every file
//! content (and every directory listing, `tree`) is kept once, named by the SHA-256 of its
//! bytes, so a checkpoint of a tree where one file changed stores one new object and a few
//! listings. Objects are written to a temporary file and renamed into place, so a reader
//! never sees half an object; every read checks the content against its name, so a damaged
//! object is reported, never restored. Files and directories are private (0600/0700):
//! workspace files may hold secrets.

use super::error::CheckpointError;
use std::collections::HashSet;
use std::fs::{DirBuilder, File};
use std::io::{Read, Write};
use std::os::unix::fs::{DirBuilderExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::sync::{Mutex, PoisonError};

/// A file at or under this size is read into memory and hashed there; a larger one is
/// copied by the kernel (`copy_file_range`, a reflink where the filesystem has them) and
/// hashed from the copy, so memory stays small whatever `max_file_bytes` allows.
const IN_MEMORY_LIMIT: u64 = 1024 * 1024;

/// The SHA-256 of an object's bytes, in lowercase hex.
pub type Hash = String;

pub fn hash_bytes(bytes: &[u8]) -> Hash {
    hex(ring::digest::digest(&ring::digest::SHA256, bytes).as_ref())
}

fn hex(bytes: &[u8]) -> String {
    use std::fmt::Write as _;
    let mut text = String::with_capacity(bytes.len() * 2);
    for byte in bytes {
        let _ = write!(text, "{byte:02x}");
    }
    text
}

pub struct Store {
    root: PathBuf,
    objects: PathBuf,
    temp: PathBuf,
    /// Objects known to exist, so a hash seen before costs no `stat`.
    known: Mutex<HashSet<Hash>>,
    /// The directories exist (they are made on the first write, so a store that cannot be
    /// created is reported where it matters: when a checkpoint is taken).
    made: std::sync::atomic::AtomicBool,
}

/// Create `dir` (and its parents) private to the user.
pub fn private_dir(dir: &Path) -> std::io::Result<()> {
    DirBuilder::new().recursive(true).mode(0o700).create(dir)
}

impl Store {
    /// The store at `root` (`$AGENT_HOME/checkpoints`); its directories are created with
    /// the first object written.
    pub fn open(root: &Path) -> Store {
        Store {
            root: root.to_path_buf(),
            objects: root.join("objects"),
            temp: root.join("tmp"),
            known: Mutex::new(HashSet::new()),
            made: std::sync::atomic::AtomicBool::new(false),
        }
    }

    fn make_dirs(&self) -> Result<(), CheckpointError> {
        use std::sync::atomic::Ordering;
        if self.made.load(Ordering::Relaxed) {
            return Ok(());
        }
        for dir in [&self.objects, &self.temp] {
            private_dir(dir).map_err(|e| CheckpointError::store(dir, e))?;
        }
        self.made.store(true, Ordering::Relaxed);
        Ok(())
    }

    pub fn root(&self) -> &Path {
        &self.root
    }

    pub fn object_path(&self, hash: &str) -> PathBuf {
        let (fan, rest) = hash.split_at(hash.len().min(2));
        self.objects.join(fan).join(rest)
    }

    fn error(&self, e: std::io::Error) -> CheckpointError {
        CheckpointError::store(&self.root, e)
    }

    pub fn contains(&self, hash: &str) -> bool {
        if self
            .known
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .contains(hash)
        {
            return true;
        }
        let exists = self.object_path(hash).is_file();
        if exists {
            self.remember(hash);
        }
        exists
    }

    fn remember(&self, hash: &str) {
        self.known
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .insert(hash.to_string());
    }

    /// Forget which objects exist (after a clean-up removed some).
    pub fn forget_known(&self) {
        self.known
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clear();
    }

    /// Keep `bytes`; returns their hash.
    pub fn put(&self, bytes: &[u8]) -> Result<Hash, CheckpointError> {
        let hash = hash_bytes(bytes);
        if !self.contains(&hash) {
            let mut temp = self.temp_file()?;
            temp.write_all(bytes).map_err(|e| self.error(e))?;
            self.persist(temp, &hash)?;
        }
        Ok(hash)
    }

    /// Keep the contents of the file at `path` (`size` bytes long when it was looked at).
    /// `Ok(None)` when the file vanished meanwhile; an error reading it is the workspace's.
    pub fn put_file(&self, path: &Path, size: u64) -> Result<Option<Hash>, CheckpointError> {
        let workspace = |e: std::io::Error| CheckpointError::Workspace {
            path: path.to_path_buf(),
            source: e,
        };
        if size <= IN_MEMORY_LIMIT {
            let bytes = match std::fs::read(path) {
                Ok(bytes) => bytes,
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
                Err(e) => return Err(workspace(e)),
            };
            return self.put(&bytes).map(Some);
        }
        let temp = self.temp_file()?;
        match std::fs::copy(path, temp.path()) {
            Ok(_) => {}
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
            Err(e) => return Err(workspace(e)),
        }
        let file = temp.as_file();
        file.set_permissions(std::fs::Permissions::from_mode(0o600))
            .map_err(|e| self.error(e))?;
        let hash = hash_reader(File::open(temp.path()).map_err(|e| self.error(e))?)
            .map_err(|e| self.error(e))?;
        if !self.contains(&hash) {
            self.persist(temp, &hash)?;
        }
        Ok(Some(hash))
    }

    fn temp_file(&self) -> Result<tempfile::NamedTempFile, CheckpointError> {
        self.make_dirs()?;
        let create = || {
            tempfile::Builder::new()
                .prefix("object-")
                .tempfile_in(&self.temp)
        };
        match create() {
            Ok(file) => Ok(file),
            // The directory went away since it was made (removed to free space, say): make
            // it again, or no checkpoint could be stored until the agent restarts.
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                private_dir(&self.temp).map_err(|e| CheckpointError::store(&self.temp, e))?;
                create().map_err(|e| self.error(e))
            }
            Err(e) => Err(self.error(e)),
        }
    }

    fn persist(&self, temp: tempfile::NamedTempFile, hash: &str) -> Result<(), CheckpointError> {
        let target = self.object_path(hash);
        if let Some(fan) = target.parent() {
            private_dir(fan).map_err(|e| self.error(e))?;
        }
        temp.persist(&target).map_err(|e| self.error(e.error))?;
        self.remember(hash);
        Ok(())
    }

    /// The bytes of object `hash`, checked against it.
    pub fn get(&self, hash: &str) -> Result<Vec<u8>, CheckpointError> {
        let bytes = std::fs::read(self.object_path(hash)).map_err(|e| self.error(e))?;
        if hash_bytes(&bytes) != hash {
            return Err(CheckpointError::Damaged(hash.to_string()));
        }
        Ok(bytes)
    }

    /// Write object `hash` to `out`, checking it on the way; `Damaged` (after writing)
    /// when it does not match, so the caller throws `out` away.
    pub fn copy_to(&self, hash: &str, out: &mut impl Write) -> Result<(), CheckpointError> {
        let mut file = File::open(self.object_path(hash)).map_err(|e| self.error(e))?;
        let mut context = ring::digest::Context::new(&ring::digest::SHA256);
        let mut buffer = vec![0u8; 256 * 1024];
        loop {
            let read = file.read(&mut buffer).map_err(|e| self.error(e))?;
            if read == 0 {
                break;
            }
            context.update(&buffer[..read]);
            out.write_all(&buffer[..read])
                .map_err(|e| CheckpointError::Workspace {
                    path: PathBuf::from("."),
                    source: e,
                })?;
        }
        if hex(context.finish().as_ref()) != hash {
            return Err(CheckpointError::Damaged(hash.to_string()));
        }
        Ok(())
    }
}

fn hash_reader(mut reader: impl Read) -> std::io::Result<Hash> {
    let mut context = ring::digest::Context::new(&ring::digest::SHA256);
    let mut buffer = vec![0u8; 256 * 1024];
    loop {
        let read = reader.read(&mut buffer)?;
        if read == 0 {
            return Ok(hex(context.finish().as_ref()));
        }
        context.update(&buffer[..read]);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn objects_are_kept_once_by_content_and_checked_on_read() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(&dir.path().join("checkpoints"));
        let a = store.put(b"hello").unwrap();
        assert_eq!(
            a,
            "2cf24dba5fb0a30e26e83b2ac5b9e29e1b161e5c1fa7425e73043362938b9824"
        );
        assert_eq!(store.put(b"hello").unwrap(), a);
        assert_eq!(store.get(&a).unwrap(), b"hello");

        let big = dir.path().join("big");
        let content = vec![7u8; usize::try_from(IN_MEMORY_LIMIT).unwrap() + 10];
        std::fs::write(&big, &content).unwrap();
        let b = store.put_file(&big, content.len() as u64).unwrap().unwrap();
        assert_eq!(b, hash_bytes(&content));
        let mut copy = Vec::new();
        store.copy_to(&b, &mut copy).unwrap();
        assert_eq!(copy, content);
        let mode = std::fs::metadata(store.object_path(&b))
            .unwrap()
            .permissions()
            .mode();
        assert_eq!(mode & 0o777, 0o600);
        assert!(
            store
                .put_file(&dir.path().join("gone"), 3)
                .unwrap()
                .is_none()
        );

        std::fs::write(store.object_path(&a), b"tampered").unwrap();
        assert!(matches!(store.get(&a), Err(CheckpointError::Damaged(_))));
        let mut out = Vec::new();
        assert!(matches!(
            store.copy_to(&a, &mut out),
            Err(CheckpointError::Damaged(_))
        ));
    }
}
