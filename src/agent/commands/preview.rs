//! What a call waiting for approval would do, worked out once, where the request is made, so
//! that every front end shows the same thing (`tool_approval_request.preview`): the diff a
//! `write` or `edit` would make (or why there is none), the whole command of a `bash` call,
//! nothing more for other tools. The diff reads the file but never writes it; it runs on a
//! blocking thread and gives way to the run's cancel. Secrets in it are masked as they are
//! in tool output.

use crate::protocol::event::ApprovalPreview;
use crate::tools::{Subject, Tool, path};
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use tokio_util::sync::CancellationToken;

/// The preview of calling `tool` with `args` in `cwd`; `None` when `cancel` fired first.
pub(crate) async fn approval_preview(
    tool: Arc<dyn Tool>,
    args: &Value,
    cwd: &Path,
    cancel: &CancellationToken,
) -> Option<ApprovalPreview> {
    match tool.subject() {
        Subject::Command(key) => Some(ApprovalPreview::Command {
            command: args
                .get(key)
                .and_then(Value::as_str)
                .unwrap_or("")
                .to_string(),
            unsandboxed_allowed: true,
        }),
        Subject::Path(key) if !tool.read_only() => {
            let Some(raw) = args
                .get(key)
                .and_then(Value::as_str)
                .filter(|raw| !raw.trim().is_empty())
            else {
                return Some(ApprovalPreview::None);
            };
            let file = path::resolve(cwd, raw);
            let shown = path::display(cwd, &file);
            let (args, cwd) = (args.clone(), cwd.to_path_buf());
            let (on_failure, failed_file) = (shown.clone(), file.clone());
            let work =
                crate::tasks::spawn_blocking(move || diff(tool.as_ref(), &args, &cwd, shown, file));
            tokio::select! {
                () = cancel.cancelled() => None,
                preview = work => Some(preview.unwrap_or_else(|e| ApprovalPreview::Unavailable {
                    path: on_failure,
                    file: failed_file,
                    why: format!("the preview failed: {e}"),
                })),
            }
        }
        _ => Some(ApprovalPreview::None),
    }
}

fn diff(
    tool: &dyn Tool,
    args: &Value,
    cwd: &Path,
    shown: String,
    file: PathBuf,
) -> ApprovalPreview {
    let new_file = std::fs::symlink_metadata(&file).is_err();
    match tool.preview(args, cwd) {
        Some(Ok(diff)) => ApprovalPreview::Diff {
            path: shown,
            file,
            diff: crate::secrets::redact(&diff).into_owned(),
            new_file,
        },
        Some(Err(why)) => ApprovalPreview::Unavailable {
            path: shown,
            file,
            why,
        },
        None => ApprovalPreview::None,
    }
}
