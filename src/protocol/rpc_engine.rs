//! The RPC lines (`rpc::Command`, pi's wire names) in the engine's terms: each line is an
//! engine command (`command::Command`, docs/protocol.md §3.4) or something the RPC front end
//! answers itself — a read of the engine's state, an export, stopping its `bash`. The one
//! table of that mapping (docs/protocol.md §4.2).

use super::command::{
    ApprovalDecision, Command as EngineCommand, Delivery, InputPart, ModelRef, Queue, RewindTarget,
    ThinkingLevel, UserInput,
};
use super::message::Content;
use super::question::QuestionAnswer;
use super::rpc::{Command, Decision, StreamingBehavior};

/// What an RPC line asks for.
#[derive(Clone, Debug, PartialEq)]
pub enum Request {
    /// An engine command.
    Engine(EngineCommand),
    /// A line the RPC front end answers itself (`get_*`, `export_html`, `abort_bash`).
    Local(Command),
}

impl Command {
    /// The engine command this line is, or the line itself when it is none. `Err`: the
    /// line cannot be carried out as given (why).
    pub fn request(self) -> Result<Request, String> {
        let command = match self {
            Command::Prompt {
                message,
                images,
                streaming_behavior,
            } => EngineCommand::Prompt {
                input: input(message, images),
                delivery: match streaming_behavior {
                    None => Delivery::Start,
                    Some(StreamingBehavior::Steer) => Delivery::Steer,
                    Some(StreamingBehavior::FollowUp) => Delivery::FollowUp,
                },
            },
            Command::Steer { message, images } => EngineCommand::Prompt {
                input: input(message, images),
                delivery: Delivery::Steer,
            },
            Command::FollowUp { message, images } => EngineCommand::Prompt {
                input: input(message, images),
                delivery: Delivery::FollowUp,
            },
            Command::Abort => EngineCommand::Abort,
            Command::Approve {
                tool_call_id,
                decision,
                message,
                agent_id,
                rule,
            } => EngineCommand::Approve {
                tool_call_id,
                agent_id,
                decision: match decision {
                    Decision::Allow => ApprovalDecision::Allow,
                    Decision::AllowSession => ApprovalDecision::AllowSession,
                    Decision::AllowRule => ApprovalDecision::AllowRule(rule.unwrap_or_default()),
                    Decision::AllowUnsandboxed => ApprovalDecision::AllowUnsandboxed,
                    Decision::Deny => ApprovalDecision::Deny(message),
                },
            },
            Command::AnswerQuestion {
                tool_call_id,
                agent_id,
                answers,
                declined,
                message,
            } => EngineCommand::AnswerQuestion {
                tool_call_id,
                agent_id,
                answer: match (declined, answers) {
                    (true, _) => QuestionAnswer::Declined { message },
                    (false, Some(answers)) => QuestionAnswer::Answered { answers, message },
                    (false, None) => {
                        return Err("`answer_question` needs `answers`, or `declined: true`"
                            .to_string());
                    }
                },
            },
            Command::SetSteeringMode { mode } => EngineCommand::SetQueueMode {
                queue: Queue::Steering,
                mode,
            },
            Command::SetFollowUpMode { mode } => EngineCommand::SetQueueMode {
                queue: Queue::FollowUp,
                mode,
            },
            Command::Compact {
                custom_instructions,
            } => EngineCommand::Compact {
                instructions: custom_instructions,
            },
            Command::NewSession => EngineCommand::NewSession,
            Command::SetModel { provider, model_id } => EngineCommand::SetModel {
                model: ModelRef::Parts {
                    provider,
                    model: model_id,
                },
            },
            Command::CycleModel => EngineCommand::CycleModel,
            Command::SetProfile { name } => EngineCommand::SetProfile { name },
            Command::Bash { command } => EngineCommand::RunShell { command },
            Command::Rewind {
                checkpoint_id,
                entry_id,
                restore,
                force,
            } => EngineCommand::Rewind {
                target: match (checkpoint_id, entry_id) {
                    (Some(checkpoint_id), None) => RewindTarget::Checkpoint { checkpoint_id },
                    (None, Some(entry_id)) => RewindTarget::Entry { entry_id },
                    _ => return Err("rewind takes either checkpointId or entryId".to_string()),
                },
                restore,
                force,
            },
            Command::UndoRewind { force } => EngineCommand::UndoRewind { force },
            Command::Fork { entry_id } => EngineCommand::Fork { entry_id },
            Command::Clone => EngineCommand::Clone,
            Command::SwitchBranch {
                entry_id,
                restore_files,
                force,
            } => EngineCommand::SwitchBranch {
                entry_id,
                restore_files,
                force,
            },
            Command::AbortAgent { agent_id } => EngineCommand::AbortAgent { agent_id },
            Command::SteerAgent { agent_id, message } => EngineCommand::SteerAgent {
                agent_id,
                text: message,
            },
            Command::SetThinkingLevel { level } => EngineCommand::SetThinking {
                level: ThinkingLevel::parse(&level).ok_or_else(|| {
                    format!(
                        "invalid `set_thinking_level` command: unknown level `{level}` (off, minimal, low, medium, high)"
                    )
                })?,
            },
            Command::CycleThinkingLevel => EngineCommand::CycleThinking,
            Command::SetAutoCompaction { enabled } => EngineCommand::SetAutoCompaction { enabled },
            Command::SetAutoRetry { enabled } => EngineCommand::SetAutoRetry { enabled },
            Command::AbortRetry => EngineCommand::AbortRetry,
            Command::SetSessionName { name } => EngineCommand::SetSessionName { name },
            Command::SetGoal { goal } => EngineCommand::SetGoal { goal },
            local @ (Command::GetState
            | Command::GetPermissions
            | Command::GetMessages
            | Command::GetAvailableModels
            | Command::AbortBash
            | Command::GetSessionStats
            | Command::GetContext
            | Command::ExportHtml { .. }
            | Command::GetLastAssistantText
            | Command::GetCommands
            | Command::GetCheckpoints
            | Command::GetTree
            | Command::GetAgents
            | Command::GetForkMessages
            | Command::Unknown) => return Ok(Request::Local(local)),
        };
        Ok(Request::Engine(command))
    }
}

/// The message's text, then its images.
fn input(message: String, images: Vec<Content>) -> UserInput {
    let mut parts = vec![InputPart::Text { text: message }];
    parts.extend(
        images
            .into_iter()
            .map(|content| InputPart::Content { content }),
    );
    UserInput {
        parts,
        timestamp: None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::protocol::rpc::parse_line;

    fn request(line: &str) -> Result<Request, String> {
        parse_line(line).unwrap().command.request()
    }

    #[test]
    fn lines_map_onto_engine_commands() {
        assert_eq!(
            request(r#"{"type": "prompt", "message": "hi", "streamingBehavior": "followUp"}"#),
            Ok(Request::Engine(EngineCommand::Prompt {
                input: UserInput::text("hi"),
                delivery: Delivery::FollowUp,
            }))
        );
        assert_eq!(
            request(
                r#"{"type": "approve", "toolCallId": "c1", "decision": "deny", "message": "no"}"#
            ),
            Ok(Request::Engine(EngineCommand::Approve {
                tool_call_id: "c1".into(),
                agent_id: None,
                decision: ApprovalDecision::Deny(Some("no".into())),
            }))
        );
        assert_eq!(
            request(r#"{"type": "set_thinking_level", "level": "HIGH"}"#),
            Ok(Request::Engine(EngineCommand::SetThinking {
                level: ThinkingLevel::High
            }))
        );
        assert!(request(r#"{"type": "rewind"}"#).is_err());
        assert_eq!(
            request(r#"{"type": "get_state"}"#),
            Ok(Request::Local(Command::GetState))
        );
    }
}
