//! The writer thread's side of a session file: appends whole lines and keeps the file made
//! of whole lines whatever fails.
//!
//! - A line that cannot be written (disk full, file too large, I/O error) stays queued in
//!   memory, and the file is cut back to its last complete line, so a half line never
//!   glues itself to the next entry; if even the cut fails, the next write starts on a
//!   fresh line. The queue is written first by the next attempt, so once writing works
//!   again the file catches up in order and nothing accepted is lost.
//! - A new session's file is created exclusively (`O_EXCL`) and locked before anything is
//!   written to it, so two agents can never share one file.
//! - A file deleted while in use is created again from the bytes the open descriptor
//!   still reaches.

use super::lock::LockedFile;
use std::fs::{OpenOptions, TryLockError};
use std::io::{Read, Seek, SeekFrom, Write};
use std::os::unix::fs::{DirBuilderExt, MetadataExt, OpenOptionsExt};
use std::path::{Path, PathBuf};

pub(super) struct Appender {
    path: PathBuf,
    file: Option<LockedFile>,
    /// This process created the file: if nothing ever reaches it, it is removed on close
    /// (starting and quitting leaves no empty session behind).
    created: bool,
    /// Bytes of the file that end with a complete line.
    good_len: u64,
    /// Lines accepted but not in the file yet, in order.
    unwritten: Vec<u8>,
    /// Whether what is queued should reach the file: false for a new session until its
    /// first message, so bookkeeping alone never creates a file.
    materialized: bool,
    /// A failed write could not be cut back: the file may end in a partial line.
    torn: bool,
    /// Bytes were written since the last `sync` reached the disk: the next sync has work.
    /// (Closing after an end-of-turn sync then costs no second `fdatasync`.)
    unsynced: bool,
}

impl Appender {
    /// A new session: the file is created (exclusively) when the first message arrives;
    /// `header` waits in the queue until then.
    pub fn new_file(path: &Path, header: Vec<u8>) -> Appender {
        Appender {
            path: path.to_path_buf(),
            file: None,
            created: false,
            good_len: 0,
            unwritten: header,
            materialized: false,
            torn: false,
            unsynced: false,
        }
    }

    /// A new session whose file was already created (and locked) by `create_file`;
    /// `header` is written with the first message.
    pub fn created(path: &Path, file: LockedFile, header: Vec<u8>) -> Appender {
        Appender {
            file: Some(file),
            created: true,
            ..Appender::new_file(path, header)
        }
    }

    /// An existing session, locked, whose first `length` bytes are complete lines.
    pub fn existing(path: &Path, file: LockedFile, length: u64) -> Appender {
        Appender {
            path: path.to_path_buf(),
            file: Some(file),
            created: false,
            good_len: length,
            unwritten: Vec::new(),
            materialized: true,
            torn: false,
            unsynced: false,
        }
    }

    /// Queue `line` and write everything queued. `materialize` marks a message: the
    /// first one makes a new session's file appear. On `Err` the line stays queued.
    pub fn append(&mut self, line: &[u8], materialize: bool) -> std::io::Result<()> {
        self.unwritten.extend_from_slice(line);
        self.materialized |= materialize;
        if self.materialized {
            self.flush()
        } else {
            Ok(())
        }
    }

    /// Write what is queued, then ask the OS to put it on the disk (unless nothing was
    /// written since the last time it did).
    pub fn sync(&mut self) -> std::io::Result<()> {
        if !self.materialized {
            return Ok(());
        }
        self.flush()?;
        match &self.file {
            Some(file) if self.unsynced => {
                file.sync_data()?;
                self.unsynced = false;
                Ok(())
            }
            _ => Ok(()),
        }
    }

    /// The session is closing: a last attempt to write what is queued, then sync; a file
    /// this process created that never received a line is removed.
    pub fn close(mut self) {
        if let Err(error) = self.sync() {
            tracing::error!(path = %self.path.display(), %error, "session file not saved at exit");
        }
        if self.created && self.good_len == 0 && self.file.is_some() {
            let _ = std::fs::remove_file(&self.path);
        }
    }

    fn flush(&mut self) -> std::io::Result<()> {
        if self.unwritten.is_empty() {
            return Ok(());
        }
        if self.file.is_none() {
            self.file = Some(create_file(&self.path)?);
            self.created = true;
        }
        let Some(file) = self.file.as_mut() else {
            return Err(std::io::Error::other("the session file is not open"));
        };
        if self.torn {
            self.unwritten.insert(0, b'\n');
        }
        // Even a failed write may have put bytes in the file (before it was cut back).
        self.unsynced = true;
        match file.write_all(&self.unwritten) {
            Ok(()) => {
                self.good_len = if self.torn {
                    // The cut failed earlier: where the file ends is only known from it.
                    file.metadata()
                        .map(|m| m.len())
                        .unwrap_or(self.good_len.saturating_add(self.unwritten.len() as u64))
                } else {
                    self.good_len.saturating_add(self.unwritten.len() as u64)
                };
                self.unwritten.clear();
                self.torn = false;
                self.restore_if_deleted()
            }
            Err(error) => {
                if self.torn {
                    self.unwritten.remove(0);
                }
                // Cut the partial line back off; when that fails too, the next write starts
                // on a line of its own and the reader skips the fragment.
                self.torn = file.set_len(self.good_len).is_err();
                Err(error)
            }
        }
    }

    /// Someone deleted the file while it was open: everything written is still reachable
    /// through the descriptor, so put it back in a new file at the same path.
    fn restore_if_deleted(&mut self) -> std::io::Result<()> {
        let Some(old) = self.file.as_mut() else {
            return Ok(());
        };
        if old.metadata()?.nlink() > 0 {
            return Ok(());
        }
        let restored = create_file(&self.path).and_then(|mut new| {
            old.seek(SeekFrom::Start(0))?;
            let copied = std::io::copy(&mut Read::take(&mut **old, self.good_len), &mut *new)?;
            if copied < self.good_len {
                return Err(std::io::ErrorKind::UnexpectedEof.into());
            }
            new.sync_data()?;
            Ok(new)
        });
        match restored {
            Ok(new) => {
                tracing::warn!(path = %self.path.display(), "the session file was deleted while in use; written again");
                self.file = Some(new);
                Ok(())
            }
            Err(error) => Err(std::io::Error::new(
                error.kind(),
                format!(
                    "the file was deleted while in use and could not be created again ({error})"
                ),
            )),
        }
    }
}

/// Create a new session file exclusively (mode 0600, directories 0700) and lock it.
pub(crate) fn create_file(path: &Path) -> std::io::Result<LockedFile> {
    if let Some(dir) = path.parent() {
        std::fs::DirBuilder::new()
            .recursive(true)
            .mode(0o700)
            .create(dir)?;
    }
    let file = OpenOptions::new()
        .create_new(true)
        .append(true)
        .read(true)
        .mode(0o600)
        .open(path)?;
    match LockedFile::try_lock(file) {
        Ok(locked) => Ok(locked),
        Err(TryLockError::WouldBlock) => Err(std::io::ErrorKind::WouldBlock.into()),
        Err(TryLockError::Error(e)) => Err(e),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn read(path: &Path) -> String {
        std::fs::read_to_string(path).unwrap()
    }

    #[test]
    fn bookkeeping_alone_creates_no_file_and_a_message_creates_it() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("s/new.jsonl");
        let mut appender = Appender::new_file(&path, b"h\n".to_vec());
        appender.append(b"m\n", false).unwrap();
        appender.sync().unwrap();
        assert!(!path.exists());
        appender.append(b"1\n", true).unwrap();
        assert_eq!(read(&path), "h\nm\n1\n");
        appender.close();
        assert_eq!(read(&path), "h\nm\n1\n");
    }

    #[test]
    fn an_unused_created_file_is_removed_on_close() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("named.jsonl");
        let file = create_file(&path).unwrap();
        Appender::created(&path, file, b"h\n".to_vec()).close();
        assert!(!path.exists());
    }

    #[test]
    fn a_second_creator_of_the_same_file_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("same.jsonl");
        let _first = create_file(&path).unwrap();
        let second = create_file(&path).unwrap_err();
        assert_eq!(second.kind(), std::io::ErrorKind::AlreadyExists);
    }

    #[test]
    fn a_deleted_file_is_written_again_with_everything_in_it() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("gone.jsonl");
        let mut appender = Appender::new_file(&path, b"h\n".to_vec());
        appender.append(b"1\n", true).unwrap();
        std::fs::remove_file(&path).unwrap();
        appender.append(b"2\n", true).unwrap();
        assert_eq!(read(&path), "h\n1\n2\n");
        appender.append(b"3\n", true).unwrap();
        appender.close();
        assert_eq!(read(&path), "h\n1\n2\n3\n");
    }
}
