//! Sessions: every message of a conversation kept on disk as append-only JSONL
//! (`format`), written by one writer (`writer`), read back tolerantly (`load`), and found
//! by working directory or id (`store`). `open` turns the user's choice (`-c`, `-r`,
//! `--session`, `--no-session`, or a new session) into a writer and the history to resume.
//! The format is documented in docs/sessions.md.

mod appender;
pub mod cold;
mod entry_line;
mod error;
pub mod export;
pub mod format;
pub mod index;
pub mod load;
mod lock;
pub mod manage;
pub mod orphans;
pub mod store;
mod tail;
pub mod title;
pub mod tree;
mod writer;

pub use error::SessionError;
pub use writer::SessionWriter;

use crate::llm::request::ThinkingLevel;
use crate::protocol::message::{Message, now_millis};
use format::{Header, NewEntry};
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// Which session a run uses.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Choice {
    New,
    /// The most recent session of the working directory (a new one if there is none).
    Continue,
    /// By id prefix.
    Resume(String),
    /// This file: resumed if it exists, created otherwise.
    Path(PathBuf),
    /// Nothing on disk.
    Ephemeral,
}

/// An open session, ready to hand to the agent.
pub struct Opened {
    pub id: String,
    pub path: Option<PathBuf>,
    pub writer: Option<Arc<SessionWriter>>,
    pub history: Vec<(String, Arc<Message>)>,
    /// The messages before `history`, not read yet (`open_lazy` only; see `cold`).
    pub cold: Option<cold::ColdPart>,
    /// The provider and model the session last used.
    pub model: Option<(String, String)>,
    pub thinking: Option<ThinkingLevel>,
    /// One-line notes for the user (a repaired file, a new session where one was expected).
    pub notices: Vec<String>,
}

/// A time-ordered unique id: milliseconds since the epoch and 48 random bits, in hex.
pub fn new_id() -> String {
    format!("{:012x}{:012x}", now_millis(), fastrand::u64(..1 << 48))
}

pub async fn open(choice: Choice, root: &Path, cwd: &Path) -> Result<Opened, SessionError> {
    open_with(choice, root, cwd, false).await
}

/// `open`, a resumed context far larger than any model's window read only from its newest
/// part (`Opened::cold`): for a front end whose engine takes a cold part.
pub async fn open_lazy(choice: Choice, root: &Path, cwd: &Path) -> Result<Opened, SessionError> {
    open_with(choice, root, cwd, true).await
}

async fn open_with(
    choice: Choice,
    root: &Path,
    cwd: &Path,
    lazy: bool,
) -> Result<Opened, SessionError> {
    match choice {
        Choice::Ephemeral => Ok(Opened {
            id: new_id(),
            path: None,
            writer: None,
            history: Vec::new(),
            cold: None,
            model: None,
            thinking: None,
            notices: Vec::new(),
        }),
        Choice::New => {
            let id = new_id();
            create(&store::new_path(root, cwd, &id, now_millis()), &id, cwd)
        }
        Choice::Continue => match store::latest_for(root, cwd) {
            Some(latest) => resume(&latest.path, lazy).await,
            None => {
                let id = new_id();
                let mut opened = create(&store::new_path(root, cwd, &id, now_millis()), &id, cwd)?;
                opened
                    .notices
                    .push("no earlier session in this directory; starting a new one".to_string());
                Ok(opened)
            }
        },
        Choice::Resume(prefix) => resume(&store::find_by_id(root, &prefix)?, lazy).await,
        Choice::Path(path) => create_or_resume(&path, cwd, lazy).await,
    }
}

/// A path the user named: created exclusively and locked at once when it does not exist —
/// so two agents given the same new path cannot both write it: the second finds it and is
/// refused by its lock — and resumed when it does.
async fn create_or_resume(path: &Path, cwd: &Path, lazy: bool) -> Result<Opened, SessionError> {
    let id = new_id();
    let header = Header::new(&id, &cwd.to_string_lossy(), now_millis());
    match SessionWriter::create_now(path, &header)? {
        Some(writer) => Ok(Opened {
            id,
            path: Some(path.to_path_buf()),
            writer: Some(Arc::new(writer)),
            history: Vec::new(),
            cold: None,
            model: None,
            thinking: None,
            notices: Vec::new(),
        }),
        None => resume(path, lazy).await,
    }
}

fn create(path: &Path, id: &str, cwd: &Path) -> Result<Opened, SessionError> {
    let header = Header::new(id, &cwd.to_string_lossy(), now_millis());
    let writer = SessionWriter::create(path, &header)?;
    Ok(Opened {
        id: id.to_string(),
        path: Some(path.to_path_buf()),
        writer: Some(Arc::new(writer)),
        history: Vec::new(),
        cold: None,
        model: None,
        thinking: None,
        notices: Vec::new(),
    })
}

/// Continue the session in the existing file at `path`.
pub async fn open_file(path: &Path) -> Result<Opened, SessionError> {
    resume(path, false).await
}

/// `open_file`, lazily (`open_lazy`).
pub async fn open_file_lazy(path: &Path) -> Result<Opened, SessionError> {
    resume(path, true).await
}

async fn resume(path: &Path, lazy: bool) -> Result<Opened, SessionError> {
    let locked = SessionWriter::lock_existing(path)?;
    let loaded = if lazy {
        load::load_lazy(path)?
    } else {
        load::load(path)?
    };
    let writer = SessionWriter::reopen(
        locked,
        path,
        &loaded.header.id,
        loaded.valid_len,
        loaded.last_entry_id.clone(),
    )?
    .named(loaded.name.clone())
    .with_goal(loaded.goal.clone());
    let mut history = loaded.context;
    // Interrupted tool calls were answered on load; write those answers down too.
    for (id, message) in history.iter_mut().filter(|(id, _)| id.is_empty()) {
        *id = writer.append(NewEntry::Message(message)).await?;
    }
    if !loaded.repairs.is_empty() {
        writer.sync().await?;
    }
    let mut notices: Vec<String> = loaded
        .warnings
        .iter()
        .map(|w| format!("{}: {w}", path.display()))
        .collect();
    if !loaded.repairs.is_empty() {
        notices.push(format!(
            "{} tool call(s) were interrupted when the session stopped; the model is told so",
            loaded.repairs.len()
        ));
    }
    Ok(Opened {
        id: loaded.header.id,
        path: Some(path.to_path_buf()),
        writer: Some(Arc::new(writer)),
        history,
        cold: loaded.cold,
        model: loaded.model,
        thinking: loaded.thinking,
        notices,
    })
}
