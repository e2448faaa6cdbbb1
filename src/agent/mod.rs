//! The engine. `Agent` is the handle every front end drives — prompt, steer, follow_up,
//! abort, approve, subscribe — while the loop runs in a background tokio task and reports
//! everything as `AgentEvent`s.

pub mod event;
pub mod guard;
pub mod limits;
pub mod message;
mod model_call;
mod phase;
pub mod queue;
mod run;
mod state;
mod tool_calls;

use crate::llm::client::Provider;
use crate::llm::model::ModelInfo;
use crate::llm::request::ThinkingLevel;
use crate::tools::permission::{PermissionMode, PermissionRules, Permissions};
use crate::tools::{ToolSettings, Tools};
use event::AgentEvent;
use limits::{Limits, RetryPolicy};
use message::{AssistantMessage, Message, Usage, UserMessage};
use queue::{MessageQueue, QueueMode};
use state::{RunSettings, Shared, State, lock};
use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use tokio::sync::{mpsc, watch};

pub use tool_calls::SKIPPED_TEXT;

/// Everything needed to build an agent; front ends fill it from the resolved config.
pub struct AgentConfig {
    pub provider: Arc<Provider>,
    pub model: ModelInfo,
    pub thinking: ThinkingLevel,
    pub system_prompt: String,
    pub tools: Tools,
    pub tool_settings: ToolSettings,
    pub permission_mode: PermissionMode,
    /// The `[permissions]` rules (allow / ask / deny), on top of the mode.
    pub permission_rules: PermissionRules,
    /// Whether a front end answers approval requests (TUI, RPC). Without one, a call that
    /// needs approval is denied and the model is told how the user can allow it.
    pub can_ask: bool,
    pub limits: Limits,
    pub retry: RetryPolicy,
    pub steering_mode: QueueMode,
    pub follow_up_mode: QueueMode,
    pub cwd: PathBuf,
    /// Earlier conversation (a resumed session).
    pub history: Vec<Arc<Message>>,
}

/// The user's answer to a `tool_approval_request`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Approval {
    Allow,
    /// Allow, and allow the same call again for the rest of the session.
    AllowSession,
    /// Deny, optionally telling the model why.
    Deny(Option<String>),
}

#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum AgentError {
    #[error(
        "a run is already active; send the message with streamingBehavior \"steer\" or \"followUp\""
    )]
    Busy,
    #[error("no tool call `{0}` is waiting for approval")]
    NoSuchApproval(String),
}

/// A point-in-time view of the agent, for `get_state` and status lines.
#[derive(Clone, Debug)]
pub struct Snapshot {
    pub provider: String,
    pub model: String,
    pub thinking: ThinkingLevel,
    pub is_running: bool,
    pub message_count: usize,
    pub pending_message_count: usize,
    pub steering_mode: QueueMode,
    pub follow_up_mode: QueueMode,
    pub permission_mode: PermissionMode,
    /// Token and cost totals over the whole history.
    pub usage: Usage,
}

pub struct Agent {
    shared: Arc<Shared>,
}

impl Agent {
    /// Must be called inside a tokio runtime; runs are spawned on it.
    pub fn new(config: AgentConfig) -> Agent {
        let tool_specs = config.tools.specs();
        let settings = RunSettings {
            provider: config.provider,
            model: config.model,
            thinking: config.thinking,
            system_prompt: config.system_prompt,
            tools: config.tools,
            tool_specs,
            tool_settings: Arc::new(config.tool_settings),
            limits: config.limits,
            retry: config.retry,
            cwd: config.cwd,
        };
        let state = State {
            messages: config.history,
            running: false,
            steering: MessageQueue::new(config.steering_mode),
            follow_up: MessageQueue::new(config.follow_up_mode),
            cancel: None,
            approvals: HashMap::new(),
            permissions: Permissions::with_rules(config.permission_mode, config.permission_rules),
            can_ask: config.can_ask,
            task: None,
        };
        let (idle, _) = watch::channel(true);
        Agent {
            shared: Arc::new(Shared {
                state: Mutex::new(state),
                streaming: Mutex::new(None),
                settings: Mutex::new(Arc::new(settings)),
                emitter: Default::default(),
                idle,
                runtime: tokio::runtime::Handle::current(),
            }),
        }
    }

    /// A new stream of every event from now on.
    pub fn subscribe(&self) -> mpsc::UnboundedReceiver<AgentEvent> {
        self.shared.emitter.subscribe()
    }

    /// Start a run with this message; an error while a run is active.
    pub fn prompt(&self, message: UserMessage) -> Result<(), AgentError> {
        let mut state = lock(&self.shared.state);
        if state.running {
            return Err(AgentError::Busy);
        }
        run::spawn_run(&self.shared, &mut state, vec![message]);
        Ok(())
    }

    /// Deliver after the current tool call, skipping the message's remaining calls. When
    /// idle, starts a run with the message.
    pub fn steer(&self, message: UserMessage) {
        self.enqueue(message, |state| &mut state.steering);
    }

    /// Deliver when the agent would otherwise stop. When idle, starts a run with it.
    pub fn follow_up(&self, message: UserMessage) {
        self.enqueue(message, |state| &mut state.follow_up);
    }

    fn enqueue(&self, message: UserMessage, queue: impl FnOnce(&mut State) -> &mut MessageQueue) {
        let mut state = lock(&self.shared.state);
        if !state.running {
            run::spawn_run(&self.shared, &mut state, vec![message]);
            return;
        }
        queue(&mut state).push(message);
        self.shared.emit(Shared::queue_update_event(&state));
    }

    /// Stop the run now: the stream is closed, running tools are killed, `agent_end` follows
    /// with status `aborted`. Returns the queued messages, which are removed (a front end
    /// can give them back to the user). Does nothing when idle.
    pub fn abort(&self) -> Vec<UserMessage> {
        let mut state = lock(&self.shared.state);
        let Some(cancel) = state.cancel.clone() else {
            return Vec::new();
        };
        tracing::info!("abort requested");
        cancel.cancel();
        let mut queued = state.steering.take_all();
        queued.extend(state.follow_up.take_all());
        if !queued.is_empty() {
            self.shared.emit(Shared::queue_update_event(&state));
        }
        queued
    }

    /// Answer a pending `tool_approval_request`.
    pub fn approve(&self, tool_call_id: &str, decision: Approval) -> Result<(), AgentError> {
        let sender = lock(&self.shared.state).approvals.remove(tool_call_id);
        match sender.map(|sender| sender.send(decision)) {
            Some(Ok(())) => Ok(()),
            _ => Err(AgentError::NoSuchApproval(tool_call_id.to_string())),
        }
    }

    /// Whether approval requests can be answered; turning it off denies the pending ones.
    pub fn set_can_ask(&self, can_ask: bool) {
        let mut state = lock(&self.shared.state);
        state.can_ask = can_ask;
        if !can_ask {
            state.approvals.clear();
        }
    }

    pub fn set_steering_mode(&self, mode: QueueMode) {
        lock(&self.shared.state).steering.mode = mode;
    }

    pub fn set_follow_up_mode(&self, mode: QueueMode) {
        lock(&self.shared.state).follow_up.mode = mode;
    }

    pub fn is_running(&self) -> bool {
        lock(&self.shared.state).running
    }

    /// Wait until no run is active.
    pub async fn wait_for_idle(&self) {
        let mut idle = self.shared.idle.subscribe();
        let _ = idle.wait_for(|idle| *idle).await;
    }

    /// The history: every completed message.
    pub fn messages(&self) -> Vec<Arc<Message>> {
        lock(&self.shared.state).messages.clone()
    }

    /// The assistant message being streamed, with tool-call arguments parsed as far as they
    /// have arrived; `None` between model calls.
    pub fn streaming_message(&self) -> Option<AssistantMessage> {
        lock(&self.shared.streaming).as_ref().map(|a| a.snapshot())
    }

    pub fn snapshot(&self) -> Snapshot {
        let settings = self.shared.settings();
        let state = lock(&self.shared.state);
        let mut usage = Usage::default();
        for message in &state.messages {
            if let Message::Assistant(assistant) = message.as_ref() {
                add_usage(&mut usage, &assistant.usage);
            }
        }
        Snapshot {
            provider: settings.provider.settings().name.clone(),
            model: settings.model.id.clone(),
            thinking: settings.thinking,
            is_running: state.running,
            message_count: state.messages.len(),
            pending_message_count: state.steering.len() + state.follow_up.len(),
            steering_mode: state.steering.mode,
            follow_up_mode: state.follow_up.mode,
            permission_mode: state.permissions.mode,
            usage,
        }
    }
}

fn add_usage(total: &mut Usage, usage: &Usage) {
    total.input += usage.input;
    total.output += usage.output;
    total.cache_read += usage.cache_read;
    total.cache_write += usage.cache_write;
    total.total_tokens += usage.total_tokens;
    total.cost.input += usage.cost.input;
    total.cost.output += usage.cost.output;
    total.cost.cache_read += usage.cost.cache_read;
    total.cost.cache_write += usage.cost.cache_write;
    total.cost.total += usage.cost.total;
}

impl Drop for Agent {
    /// No run outlives its handle: dropping the agent aborts it (killing its tools).
    fn drop(&mut self) {
        if let Some(cancel) = lock(&self.shared.state).cancel.take() {
            cancel.cancel();
        }
    }
}
