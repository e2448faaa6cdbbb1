//! An engine command's outcome as the `data` of its RPC answer — the shapes pi's RPC uses
//! where pi has the command (docs/protocol.md §4.2); errors as their text.

use super::commands::Answer;
use crate::protocol::outcome::{CommandError, ModelSummary, Outcome};
use serde_json::{Value, json};

/// The `data` of line type `kind` that the engine answered with `result`.
pub(super) fn answer(kind: &str, result: Result<Outcome, CommandError>) -> Answer {
    let outcome = result.map_err(|e| e.to_string())?;
    Ok(match outcome {
        Outcome::Accepted { skipped, .. } => {
            (!skipped.is_empty()).then(|| json!({ "skipped": skipped }))
        }
        Outcome::Model { model, thinking } if kind == "cycle_model" => Some(json!({
            "model": model_json(&model),
            "thinkingLevel": thinking.as_str(),
            "isScoped": false,
        })),
        Outcome::Model { model, .. } => {
            let mut data = model_json(&model);
            data["modelId"] = json!(model.id);
            Some(data)
        }
        Outcome::NoOtherModel | Outcome::NoOtherLevel => Some(Value::Null),
        Outcome::Profile { profile } => Some(json!({
            "name": profile.name,
            "model": model_json(&profile.model),
            "account": profile.account,
            "permissionMode": profile.permission_mode.as_str(),
            "sandbox": profile.sandbox,
            "mcpServers": profile.mcp_servers,
        })),
        Outcome::Thinking { level } => {
            (kind == "cycle_thinking_level").then(|| json!({ "level": level.as_str() }))
        }
        Outcome::Compacted {
            tokens_before,
            tokens_after,
        } => Some(json!({"tokensBefore": tokens_before, "tokensAfter": tokens_after})),
        // `files` `{restored, removed, notRestored}` when the files were restored.
        Outcome::BranchSwitched { session, files } => Some(json!({
            "sessionId": session.id,
            "sessionFile": session.path,
            "head": session.head,
            "files": files.map(|files| json!({
                "restored": files.restored,
                "removed": files.removed,
                "notRestored": files.not_restored,
            })),
        })),
        Outcome::Session { session, .. } => Some(json!({
            "sessionId": session.id,
            "sessionFile": session.path,
            "cancelled": false,
        })),
        Outcome::Forked { session, .. } if kind == "clone" => Some(json!({
            "sessionId": session.id,
            "sessionFile": session.path,
            "cancelled": false,
        })),
        Outcome::Forked { session, text } => Some(json!({
            "sessionId": session.id,
            "sessionFile": session.path,
            "text": text,
            "cancelled": false,
        })),
        // `restored`, `removed` and `notRestored` list paths (empty when the files were not
        // restored); `text` is the rewound user message's text when the conversation moved.
        Outcome::Rewound { summary, text } => {
            let summary = summary.unwrap_or_default();
            Some(json!({
                "restored": summary.restored,
                "removed": summary.removed,
                "notRestored": summary.not_restored,
                "text": text,
            }))
        }
        Outcome::Shell(shell) => Some(json!({
            "output": shell.output,
            "exitCode": shell.exit_code,
            "cancelled": shell.cancelled,
            "truncated": shell.truncated,
            "fullOutputPath": shell.full_output_path,
        })),
        Outcome::Goal { goal } => Some(json!({ "goal": goal })),
        Outcome::Aborted { .. }
        | Outcome::Unqueued { .. }
        | Outcome::Done
        | Outcome::PermissionMode { .. }
        | Outcome::RetryAborted { .. }
        | Outcome::SessionName { .. }
        | Outcome::Expanded { .. } => None,
    })
}

/// A model as pi describes one (`Model`): `api` is this agent's API name.
pub(super) fn model_json(model: &ModelSummary) -> Value {
    json!({
        "id": model.id,
        "name": model.id,
        "api": model.api,
        "provider": model.provider,
        "baseUrl": model.base_url,
        "reasoning": model.reasoning,
        "input": if model.images { json!(["text", "image"]) } else { json!(["text"]) },
        "cost": {
            "input": model.cost.input,
            "output": model.cost.output,
            "cacheRead": model.cost.cache_read,
            "cacheWrite": model.cost.cache_write,
        },
        "contextWindow": model.context_window,
        "maxTokens": model.max_output_tokens,
    })
}
