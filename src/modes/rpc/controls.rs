//! The RPC commands that change the agent's own settings and take a moment (the change is
//! noted in the session): `set_thinking_level`, `cycle_thinking_level`, `set_session_name`.

use super::Context;
use super::commands::Outcome;
use crate::llm::request::ThinkingLevel;
use serde_json::{Value, json};

pub(super) async fn set_thinking_level(context: &Context, level: &str) -> Outcome {
    let wanted = <ThinkingLevel as clap::ValueEnum>::from_str(level, true).map_err(|_| {
        format!("invalid `set_thinking_level` command: unknown level `{level}` (off, minimal, low, medium, high)")
    })?;
    context.agent.set_thinking_level(wanted).await;
    Ok(None)
}

/// `{level}`, or `null` when the model does not reason.
pub(super) async fn cycle_thinking_level(context: &Context) -> Outcome {
    Ok(Some(match context.agent.cycle_thinking_level().await {
        Some(level) => json!({ "level": level.as_str() }),
        None => Value::Null,
    }))
}

pub(super) async fn set_session_name(context: &Context, name: &str) -> Outcome {
    context
        .agent
        .set_session_name(name)
        .await
        .map_err(|e| e.to_string())?;
    Ok(None)
}
