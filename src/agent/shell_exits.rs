//! Telling the model, once, that a background shell ended on its own: a shell it started
//! (a dev server, a watcher) that exits is otherwise noticed only if the model happens to
//! call `bash_output`. The note rides along with the next tool result or, between turns,
//! the next user message — where the model reads anyway, so no message of its own is
//! needed and every tool call still gets exactly one result.

use super::run::Run;
use super::state::lock;
use crate::protocol::message::Content;

impl Run {
    /// The notes about background shells whose end the model has not been told, as one
    /// text block; `None` when there is nothing to tell. Each end is told once.
    pub(crate) fn shell_exit_notes(&self) -> Option<Content> {
        let shells = lock(&self.shared.state).shells.clone();
        let notes: Vec<String> = shells
            .unreported_exits()
            .iter()
            .map(|note| note.render())
            .collect();
        // What a command printed may hold a configured key, as any tool output may.
        (!notes.is_empty()).then(|| Content::text(crate::secrets::redact_string(notes.join("\n"))))
    }
}
