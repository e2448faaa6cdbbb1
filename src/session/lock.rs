//! A session file held under its advisory lock (`flock`), let go explicitly when dropped.
//!
//! Closing the descriptor alone is not enough: a child process that another thread is
//! starting at that moment holds a copy of every descriptor until it executes its program,
//! and the lock lives as long as any copy does. Unlocking releases it for every copy at once,
//! so a session closed in this process can be opened again at once — by a resume in the
//! same process, or by another agent — however many processes are being started around it.

use std::fs::{File, TryLockError};
use std::ops::{Deref, DerefMut};

/// An open session file whose exclusive lock this process holds.
#[derive(Debug)]
pub struct LockedFile(File);

impl LockedFile {
    /// Take `file`'s exclusive lock without waiting: `WouldBlock` while another holds it.
    pub fn try_lock(file: File) -> Result<LockedFile, TryLockError> {
        file.try_lock()?;
        Ok(LockedFile(file))
    }
}

impl Deref for LockedFile {
    type Target = File;

    fn deref(&self) -> &File {
        &self.0
    }
}

impl DerefMut for LockedFile {
    fn deref_mut(&mut self) -> &mut File {
        &mut self.0
    }
}

impl Drop for LockedFile {
    fn drop(&mut self) {
        // Nothing to report: the lock goes with the last copy of the descriptor anyway.
        let _ = self.0.unlock();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dropping_it_lets_go_even_while_a_copy_of_the_descriptor_lives() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("s.jsonl");
        let open = || {
            File::options()
                .create(true)
                .append(true)
                .open(&path)
                .unwrap()
        };
        let held = LockedFile::try_lock(open()).unwrap();
        // What a child process being started holds: a copy of the descriptor (`dup`), the
        // same open file.
        let copy = held.try_clone().unwrap();
        assert!(matches!(
            LockedFile::try_lock(open()),
            Err(TryLockError::WouldBlock)
        ));
        drop(held);
        let again = LockedFile::try_lock(open());
        assert!(again.is_ok(), "{again:?}");
        drop(copy);
    }
}
