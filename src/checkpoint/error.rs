//! What can go wrong with checkpoints, worded for the user.

use std::path::PathBuf;

#[derive(Debug, thiserror::Error)]
pub enum CheckpointError {
    /// The store under `$AGENT_HOME/checkpoints` cannot be written or read.
    #[error("the checkpoint store {}: {source}", path.display())]
    Store {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    /// A stored object does not hash to its name (a disk fault, or the file was edited).
    #[error("checkpoint object {0} is damaged (its content does not match its hash)")]
    Damaged(String),
    #[error("no checkpoint `{0}` in this session")]
    NotFound(String),
    /// Restoring would overwrite files changed outside the agent since the checkpoint.
    #[error("{}", conflict_text(.0))]
    ChangedOutside(Vec<String>),
    #[error("the workspace {}: {source}", path.display())]
    Workspace {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
}

impl CheckpointError {
    pub fn store(path: impl Into<PathBuf>, source: std::io::Error) -> Self {
        CheckpointError::Store {
            path: path.into(),
            source,
        }
    }
}

fn conflict_text(paths: &[String]) -> String {
    const SHOWN: usize = 5;
    let mut list = paths
        .iter()
        .take(SHOWN)
        .cloned()
        .collect::<Vec<_>>()
        .join(", ");
    if paths.len() > SHOWN {
        list.push_str(&format!(" and {} more", paths.len() - SHOWN));
    }
    format!(
        "{} file(s) changed outside the agent since the checkpoint would be overwritten: {list}; nothing was changed (confirm to restore anyway)",
        paths.len()
    )
}
