//! New sessions made from this one: a fork at an entry, a clone of the whole current
//! branch, and the user messages a fork can start from. The new session becomes the
//! agent's; the checkpoints of the history it holds come along.

use super::rewind::{Busy, Forked, blocking};
use super::state::lock;
use super::{Agent, AgentError};
use crate::protocol::message::Message;
use crate::protocol::outcome::SessionChange;
use crate::session;

impl Agent {
    /// Start a new session from entry `entry_id` of this one and continue in it: at a
    /// user message, the fork holds what came before it (and hands back its text to edit);
    /// at any other entry, everything up to and including it. Its header names this
    /// session and the entry.
    pub async fn fork(&self, entry_id: &str) -> Result<Forked, AgentError> {
        let session = self.disk_session("forked")?;
        self.save_session().await?;
        let text = {
            let state = lock(&self.shared.state);
            state.history.position(entry_id).and_then(|i| {
                match state.history.message(i)?.ok()?.as_ref() {
                    Message::User(user) => Some(user.typed_text().to_string()),
                    _ => None,
                }
            })
        };
        let at = if text.is_some() {
            let (path, entry) = (session.path().to_path_buf(), entry_id.to_string());
            blocking(move || session::tree::parent_of(&path, &entry)).await?
        } else {
            Some(entry_id.to_string())
        };
        self.continue_in_copy(&session, at, text, SessionChange::Fork)
            .await
    }

    /// Continue in a copy of this session: a new session file holding the current branch
    /// up to the head (settings and name included), its header naming this session and
    /// the head. Only while idle.
    pub async fn clone_session(&self) -> Result<Forked, AgentError> {
        let session = self.disk_session("cloned")?;
        let head = session.head();
        self.continue_in_copy(&session, head, None, SessionChange::Clone)
            .await
    }

    /// Every user message of the session file (every branch, in the order written) with
    /// its entry id: where a fork can start. None without a session file.
    pub async fn fork_points(&self) -> Result<Vec<(String, String)>, AgentError> {
        let Some(session) = self.shared.session() else {
            return Ok(Vec::new());
        };
        self.save_session().await?;
        let path = session.path().to_path_buf();
        blocking(move || session::tree::user_messages(&path)).await
    }

    fn disk_session(
        &self,
        done: &str,
    ) -> Result<std::sync::Arc<session::SessionWriter>, AgentError> {
        self.shared.session().ok_or_else(|| {
            AgentError::Checkpoint(format!(
                "this session is not kept on disk (--no-session), so it cannot be {done}"
            ))
        })
    }

    /// Write a new session file holding the branch of `session` that leads to `at`, and
    /// continue in it.
    async fn continue_in_copy(
        &self,
        session: &std::sync::Arc<session::SessionWriter>,
        at: Option<String>,
        text: Option<String>,
        change: SessionChange,
    ) -> Result<Forked, AgentError> {
        // What is queued for the file (after a failed write) goes into the copy too.
        self.save_session().await?;
        let busy = Busy::start(&self.shared)?;
        let source = session.path().to_path_buf();
        let id = session::new_id();
        let dest =
            session::store::sibling_path(&source, &id, crate::protocol::message::now_millis());
        let cwd = self.shared.settings().cwd.to_string_lossy().into_owned();
        {
            let (source, dest, id, at) = (source.clone(), dest.clone(), id.clone(), at.clone());
            blocking(move || session::tree::fork(&source, at.as_deref(), &dest, &id, &cwd)).await?;
        }
        // Lazily: the copy of a long never-compacted branch is not parsed whole
        // (`session::cold`).
        let opened = session::open_file_lazy(&dest)
            .await
            .map_err(|e| AgentError::Checkpoint(e.to_string()))?;
        if let Some(checkpoints) = self.shared.checkpoints.clone() {
            // Every entry of the copy: the older part's places are found for this (its
            // lines are not parsed).
            let cold = opened.cold.clone();
            let held: Vec<String> = opened.history.iter().map(|(id, _)| id.clone()).collect();
            let kept: std::collections::HashSet<String> = crate::tasks::spawn_blocking(move || {
                let older = cold
                    .iter()
                    .flat_map(|part| part.entries().iter().map(|e| e.id.clone()));
                older.chain(held).collect()
            })
            .await
            .map_err(|e| AgentError::Checkpoint(format!("internal error: {e}")))?;
            let new_id = id.clone();
            blocking(move || {
                checkpoints.copy_records(&new_id, |r| {
                    r.entry_id.as_ref().is_some_and(|e| kept.contains(e))
                })
            })
            .await?;
        }
        drop(busy);
        let previous = self.replace_session_with_cold(
            opened.writer,
            opened.history,
            opened.cold,
            None,
            change,
        )?;
        if let Some(previous) = previous {
            let _ = crate::tasks::spawn_blocking(move || drop(previous)).await;
        }
        Ok(Forked {
            session_id: id,
            path: dest,
            text,
        })
    }
}
