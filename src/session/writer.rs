//! The one writer of a session file: a dedicated thread that appends complete lines and
//! syncs them to disk on request, holding the file's advisory lock (`flock`) for as long as
//! the session is open — a crashed process never leaves a stale lock behind.
//!
//! A new session's file appears with its first message; what goes wrong on the disk (and
//! how the file stays whole) is the `appender`'s business.
//!
//! Durability policy: every entry is written (`write(2)`) before the engine announces it
//! with `message_end`, so killing the process never loses a completed message; `fsync` runs
//! at the end of every turn and before a mutating tool starts, which bounds what a power
//! loss can take. A write that fails is reported to the caller at once; the entry stays
//! queued and is written first by the next attempt.

use super::appender::{Appender, create_file};
use super::error::SessionError;
use super::format::{Header, NewEntry, encode, new_entry_id};
use super::lock::LockedFile;
use crate::protocol::message::now_millis;
use std::fs::{File, OpenOptions, TryLockError};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::{Mutex, PoisonError, mpsc};
use std::thread::JoinHandle;
use tokio::sync::oneshot;

type Ack = oneshot::Sender<std::io::Result<()>>;

enum Command {
    /// Queue a line and write everything queued; `message` makes a new session's file
    /// appear.
    Append {
        line: Vec<u8>,
        message: bool,
        ack: Ack,
    },
    Sync(Ack),
}

pub struct SessionWriter {
    path: PathBuf,
    id: String,
    last_entry_id: Mutex<Option<String>>,
    /// The session's name: the last `session_info` written or read.
    name: Mutex<Option<String>>,
    /// The session's goal: the last `goal` entry written or read.
    goal: Mutex<Option<String>>,
    commands: Option<mpsc::Sender<Command>>,
    thread: Option<JoinHandle<()>>,
}

impl SessionWriter {
    /// A new session at `path`; the file is created (exclusively) with the first message.
    pub fn create(path: &Path, header: &Header) -> Result<SessionWriter, SessionError> {
        let line = header_line(path, header)?;
        Ok(SessionWriter::start(
            Appender::new_file(path, line),
            path,
            &header.id,
            None,
        ))
    }

    /// A new session at a path the user chose: the file is created exclusively and locked
    /// now, so a second agent given the same path is refused before it accepts any input.
    /// `Ok(None)` when the file already exists (it is a session to resume).
    pub fn create_now(path: &Path, header: &Header) -> Result<Option<SessionWriter>, SessionError> {
        let line = header_line(path, header)?;
        let file = match create_file(path) {
            Ok(file) => file,
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => return Ok(None),
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {
                return Err(SessionError::Locked(path.to_path_buf()));
            }
            Err(e) => return Err(SessionError::io(path, e)),
        };
        Ok(Some(SessionWriter::start(
            Appender::created(path, file, line),
            path,
            &header.id,
            None,
        )))
    }

    /// Open and lock an existing session before reading it, so nothing can be appended
    /// between the read and `reopen`.
    pub fn lock_existing(path: &Path) -> Result<LockedFile, SessionError> {
        let file = OpenOptions::new()
            .append(true)
            .read(true)
            .open(path)
            .map_err(|e| SessionError::io(path, e))?;
        lock(file, path)
    }

    /// Continue a session locked with `lock_existing`. Bytes after `valid_len` (a torn last
    /// line) are cut off, and a missing final newline is added, so new entries start on a
    /// line of their own.
    pub fn reopen(
        mut file: LockedFile,
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
        let mut good_len = valid_len;
        if valid_len > 0 && !ends_with_newline(&mut file, valid_len) {
            file.write_all(b"\n")
                .map_err(|e| SessionError::io(path, e))?;
            good_len += 1;
        }
        Ok(SessionWriter::start(
            Appender::existing(path, file, good_len),
            path,
            id,
            last_entry_id,
        ))
    }

    fn start(
        appender: Appender,
        path: &Path,
        id: &str,
        last_entry_id: Option<String>,
    ) -> SessionWriter {
        let (commands, receiver) = mpsc::channel();
        let thread = std::thread::Builder::new()
            .name("session-writer".into())
            .spawn(move || write_loop(appender, receiver))
            .ok();
        SessionWriter {
            path: path.to_path_buf(),
            id: id.to_string(),
            last_entry_id: Mutex::new(last_entry_id),
            name: Mutex::new(None),
            goal: Mutex::new(None),
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

    /// Append an entry; returns its id once the line is in the file (or, before the
    /// session's first message, once it is queued to be written with it).
    pub async fn append(&self, entry: NewEntry<'_>) -> Result<String, SessionError> {
        let (id, written) = self.append_at(entry, now_millis()).await;
        written.map(|()| id)
    }

    /// Append an entry with the timestamp chosen by the caller (a compaction's summary
    /// message carries the same time as its entry, so a reload rebuilds it exactly).
    /// Returns the entry's id, and whether it (and everything before it) is in the file.
    /// An entry that could not be written keeps its id and its place: it stays queued and
    /// is written first by the next append or sync that succeeds.
    pub async fn append_at(
        &self,
        entry: NewEntry<'_>,
        timestamp: i64,
    ) -> (String, Result<(), SessionError>) {
        self.append_under(entry, timestamp, None).await
    }

    /// Move the head: what is written next continues from entry `target` (`None`: from
    /// the start) instead of the last entry. Written as a `branch` entry naming `target`
    /// as its parent, so the move survives a restart and the abandoned branch stays in the
    /// file. Returns the branch entry's id.
    pub async fn move_head(&self, target: Option<&str>) -> Result<String, SessionError> {
        let from = self.head();
        let (id, written) = self
            .append_under(
                NewEntry::Branch {
                    from: from.as_deref(),
                },
                now_millis(),
                Some(target),
            )
            .await;
        written.map(|()| id)
    }

    /// The session's name, if it was given one.
    pub fn name(&self) -> Option<String> {
        self.name
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }

    /// The name a session read from its file has.
    pub fn named(self, name: Option<String>) -> SessionWriter {
        *self.name.lock().unwrap_or_else(PoisonError::into_inner) = name;
        self
    }

    /// The session's goal, if one is set.
    pub fn goal(&self) -> Option<String> {
        self.goal
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }

    /// The goal a session read from its file has.
    pub fn with_goal(self, goal: Option<String>) -> SessionWriter {
        self.note_goal(goal);
        self
    }

    /// The name found in the older part of a long session after it was opened.
    pub fn note_name(&self, name: Option<String>) {
        *self.name.lock().unwrap_or_else(PoisonError::into_inner) = name;
    }

    /// The goal of the branch read after the head moved.
    pub fn note_goal(&self, goal: Option<String>) {
        *self.goal.lock().unwrap_or_else(PoisonError::into_inner) = goal;
    }

    /// The entry the next one will follow.
    pub fn head(&self) -> Option<String> {
        self.last_entry_id
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }

    /// Append `entry` under `parent` (`None`: under the head).
    async fn append_under(
        &self,
        entry: NewEntry<'_>,
        timestamp: i64,
        parent: Option<Option<&str>>,
    ) -> (String, Result<(), SessionError>) {
        let id = new_entry_id();
        let message = matches!(entry, NewEntry::Message(_));
        let (ack, done) = oneshot::channel();
        {
            let mut last = self
                .last_entry_id
                .lock()
                .unwrap_or_else(PoisonError::into_inner);
            let parent_id = parent.unwrap_or(last.as_deref());
            let line = match encode(entry, &id, parent_id, timestamp) {
                // No configured API key ever reaches a session file.
                Ok(line) => crate::secrets::redact_bytes(line),
                Err(e) => return (id, Err(SessionError::io(&self.path, e.into()))),
            };
            if let Err(e) = self.send(Command::Append { line, message, ack }) {
                return (id, Err(e));
            }
            // Queued in order under the lock, so the next entry names this one as parent.
            *last = Some(id.clone());
            if let NewEntry::SessionInfo { name } = entry {
                *self.name.lock().unwrap_or_else(PoisonError::into_inner) = Some(name.to_string());
            }
            if let NewEntry::Goal { goal } = entry {
                *self.goal.lock().unwrap_or_else(PoisonError::into_inner) = goal.map(String::from);
            }
        }
        let written = self.wait(done).await;
        (id, written)
    }

    /// Wait until everything appended so far is on disk.
    pub async fn sync(&self) -> Result<(), SessionError> {
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
    /// Closing the channel makes the thread write what is queued, sync and exit; wait for
    /// it so the last entries are on disk before the process ends.
    fn drop(&mut self) {
        self.commands = None;
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

fn write_loop(mut appender: Appender, commands: mpsc::Receiver<Command>) {
    for command in commands {
        match command {
            Command::Append { line, message, ack } => {
                let _ = ack.send(appender.append(&line, message));
            }
            Command::Sync(ack) => {
                let _ = ack.send(appender.sync());
            }
        }
    }
    appender.close();
}

fn header_line(path: &Path, header: &Header) -> Result<Vec<u8>, SessionError> {
    let mut line = serde_json::to_vec(header).map_err(|e| SessionError::io(path, e.into()))?;
    line.push(b'\n');
    Ok(line)
}

fn lock(file: File, path: &Path) -> Result<LockedFile, SessionError> {
    match LockedFile::try_lock(file) {
        Ok(locked) => Ok(locked),
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
