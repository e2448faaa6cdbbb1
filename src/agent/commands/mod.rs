//! Executing engine commands (`protocol::command::Command`): `Agent::execute` takes each
//! one, does it, and answers with its `Outcome` — the one implementation of every operation
//! a front end offers (sending a message, switching the model, new / resumed / forked
//! sessions, time travel, the user's own shell command, sub-agents). Changes of state go to
//! every subscriber as events besides (`session_changed`, `config_changed`), so several
//! clients of one engine stay in step. Each command and its result are logged at debug
//! level (`engine command: {json}`, `engine command done: KIND ok|err: …`).
//!
//! What stopping a command (`Control.cancel`) means, per command: `SetModel`, `CycleModel`,
//! `SetThinking` and `CycleThinking` change at once, the cancel only cuts the wait for the change to be
//! noted in the session; `NewSession` and `Resume` are stopped before the switch (nothing
//! changed, `Cancelled`), after it only the wait for the old session to be closed; `RunShell`
//! is killed; a compaction is stopped by `Abort`; rewind, fork and branch switches finish.

pub mod input;
pub mod models;
mod preview;
pub mod profiles;
pub mod session;
mod settings;
pub(crate) mod shell;

use super::Agent;
use crate::protocol::command::{Command, Queue, RewindTarget};
use crate::protocol::event::SkippedFile;
use crate::protocol::message::UserMessage;
use crate::protocol::outcome::{CommandError, Outcome, RestoreSummary};
use crate::tools::UpdateSink;
use futures_util::future::BoxFuture;
use serde_json::Value;
use tokio_util::sync::CancellationToken;

pub(crate) use preview::approval_preview;

/// How a caller steers a command while it runs.
#[derive(Clone, Default)]
pub struct Control {
    /// Stops the command (what that means: the module doc).
    pub cancel: CancellationToken,
    /// Where a `RunShell` reports its output so far (all of it, each time).
    pub progress: Option<UpdateSink>,
}

impl Control {
    pub fn new() -> Control {
        Control::default()
    }
}

impl Agent {
    /// Carry out `command`; its result, or why it did nothing. Boxed: a dozen front-end
    /// futures await it, and each would otherwise hold (and compile the drop glue of) every
    /// command's state.
    pub fn execute(
        &self,
        command: Command,
        control: Control,
    ) -> BoxFuture<'_, Result<Outcome, CommandError>> {
        Box::pin(self.execute_unboxed(command, control))
    }

    async fn execute_unboxed(
        &self,
        command: Command,
        control: Control,
    ) -> Result<Outcome, CommandError> {
        let kind = command.kind();
        tracing::debug!("engine command: {}", loggable(&command));
        let result = self.dispatch(command, control).await;
        match &result {
            Ok(_) => tracing::debug!("engine command done: {kind} ok"),
            Err(error) => tracing::debug!("engine command done: {kind} err: {error}"),
        }
        result
    }

    async fn dispatch(&self, command: Command, control: Control) -> Result<Outcome, CommandError> {
        match command {
            Command::Prompt { input, delivery } => self.send_input(input, delivery),
            Command::Abort => Ok(Outcome::Aborted {
                queued: self.abort(),
            }),
            Command::UnqueueLast => Ok(Outcome::Unqueued {
                message: self.unqueue_last(),
            }),
            Command::Approve {
                tool_call_id,
                agent_id,
                decision,
            } => {
                self.approve_for(agent_id.as_deref(), &tool_call_id, decision)?;
                Ok(Outcome::Done)
            }
            Command::AnswerQuestion {
                tool_call_id,
                agent_id,
                answer,
            } => {
                self.answer_question(agent_id.as_deref(), &tool_call_id, answer)?;
                Ok(Outcome::Done)
            }
            Command::SetModel { model } => self.choose_model(&model, &control.cancel).await,
            Command::CycleModel => self.cycle_model(&control.cancel).await,
            Command::SetProfile { name } => self.switch_profile(&name, &control.cancel).await,
            Command::SetThinking { level } => self.choose_thinking(level, &control.cancel).await,
            Command::CycleThinking => self.cycle_thinking(&control.cancel).await,
            Command::SetAutoCompaction { enabled } => {
                self.set_auto_compaction(enabled);
                Ok(Outcome::Done)
            }
            Command::SetAutoRetry { enabled } => {
                self.set_auto_retry(enabled);
                Ok(Outcome::Done)
            }
            Command::AbortRetry => Ok(Outcome::RetryAborted {
                ended: self.abort_retry(),
            }),
            Command::SetPermissionMode { mode } => {
                self.set_permission_mode(mode);
                Ok(Outcome::PermissionMode { mode })
            }
            Command::SetQueueMode { queue, mode } => {
                match queue {
                    Queue::Steering => self.set_steering_mode(mode),
                    Queue::FollowUp => self.set_follow_up_mode(mode),
                }
                Ok(Outcome::Done)
            }
            Command::Compact { instructions } => {
                let (before, after) = self.compact(instructions).await?;
                Ok(Outcome::Compacted {
                    tokens_before: before,
                    tokens_after: after,
                })
            }
            Command::NewSession => self.start_new_session(&control.cancel).await,
            Command::Resume { target, model } => {
                self.resume_session(target, model, &control.cancel).await
            }
            Command::Fork { entry_id } => {
                let forked = self.fork(&entry_id).await?;
                Ok(Outcome::Forked {
                    session: self.shared.session_identity(),
                    text: forked.text,
                })
            }
            Command::Clone => {
                let cloned = self.clone_session().await?;
                Ok(Outcome::Forked {
                    session: self.shared.session_identity(),
                    text: cloned.text,
                })
            }
            Command::SetSessionName { name } => Ok(Outcome::SessionName {
                name: self.set_session_name(&name).await?,
            }),
            Command::SetGoal { goal } => Ok(Outcome::Goal {
                goal: self.set_goal(goal.as_deref()).await?,
            }),
            Command::Rewind {
                target,
                restore,
                force,
            } => {
                let entry = match target {
                    RewindTarget::Entry { entry_id } => entry_id,
                    RewindTarget::Checkpoint { checkpoint_id } => {
                        self.checkpoint_entry(&checkpoint_id)?
                    }
                };
                rewound(self.rewind(&entry, restore, force).await?)
            }
            Command::UndoRewind { force } => rewound(self.undo_rewind(force).await?),
            Command::SwitchBranch {
                entry_id,
                restore_files,
                force,
            } => {
                let files = self.switch_branch(&entry_id, restore_files, force).await?;
                Ok(Outcome::BranchSwitched {
                    session: self.shared.session_identity(),
                    files: files.map(restore_summary),
                })
            }
            Command::RunShell { command } => self.run_shell(command, control).await,
            Command::ExpandCommand { text } => self.expand_command(&text),
            Command::SteerAgent { agent_id, text } => {
                if text.trim().is_empty() {
                    return Err(CommandError::EmptyMessage(agent_id));
                }
                self.steer_agent(&agent_id, UserMessage::text(text))?;
                Ok(Outcome::Done)
            }
            Command::AbortAgent { agent_id } => {
                self.abort_agent(&agent_id)?;
                Ok(Outcome::Done)
            }
        }
    }
}

fn rewound(rewound: super::rewind::Rewound) -> Result<Outcome, CommandError> {
    Ok(Outcome::Rewound {
        summary: rewound.summary.map(restore_summary),
        text: rewound.text,
    })
}

fn restore_summary(summary: crate::checkpoint::Summary) -> RestoreSummary {
    RestoreSummary {
        restored: summary.restored,
        removed: summary.removed,
        not_restored: summary
            .not_restored
            .into_iter()
            .map(|s| SkippedFile {
                path: s.path,
                reason: s.reason,
            })
            .collect(),
    }
}

/// Strings longer than this are shortened in the log (an image's data, a long prompt).
const LOGGED_STRING_CHARS: usize = 200;

/// A command as the debug log shows it: its JSON, long strings shortened, secrets masked.
fn loggable(command: &Command) -> String {
    let mut value = serde_json::to_value(command).unwrap_or(Value::Null);
    shorten(&mut value);
    crate::secrets::redact(&value.to_string()).into_owned()
}

fn shorten(value: &mut Value) {
    match value {
        Value::String(text) if text.chars().count() > LOGGED_STRING_CHARS => {
            let kept: String = text.chars().take(LOGGED_STRING_CHARS).collect();
            let total = text.chars().count();
            *text = format!("{kept}… ({total} characters)");
        }
        Value::Array(items) => items.iter_mut().for_each(shorten),
        Value::Object(fields) => fields.values_mut().for_each(shorten),
        _ => {}
    }
}
