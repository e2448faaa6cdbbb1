//! The RPC's reads of checkpoints and the session tree: `get_checkpoints`,
//! `get_fork_messages`, `get_tree`, and `get_messages` (whose messages carry their session
//! `entryId`, which `rewind`, `fork` and `switch_branch` take).

use super::Context;
use super::commands::Answer;
use serde_json::{Value, json};

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

/// The user messages a fork can start from: `{entryId, text}`.
pub(super) async fn fork_messages(context: &Context) -> Answer {
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

pub(super) async fn tree(context: &Context) -> Answer {
    let tree = context.agent.tree().await.map_err(|e| e.to_string())?;
    serde_json::to_value(tree)
        .map(Some)
        .map_err(|e| format!("internal error: {e}"))
}
