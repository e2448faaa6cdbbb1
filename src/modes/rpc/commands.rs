//! What each RPC command does to the agent, and the `data` it answers with.

use super::Context;
use crate::agent::Approval;
use crate::llm::client::Provider;
use crate::modes::start_new_session;
use crate::protocol::message::{Content, UserMessage};
use crate::protocol::rpc::{Command, Decision, StreamingBehavior};
use serde_json::{Value, json};
use std::sync::{Arc, PoisonError};

/// A command that takes effect at once.
pub(super) fn execute(context: &Context, command: Command) -> Result<Option<Value>, String> {
    let agent = &context.agent;
    match command {
        Command::Prompt {
            message,
            images,
            streaming_behavior,
        } => {
            let message = user_message(message, images);
            match streaming_behavior {
                None => agent.prompt(message).map_err(|e| e.to_string())?,
                Some(StreamingBehavior::Steer) => agent.steer(message),
                Some(StreamingBehavior::FollowUp) => agent.follow_up(message),
            }
        }
        Command::Steer { message, images } => agent.steer(user_message(message, images)),
        Command::FollowUp { message, images } => agent.follow_up(user_message(message, images)),
        Command::Abort => {
            agent.abort();
        }
        Command::Approve {
            tool_call_id,
            decision,
            message,
        } => {
            let decision = match decision {
                Decision::Allow => Approval::Allow,
                Decision::AllowSession => Approval::AllowSession,
                Decision::Deny => Approval::Deny(message),
            };
            agent
                .approve(&tool_call_id, decision)
                .map_err(|e| e.to_string())?;
        }
        Command::GetState => return Ok(Some(state(context))),
        Command::GetMessages => return Ok(Some(json!({ "messages": agent.messages() }))),
        Command::SetSteeringMode { mode } => agent.set_steering_mode(mode),
        Command::SetFollowUpMode { mode } => agent.set_follow_up_mode(mode),
        Command::Compact { .. } | Command::NewSession | Command::SetModel { .. } => {
            return Err("internal error: a slow command was run as a quick one".to_string());
        }
        Command::Unknown => return Err("unknown command type".to_string()),
    }
    Ok(None)
}

/// A command that takes time (a model call, files, the session writer).
pub(super) async fn execute_slow(
    context: &Context,
    command: Command,
) -> Result<Option<Value>, String> {
    let agent = &context.agent;
    match command {
        Command::Compact {
            custom_instructions,
        } => {
            let (before, after) = agent
                .compact(custom_instructions)
                .await
                .map_err(|e| e.to_string())?;
            Ok(Some(json!({"tokensBefore": before, "tokensAfter": after})))
        }
        Command::NewSession => {
            let persistent = context
                .session
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .path
                .is_some();
            let info = start_new_session(agent, &context.settings, persistent).await?;
            *context
                .session
                .lock()
                .unwrap_or_else(PoisonError::into_inner) = info.clone();
            Ok(Some(
                json!({"sessionId": info.id, "sessionFile": info.path}),
            ))
        }
        Command::SetModel { provider, model_id } => {
            let (provider_settings, model) =
                context.settings.resolve_model(&provider, &model_id)?;
            let client = Provider::new(provider_settings, context.settings.stream_idle_timeout)
                .map_err(|e| e.to_string())?;
            agent.set_model(Arc::new(client), model).await;
            Ok(Some(json!({"provider": provider, "modelId": model_id})))
        }
        command => execute(context, command),
    }
}

/// The text, then the attached images.
fn user_message(text: String, images: Vec<Content>) -> UserMessage {
    let mut message = UserMessage::text(text);
    message.content.extend(images);
    message
}

fn state(context: &Context) -> Value {
    let state = context.agent.snapshot();
    let session = context
        .session
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
        .clone();
    json!({
        "model": state.model,
        "provider": state.provider,
        "thinkingLevel": state.thinking.as_str(),
        "isStreaming": state.is_running,
        "sessionId": session.id,
        "sessionFile": session.path,
        "messageCount": state.message_count,
        "pendingMessageCount": state.pending_message_count,
        "steeringMode": state.steering_mode.as_str(),
        "followUpMode": state.follow_up_mode.as_str(),
        "permissionMode": state.permission_mode.as_str(),
        "usage": state.usage,
        "contextTokens": state.context_tokens,
        "contextWindow": state.context_window,
        "sessionError": state.session_error,
    })
}
