//! Time travel on the `Agent` handle: the checkpoints of the conversation, rewinding the
//! conversation and/or the files to before a user message (and undoing that), and the
//! session's tree with switching between its branches (forks are in `forks`). All
//! only while idle; none of it deletes history — a rewind moves the session's head.

use super::state::{Shared, lock};
use super::{Agent, AgentError};
use crate::checkpoint::{CheckpointError, Moment, Record, RestoreRequest, RewindNote, Summary};
use crate::protocol::message::Message;
use crate::protocol::outcome::SessionChange;
use crate::session::format::NewEntry;
use crate::session::tree::{SessionTree, TreeNode};
use crate::session::{self, SessionWriter};
use serde::Serialize;
use std::path::PathBuf;
use std::sync::Arc;

/// A checkpoint a rewind can go back to: the state before the tools of a user message.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct CheckpointInfo {
    pub id: String,
    /// The user message's session entry.
    pub entry_id: String,
    /// That message's index in `messages()`.
    pub message_index: usize,
    pub timestamp: i64,
    pub files: u64,
}

pub use crate::protocol::rpc::RestoreMode;

#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Rewound {
    /// What happened to the files (`None` when they were not restored).
    pub summary: Option<Summary>,
    /// The rewound message's text, for the user to edit and send again (when the
    /// conversation was rewound).
    pub text: Option<String>,
}

/// A new session started from an entry of this one.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Forked {
    pub session_id: String,
    pub path: PathBuf,
    /// When forked at a user message: its text, to edit and send in the fork.
    pub text: Option<String>,
}

fn checkpoint_error(error: CheckpointError) -> AgentError {
    match error {
        CheckpointError::ChangedOutside(paths) => AgentError::ChangedOutside(paths),
        other => AgentError::Checkpoint(other.to_string()),
    }
}

/// Holds the agent busy (no prompt starts) while a rewind or fork works; idle again when
/// dropped.
pub(super) struct Busy<'a>(&'a Arc<Shared>);

impl<'a> Busy<'a> {
    pub(super) fn start(shared: &'a Arc<Shared>) -> Result<Busy<'a>, AgentError> {
        let mut state = lock(&shared.state);
        if state.running {
            return Err(AgentError::Busy);
        }
        if let Some(error) = &state.session_error {
            return Err(AgentError::Unsaved(error.clone()));
        }
        state.running = true;
        shared.idle.send_replace(false);
        Ok(Busy(shared))
    }
}

impl Drop for Busy<'_> {
    fn drop(&mut self) {
        super::run::settle(self.0, &mut lock(&self.0.state));
    }
}

impl Agent {
    /// The conversation's messages with their session entry ids (`get_messages`).
    /// The older part of a long resumed context is read back from the file for this.
    pub fn message_entries(&self) -> Vec<(String, Arc<Message>)> {
        let (cold, held) = {
            let state = lock(&self.shared.state);
            let history = &state.history;
            let held: Vec<_> = history
                .ids()
                .iter()
                .cloned()
                .zip(history.messages().iter().cloned())
                .collect();
            (history.cold().cloned(), held)
        };
        let mut entries = match cold.map(|c| c.load_all()) {
            Some(Ok(read)) => read,
            Some(Err(error)) => {
                tracing::warn!(%error, "the earlier messages could not be read");
                Vec::new()
            }
            None => Vec::new(),
        };
        entries.extend(held);
        entries
    }

    /// The session entry of `message` when the context holds this very message (looked
    /// for from the newest): its id, empty when not kept on disk; `None` for a message the
    /// context does not hold (a failed attempt that was retried).
    pub fn entry_of(&self, message: &Arc<Message>) -> Option<String> {
        let state = lock(&self.shared.state);
        let history = &state.history;
        history
            .ids()
            .iter()
            .zip(history.messages().iter())
            .rev()
            .find(|(_, m)| Arc::ptr_eq(m, message))
            .map(|(id, _)| id.clone())
    }

    /// The checkpoints a rewind can go back to: for each user message in the context whose
    /// tools changed (or could have changed) files, the state before they ran.
    pub fn checkpoints(&self) -> Vec<CheckpointInfo> {
        let Some(checkpoints) = &self.shared.checkpoints else {
            return Vec::new();
        };
        let records = checkpoints.records();
        let state = lock(&self.shared.state);
        let mut seen = std::collections::HashSet::new();
        records
            .iter()
            .filter(|r| r.moment == Moment::Before)
            .filter_map(|r| {
                let entry = r.entry_id.clone()?;
                let index = state.history.position(&entry)?;
                seen.insert(entry.clone()).then(|| CheckpointInfo {
                    id: r.id.clone(),
                    entry_id: entry,
                    message_index: index,
                    timestamp: r.timestamp,
                    files: r.files,
                })
            })
            .collect()
    }

    /// The checkpoint that holds the files as they were before user message `entry_id`'s
    /// tools ran: its own, or — when it ran none — the next one after it.
    fn checkpoint_for(&self, entry_id: &str) -> Result<Option<Record>, AgentError> {
        let Some(checkpoints) = &self.shared.checkpoints else {
            return Err(AgentError::Checkpoint(
                "checkpoints are off ([checkpoints] enabled = false)".to_string(),
            ));
        };
        // The records first: listing them waits for one still being stored, which must
        // not hold the engine's state meanwhile.
        let records = checkpoints.records();
        let state = lock(&self.shared.state);
        let start = state
            .history
            .position(entry_id)
            .ok_or_else(|| AgentError::NoSuchMessage(entry_id.to_string()))?;
        Ok(records
            .into_iter()
            .filter(|r| r.moment == Moment::Before)
            .find(|r| {
                r.entry_id
                    .as_deref()
                    .and_then(|e| state.history.position(e))
                    .is_some_and(|i| i >= start)
            }))
    }

    /// Whether there is a rewind `undo_rewind` can undo.
    pub fn can_undo_rewind(&self) -> bool {
        self.shared
            .checkpoints
            .as_ref()
            .is_some_and(|c| c.last_undo().is_some())
    }

    /// The user message a checkpoint precedes.
    pub fn checkpoint_entry(&self, checkpoint_id: &str) -> Result<String, AgentError> {
        self.checkpoints()
            .into_iter()
            .find(|c| c.id == checkpoint_id)
            .map(|c| c.entry_id)
            .ok_or_else(|| {
                AgentError::Checkpoint(format!(
                    "no checkpoint `{checkpoint_id}` in this conversation"
                ))
            })
    }

    /// Go back to before user message `entry_id`: the files (as they were before its tools
    /// ran), the conversation (the session's head moves to the entry before it; the rest
    /// stays in the file as an abandoned branch), or both. Refused, changing nothing, when
    /// a file the restore would change was changed outside the agent since — unless
    /// `force`. Undo it with `undo_rewind`.
    pub async fn rewind(
        &self,
        entry_id: &str,
        mode: RestoreMode,
        force: bool,
    ) -> Result<Rewound, AgentError> {
        let _busy = Busy::start(&self.shared)?;
        let (index, text, before_compaction) = {
            let state = lock(&self.shared.state);
            let index = state
                .history
                .position(entry_id)
                .ok_or_else(|| AgentError::NoSuchMessage(entry_id.to_string()))?;
            let message = match state.history.message(index) {
                Some(Ok(message)) => message,
                Some(Err(error)) => return Err(AgentError::Checkpoint(error.to_string())),
                None => return Err(AgentError::NoSuchMessage(entry_id.to_string())),
            };
            match message.as_ref() {
                // A compaction's summary: going back to before the compaction.
                message if index == 0 && session::load::is_summary(message) => {
                    (index, String::new(), true)
                }
                Message::User(user) => (index, user.typed_text().to_string(), false),
                _ => return Err(AgentError::NoSuchMessage(entry_id.to_string())),
            }
        };
        let session = self.shared.session();
        if before_compaction && mode.conversation() && session.is_none() {
            return Err(AgentError::Checkpoint(
                "this session is not kept on disk: what a compaction summarised cannot be \
                 brought back"
                    .to_string(),
            ));
        }
        let head_before = session.as_ref().and_then(|s| s.head());
        let note = |target: Option<String>| RewindNote {
            target,
            head_before: if mode.conversation() {
                head_before.clone()
            } else {
                None
            },
        };
        let mut rewound = Rewound::default();
        if mode.code() {
            let target = self.checkpoint_for(entry_id)?;
            rewound.summary = Some(match target {
                Some(target) => {
                    self.restore(target.id.clone(), force, note(Some(target.id)))
                        .await?
                }
                // No tool ran since: the files are as they were.
                None => Summary::default(),
            });
        }
        if mode.conversation() {
            if !mode.code()
                && let Some(checkpoints) = self.shared.checkpoints.clone()
            {
                let entry = Some(entry_id.to_string());
                let note = note(None);
                blocking(move || checkpoints.note_rewind(entry.as_deref(), note)).await?;
            }
            if let Some(session) = &session {
                let parent = {
                    let path = session.path().to_path_buf();
                    let entry = entry_id.to_string();
                    blocking(move || session::tree::parent_of(&path, &entry)).await?
                };
                session
                    .move_head(parent.as_deref())
                    .await
                    .map_err(|e| AgentError::Checkpoint(e.to_string()))?;
                if before_compaction {
                    // The conversation as it was before the compaction, read back whole.
                    self.reload(session).await?;
                }
            }
            if !before_compaction {
                lock(&self.shared.state).history.truncate(index);
            }
            rewound.text = Some(text);
            self.shared.session_changed(SessionChange::Rewind);
        }
        Ok(rewound)
    }

    /// Undo the last rewind: the files as they were just before it (when it restored
    /// files), and the conversation's head back where it was (when it moved it).
    pub async fn undo_rewind(&self, force: bool) -> Result<Rewound, AgentError> {
        let _busy = Busy::start(&self.shared)?;
        let checkpoints = self
            .shared
            .checkpoints
            .clone()
            .ok_or_else(|| AgentError::Checkpoint("checkpoints are off".to_string()))?;
        let undo = checkpoints
            .last_undo()
            .ok_or_else(|| AgentError::Checkpoint("there is no rewind to undo".to_string()))?;
        let note = undo.rewind.clone().unwrap_or(RewindNote {
            target: None,
            head_before: None,
        });
        let session = self.shared.session();
        let head_now = session.as_ref().and_then(|s| s.head());
        let back = RewindNote {
            target: note.target.as_ref().map(|_| undo.id.clone()),
            head_before: note.head_before.as_ref().and(head_now),
        };
        let mut rewound = Rewound::default();
        if note.target.is_some() {
            rewound.summary = Some(self.restore(undo.id.clone(), force, back).await?);
        } else {
            let entry = undo.entry_id.clone();
            blocking(move || checkpoints.note_rewind(entry.as_deref(), back)).await?;
        }
        if let (Some(head), Some(session)) = (&note.head_before, &session) {
            self.move_to(session, head).await?;
            self.shared.session_changed(SessionChange::UndoRewind);
        }
        Ok(rewound)
    }

    async fn restore(
        &self,
        target: String,
        force: bool,
        note: RewindNote,
    ) -> Result<Summary, AgentError> {
        let checkpoints = self
            .shared
            .checkpoints
            .clone()
            .ok_or_else(|| AgentError::Checkpoint("checkpoints are off".to_string()))?;
        let entry = self.shared.session().and_then(|s| s.head());
        blocking(move || {
            checkpoints.restore(RestoreRequest {
                target: &target,
                force,
                entry_id: entry,
                note,
            })
        })
        .await
    }

    /// Make entry `head` of the session the conversation's head, and the context the
    /// branch that leads to it.
    async fn move_to(&self, session: &Arc<SessionWriter>, head: &str) -> Result<(), AgentError> {
        let path = session.path().to_path_buf();
        let exists = {
            let (path, head) = (path.clone(), head.to_string());
            blocking(move || session::tree::parent_of(&path, &head).map(drop)).await
        };
        exists?;
        session
            .move_head(Some(head))
            .await
            .map_err(|e| AgentError::Checkpoint(e.to_string()))?;
        self.reload(session).await
    }

    /// Make the context the branch that leads to the session's head, read from its file
    /// (with the branch's goal).
    async fn reload(&self, session: &Arc<SessionWriter>) -> Result<(), AgentError> {
        let path = session.path().to_path_buf();
        // Lazily: a long never-compacted branch's older part stays in the file
        // (`session::cold`); what only it says (the goal) is taken on when it is found.
        let loaded = blocking(move || session::load::load_lazy(&path)).await?;
        let cold = loaded.cold;
        let mut history = loaded.context;
        for (id, message) in history.iter_mut().filter(|(id, _)| id.is_empty()) {
            *id = session
                .append(NewEntry::Message(message))
                .await
                .map_err(|e| AgentError::Checkpoint(e.to_string()))?;
        }
        session.note_goal(loaded.goal.clone());
        let mut state = lock(&self.shared.state);
        state.history = super::history::History::with_cold(cold.clone(), history);
        if std::mem::replace(&mut state.goal, loaded.goal) != state.goal {
            self.shared
                .goal_changed(&state, crate::protocol::event::GoalChange::Session);
        }
        if cold.is_some_and(|part| !part.is_found()) {
            let shared = self.shared.clone();
            let runtime = self.shared.runtime.clone();
            crate::tasks::spawn_on(
                &runtime,
                async move { super::usage::adopt_older(&shared).await },
            );
        }
        Ok(())
    }

    /// Switch the conversation to another branch of the session: its head becomes entry
    /// `entry_id` (any entry of the tree, e.g. the tip of an abandoned branch). With
    /// `files`, the files come back as that branch left them too: the checkpoint taken
    /// after the branch's last mutating call is restored as a rewind restores one (refused
    /// when a file it would change was changed outside the agent, unless `force`; undone
    /// by `undo_rewind`). The summary says what it did; `None` when the files were not
    /// asked for or the branch changed none (no checkpoint: they are left as they are).
    pub async fn switch_branch(
        &self,
        entry_id: &str,
        files: bool,
        force: bool,
    ) -> Result<Option<Summary>, AgentError> {
        let _busy = Busy::start(&self.shared)?;
        let session = self.shared.session().ok_or_else(|| {
            AgentError::Checkpoint("this session is not kept on disk".to_string())
        })?;
        let summary = match files {
            true => self.restore_branch_files(&session, entry_id, force).await?,
            false => None,
        };
        self.move_to(&session, entry_id).await?;
        self.shared.session_changed(SessionChange::SwitchBranch);
        Ok(summary)
    }

    /// The files as the branch leading to `entry_id` left them: the last `after` record
    /// of a call made on it, restored; `None` when the branch made none.
    async fn restore_branch_files(
        &self,
        session: &Arc<SessionWriter>,
        entry_id: &str,
        force: bool,
    ) -> Result<Option<Summary>, AgentError> {
        let Some(checkpoints) = &self.shared.checkpoints else {
            return Err(AgentError::Checkpoint(
                "checkpoints are off ([checkpoints] enabled = false)".to_string(),
            ));
        };
        let branch: std::collections::HashSet<String> = {
            let (path, entry) = (session.path().to_path_buf(), entry_id.to_string());
            blocking(move || session::tree::branch_of(&path, &entry))
                .await?
                .into_iter()
                .collect()
        };
        let last = checkpoints.records().into_iter().rev().find(|r| {
            r.moment == Moment::After && r.entry_id.as_ref().is_some_and(|e| branch.contains(e))
        });
        let Some(last) = last else {
            return Ok(None);
        };
        let note = RewindNote {
            target: Some(last.id.clone()),
            head_before: session.head(),
        };
        Ok(Some(self.restore(last.id, force, note).await?))
    }

    /// The session's tree of messages (every branch), marking the current one. A session
    /// whose file is not written yet (no message so far) has the messages it holds: none.
    pub async fn tree(&self) -> Result<SessionTree, AgentError> {
        let entries = self.message_entries();
        match self.shared.session() {
            Some(session) => {
                let path = session.path().to_path_buf();
                blocking(move || match path.exists() {
                    true => session::tree::tree(&path),
                    false => Ok(linear_tree(&entries)),
                })
                .await
            }
            None => Ok(linear_tree(&entries)),
        }
    }
}

/// The tree of a session that is not on disk: one branch.
fn linear_tree(entries: &[(String, Arc<Message>)]) -> SessionTree {
    let mut nodes: Vec<TreeNode> = Vec::new();
    for (id, message) in entries {
        let role = match message.as_ref() {
            Message::User(_) => "user",
            Message::Assistant(_) => "assistant",
            Message::ToolResult(_) => "toolResult",
        };
        nodes.push(TreeNode {
            id: id.clone(),
            parent_id: nodes.last().map(|n| n.id.clone()),
            role: role.to_string(),
            text: session::tree::preview(message),
            timestamp: message.timestamp(),
            current: true,
        });
    }
    SessionTree {
        head: nodes.last().map(|n| n.id.clone()),
        nodes,
    }
}

/// Run blocking checkpoint or session work off the async workers.
pub(super) async fn blocking<T: Send + 'static, E: Send + 'static>(
    work: impl FnOnce() -> Result<T, E> + Send + 'static,
) -> Result<T, AgentError>
where
    BlockingError: From<E>,
{
    match crate::tasks::spawn_blocking(work).await {
        Ok(result) => result.map_err(|e| BlockingError::from(e).0),
        Err(e) => Err(AgentError::Checkpoint(format!("internal error: {e}"))),
    }
}

/// An error from blocking work, as the agent reports it.
pub struct BlockingError(AgentError);

impl From<CheckpointError> for BlockingError {
    fn from(error: CheckpointError) -> Self {
        BlockingError(checkpoint_error(error))
    }
}

impl From<session::SessionError> for BlockingError {
    fn from(error: session::SessionError) -> Self {
        BlockingError(AgentError::Checkpoint(error.to_string()))
    }
}

impl From<BlockingError> for AgentError {
    fn from(error: BlockingError) -> Self {
        error.0
    }
}
