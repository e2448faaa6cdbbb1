//! `Command`: everything a front end asks of the engine (docs/protocol.md §3.4) — one typed
//! set, whatever the input was (a key, an RPC line, an editor's request). `Agent::execute`
//! carries each one out and answers with an `Outcome` (`outcome`); changes of state go out
//! as events besides (`session_changed`, `config_changed`). The settings a command names
//! (thinking level, permission mode, queue mode, what a rewind restores) are defined here,
//! beside the commands, and every layer above uses them.

use super::message::Content;
pub use super::rpc::{QueueMode, RestoreMode};
use serde::{Deserialize, Serialize};
use std::path::PathBuf;

/// One operation of the engine. Serialized as `{"type": "set_model", ...}` with camelCase
/// fields (the debug log shows each command executed this way).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(
    tag = "type",
    rename_all = "snake_case",
    rename_all_fields = "camelCase"
)]
pub enum Command {
    /// Send a message: a custom `/command` or `/skill:` at its start is expanded, its
    /// `@path`s attached, and it is delivered as `delivery` says.
    Prompt {
        input: UserInput,
        delivery: Delivery,
    },
    /// Stop the run now; the queued messages are handed back.
    Abort,
    /// Take back the most recently queued message (follow-ups first).
    UnqueueLast,
    /// Answer a `tool_approval_request` (`agent_id`: the sub-agent that asked, as the
    /// request says).
    Approve {
        tool_call_id: String,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        agent_id: Option<String>,
        decision: ApprovalDecision,
    },
    /// Answer a `user_question` (`agent_id`: the sub-agent that asked, as the event says).
    AnswerQuestion {
        tool_call_id: String,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        agent_id: Option<String>,
        answer: super::question::QuestionAnswer,
    },
    /// Use another model from the next model call on, and note it in the session.
    SetModel {
        model: ModelRef,
    },
    /// The next of the available models.
    CycleModel,
    /// Switch to the configured profile `name` (`[profiles.NAME]`): its provider, model,
    /// account, permission mode, sandbox and MCP servers, from the next run on. Only
    /// between runs.
    SetProfile {
        name: String,
    },
    /// Use this reasoning level, as far as the model offers it (a model that does not
    /// reason stays `off`); a change is noted in the session.
    SetThinking {
        level: ThinkingLevel,
    },
    /// The next reasoning level the model offers after the current one (`off` after
    /// `high`).
    CycleThinking,
    SetPermissionMode {
        mode: PermissionMode,
    },
    SetQueueMode {
        queue: Queue,
        mode: QueueMode,
    },
    /// Compact on its own (near the window, after an overflow), or not.
    SetAutoCompaction {
        enabled: bool,
    },
    /// Retry failed model calls as the retry policy says, or not.
    SetAutoRetry {
        enabled: bool,
    },
    /// End the wait before a retry now: the model call ends with the failure it waited to
    /// retry.
    AbortRetry,
    /// Summarise the older part of the conversation now (only while idle).
    Compact {
        #[serde(default, skip_serializing_if = "Option::is_none")]
        instructions: Option<String>,
    },
    /// Start over in a new session (kept on disk unless the current one is not).
    NewSession,
    /// Continue another session of the working directory.
    Resume {
        target: SessionRef,
        model: ResumeModel,
    },
    /// Start a new session from entry `entry_id` of this one, and continue in it.
    Fork {
        entry_id: String,
    },
    /// Go back to before a user message: the files, the conversation, or both.
    Rewind {
        target: RewindTarget,
        #[serde(default)]
        restore: RestoreMode,
        #[serde(default)]
        force: bool,
    },
    UndoRewind {
        #[serde(default)]
        force: bool,
    },
    /// Continue in a copy of this session: the current branch up to the head.
    Clone,
    /// Name the session (noted in its file; surrounding blanks dropped).
    SetSessionName {
        name: String,
    },
    /// Set the session's goal (`goal`), or clear it (`null` or blank): the agent works
    /// toward a goal across turns until the model marks it done (`agent::goal`).
    SetGoal {
        #[serde(default)]
        goal: Option<String>,
    },
    /// Continue the conversation on another branch of the session tree; with
    /// `restore_files`, the files as that branch left them too (as a rewind restores them;
    /// `force` overrides the refusal when a file was changed outside the agent).
    SwitchBranch {
        entry_id: String,
        #[serde(default)]
        restore_files: bool,
        #[serde(default)]
        force: bool,
    },
    /// Run a shell command for the user (not the model), between two checkpoints.
    RunShell {
        command: String,
    },
    /// What a `/command` or `/skill:` text turns into, without sending it.
    ExpandCommand {
        text: String,
    },
    /// Steer one running sub-agent.
    SteerAgent {
        agent_id: String,
        text: String,
    },
    /// Stop one sub-agent.
    AbortAgent {
        agent_id: String,
    },
}

impl Command {
    /// The command's `type` (`set_model`).
    pub fn kind(&self) -> &'static str {
        match self {
            Command::Prompt { .. } => "prompt",
            Command::Abort => "abort",
            Command::UnqueueLast => "unqueue_last",
            Command::Approve { .. } => "approve",
            Command::AnswerQuestion { .. } => "answer_question",
            Command::SetModel { .. } => "set_model",
            Command::CycleModel => "cycle_model",
            Command::SetProfile { .. } => "set_profile",
            Command::SetThinking { .. } => "set_thinking",
            Command::CycleThinking => "cycle_thinking",
            Command::SetPermissionMode { .. } => "set_permission_mode",
            Command::SetQueueMode { .. } => "set_queue_mode",
            Command::SetAutoCompaction { .. } => "set_auto_compaction",
            Command::SetAutoRetry { .. } => "set_auto_retry",
            Command::AbortRetry => "abort_retry",
            Command::Compact { .. } => "compact",
            Command::NewSession => "new_session",
            Command::Resume { .. } => "resume",
            Command::Fork { .. } => "fork",
            Command::Rewind { .. } => "rewind",
            Command::UndoRewind { .. } => "undo_rewind",
            Command::Clone => "clone",
            Command::SetSessionName { .. } => "set_session_name",
            Command::SetGoal { .. } => "set_goal",
            Command::SwitchBranch { .. } => "switch_branch",
            Command::RunShell { .. } => "run_shell",
            Command::ExpandCommand { .. } => "expand_command",
            Command::SteerAgent { .. } => "steer_agent",
            Command::AbortAgent { .. } => "abort_agent",
        }
    }
}

/// What the user sends: text (which may start with `/command`), image chips, and content
/// as it is.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct UserInput {
    pub parts: Vec<InputPart>,
    /// The message's timestamp (milliseconds); `None`: now. An editor stamps its own.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timestamp: Option<i64>,
}

impl UserInput {
    /// Just this text.
    pub fn text(text: impl Into<String>) -> UserInput {
        UserInput {
            parts: vec![InputPart::Text { text: text.into() }],
            timestamp: None,
        }
    }
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum InputPart {
    /// Typed text: its `@path`s are attached after it. The first part, when it is text, may
    /// be `/command …` or `/skill:name …` (`//text` sends `/text`).
    Text { text: String },
    /// An image the text shows as `label` (the interface's `[image: name W×H]` chip),
    /// attached where a text part names the label.
    Chip { label: String, path: PathBuf },
    /// Content sent as it is (images, an editor's resources).
    Content { content: Content },
}

/// How a message reaches the agent.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Delivery {
    /// Start a run with it; `Busy` while one runs (RPC `prompt`).
    Start,
    /// Steer the run (delivered after the current tool call, skipping the message's remaining
    /// calls); when idle, start a run with it (TUI enter, RPC `steer`).
    Steer,
    /// Steer the run that is going; `Idle` when none is (ACP `_agent/steer`): never starts
    /// a run nobody asked for.
    SteerRunning,
    /// Deliver when the agent would otherwise stop; when idle, start a run with it (TUI
    /// alt+enter, RPC `follow_up`, an editor's prompt).
    FollowUp,
}

/// A model, as a user names it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum ModelRef {
    /// `provider/model`, or a model of the current provider (`/model`, a command's `model`).
    Text(String),
    /// Provider and model given apart (RPC `set_model`).
    Parts { provider: String, model: String },
}

/// Which message queue.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Queue {
    Steering,
    FollowUp,
}

/// A session to resume.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum SessionRef {
    /// A session of the working directory by id (a prefix is enough).
    IdPrefix { id: String },
    /// This session file.
    Path { path: PathBuf },
}

/// Which model a resumed conversation goes on with.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ResumeModel {
    /// The model in use now (noted in the resumed session).
    KeepCurrent,
    /// The model and thinking level the session last used, when they can be used.
    AdoptSession,
}

/// What a rewind goes back to.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(
    tag = "kind",
    rename_all = "snake_case",
    rename_all_fields = "camelCase"
)]
pub enum RewindTarget {
    /// Before the user message of this session entry.
    Entry { entry_id: String },
    /// To this checkpoint (before the tools of the user message it precedes).
    Checkpoint { checkpoint_id: String },
}

/// The user's answer to a `tool_approval_request`. Serialized as `"allow"`, …, or
/// `{"deny": "why"}`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ApprovalDecision {
    Allow,
    /// Allow, and allow the same call again for the rest of the session.
    AllowSession,
    /// Allow, and add these allow rules for the rest of the session (one rule, or several
    /// separated by commas: `bash(npm test*), bash(curl*)`). Refused, with the request left
    /// waiting, when they do not cover the call.
    AllowRule(String),
    /// Allow this once, outside the command sandbox.
    AllowUnsandboxed,
    /// Deny, optionally telling the model why.
    Deny(Option<String>),
    /// Deny, and deny every call of the same tool for the rest of the session.
    DenySession,
}

/// How much the model reasons before answering.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize, clap::ValueEnum)]
#[serde(rename_all = "lowercase")]
pub enum ThinkingLevel {
    #[default]
    Off,
    Minimal,
    Low,
    Medium,
    High,
}

impl ThinkingLevel {
    pub const ALL: [ThinkingLevel; 5] = [
        ThinkingLevel::Off,
        ThinkingLevel::Minimal,
        ThinkingLevel::Low,
        ThinkingLevel::Medium,
        ThinkingLevel::High,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            ThinkingLevel::Off => "off",
            ThinkingLevel::Minimal => "minimal",
            ThinkingLevel::Low => "low",
            ThinkingLevel::Medium => "medium",
            ThinkingLevel::High => "high",
        }
    }

    /// A level by name, whatever its case (`High`, `high`); `None` for anything else.
    pub fn parse(name: &str) -> Option<ThinkingLevel> {
        let name = name.trim();
        Self::ALL
            .into_iter()
            .find(|level| level.as_str().eq_ignore_ascii_case(name))
    }
}

#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize, clap::ValueEnum)]
#[serde(rename_all = "kebab-case")]
pub enum PermissionMode {
    /// Mutating tools need the user's approval.
    #[default]
    Ask,
    /// Everything runs.
    Auto,
    /// Mutating tools are always denied.
    ReadOnly,
    /// Plan mode: mutating tools are denied, as in read-only mode, and the model is told to
    /// end by presenting a plan for the user to approve.
    Plan,
}

impl PermissionMode {
    pub fn as_str(self) -> &'static str {
        match self {
            PermissionMode::Ask => "ask",
            PermissionMode::Auto => "auto",
            PermissionMode::ReadOnly => "read-only",
            PermissionMode::Plan => "plan",
        }
    }

    /// Whether mutating tools are denied whatever the rules say.
    pub fn denies_changes(self) -> bool {
        matches!(self, PermissionMode::ReadOnly | PermissionMode::Plan)
    }

    /// The mode after this one when cycling (the interface's shift+tab): ask → auto →
    /// plan → read-only → ask.
    pub fn next(self) -> PermissionMode {
        match self {
            PermissionMode::Ask => PermissionMode::Auto,
            PermissionMode::Auto => PermissionMode::Plan,
            PermissionMode::Plan => PermissionMode::ReadOnly,
            PermissionMode::ReadOnly => PermissionMode::Ask,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn commands_serialize_with_their_type_and_camel_case_fields() {
        let command = Command::Approve {
            tool_call_id: "c1".into(),
            agent_id: None,
            decision: ApprovalDecision::Deny(Some("no".into())),
        };
        assert_eq!(
            serde_json::to_value(&command).unwrap(),
            json!({"type": "approve", "toolCallId": "c1", "decision": {"deny": "no"}})
        );
        let command = Command::SetModel {
            model: ModelRef::Parts {
                provider: "openrouter".into(),
                model: "meta-llama/x".into(),
            },
        };
        let value = serde_json::to_value(&command).unwrap();
        assert_eq!(
            value,
            json!({"type": "set_model", "model": {"provider": "openrouter", "model": "meta-llama/x"}})
        );
        assert_eq!(serde_json::from_value::<Command>(value).unwrap(), command);
        let prompt = Command::Prompt {
            input: UserInput::text("/review src"),
            delivery: Delivery::SteerRunning,
        };
        assert_eq!(
            serde_json::to_value(&prompt).unwrap(),
            json!({"type": "prompt", "input": {"parts": [{"kind": "text", "text": "/review src"}]},
                   "delivery": "steer_running"})
        );
        assert_eq!(prompt.kind(), "prompt");
        let rewind: Command = serde_json::from_value(json!({
            "type": "rewind", "target": {"kind": "checkpoint", "checkpointId": "k"}
        }))
        .unwrap();
        assert_eq!(
            rewind,
            Command::Rewind {
                target: RewindTarget::Checkpoint {
                    checkpoint_id: "k".into()
                },
                restore: RestoreMode::Both,
                force: false,
            }
        );
    }

    #[test]
    fn levels_and_modes_parse_and_cycle() {
        assert_eq!(ThinkingLevel::parse("HIGH"), Some(ThinkingLevel::High));
        assert_eq!(
            ThinkingLevel::parse(" minimal "),
            Some(ThinkingLevel::Minimal)
        );
        assert_eq!(ThinkingLevel::parse("max"), None);
        let mut mode = PermissionMode::Ask;
        let mut seen = Vec::new();
        for _ in 0..4 {
            seen.push(mode.as_str());
            mode = mode.next();
        }
        assert_eq!(seen, ["ask", "auto", "plan", "read-only"]);
        assert_eq!(mode, PermissionMode::Ask);
    }
}
