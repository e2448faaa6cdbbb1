//! The RPC commands that take time — a model call, the session writer, files, a process —
//! and what stopping each of them means (`cancel`, set by `abort` and, for `bash`,
//! `abort_bash`).

use super::Context;
use super::commands::Outcome;
use super::queries::{current_session, model_json};
use crate::config::AvailableModel;
use crate::llm::client::Provider;
use crate::modes::start_new_session_unless;
use crate::protocol::message::join_text;
use crate::session::export::{Source, export_html as write_html};
use crate::tools::bash::BashTool;
use crate::tools::{Tool, ToolContext};
use serde_json::{Value, json};
use std::path::PathBuf;
use std::sync::{Arc, PoisonError};
use tokio_util::sync::CancellationToken;

/// `abort` cancels a compaction through the agent itself.
pub(super) async fn compact(context: &Context, instructions: Option<String>) -> Outcome {
    let (before, after) = context
        .agent
        .compact(instructions)
        .await
        .map_err(|e| e.to_string())?;
    Ok(Some(json!({"tokensBefore": before, "tokensAfter": after})))
}

pub(super) async fn new_session(context: &Context, cancel: &CancellationToken) -> Outcome {
    let persistent = current_session(context).path.is_some();
    let info =
        start_new_session_unless(&context.agent, &context.settings, persistent, cancel).await?;
    *context
        .session
        .lock()
        .unwrap_or_else(PoisonError::into_inner) = info.clone();
    Ok(Some(json!({
        "sessionId": info.id,
        "sessionFile": info.path,
        "cancelled": false,
    })))
}

/// The model changes at once; `cancel` only cuts short the wait for the change to be noted
/// in the session (the note is still written). Answers with the model, as pi does, plus
/// `modelId`.
pub(super) async fn set_model(
    context: &Context,
    provider: &str,
    model_id: &str,
    cancel: &CancellationToken,
) -> Outcome {
    let (provider, model) = context.settings.resolve_model(provider, model_id)?;
    let chosen = AvailableModel { provider, model };
    switch_to(context, &chosen, cancel).await?;
    let mut data = model_json(&chosen);
    data["modelId"] = json!(chosen.model.id);
    Ok(Some(data))
}

/// The next of the available models (`get_available_models`), after the one in use;
/// `null` when there is no other.
pub(super) async fn cycle_model(context: &Context, cancel: &CancellationToken) -> Outcome {
    let state = context.agent.snapshot();
    let models = context
        .settings
        .available_models((&state.provider, &state.model));
    if models.len() < 2 {
        return Ok(Some(Value::Null));
    }
    let current = models
        .iter()
        .position(|m| m.provider.name == state.provider && m.model.id == state.model)
        .unwrap_or(0);
    let next = &models[(current + 1) % models.len()];
    switch_to(context, next, cancel).await?;
    Ok(Some(json!({
        "model": model_json(next),
        "thinkingLevel": state.thinking.as_str(),
        "isScoped": false,
    })))
}

async fn switch_to(
    context: &Context,
    chosen: &AvailableModel,
    cancel: &CancellationToken,
) -> Result<(), String> {
    let client = Provider::new(chosen.provider.clone(), context.settings.timeouts)
        .map_err(|e| e.to_string())?;
    let noted = context
        .agent
        .set_model(Arc::new(client), chosen.model.clone());
    tokio::select! {
        () = noted => {}
        () = cancel.cancelled() => {}
    }
    Ok(())
}

/// Run a shell command for the user, as the TUI's `!command` does: in the working
/// directory, with the bash tool's limits, and not part of the conversation.
pub(super) async fn bash(context: &Context, command: String, cancel: CancellationToken) -> Outcome {
    let ctx = ToolContext {
        tool_call_id: String::new(),
        cwd: context.settings.cwd.clone(),
        cancel,
        on_update: Arc::new(|_| {}),
        settings: Arc::new(context.settings.tool_settings.clone()),
        hidden: None,
        files: Default::default(),
        spill: context.agent.spill_dir(),
        shells: Default::default(),
    };
    let output = context
        .agent
        .checkpointed(BashTool.execute(json!({ "command": command }), ctx))
        .await
        .map_err(|e| e.to_string())?;
    let details = output.details.unwrap_or(Value::Null);
    Ok(Some(json!({
        "output": join_text(&output.content),
        "exitCode": details.get("exitCode").cloned().unwrap_or(Value::Null),
        "cancelled": details.get("cancelled").cloned().unwrap_or(json!(false)),
        "truncated": details.get("truncated").cloned().unwrap_or(json!(false)),
        "fullOutputPath": details.get("fullOutputPath").cloned().unwrap_or(Value::Null),
    })))
}

/// Write the session as HTML to `output_path` (relative to the working directory), by
/// default `agent-session-ID.html` there. Stopping it stops the wait, not a write begun.
pub(super) async fn export_html(
    context: &Context,
    output_path: Option<String>,
    cancel: &CancellationToken,
) -> Outcome {
    let session = current_session(context);
    let output = context.settings.cwd.join(match output_path {
        Some(path) if !path.trim().is_empty() => PathBuf::from(path),
        _ => PathBuf::from(format!("agent-session-{}.html", session.id)),
    });
    let cwd = context.settings.cwd.clone();
    let messages = context.agent.messages();
    let target = output.clone();
    let writing = tokio::task::spawn_blocking(move || {
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
