//! What each RPC command does: the quick ones here, the read-only queries in `queries`, the
//! ones that take time in `actions`.

use super::Context;
use super::actions;
use super::controls;
use super::queries;
use super::time_travel;
use crate::agent::Approval;
use crate::protocol::message::{Content, UserMessage};
use crate::protocol::rpc::{Command, Decision, StreamingBehavior};
use futures_util::future::BoxFuture;
use serde_json::{Value, json};
use std::sync::Arc;
use tokio_util::sync::CancellationToken;

pub(super) type Outcome = Result<Option<Value>, String>;

/// How a command was taken up.
pub(super) enum Started {
    /// It took effect at once.
    Done(Outcome),
    /// It takes time: its result, and what stops it.
    Slow {
        result: BoxFuture<'static, Outcome>,
        cancel: CancellationToken,
        /// A `bash` command, which `abort_bash` stops too.
        bash: bool,
    },
}

pub(super) fn start(context: &Arc<Context>, command: Command) -> Started {
    let cancel = CancellationToken::new();
    let token = cancel.clone();
    let context = context.clone();
    let result: BoxFuture<'static, Outcome> = match command {
        // `abort` cancels a compaction through the agent itself.
        Command::Compact {
            custom_instructions,
        } => Box::pin(async move { actions::compact(&context, custom_instructions).await }),
        Command::NewSession => {
            Box::pin(async move { actions::new_session(&context, &token).await })
        }
        Command::SetModel { provider, model_id } => {
            Box::pin(
                async move { actions::set_model(&context, &provider, &model_id, &token).await },
            )
        }
        Command::CycleModel => {
            Box::pin(async move { actions::cycle_model(&context, &token).await })
        }
        Command::ExportHtml { output_path } => {
            Box::pin(async move { actions::export_html(&context, output_path, &token).await })
        }
        // A rewind or fork is not stopped half-way: it finishes, whatever `abort` says.
        Command::Rewind {
            checkpoint_id,
            entry_id,
            restore,
            force,
        } => Box::pin(async move {
            time_travel::rewind(&context, checkpoint_id, entry_id, restore, force).await
        }),
        Command::UndoRewind { force } => {
            Box::pin(async move { time_travel::undo_rewind(&context, force).await })
        }
        Command::Fork { entry_id } => {
            Box::pin(async move { time_travel::fork(&context, &entry_id).await })
        }
        Command::GetTree => Box::pin(async move { time_travel::tree(&context).await }),
        Command::SwitchBranch { entry_id } => {
            Box::pin(async move { time_travel::switch_branch(&context, &entry_id).await })
        }
        Command::SetThinkingLevel { level } => {
            Box::pin(async move { controls::set_thinking_level(&context, &level).await })
        }
        Command::CycleThinkingLevel => {
            Box::pin(async move { controls::cycle_thinking_level(&context).await })
        }
        Command::SetSessionName { name } => {
            Box::pin(async move { controls::set_session_name(&context, &name).await })
        }
        Command::GetForkMessages => {
            Box::pin(async move { time_travel::fork_messages(&context).await })
        }
        Command::Clone => Box::pin(async move { time_travel::clone(&context).await }),
        Command::Bash { command } => {
            return Started::Slow {
                result: Box::pin(async move { actions::bash(&context, command, token).await }),
                cancel,
                bash: true,
            };
        }
        command => return Started::Done(execute(&context, command)),
    };
    Started::Slow {
        result,
        cancel,
        bash: false,
    }
}

/// A command that takes effect at once.
fn execute(context: &Context, command: Command) -> Outcome {
    let agent = &context.agent;
    match command {
        Command::Prompt {
            message,
            images,
            streaming_behavior,
        } => {
            let (text, model) = expand(context, message)?;
            let (message, skipped) = user_message(agent, text, images)?;
            match streaming_behavior {
                None => agent
                    .prompt_with_model(message, model)
                    .map_err(|e| e.to_string())?,
                Some(StreamingBehavior::Steer) => agent.steer(message),
                Some(StreamingBehavior::FollowUp) => agent.follow_up(message),
            }
            return Ok(skipped);
        }
        Command::Steer { message, images } => {
            let (message, skipped) = user_message(agent, expand(context, message)?.0, images)?;
            agent.steer(message);
            return Ok(skipped);
        }
        Command::FollowUp { message, images } => {
            let (message, skipped) = user_message(agent, expand(context, message)?.0, images)?;
            agent.follow_up(message);
            return Ok(skipped);
        }
        Command::Abort => {
            agent.abort();
        }
        // No `bash` is in progress (one in progress is stopped when this is read).
        Command::AbortBash => {}
        Command::Approve {
            tool_call_id,
            decision,
            message,
            agent_id,
        } => {
            let decision = match decision {
                Decision::Allow => Approval::Allow,
                Decision::AllowSession => Approval::AllowSession,
                Decision::AllowUnsandboxed => Approval::AllowUnsandboxed,
                Decision::Deny => Approval::Deny(message),
            };
            agent
                .approve_for(agent_id.as_deref(), &tool_call_id, decision)
                .map_err(|e| e.to_string())?;
        }
        Command::SetSteeringMode { mode } => agent.set_steering_mode(mode),
        Command::SetAutoCompaction { enabled } => agent.set_auto_compaction(enabled),
        Command::SetAutoRetry { enabled } => agent.set_auto_retry(enabled),
        // Nothing to end when no retry is waiting: that is no failure.
        Command::AbortRetry => {
            agent.abort_retry();
        }
        Command::SetFollowUpMode { mode } => agent.set_follow_up_mode(mode),
        Command::GetState => return Ok(Some(queries::state(context))),
        Command::GetPermissions => {
            return Ok(Some(
                serde_json::to_value(agent.permissions()).map_err(|e| e.to_string())?,
            ));
        }
        Command::GetMessages => return Ok(Some(time_travel::messages(context))),
        Command::GetCheckpoints => return Ok(Some(time_travel::checkpoints(context))),
        Command::GetSessionStats => return Ok(Some(queries::session_stats(context))),
        Command::GetLastAssistantText => return Ok(Some(queries::last_assistant_text(context))),
        Command::GetAvailableModels => return Ok(Some(queries::available_models(context))),
        Command::GetCommands => return Ok(Some(queries::commands(context))),
        Command::GetAgents => return Ok(Some(json!({ "agents": agent.agents() }))),
        Command::AbortAgent { agent_id } => {
            agent.abort_agent(&agent_id).map_err(|e| e.to_string())?;
        }
        Command::SteerAgent { agent_id, message } => {
            agent
                .steer_agent(&agent_id, UserMessage::text(message))
                .map_err(|e| e.to_string())?;
        }
        Command::Compact { .. }
        | Command::NewSession
        | Command::SetModel { .. }
        | Command::CycleModel
        | Command::ExportHtml { .. }
        | Command::Rewind { .. }
        | Command::UndoRewind { .. }
        | Command::Fork { .. }
        | Command::GetTree
        | Command::SwitchBranch { .. }
        | Command::SetThinkingLevel { .. }
        | Command::CycleThinkingLevel
        | Command::SetSessionName { .. }
        | Command::GetForkMessages
        | Command::Clone
        | Command::Bash { .. } => {
            return Err("internal error: a slow command was run as a quick one".to_string());
        }
        Command::Unknown => return Err("unknown command type".to_string()),
    }
    Ok(None)
}

/// A model to run one prompt with: the provider and the model.
type CommandModel = (
    Arc<crate::llm::client::Provider>,
    crate::llm::model::ModelInfo,
);

/// A message that starts with `/name`: the custom command or skill expanded, and the
/// command's model (for a prompt that starts a run; a queued message keeps the run's
/// model). An unknown name is an error, never text for the model.
fn expand(context: &Context, text: String) -> Result<(String, Option<CommandModel>), String> {
    use crate::extensions::Invocation;
    match context.settings.extensions.invoke(&text) {
        Invocation::Text(text) => Ok((text, None)),
        Invocation::Unknown(why) => Err(why),
        Invocation::Prompt { text, model, .. } => {
            let model = match model {
                Some(model) => {
                    let current = context.agent.snapshot().provider;
                    Some(crate::modes::command_model(
                        &context.settings,
                        &current,
                        &model,
                    )?)
                }
                None => None,
            };
            Ok((text, model))
        }
    }
}

/// The text, what its `@path`s name (`agent::mentions`), then the attached images; with
/// the response's data when an `@path` named a file that was not attached
/// (`{skipped: [{path, reason}]}`).
fn user_message(
    agent: &crate::agent::Agent,
    text: String,
    images: Vec<Content>,
) -> Result<(UserMessage, Option<Value>), String> {
    let (mut message, attached) = agent.user_message(&text).map_err(|e| e.to_string())?;
    message.content.extend(images);
    let skipped: Vec<Value> = attached
        .iter()
        .filter_map(|a| match a {
            crate::agent::mentions::Attached::Skipped { path, why } => {
                Some(json!({"path": path, "reason": why}))
            }
            _ => None,
        })
        .collect();
    Ok((
        message,
        (!skipped.is_empty()).then(|| json!({ "skipped": skipped })),
    ))
}
