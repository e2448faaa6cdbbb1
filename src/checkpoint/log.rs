//! A session's checkpoint records: `checkpoints/sessions/<session id>.jsonl`, one JSON line
//! per recorded state of the working tree, in the order they were taken. A record names
//! the tree (in the object store), which session entry it belongs to, and why it was taken:
//! before or after a mutating tool call, or around a restore (the state a restore replaced
//! is what "undo last rewind" brings back).

use super::error::CheckpointError;
use super::scan::Skipped;
use serde::{Deserialize, Serialize};
use std::fs::OpenOptions;
use std::io::{BufRead, BufReader, Write};
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};

/// Why a state was recorded.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Moment {
    /// Before a mutating tool call (or `!command`): what a rewind brings back.
    Before,
    /// After it: the state the agent left; a later difference was made by someone else.
    After,
    /// Just before a restore changed the files: what "undo last rewind" brings back.
    Undo,
    /// Just after a restore.
    Restored,
    /// Just after an interrupted restore was rolled back (the `undo` record before it
    /// names the state that came back): the rewind never happened.
    RolledBack,
}

/// What a rewind did, kept on its `undo` record so it can be undone.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct RewindNote {
    /// The checkpoint the files were restored to (`None`: only the conversation moved).
    pub target: Option<String>,
    /// The session entry that was the conversation's head before the rewind, when the
    /// conversation was rewound too.
    pub head_before: Option<String>,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Record {
    pub id: String,
    pub moment: Moment,
    /// The session entry this state belongs to: the user message whose tools ran (the
    /// conversation's head for a `!command` or a restore).
    pub entry_id: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool_call_id: Option<String>,
    pub timestamp: i64,
    /// The root listing in the object store.
    pub root: String,
    pub files: u64,
    pub bytes: u64,
    /// Bytes read and stored for this record: what changed since the one before.
    #[serde(default)]
    pub new_bytes: u64,
    /// `false` when the walk stopped at `max_files`.
    pub complete: bool,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub skipped: Vec<Skipped>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rewind: Option<RewindNote>,
}

pub fn path_for(root: &Path, session_id: &str) -> PathBuf {
    root.join("sessions").join(format!("{session_id}.jsonl"))
}

/// Every record of the log at `path` (none when it does not exist); lines that do not
/// parse (a torn last line) are skipped.
pub fn read(path: &Path) -> Result<Vec<Record>, CheckpointError> {
    let file = match std::fs::File::open(path) {
        Ok(file) => file,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(e) => return Err(CheckpointError::store(path, e)),
    };
    let mut records = Vec::new();
    for line in BufReader::new(file).split(b'\n') {
        let line = line.map_err(|e| CheckpointError::store(path, e))?;
        if let Ok(record) = serde_json::from_slice::<Record>(&line) {
            records.push(record);
        }
    }
    Ok(records)
}

/// Append `records` to the log at `path` in one write (created 0600 when missing). A
/// torn last line left by a crash is ended first, so it never swallows a record.
pub fn append(path: &Path, records: &[Record]) -> Result<(), CheckpointError> {
    let error = |e| CheckpointError::store(path, e);
    if let Some(dir) = path.parent() {
        super::store::private_dir(dir).map_err(error)?;
    }
    let mut file = OpenOptions::new()
        .create(true)
        .append(true)
        .read(true)
        .mode(0o600)
        .open(path)
        .map_err(error)?;
    let mut bytes = Vec::new();
    if !ends_with_newline(&mut file) {
        bytes.push(b'\n');
    }
    for record in records {
        serde_json::to_writer(&mut bytes, record).map_err(|e| error(e.into()))?;
        bytes.push(b'\n');
    }
    file.write_all(&bytes).map_err(error)
}

fn ends_with_newline(file: &mut std::fs::File) -> bool {
    use std::io::{Read, Seek, SeekFrom};
    let Ok(length) = file.metadata().map(|m| m.len()) else {
        return true;
    };
    if length == 0 {
        return true;
    }
    let mut last = [0u8; 1];
    file.seek(SeekFrom::Start(length - 1)).is_ok()
        && file.read_exact(&mut last).is_ok()
        && last[0] == b'\n'
}
