//! The RPC's own command that takes time: `export_html` (stopping it, by `abort`, stops
//! the wait, not a write begun).

use super::Context;
use super::commands::Answer;
use crate::session::export::{Source, export_html as write_html};
use serde_json::json;
use std::path::PathBuf;
use tokio_util::sync::CancellationToken;

/// Write the session as HTML to `output_path` (relative to the working directory), by
/// default `agent-session-ID.html` there. Stopping it stops the wait, not a write begun.
pub(super) async fn export_html(
    context: &Context,
    output_path: Option<String>,
    cancel: &CancellationToken,
) -> Answer {
    let session = context.agent.snapshot().session;
    let output = context.settings.cwd.join(match output_path {
        Some(path) if !path.trim().is_empty() => PathBuf::from(path),
        _ => PathBuf::from(format!("agent-session-{}.html", session.id)),
    });
    let cwd = context.settings.cwd.clone();
    let messages = context.agent.messages();
    let target = output.clone();
    let writing = crate::tasks::spawn_blocking(move || {
        let source = Source {
            id: &session.id,
            cwd: &cwd,
            file: session.path.as_deref(),
            context: &messages,
        };
        write_html(&source, &target)
    });
    tokio::select! {
        written = writing => match written {
            Ok(Ok(())) => Ok(Some(json!({ "path": output }))),
            Ok(Err(e)) => Err(format!("cannot export the session: {e}")),
            Err(e) => Err(format!("internal error: the export stopped: {e}")),
        },
        () = cancel.cancelled() => Err("aborted before the export was finished".to_string()),
    }
}
