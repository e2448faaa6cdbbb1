//! The engine's side of checkpoints: the working tree is recorded before every mutating
//! tool call (and after it, so a later rewind can tell the agent's changes from anyone
//! else's), on a blocking thread, and announced with a `checkpoint` event. A checkpoint
//! that cannot be stored (the disk is full, the store unwritable) keeps the call from
//! running and stops the run, as a session that cannot be written does: nothing changes
//! the files without a way back. One after a call that already ran is a warning `notice`.

use super::run::Run;
use super::state::{Shared, lock};
use crate::checkpoint::{CheckpointError, Moment, Record};
use crate::protocol::event::{AgentEvent, NoticeLevel, SkippedFile};
use crate::protocol::message::ToolCall;
use crate::tools::ToolOutput;

impl Shared {
    /// Record the working tree now (`None` when checkpoints are off), keyed by `entry_id`
    /// (the user message whose tools follow) and `key` (the tool call). A `before` record
    /// is announced with a `checkpoint` event.
    pub async fn record_checkpoint(
        &self,
        moment: Moment,
        entry_id: Option<String>,
        key: Option<String>,
    ) -> Result<Option<Record>, CheckpointError> {
        let Some(checkpoints) = self.checkpoints.clone() else {
            return Ok(None);
        };
        let record = crate::tasks::spawn_blocking(move || {
            checkpoints.take(moment, entry_id.as_deref(), key.as_deref())
        })
        .await
        .map_err(|e| CheckpointError::store(".", std::io::Error::other(e.to_string())))??;
        if moment == Moment::Before {
            self.emit(AgentEvent::Checkpoint {
                id: record.id.clone(),
                entry_id: record.entry_id.clone(),
                files: record.files,
                bytes: record.bytes,
                skipped: record
                    .skipped
                    .iter()
                    .map(|s| SkippedFile {
                        path: s.path.clone(),
                        reason: s.reason.clone(),
                    })
                    .collect(),
            });
        }
        Ok(Some(record))
    }

    /// The state a call (or command) left could not be recorded: say so, as a rewind past
    /// it will take its changes for changes made outside the agent.
    fn warn_checkpoint_after(&self, what: &str, error: &CheckpointError) {
        tracing::warn!(%error, "checkpoint after {what} failed");
        self.emit(AgentEvent::Notice {
            level: NoticeLevel::Warning,
            message: format!(
                "the checkpoint after {what} could not be saved: {error}; a rewind past it \
                 will treat its changes as made outside the agent"
            ),
        });
    }

    /// The entry of the latest user message in the context: what a tool call belongs to.
    pub fn current_prompt_entry(&self) -> Option<String> {
        lock(&self.state).history.last_user_id()
    }
}

impl Run {
    /// Before a mutating call: record the working tree. `Err` is the result the call gets
    /// instead of running (the store failed; the run then stops).
    pub(crate) async fn checkpoint_before(&mut self, call: &ToolCall) -> Result<(), ToolOutput> {
        let entry = self.shared.current_prompt_entry();
        match self
            .shared
            .record_checkpoint(Moment::Before, entry, Some(call.id.clone()))
            .await
        {
            Ok(Some(_)) => {
                self.checkpointed_call = Some(call.id.clone());
                Ok(())
            }
            Ok(None) => Ok(()),
            Err(error) => {
                let text = format!("the checkpoint before this call could not be saved: {error}");
                tracing::error!(%error, "checkpoint failed");
                self.checkpoint_failure = Some(text.clone());
                Err(ToolOutput::error(format!("Not executed: {text}.")))
            }
        }
    }

    /// After a call that was checkpointed: record what it left. The record is taken now,
    /// on a blocking thread, but not waited for: the result goes to the model while it is
    /// stored (issue 32: it was on every tool round's critical path). Everything that
    /// comes after it — the next call's checkpoint (so the next call does not run before
    /// it is stored), a rewind, the list of records, the end of the run — waits for it
    /// (`Checkpoints::begin`).
    pub(crate) fn checkpoint_after(&mut self, call: &ToolCall) {
        if self.checkpointed_call.as_deref() != Some(call.id.as_str()) {
            return;
        }
        self.checkpointed_call = None;
        let Some(checkpoints) = self.shared.checkpoints.clone() else {
            return;
        };
        let entry = self.shared.current_prompt_entry();
        let begun = checkpoints.begin();
        let shared = self.shared.clone();
        let (key, name) = (call.id.clone(), call.name.clone());
        crate::tasks::spawn_blocking(move || {
            if let Err(error) =
                checkpoints.take_begun(&begun, Moment::After, entry.as_deref(), Some(&key))
            {
                // The call already ran and its result stands; the run goes on (the next
                // checkpoint stops it if the store still fails).
                shared.warn_checkpoint_after(&format!("`{name}`"), &error);
            }
            // Only now may what waits for the record go on: the run's end comes after the
            // warning, not before it (where `-p` would exit without it).
            drop(begun);
        });
    }

    /// Wait for the records begun (the last call's `checkpoint_after`) to be stored.
    pub(crate) async fn settle_checkpoints(&self) {
        let Some(checkpoints) = self.shared.checkpoints.clone().filter(|c| !c.settled()) else {
            return;
        };
        let _ = crate::tasks::spawn_blocking(move || checkpoints.settle()).await;
    }
}

impl super::Agent {
    /// Run a shell command the user typed (`!command`, RPC `bash`) between two checkpoints,
    /// as a mutating tool call is run, so a rewind covers what it did. `Err` (the command
    /// was not run) when the checkpoint before it could not be stored.
    pub async fn checkpointed<T>(
        &self,
        work: impl std::future::Future<Output = T>,
    ) -> Result<T, super::AgentError> {
        let key = Some(format!("user-{}", crate::session::new_id()));
        let entry = self.shared.current_prompt_entry();
        if let Err(error) = self
            .shared
            .record_checkpoint(Moment::Before, entry.clone(), key.clone())
            .await
        {
            return Err(super::AgentError::Checkpoint(format!(
                "the checkpoint before this command could not be saved, so it was not run: {error}"
            )));
        }
        let output = work.await;
        if let Err(error) = self
            .shared
            .record_checkpoint(Moment::After, entry, key)
            .await
        {
            self.shared.warn_checkpoint_after("the command", &error);
        }
        Ok(output)
    }
}
