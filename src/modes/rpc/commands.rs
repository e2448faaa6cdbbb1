//! What each RPC command does to the agent, and the `data` it answers with.

use super::Context;
use crate::agent::Approval;
use crate::llm::client::Provider;
use crate::modes::{SessionInfo, start_new_session_unless};
use crate::protocol::message::{Content, UserMessage};
use crate::protocol::rpc::{Command, Decision, StreamingBehavior};
use futures_util::future::BoxFuture;
use serde_json::{Value, json};
use std::sync::{Arc, PoisonError};
use tokio_util::sync::CancellationToken;

/// How a command was taken up.
pub(super) enum Started {
    /// It took effect at once.
    Done(Result<Option<Value>, String>),
    /// It takes time: its result, and what stops it.
    Slow {
        result: BoxFuture<'static, Result<Option<Value>, String>>,
        cancel: CancellationToken,
    },
}

pub(super) fn start(context: &Arc<Context>, command: Command) -> Started {
    let cancel = CancellationToken::new();
    let slow = |result: BoxFuture<'static, _>| Started::Slow {
        result,
        cancel: cancel.clone(),
    };
    let context = context.clone();
    match command {
        Command::Compact {
            custom_instructions,
        } => slow(Box::pin(async move {
            // `abort` cancels a compaction through the agent itself.
            let (before, after) = context
                .agent
                .compact(custom_instructions)
                .await
                .map_err(|e| e.to_string())?;
            Ok(Some(json!({"tokensBefore": before, "tokensAfter": after})))
        })),
        Command::NewSession => {
            let cancel = cancel.clone();
            slow(Box::pin(
                async move { new_session(&context, &cancel).await },
            ))
        }
        Command::SetModel { provider, model_id } => {
            let cancel = cancel.clone();
            slow(Box::pin(async move {
                set_model(&context, provider, model_id, &cancel).await
            }))
        }
        command => Started::Done(execute(&context, command)),
    }
}

/// A command that takes effect at once.
fn execute(context: &Context, command: Command) -> Result<Option<Value>, String> {
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

async fn new_session(
    context: &Context,
    cancel: &CancellationToken,
) -> Result<Option<Value>, String> {
    let persistent = current_session(context).path.is_some();
    let info =
        start_new_session_unless(&context.agent, &context.settings, persistent, cancel).await?;
    *context
        .session
        .lock()
        .unwrap_or_else(PoisonError::into_inner) = info.clone();
    Ok(Some(
        json!({"sessionId": info.id, "sessionFile": info.path}),
    ))
}

/// The model changes at once; `cancel` only cuts short the wait for the change to be noted
/// in the session (the note is still written).
async fn set_model(
    context: &Context,
    provider: String,
    model_id: String,
    cancel: &CancellationToken,
) -> Result<Option<Value>, String> {
    let (provider_settings, model) = context.settings.resolve_model(&provider, &model_id)?;
    let client =
        Provider::new(provider_settings, context.settings.timeouts).map_err(|e| e.to_string())?;
    let noted = context.agent.set_model(Arc::new(client), model);
    tokio::select! {
        () = noted => {}
        () = cancel.cancelled() => {}
    }
    Ok(Some(json!({"provider": provider, "modelId": model_id})))
}

fn current_session(context: &Context) -> SessionInfo {
    context
        .session
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
        .clone()
}

/// The text, then the attached images.
fn user_message(text: String, images: Vec<Content>) -> UserMessage {
    let mut message = UserMessage::text(text);
    message.content.extend(images);
    message
}

fn state(context: &Context) -> Value {
    let state = context.agent.snapshot();
    let session = current_session(context);
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
