//! The one writer of a session file: a dedicated thread that appends complete lines and
//! syncs them to disk on request, holding the file's advisory lock (`flock`) for as long as
//! the session is open — a crashed process never leaves a stale lock behind.
//!
//! A new session's file appears with its first message (see `Deferred`).
//!
//! Durability policy: every entry is written (`write(2)`) before the engine announces it
//! with `message_end`, so killing the process never loses a completed message; `fsync` runs
//! at the end of every turn and before a mutating tool starts, which bounds what a power
//! loss can take.

use super::error::SessionError;
use super::format::{Header, NewEntry, encode, new_entry_id};
use crate::protocol::message::now_millis;
use std::fs::{File, OpenOptions, TryLockError};
use std::io::Write;
use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt};
use std::path::{Path, PathBuf};
use std::sync::{Mutex, PoisonError, mpsc};
use std::thread::JoinHandle;
use tokio::sync::oneshot;

enum Command {
    /// Create the file (mode 0600, directory 0700), lock it, write these first lines.
    Create(PathBuf, Vec<u8>, oneshot::Sender<std::io::Result<()>>),
    Append(Vec<u8>, oneshot::Sender<std::io::Result<()>>),
    Sync(oneshot::Sender<std::io::Result<()>>),
}

/// A new session's file does not exist until its first message: until then the header and
/// any bookkeeping entries (model changes) wait here, so starting and quitting the agent
/// leaves no empty session behind.
struct Deferred {
    lines: Vec<u8>,
}

pub struct SessionWriter {
    path: PathBuf,
    id: String,
    last_entry_id: Mutex<Option<String>>,
    deferred: Mutex<Option<Deferred>>,
    commands: Option<mpsc::Sender<Command>>,
    thread: Option<JoinHandle<()>>,
}

impl SessionWriter {
    /// A new session at `path`; the file is created with the first message.
    pub fn create(path: &Path, header: &Header) -> Result<SessionWriter, SessionError> {
        let mut lines = serde_json::to_vec(header).map_err(|e| SessionError::io(path, e.into()))?;
        lines.push(b'\n');
        Ok(SessionWriter::start(
            None,
            path,
            &header.id,
            None,
            Some(Deferred { lines }),
        ))
    }

    /// Open and lock an existing session before reading it, so nothing can be appended
    /// between the read and `reopen`.
    pub fn lock_existing(path: &Path) -> Result<File, SessionError> {
        let file = OpenOptions::new()
            .append(true)
            .read(true)
            .open(path)
            .map_err(|e| SessionError::io(path, e))?;
        lock(&file, path)?;
        Ok(file)
    }

    /// Continue a session locked with `lock_existing`. Bytes after `valid_len` (a torn last
    /// line) are cut off, and a missing final newline is added, so new entries start on a
    /// line of their own.
    pub fn reopen(
        mut file: File,
        path: &Path,
        id: &str,
        valid_len: u64,
        last_entry_id: Option<String>,
    ) -> Result<SessionWriter, SessionError> {
        let length = file
            .metadata()
            .map_err(|e| SessionError::io(path, e))?
            .len();
        if length > valid_len {
            file.set_len(valid_len)
                .map_err(|e| SessionError::io(path, e))?;
        }
        if valid_len > 0 && !ends_with_newline(&mut file, valid_len) {
            file.write_all(b"\n")
                .map_err(|e| SessionError::io(path, e))?;
        }
        Ok(SessionWriter::start(
            Some(file),
            path,
            id,
            last_entry_id,
            None,
        ))
    }

    fn start(
        file: Option<File>,
        path: &Path,
        id: &str,
        last_entry_id: Option<String>,
        deferred: Option<Deferred>,
    ) -> SessionWriter {
        let (commands, receiver) = mpsc::channel();
        let thread = std::thread::Builder::new()
            .name("session-writer".into())
            .spawn(move || write_loop(file, receiver))
            .ok();
        SessionWriter {
            path: path.to_path_buf(),
            id: id.to_string(),
            last_entry_id: Mutex::new(last_entry_id),
            deferred: Mutex::new(deferred),
            commands: thread.is_some().then_some(commands),
            thread,
        }
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    pub fn id(&self) -> &str {
        &self.id
    }

    /// Whether the file exists yet (a new session has none until its first message).
    pub fn is_on_disk(&self) -> bool {
        self.deferred
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .is_none()
    }

    /// Append an entry; returns its id once the line is in the file (or, before the
    /// session's first message, once it is queued to be written with it).
    pub async fn append(&self, entry: NewEntry<'_>) -> Result<String, SessionError> {
        self.append_at(entry, now_millis()).await
    }

    /// `append` with the entry's timestamp chosen by the caller (a compaction's summary
    /// message carries the same time as its entry, so a reload rebuilds it exactly).
    pub async fn append_at(
        &self,
        entry: NewEntry<'_>,
        timestamp: i64,
    ) -> Result<String, SessionError> {
        let id = new_entry_id();
        let is_message = matches!(entry, NewEntry::Message(_));
        let (ack, done) = oneshot::channel();
        let created = {
            let mut last = self
                .last_entry_id
                .lock()
                .unwrap_or_else(PoisonError::into_inner);
            let line = encode(entry, &id, last.as_deref(), timestamp)
                .map_err(|e| SessionError::io(&self.path, e.into()))?;
            let mut deferred = self.deferred.lock().unwrap_or_else(PoisonError::into_inner);
            let created = match deferred.as_mut() {
                Some(pending) if !is_message => {
                    pending.lines.extend_from_slice(&line);
                    *last = Some(id.clone());
                    return Ok(id);
                }
                Some(pending) => {
                    let mut lines = std::mem::take(&mut pending.lines);
                    lines.extend_from_slice(&line);
                    *deferred = None;
                    let (create_ack, create_done) = oneshot::channel();
                    self.send(Command::Create(self.path.clone(), lines, create_ack))?;
                    Some(create_done)
                }
                None => {
                    self.send(Command::Append(line, ack))?;
                    None
                }
            };
            *last = Some(id.clone());
            created
        };
        match created {
            Some(create_done) => self.wait(create_done).await?,
            None => self.wait(done).await?,
        }
        Ok(id)
    }

    /// Wait until everything appended so far is on disk.
    pub async fn sync(&self) -> Result<(), SessionError> {
        if !self.is_on_disk() {
            return Ok(());
        }
        let (ack, done) = oneshot::channel();
        self.send(Command::Sync(ack))?;
        self.wait(done).await
    }

    fn send(&self, command: Command) -> Result<(), SessionError> {
        self.commands
            .as_ref()
            .and_then(|tx| tx.send(command).ok())
            .ok_or(SessionError::WriterGone)
    }

    async fn wait(&self, done: oneshot::Receiver<std::io::Result<()>>) -> Result<(), SessionError> {
        match done.await {
            Ok(Ok(())) => Ok(()),
            Ok(Err(e)) if e.kind() == std::io::ErrorKind::WouldBlock => {
                Err(SessionError::Locked(self.path.clone()))
            }
            Ok(Err(e)) => Err(SessionError::io(&self.path, e)),
            Err(_) => Err(SessionError::WriterGone),
        }
    }
}

impl Drop for SessionWriter {
    /// Closing the channel makes the thread sync and exit; wait for it so the last entries
    /// are on disk before the process ends.
    fn drop(&mut self) {
        self.commands = None;
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

fn write_loop(mut file: Option<File>, commands: mpsc::Receiver<Command>) {
    for command in commands {
        match command {
            Command::Create(path, lines, ack) => {
                let result = create_file(&path).and_then(|mut created| {
                    created.write_all(&lines)?;
                    file = Some(created);
                    Ok(())
                });
                let _ = ack.send(result);
            }
            Command::Append(line, ack) => {
                let result = match file.as_mut() {
                    Some(file) => file.write_all(&line),
                    None => Err(std::io::Error::other("the session file is not open")),
                };
                let _ = ack.send(result);
            }
            Command::Sync(ack) => {
                let _ = ack.send(file.as_ref().map_or(Ok(()), File::sync_data));
            }
        }
    }
    if let Some(file) = file {
        let _ = file.sync_data();
    }
}

fn create_file(path: &Path) -> std::io::Result<File> {
    if let Some(dir) = path.parent() {
        std::fs::DirBuilder::new()
            .recursive(true)
            .mode(0o700)
            .create(dir)?;
    }
    let file = OpenOptions::new()
        .create_new(true)
        .append(true)
        .mode(0o600)
        .open(path)?;
    match file.try_lock() {
        Ok(()) => Ok(file),
        Err(TryLockError::WouldBlock) => Err(std::io::ErrorKind::WouldBlock.into()),
        Err(TryLockError::Error(e)) => Err(e),
    }
}

fn lock(file: &File, path: &Path) -> Result<(), SessionError> {
    match file.try_lock() {
        Ok(()) => Ok(()),
        Err(TryLockError::WouldBlock) => Err(SessionError::Locked(path.to_path_buf())),
        Err(TryLockError::Error(e)) => Err(SessionError::io(path, e)),
    }
}

fn ends_with_newline(file: &mut File, length: u64) -> bool {
    use std::io::{Read, Seek, SeekFrom};
    let mut last = [0u8; 1];
    file.seek(SeekFrom::Start(length - 1)).is_ok()
        && file.read_exact(&mut last).is_ok()
        && last[0] == b'\n'
}
