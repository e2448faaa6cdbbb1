//! What can go wrong with session files, worded for the user.

use std::path::PathBuf;

#[derive(Debug, thiserror::Error)]
pub enum SessionError {
    #[error("the session {} is open in another agent process; close that one first, or start a new session", .0.display())]
    Locked(PathBuf),
    #[error("{}: {source}", path.display())]
    Io {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("no session matches `{0}`")]
    NotFound(String),
    #[error("`{prefix}` matches several sessions ({candidates}); give more of the id")]
    Ambiguous { prefix: String, candidates: String },
    #[error("{}: not a session file ({reason})", path.display())]
    NotASession { path: PathBuf, reason: String },
    #[error("no entry `{0}` in this session")]
    NoSuchEntry(String),
    #[error("the session writer stopped")]
    WriterGone,
    #[error("a session's title cannot be empty")]
    EmptyTitle,
}

impl SessionError {
    pub fn io(path: impl Into<PathBuf>, source: std::io::Error) -> Self {
        SessionError::Io {
            path: path.into(),
            source,
        }
    }
}
