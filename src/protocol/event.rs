//! `AgentEvent`: everything the engine tells the outside world (docs/protocol.md §3). Events are
//! the engine's only output; front ends render them, `--mode json`/`rpc` serialise them
//! one per line.

use super::command::{PermissionMode, ThinkingLevel};
use super::message::{Content, Message, WebSearch, WebSearchResult, WebSearchStatus};
use super::outcome::{SessionChange, SessionIdentity};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::path::PathBuf;
use std::sync::Arc;

#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(
    tag = "type",
    rename_all = "snake_case",
    rename_all_fields = "camelCase"
)]
pub enum AgentEvent {
    AgentStart,
    TurnStart,
    MessageStart {
        message: Arc<Message>,
    },
    /// Only the delta: a long answer costs O(n) on the wire, not O(n²).
    MessageUpdate {
        assistant_message_event: AssistantMessageEvent,
    },
    MessageEnd {
        message: Arc<Message>,
    },
    ToolExecutionStart {
        tool_call_id: String,
        tool_name: String,
        args: Value,
    },
    ToolExecutionUpdate {
        tool_call_id: String,
        tool_name: String,
        partial_result: ToolResultPayload,
    },
    ToolExecutionEnd {
        tool_call_id: String,
        tool_name: String,
        result: ToolResultPayload,
        is_error: bool,
    },
    TurnEnd {
        message: Arc<Message>,
        tool_results: Vec<Arc<Message>>,
    },
    AgentEnd {
        messages: Vec<Arc<Message>>,
        status: RunStatus,
        #[serde(skip_serializing_if = "Option::is_none")]
        error: Option<String>,
    },
    AutoRetryStart {
        attempt: u32,
        max_attempts: u32,
        delay_ms: u64,
        error_message: String,
    },
    AutoRetryEnd {
        success: bool,
        attempt: u32,
        #[serde(skip_serializing_if = "Option::is_none")]
        final_error: Option<String>,
    },
    AutoCompactionStart {
        reason: CompactionReason,
    },
    AutoCompactionEnd {
        tokens_before: u64,
        tokens_after: u64,
        aborted: bool,
        #[serde(skip_serializing_if = "Option::is_none")]
        error_message: Option<String>,
    },
    ToolApprovalRequest {
        tool_call_id: String,
        tool_name: String,
        args: Value,
        reason: String,
        /// Set when a sub-agent asks (its request relayed by its parent): which one.
        #[serde(skip_serializing_if = "Option::is_none")]
        agent_id: Option<String>,
        /// The working directory the call runs in.
        cwd: PathBuf,
        /// What the call would do, for the user to decide on.
        preview: ApprovalPreview,
        /// The allow rules an `allow_rule` answer would add for the session so that calls
        /// like this one run without asking (`bash(npm test*)`), when some can be written.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        suggested_rule: Option<String>,
    },
    /// The model asks the user (the `ask_user` tool): answer with `answer_question`. Set
    /// `agent_id` when a sub-agent asks (relayed by its parent).
    UserQuestion {
        tool_call_id: String,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        agent_id: Option<String>,
        /// The asking sub-agent's name (its definition's, e.g. `general`), with `agent_id`.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        agent_name: Option<String>,
        questions: Vec<super::question::Question>,
    },
    QueueUpdate {
        steering: Vec<String>,
        follow_up: Vec<String>,
    },
    /// Something the user should know that is not part of the conversation (an MCP server
    /// that did not start), said once.
    Notice {
        level: NoticeLevel,
        message: String,
    },
    /// The agent moved from `previous` to `state`; `elapsed_ms` is how long it was in
    /// `previous`.
    State {
        state: RunState,
        previous: RunState,
        elapsed_ms: u64,
    },
    /// A hook (docs/extensions.md) started: the event it runs for (`PreToolUse`, …) and its
    /// command.
    HookStart {
        hook_event_name: String,
        command: String,
    },
    /// A hook ended: its exit code (null when killed by a signal) and what it decided:
    /// `continue`, `block` (with the reason) or `approve`.
    HookEnd {
        hook_event_name: String,
        command: String,
        exit_code: Option<i32>,
        decision: String,
        #[serde(skip_serializing_if = "Option::is_none")]
        reason: Option<String>,
        duration_ms: u64,
    },
    /// A hook failed (could not start, exited with a code other than 0 or 2, timed out,
    /// answered JSON that makes no sense): why. The run goes on as if it had said nothing.
    HookError {
        hook_event_name: String,
        command: String,
        message: String,
    },
    /// The working tree was recorded before a mutating tool call (or `!command`): `files`
    /// covered, `bytes` in them, and what is not covered and why.
    Checkpoint {
        id: String,
        /// The session entry (the user message) whose tools it precedes.
        entry_id: Option<String>,
        files: u64,
        bytes: u64,
        skipped: Vec<SkippedFile>,
    },
    /// The provider searched the web itself (`[web] search`): what for, how it went, the
    /// pages it found. Sent once per search, when its outcome arrives (the search is also a
    /// `webSearch` block of the message).
    WebSearch {
        id: String,
        query: String,
        status: WebSearchStatus,
        results: Vec<WebSearchResult>,
        #[serde(skip_serializing_if = "Option::is_none")]
        error: Option<String>,
    },
    /// The model rewrote its task list (`todo_write`): the whole list, in order.
    TodoUpdate {
        todos: Vec<super::todo::TodoItem>,
    },
    /// The session's identity or head changed: a new, resumed or forked session, another
    /// branch, a rewind or its undo.
    SessionChanged {
        session: SessionIdentity,
        reason: SessionChange,
    },
    /// The model, thinking level or permission mode was changed (not a command's model for
    /// one run): the settings now.
    ConfigChanged {
        provider: String,
        model: String,
        thinking_level: ThinkingLevel,
        permission_mode: PermissionMode,
        /// The profile in use (`--profile`, `set_profile`); absent when none is.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        profile: Option<String>,
    },
    /// The session's usage after a model call (the agent's own or a sub-agent's): totals,
    /// per model, per sub-agent, per tool, cost (`null` when a price is unknown).
    UsageUpdate {
        usage: super::usage::UsageReport,
    },
    /// The session's goal changed (`set_goal`, the model marked it, another session or
    /// branch): the goal now (`null`: none), and why.
    GoalUpdate {
        goal: Option<String>,
        reason: GoalChange,
    },
    /// An event of a sub-agent (a `task` call's child), passed on by its parent. Text
    /// deltas may be coalesced (at most one per 50 ms per child); nothing else is dropped.
    SubagentEvent {
        agent_id: String,
        parent_tool_call_id: String,
        event: Box<AgentEvent>,
    },
}

impl AgentEvent {
    /// The `web_search` event of a search (its provider blocks are not part of it).
    pub fn web_search(search: WebSearch) -> AgentEvent {
        AgentEvent::WebSearch {
            id: search.id,
            query: search.query,
            status: search.status,
            results: search.results,
            error: search.error,
        }
    }

    /// The search a `web_search` event reports, as a message block holds it (without the
    /// provider's blocks), for a front end to show; `None` for any other event.
    pub fn into_web_search(self) -> Option<WebSearch> {
        match self {
            AgentEvent::WebSearch {
                id,
                query,
                status,
                results,
                error,
            } => Some(WebSearch {
                id,
                query,
                status,
                results,
                error,
                api: String::new(),
                provider_blocks: Vec::new(),
            }),
            _ => None,
        }
    }

    /// Whether this is a per-delta `message_update` (a sub-agent's included), which
    /// subscribers that only need outcomes leave out.
    pub fn is_delta(&self) -> bool {
        match self {
            AgentEvent::MessageUpdate { .. } => true,
            AgentEvent::SubagentEvent { event, .. } => event.is_delta(),
            _ => false,
        }
    }
}

/// What a call waiting for approval would do (`tool_approval_request.preview`), worked out
/// by the engine before it asks.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(
    tag = "kind",
    rename_all = "snake_case",
    rename_all_fields = "camelCase"
)]
pub enum ApprovalPreview {
    /// `write` / `edit`: the unified diff the call would make (`newFile`: the file does not
    /// exist yet). `path` as shown (relative to the working directory when inside it),
    /// `file` absolute.
    Diff {
        path: String,
        file: PathBuf,
        diff: String,
        new_file: bool,
    },
    /// A change that cannot be previewed (the edit would fail, a binary file): why.
    Unavailable {
        path: String,
        file: PathBuf,
        why: String,
    },
    /// A command (`bash`): the whole command; `unsandboxedAllowed`: the
    /// `allow_unsandboxed` answer is offered.
    Command {
        command: String,
        unsandboxed_allowed: bool,
    },
    /// Nothing beyond the arguments (an MCP tool, a read-only tool).
    None,
}

/// Where the agent is: a run goes `preparing` → (`model_running` → `tool_running` ⇄
/// `awaiting_human`, with `retrying` and `compacting` on the way)… → `completed`, `failed`
/// or `aborted`, then `idle` (or `preparing` again when messages were queued).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RunState {
    Preparing,
    ModelRunning,
    ToolRunning,
    AwaitingHuman,
    Retrying,
    Compacting,
    Completed,
    Failed,
    Aborted,
    Idle,
}

impl RunState {
    /// The wire name (`model_running`).
    pub fn as_str(self) -> &'static str {
        match self {
            RunState::Preparing => "preparing",
            RunState::ModelRunning => "model_running",
            RunState::ToolRunning => "tool_running",
            RunState::AwaitingHuman => "awaiting_human",
            RunState::Retrying => "retrying",
            RunState::Compacting => "compacting",
            RunState::Completed => "completed",
            RunState::Failed => "failed",
            RunState::Aborted => "aborted",
            RunState::Idle => "idle",
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum NoticeLevel {
    Info,
    Warning,
}

/// A path a checkpoint does not cover, and why (over a cap, unreadable, not a file).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct SkippedFile {
    pub path: String,
    pub reason: String,
}

/// A change to the streaming assistant message. `contentIndex` is the block's index in the
/// message's `content`. (Deserialized by the `agent-proxy` provider, which reads them from
/// `agent proxy`.)
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(
    tag = "type",
    rename_all = "snake_case",
    rename_all_fields = "camelCase"
)]
pub enum AssistantMessageEvent {
    TextStart {
        content_index: usize,
    },
    TextDelta {
        content_index: usize,
        delta: String,
    },
    TextEnd {
        content_index: usize,
    },
    ThinkingStart {
        content_index: usize,
    },
    ThinkingDelta {
        content_index: usize,
        delta: String,
    },
    ThinkingEnd {
        content_index: usize,
    },
    #[serde(rename = "toolcall_start")]
    ToolCallStart {
        content_index: usize,
    },
    #[serde(rename = "toolcall_delta")]
    ToolCallDelta {
        content_index: usize,
        delta: String,
    },
    #[serde(rename = "toolcall_end")]
    ToolCallEnd {
        content_index: usize,
    },
}

impl AssistantMessageEvent {
    /// The text a delta (text, thinking or tool-call arguments) adds; `None` for any other
    /// event.
    pub fn delta(&self) -> Option<&str> {
        match self {
            AssistantMessageEvent::TextDelta { delta, .. }
            | AssistantMessageEvent::ThinkingDelta { delta, .. }
            | AssistantMessageEvent::ToolCallDelta { delta, .. } => Some(delta),
            _ => None,
        }
    }

    /// Append `next` to this event when both are deltas (text, thinking or tool-call
    /// arguments) of the same block, so that two queued deltas go out as one; `false`, and
    /// nothing changed, for anything else.
    pub fn absorb(&mut self, next: &AssistantMessageEvent) -> bool {
        use AssistantMessageEvent::{TextDelta, ThinkingDelta, ToolCallDelta};
        let (text, more) = match (self, next) {
            (
                TextDelta {
                    content_index: a,
                    delta: text,
                },
                TextDelta {
                    content_index: b,
                    delta,
                },
            )
            | (
                ThinkingDelta {
                    content_index: a,
                    delta: text,
                },
                ThinkingDelta {
                    content_index: b,
                    delta,
                },
            )
            | (
                ToolCallDelta {
                    content_index: a,
                    delta: text,
                },
                ToolCallDelta {
                    content_index: b,
                    delta,
                },
            ) if *a == *b => (text, delta),
            _ => return false,
        };
        text.push_str(more);
        true
    }
}

/// What a tool produced: the content the model sees, and details for front ends (a diff,
/// the path of a saved full output).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ToolResultPayload {
    pub content: Vec<Content>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub details: Option<Value>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum RunStatus {
    Completed,
    Failed,
    Aborted,
    Limit,
}

/// Why the goal changed (`goal_update.reason`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum GoalChange {
    /// The user set it (`set_goal`).
    Set,
    /// The user cleared it.
    Cleared,
    /// The model marked it achieved (`goal` tool, status `done`): it is cleared.
    Done,
    /// The model marked it blocked: the run ended, the goal stays.
    Blocked,
    /// Another session or branch is current: its goal.
    Session,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum CompactionReason {
    Threshold,
    Overflow,
    Manual,
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn deltas_of_one_block_are_absorbed_and_nothing_else() {
        fn text(i: usize, d: &str) -> AssistantMessageEvent {
            AssistantMessageEvent::TextDelta {
                content_index: i,
                delta: d.into(),
            }
        }
        let mut held = text(0, "ab");
        assert!(held.absorb(&text(0, "c")));
        assert_eq!(held, text(0, "abc"));
        // Another block, another kind, or not a delta: unchanged.
        assert!(!held.absorb(&text(1, "d")));
        let thinking = AssistantMessageEvent::ThinkingDelta {
            content_index: 0,
            delta: "e".into(),
        };
        assert!(!held.absorb(&thinking));
        assert!(!held.absorb(&AssistantMessageEvent::TextEnd { content_index: 0 }));
        assert_eq!(held, text(0, "abc"));
        let mut call = AssistantMessageEvent::ToolCallDelta {
            content_index: 2,
            delta: "{\"a".into(),
        };
        assert!(call.absorb(&AssistantMessageEvent::ToolCallDelta {
            content_index: 2,
            delta: "\":1}".into(),
        }));
        assert_eq!(
            call,
            AssistantMessageEvent::ToolCallDelta {
                content_index: 2,
                delta: "{\"a\":1}".into(),
            }
        );
    }

    #[test]
    fn events_serialize_with_type_first_and_camel_case_fields() {
        let event = AgentEvent::MessageUpdate {
            assistant_message_event: AssistantMessageEvent::ToolCallDelta {
                content_index: 2,
                delta: "{\"a".into(),
            },
        };
        let line = serde_json::to_string(&event).unwrap();
        assert!(line.starts_with("{\"type\":\"message_update\""), "{line}");
        assert_eq!(
            serde_json::from_str::<Value>(&line).unwrap(),
            json!({"type": "message_update",
                   "assistantMessageEvent": {"type": "toolcall_delta", "contentIndex": 2, "delta": "{\"a"}})
        );
        let end = AgentEvent::AgentEnd {
            messages: vec![],
            status: RunStatus::Limit,
            error: Some("max turns".into()),
        };
        assert_eq!(
            serde_json::to_value(&end).unwrap(),
            json!({"type": "agent_end", "messages": [], "status": "limit", "error": "max turns"})
        );
        let start = AgentEvent::ToolExecutionStart {
            tool_call_id: "c".into(),
            tool_name: "read".into(),
            args: json!({}),
        };
        assert_eq!(
            serde_json::to_value(&start).unwrap(),
            json!({"type": "tool_execution_start", "toolCallId": "c", "toolName": "read", "args": {}})
        );
        let state = AgentEvent::State {
            state: RunState::AwaitingHuman,
            previous: RunState::ToolRunning,
            elapsed_ms: 12,
        };
        let line = serde_json::to_string(&state).unwrap();
        assert_eq!(
            line,
            r#"{"type":"state","state":"awaiting_human","previous":"tool_running","elapsedMs":12}"#
        );
        for state in [RunState::ModelRunning, RunState::Idle] {
            assert_eq!(serde_json::to_value(state).unwrap(), json!(state.as_str()));
        }
    }

    #[test]
    fn a_web_search_event_has_no_provider_blocks() {
        let search = crate::protocol::message::WebSearch {
            id: "ws_1".into(),
            query: "tokyo".into(),
            status: WebSearchStatus::Completed,
            results: vec![WebSearchResult {
                title: String::new(),
                url: "https://example.org/".into(),
            }],
            error: None,
            api: "openai-responses".into(),
            provider_blocks: vec![json!({"type": "web_search_call"})],
        };
        assert_eq!(
            serde_json::to_string(&AgentEvent::web_search(search)).unwrap(),
            r#"{"type":"web_search","id":"ws_1","query":"tokyo","status":"completed","results":[{"url":"https://example.org/"}]}"#
        );
    }
}
