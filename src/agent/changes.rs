//! `/diff` on the `Agent` handle: what the session changed in the working tree, read from
//! its checkpoints on a blocking thread.

use super::{Agent, AgentError};
use crate::checkpoint::FileChange;

impl Agent {
    /// The files changed since the session's first checkpoint, each with its diff;
    /// `Ok(None)` when checkpoints are off (`[checkpoints] enabled = false`).
    pub async fn session_changes(&self) -> Result<Option<Vec<FileChange>>, AgentError> {
        let Some(checkpoints) = self.shared.checkpoints.clone() else {
            return Ok(None);
        };
        crate::tasks::spawn_blocking(move || checkpoints.changes_since_start())
            .await
            .map_err(|e| AgentError::Checkpoint(e.to_string()))?
            .map(Some)
            .map_err(|e| AgentError::Checkpoint(e.to_string()))
    }
}
