//! The RPC commands of checkpoints and the session tree: `get_checkpoints`, `rewind`,
//! `undo_rewind`, `fork`, `clone`, `get_fork_messages`, `get_tree`, `switch_branch`, and `get_messages` (whose messages
//! carry their session `entryId`, which `rewind`, `fork` and `switch_branch` take).

use super::Context;
use super::commands::Outcome;
use crate::agent::rewind::{RestoreMode, Rewound};
use crate::modes::SessionInfo;
use serde_json::{Value, json};
use std::sync::PoisonError;

/// The messages in the context, each with its `entryId` (`null` for one not in the
/// session file: `--no-session`, or not written yet).
pub(super) fn messages(context: &Context) -> Value {
    let messages: Vec<Value> = context
        .agent
        .message_entries()
        .into_iter()
        .map(|(id, message)| {
            let mut value = serde_json::to_value(message.as_ref()).unwrap_or(Value::Null);
            if let Some(fields) = value.as_object_mut() {
                let id = (!id.is_empty()).then_some(id);
                fields.insert("entryId".to_string(), json!(id));
            }
            value
        })
        .collect();
    json!({ "messages": messages })
}

pub(super) fn checkpoints(context: &Context) -> Value {
    json!({ "checkpoints": context.agent.checkpoints() })
}

/// Rewind to checkpoint `checkpoint_id` or to user message `entry_id` (one of the two).
pub(super) async fn rewind(
    context: &Context,
    checkpoint_id: Option<String>,
    entry_id: Option<String>,
    restore: RestoreMode,
    force: bool,
) -> Outcome {
    let agent = &context.agent;
    let entry = match (checkpoint_id, entry_id) {
        (Some(checkpoint), None) => agent
            .checkpoint_entry(&checkpoint)
            .map_err(|e| e.to_string())?,
        (None, Some(entry)) => entry,
        _ => return Err("rewind takes either checkpointId or entryId".to_string()),
    };
    let rewound = agent
        .rewind(&entry, restore, force)
        .await
        .map_err(|e| e.to_string())?;
    Ok(Some(rewound_json(rewound)))
}

pub(super) async fn undo_rewind(context: &Context, force: bool) -> Outcome {
    let rewound = context
        .agent
        .undo_rewind(force)
        .await
        .map_err(|e| e.to_string())?;
    Ok(Some(rewound_json(rewound)))
}

/// `restored`, `removed` and `notRestored` list paths (empty when the files were not
/// restored); `text` is the rewound user message's text when the conversation moved.
fn rewound_json(rewound: Rewound) -> Value {
    let summary = rewound.summary.unwrap_or_default();
    json!({
        "restored": summary.restored,
        "removed": summary.removed,
        "notRestored": summary.not_restored,
        "text": rewound.text,
    })
}

/// Fork at `entry_id` and continue in the new session.
pub(super) async fn fork(context: &Context, entry_id: &str) -> Outcome {
    let forked = context
        .agent
        .fork(entry_id)
        .await
        .map_err(|e| e.to_string())?;
    *context
        .session
        .lock()
        .unwrap_or_else(PoisonError::into_inner) = SessionInfo {
        id: forked.session_id.clone(),
        path: Some(forked.path.clone()),
    };
    Ok(Some(json!({
        "sessionId": forked.session_id,
        "sessionFile": forked.path,
        "text": forked.text,
        "cancelled": false,
    })))
}

/// Continue in a copy of the session (pi's `clone`).
pub(super) async fn clone(context: &Context) -> Outcome {
    let cloned = context
        .agent
        .clone_session()
        .await
        .map_err(|e| e.to_string())?;
    *context
        .session
        .lock()
        .unwrap_or_else(PoisonError::into_inner) = SessionInfo {
        id: cloned.session_id.clone(),
        path: Some(cloned.path.clone()),
    };
    Ok(Some(json!({
        "sessionId": cloned.session_id,
        "sessionFile": cloned.path,
        "cancelled": false,
    })))
}

/// The user messages a fork can start from: `{entryId, text}`.
pub(super) async fn fork_messages(context: &Context) -> Outcome {
    let points = context
        .agent
        .fork_points()
        .await
        .map_err(|e| e.to_string())?;
    let messages: Vec<Value> = points
        .into_iter()
        .map(|(entry_id, text)| json!({"entryId": entry_id, "text": text}))
        .collect();
    Ok(Some(json!({ "messages": messages })))
}

pub(super) async fn tree(context: &Context) -> Outcome {
    let tree = context.agent.tree().await.map_err(|e| e.to_string())?;
    serde_json::to_value(tree)
        .map(Some)
        .map_err(|e| format!("internal error: {e}"))
}

pub(super) async fn switch_branch(context: &Context, entry_id: &str) -> Outcome {
    context
        .agent
        .switch_branch(entry_id)
        .await
        .map_err(|e| e.to_string())?;
    Ok(None)
}
