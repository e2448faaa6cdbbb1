//! What executing a `Command` answers: an `Outcome`, or a `CommandError` saying why nothing
//! (or what) was done. Front ends word both their own way; the `Display` texts are the RPC's.
//! Also the session's identity, which the engine owns and reports (`Snapshot.session`, the
//! `session_changed` event).

use super::command::{PermissionMode, ThinkingLevel};
use super::event::SkippedFile;
use super::message::UserMessage;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::path::PathBuf;

/// Which session the agent writes to, and where its conversation is.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SessionIdentity {
    pub id: String,
    /// The session file; `None` when nothing is kept on disk (`--no-session`).
    pub path: Option<PathBuf>,
    /// The session entry of the conversation's last message, which the next one follows
    /// (`None` before the first); `get_tree`'s `head`.
    pub head: Option<String>,
}

/// Why the session's identity or head changed (`session_changed`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum SessionChange {
    New,
    Resume,
    Fork,
    Clone,
    SwitchBranch,
    Rewind,
    UndoRewind,
}

/// A model and the provider it is called through, as `get_available_models` describes one.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ModelSummary {
    pub provider: String,
    /// The provider's wire API (`openai-chat`, …).
    pub api: String,
    pub base_url: String,
    pub id: String,
    pub reasoning: bool,
    pub images: bool,
    pub context_window: u64,
    pub max_output_tokens: u64,
    /// US dollars per million tokens.
    pub cost: ModelCostSummary,
}

#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ModelCostSummary {
    pub input: f64,
    pub output: f64,
    pub cache_read: f64,
    pub cache_write: f64,
}

/// A profile as switching to it set things (`Outcome::Profile`).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ProfileSummary {
    pub name: String,
    pub model: ModelSummary,
    /// The provider's stored credential in use; `None`: its default one.
    pub account: Option<String>,
    pub permission_mode: PermissionMode,
    /// The sandbox mode commands run in now (`off`, `read-only`, `workspace-write`).
    pub sandbox: String,
    /// The MCP servers whose tools are offered; `None`: every configured one.
    pub mcp_servers: Option<Vec<String>>,
}

/// What a restore did to the files.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct RestoreSummary {
    pub restored: Vec<String>,
    pub removed: Vec<String>,
    /// What was left as it is, and why.
    pub not_restored: Vec<SkippedFile>,
}

impl RestoreSummary {
    /// "3 restored, 1 removed" (and what was left alone).
    pub fn describe(&self) -> String {
        restore_counts(
            self.restored.len(),
            self.removed.len(),
            self.not_restored.len(),
        )
    }
}

/// How a restore is said, by the engine's log and by every front end: "3 restored, 1
/// removed", and how many were left alone when some were.
pub fn restore_counts(restored: usize, removed: usize, not_restored: usize) -> String {
    let mut text = format!("{restored} restored, {removed} removed");
    if not_restored > 0 {
        text.push_str(&format!(", {not_restored} not restored"));
    }
    text
}

/// How the user's shell command (`RunShell`) went.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ShellResult {
    /// Its output (tail-truncated like the bash tool's).
    pub output: String,
    /// `None` when it did not exit by itself (killed, timed out).
    pub exit_code: Option<i64>,
    pub cancelled: bool,
    pub truncated: bool,
    /// Where the whole output was saved when it was too long to show.
    pub full_output_path: Option<String>,
    /// Whether it failed (a code other than 0, a timeout, cancelled).
    pub is_error: bool,
    /// The bash tool's details, as a tool result carries them.
    pub details: Option<Value>,
}

/// What one `@path` became.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(
    tag = "kind",
    rename_all = "snake_case",
    rename_all_fields = "camelCase"
)]
pub enum Attached {
    File {
        path: String,
        bytes: u64,
    },
    Directory {
        path: String,
        entries: usize,
    },
    Image {
        path: String,
        width: usize,
        height: usize,
    },
    /// Named an existing file that is not attached, and why.
    Skipped {
        path: String,
        why: String,
    },
}

/// What a command did.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(
    tag = "type",
    rename_all = "snake_case",
    rename_all_fields = "camelCase"
)]
pub enum Outcome {
    /// The message was delivered (`started`: it started a run); `attached` is what its
    /// `@path`s and image chips became, in order (`skipped` repeats those not attached, and
    /// why); `command` the custom command or skill it invoked.
    Accepted {
        attached: Vec<Attached>,
        skipped: Vec<SkippedFile>,
        command: Option<String>,
        started: bool,
    },
    /// The queued messages, removed from the queues.
    Aborted {
        queued: Vec<UserMessage>,
    },
    Unqueued {
        message: Option<UserMessage>,
    },
    Done,
    /// The model in use now.
    Model {
        model: ModelSummary,
        thinking: ThinkingLevel,
    },
    /// `CycleModel` with no other model to switch to.
    NoOtherModel,
    /// The profile switched to (`SetProfile`).
    Profile {
        profile: Box<ProfileSummary>,
    },
    /// The reasoning level in effect.
    Thinking {
        level: ThinkingLevel,
    },
    /// `CycleThinking` on a model that does not reason: nothing to cycle.
    NoOtherLevel,
    /// `AbortRetry`: whether a retry was waiting (and was ended).
    RetryAborted {
        ended: bool,
    },
    /// The session's name now.
    SessionName {
        name: String,
    },
    /// The session's goal now (`None`: none).
    Goal {
        goal: Option<String>,
    },
    PermissionMode {
        mode: PermissionMode,
    },
    Compacted {
        tokens_before: u64,
        tokens_after: u64,
    },
    /// The session now (new, resumed, or on another branch), and notes for the user (a
    /// repaired file, a model that could not be adopted).
    Session {
        session: SessionIdentity,
        notices: Vec<String>,
    },
    /// Another branch became the conversation; `files`: what restoring the files as that
    /// branch left them did (`None`: not asked for, or the branch changed no file).
    BranchSwitched {
        session: SessionIdentity,
        files: Option<RestoreSummary>,
    },
    /// The fork, continued in; `text` is the user message forked at, to edit and send.
    Forked {
        session: SessionIdentity,
        text: Option<String>,
    },
    /// What a rewind (or its undo) did: the files (`None` when they were not restored), and
    /// the rewound message's text when the conversation moved.
    Rewound {
        summary: Option<RestoreSummary>,
        text: Option<String>,
    },
    Shell(ShellResult),
    /// A `/command` expanded: the prompt it makes, the command's name, and its model
    /// (`provider/model`) when it names one.
    Expanded {
        text: String,
        command: Option<String>,
        model: Option<String>,
    },
}

/// Why a command did nothing, or not all it should have.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum CommandError {
    #[error(
        "a run is already active; send the message with streamingBehavior \"steer\" or \"followUp\""
    )]
    Busy,
    /// A session cannot be switched while a run is active.
    #[error("a run is active; stop it first")]
    RunActive,
    #[error("no run is active to steer; send the message as a prompt")]
    Idle,
    #[error("no tool call `{0}` is waiting for approval")]
    NoSuchApproval(String),
    /// An `allow_rule` answer whose rules do not parse or do not cover the call: why. The
    /// request is still waiting.
    #[error("{0}")]
    Rule(String),
    #[error("no question `{0}` is waiting for an answer")]
    NoSuchQuestion(String),
    /// An answer that does not fit the questions: why. The question is still waiting.
    #[error("{0}")]
    Answer(String),
    /// `/name` names no custom command or skill (`known`: the names there are).
    #[error("{message}")]
    UnknownCommand {
        name: String,
        known: Vec<String>,
        message: String,
    },
    /// A custom command or skill that cannot be used (its file, its arguments).
    #[error("{0}")]
    Extension(String),
    /// An `@path` that cannot be sent.
    #[error("{0}")]
    Mention(String),
    /// A model that cannot be used (unknown provider, missing configuration).
    #[error("{0}")]
    Model(String),
    #[error("{0}")]
    Compaction(String),
    /// The current session file is missing messages that only memory holds.
    #[error("{0}")]
    Unsaved(String),
    /// A session that cannot be opened or created.
    #[error("{0}")]
    Session(String),
    /// A checkpoint, rewind or fork failed: why.
    #[error("{0}")]
    Checkpoint(String),
    /// Restoring would overwrite files changed outside the agent: nothing was changed.
    #[error("{message}")]
    ChangedOutside { paths: Vec<String>, message: String },
    #[error("{message}")]
    NoSuchMessage { entry_id: String, message: String },
    #[error("{message}")]
    NoSuchAgent { agent_id: String, message: String },
    #[error("{message}")]
    AgentFinished { agent_id: String, message: String },
    #[error("the message to sub-agent `{0}` is empty")]
    EmptyMessage(String),
    /// Stopped (`Control.cancel`) before it changed anything.
    #[error("{0}")]
    Cancelled(String),
    #[error("{0}")]
    Failed(String),
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn outcomes_serialize_with_their_type() {
        let outcome = Outcome::Session {
            session: SessionIdentity {
                id: "s1".into(),
                path: None,
                head: Some("e1".into()),
            },
            notices: vec![],
        };
        assert_eq!(
            serde_json::to_value(&outcome).unwrap(),
            json!({"type": "session", "session": {"id": "s1", "path": null, "head": "e1"}, "notices": []})
        );
        assert_eq!(
            serde_json::to_value(Outcome::Compacted {
                tokens_before: 9,
                tokens_after: 3
            })
            .unwrap(),
            json!({"type": "compacted", "tokensBefore": 9, "tokensAfter": 3})
        );
    }
}
