//! The engine. `Agent` is the handle every front end drives — prompt, steer, follow_up,
//! abort, approve, subscribe — while the loop runs in a background tokio task and reports
//! everything as `AgentEvent`s.

pub mod ask_user;
pub mod budget;
pub mod call_summary;
mod changes;
mod checkpoints;
pub mod children;
pub mod commands;
pub mod compaction;
mod context_report;
mod controls;
mod cut;
mod forks;
pub mod goal;
pub mod guard;
mod history;
mod hook_points;
pub mod limits;
mod lsp_points;
pub mod mentions;
mod model_call;
pub mod permissions;
mod phase;
pub mod plan_mode;
mod preserved;
pub mod queue;
mod retry;
pub mod rewind;
mod run;
mod shell_exits;
mod state;
mod summary;
mod tool_calls;
mod usage;

use crate::llm::client::Provider;
use crate::llm::model::ModelInfo;
use crate::llm::request::ThinkingLevel;
use crate::protocol::command::Delivery;
use crate::protocol::event::{AgentEvent, CompactionReason, RunState};
use crate::protocol::message::{AssistantMessage, Message, Usage, UserMessage};
use crate::protocol::outcome::{CommandError, SessionIdentity};
use crate::session::SessionWriter;
use crate::tools::permission::{PermissionMode, PermissionRules, Permissions};
use crate::tools::source::ToolSource;
use crate::tools::spill::SpillDir;
use crate::tools::{ToolSettings, Tools};
use compaction::CompactionSettings;
use history::History;
use limits::{Limits, RetryPolicy};
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
    /// Whether the engine's `ask_user` tool is offered besides `tools` (the model may ask
    /// the user questions).
    pub ask_user: bool,
    /// Tools that arrive while the agent runs (MCP servers), offered besides `tools`.
    pub tool_source: Option<Arc<dyn ToolSource>>,
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
    pub compaction: CompactionSettings,
    pub cwd: PathBuf,
    /// Earlier conversation (a resumed session), with each message's session entry id.
    pub history: Vec<(String, Arc<Message>)>,
    /// The messages before `history`, not read yet (`session::cold`): a resumed context
    /// far larger than any window.
    pub cold: Option<crate::session::cold::ColdPart>,
    /// Where messages are written; `None` keeps nothing on disk.
    pub session: Option<Arc<SessionWriter>>,
    /// The working directory's checkpoints (taken before every mutating tool call);
    /// `None` turns them off.
    pub checkpoints: Option<Arc<crate::checkpoint::Checkpoints>>,
    /// `[agents]`: the `task` tool and the sub-agents it starts (`None`: no `task` tool;
    /// neither when this agent is as deep as `max_depth` allows).
    pub agents: Option<children::AgentsSettings>,
    /// The hooks to run (docs/extensions.md); `Hooks::default()` runs none.
    pub hooks: Arc<crate::extensions::hooks::Hooks>,
    /// The models the configuration offers (`SetModel`, a command's or a sub-agent's
    /// `model`) and its profiles (`SetProfile`); `None`: no model can be chosen by name.
    pub models: Option<Arc<dyn commands::models::Models>>,
    /// The profile the settings came from (`--profile`), if any.
    pub profile: Option<String>,
    /// The custom commands and skills a prompt may start with (`/name`).
    pub extensions: Arc<crate::extensions::Extensions>,
    /// The session's id: the one `session::open` made (also for a session not kept on
    /// disk, whose checkpoints it names). `None`: the writer's, or a new one.
    pub session_id: Option<String>,
    /// Where new sessions are created (`NewSession`, resuming by id); `None`: nowhere, so
    /// only sessions not kept on disk can be started.
    pub sessions_dir: Option<PathBuf>,
}

/// The user's answer to a `tool_approval_request`.
pub use crate::protocol::command::ApprovalDecision as Approval;

#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum AgentError {
    #[error("{}", CommandError::Busy)]
    Busy,
    #[error("{}", CommandError::NoSuchApproval(.0.clone()))]
    NoSuchApproval(String),
    #[error("{}", CommandError::Idle)]
    Idle,
    /// An `allow_rule` answer that does not parse or does not cover the call.
    #[error("{0}")]
    Rule(String),
    #[error("{0}")]
    Compaction(String),
    /// The current session file is missing messages that only memory holds.
    #[error(
        "{0}; switching sessions now would lose the messages not saved yet — free space (or fix the cause) and try again"
    )]
    Unsaved(String),
    /// A checkpoint, rewind or fork failed: why.
    #[error("{0}")]
    Checkpoint(String),
    /// Restoring would overwrite files changed outside the agent: nothing was changed.
    #[error("{}", crate::checkpoint::CheckpointError::ChangedOutside(.0.clone()))]
    ChangedOutside(Vec<String>),
    #[error(
        "no user message `{0}` in the conversation (a rewind goes back to a message still in the context)"
    )]
    NoSuchMessage(String),
    #[error("a session name cannot be empty")]
    EmptyName,
}

impl From<AgentError> for CommandError {
    fn from(error: AgentError) -> Self {
        let message = error.to_string();
        match error {
            AgentError::Busy => CommandError::Busy,
            AgentError::NoSuchApproval(id) => CommandError::NoSuchApproval(id),
            AgentError::Idle => CommandError::Idle,
            AgentError::Rule(_) => CommandError::Rule(message),
            AgentError::Compaction(_) => CommandError::Compaction(message),
            AgentError::EmptyName => CommandError::Session(message),
            AgentError::Unsaved(_) => CommandError::Unsaved(message),
            AgentError::Checkpoint(_) => CommandError::Checkpoint(message),
            AgentError::ChangedOutside(paths) => CommandError::ChangedOutside { paths, message },
            AgentError::NoSuchMessage(entry_id) => {
                CommandError::NoSuchMessage { entry_id, message }
            }
        }
    }
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
    /// Token and cost totals of the session's model calls.
    pub usage: Usage,
    /// Estimated tokens of the context the next request would send, and the window.
    pub context_tokens: u64,
    pub context_window: u64,
    /// Set while the session file could not be written: why (the file and the OS error).
    /// Cleared by the next write that succeeds.
    pub session_error: Option<String>,
    /// Where the agent's state machine is, and how long it has been there.
    pub state: RunState,
    pub state_elapsed: std::time::Duration,
    /// The session written to: its id, file and head.
    pub session: SessionIdentity,
    /// Compaction and retries happen on their own.
    pub auto_compaction: bool,
    pub auto_retry: bool,
    /// The session's name, if it was given one.
    pub session_name: Option<String>,
    /// The session's goal (`set_goal`), while one is set.
    pub goal: Option<String>,
    /// The profile in use, if any.
    pub profile: Option<String>,
}

pub struct Agent {
    shared: Arc<Shared>,
    /// Whether dropping this handle aborts the run: the owner's does; a `client_handle`
    /// (a live session's client, `crate::live`) does not.
    owner: bool,
}

/// The names of the tools the engine adds to the configured ones and offers from the start,
/// for the system prompt's list: `task` when the agent may start sub-agents, `ask_user` when
/// it may ask (`goal` is offered only while a goal is set, so it is not listed).
pub fn added_tool_names(
    agents: Option<&children::AgentsSettings>,
    ask_user: bool,
) -> Vec<&'static str> {
    let mut names = Vec::new();
    if agents.is_some_and(children::AgentsSettings::may_start_children) {
        names.push(children::TASK_TOOL);
    }
    if ask_user {
        names.push(ask_user::TOOL);
    }
    names
}

impl Agent {
    /// Must be called inside a tokio runtime; runs are spawned on it.
    pub fn new(config: AgentConfig) -> Agent {
        let children = config
            .agents
            .filter(children::AgentsSettings::may_start_children)
            .map(children::Children::new);
        let mut tools = config.tools;
        if let Some(children) = &children {
            let task = Arc::new(children::task::TaskTool::new(children.clone()));
            match tools.clone().with_tool(task) {
                Ok(with_task) => tools = with_task,
                Err(error) => tracing::warn!(%error, "no `task` tool"),
            }
        }
        match tools.clone().with_tool(Arc::new(goal::GoalTool)) {
            Ok(with_goal) => tools = with_goal,
            Err(error) => tracing::warn!(%error, "no `goal` tool"),
        }
        let ask_user = Arc::new(ask_user::AskUserTool::default());
        if config.ask_user {
            match tools.clone().with_tool(ask_user.clone()) {
                Ok(with_ask) => tools = with_ask,
                Err(error) => tracing::warn!(%error, "no `ask_user` tool"),
            }
        }
        let tool_specs = tools.specs();
        let sandbox = config.tool_settings.sandbox.status.clone();
        let settings = RunSettings {
            provider: config.provider,
            model: config.model,
            thinking: config.thinking,
            system_prompt: config.system_prompt,
            base_tools: tools.clone(),
            tools,
            tool_specs,
            tool_source: config.tool_source,
            source_generation: None,
            tool_settings: Arc::new(config.tool_settings),
            limits: config.limits,
            retry: config.retry,
            auto_retry: true,
            compaction: config.compaction,
            cwd: config.cwd,
            profile: config.profile,
        };
        let state = State {
            ledger: usage::UsageLedger::from_history(&config.history),
            history: History::with_cold(config.cold.clone(), config.history),
            running: false,
            steering: MessageQueue::new(config.steering_mode),
            follow_up: MessageQueue::new(config.follow_up_mode),
            cancel: None,
            approvals: HashMap::new(),
            questions: HashMap::new(),
            permissions: Permissions::with_rules(config.permission_mode, config.permission_rules)
                .with_sandbox(sandbox),
            files: Default::default(),
            spill: Arc::new(SpillDir::for_session(
                config.session.as_ref().map(|s| s.path()),
            )),
            can_ask: config.can_ask,
            shells: Default::default(),
            session_net: Default::default(),
            task: None,
            session_error: None,
            model_after_run: None,
            session_context: Vec::new(),
            search_unsupported_told: false,
            retry_wait: None,
            session_name: config.session.as_ref().and_then(|s| s.name()),
            goal: config.session.as_ref().and_then(|s| s.goal()),
        };
        let session_id = config
            .session
            .as_ref()
            .map(|s| s.id().to_string())
            .or(config.session_id)
            .unwrap_or_else(crate::session::new_id);
        let purse = budget::Purse::new();
        purse.set_session_spent(state.ledger.total().cost.total);
        let (idle, _) = watch::channel(true);
        let agent = Agent {
            owner: true,
            shared: Arc::new(Shared {
                state: Mutex::new(state),
                streaming: Mutex::new(None),
                settings: Mutex::new(Arc::new(settings)),
                session: Mutex::new(config.session),
                session_id: Mutex::new(session_id),
                sessions_dir: config.sessions_dir,
                emitter: Default::default(),
                idle,
                clock: phase::StateClock::new(),
                runtime: tokio::runtime::Handle::current(),
                checkpoints: config.checkpoints,
                children: children.clone(),
                hooks: config.hooks,
                models: config.models,
                extensions: config.extensions,
                purse,
                uncounted: Mutex::new(config.cold),
            }),
        };
        agent.shared.purse.set_owner(&agent.shared);
        ask_user.bind(&agent.shared);
        if let Some(children) = &children {
            children.set_parent(&agent.shared);
        }
        agent
    }

    /// Start counting the usage of the older part of a long resumed context
    /// (`session::cold`) on a thread of its own, if it was not yet: the front end calls
    /// this once it has started (the interface after its first frame); a run does too.
    pub fn count_earlier(&self) {
        usage::count_earlier(&self.shared);
    }

    /// Another handle on this engine, for a client besides its owner (a live session's,
    /// `crate::live`): it executes commands and subscribes like the owner's, but dropping it
    /// stops nothing.
    pub fn client_handle(&self) -> Agent {
        Agent {
            shared: self.shared.clone(),
            owner: false,
        }
    }

    /// A new stream of every event from now on.
    pub fn subscribe(&self) -> mpsc::UnboundedReceiver<AgentEvent> {
        self.shared.emitter.subscribe(true)
    }

    /// Every event except the per-delta `message_update`s.
    pub fn subscribe_without_deltas(&self) -> mpsc::UnboundedReceiver<AgentEvent> {
        self.shared.emitter.subscribe(false)
    }

    /// Start a run with this message; an error while a run is active.
    pub fn prompt(&self, message: UserMessage) -> Result<(), AgentError> {
        self.deliver(message, None, Delivery::Start).map(drop)
    }

    /// `prompt`, with `model` (when given) used for this run only: the current model comes
    /// back when the agent is idle again (a custom command's `model` front matter).
    pub fn prompt_with_model(
        &self,
        message: UserMessage,
        model: Option<(Arc<Provider>, ModelInfo)>,
    ) -> Result<(), AgentError> {
        self.deliver(message, model, Delivery::Start).map(drop)
    }

    /// Deliver after the current tool call, skipping the message's remaining calls. When
    /// idle, starts a run with the message.
    pub fn steer(&self, message: UserMessage) {
        let _ = self.deliver(message, None, Delivery::Steer);
    }

    /// Steer the run that is active; unlike `steer`, never starts one (`Idle` when none
    /// runs), so a front end that answers each run's prompt never gets a run it did not ask for.
    pub fn steer_running(&self, message: UserMessage) -> Result<(), AgentError> {
        self.deliver(message, None, Delivery::SteerRunning)
            .map(drop)
    }

    /// Deliver when the agent would otherwise stop. When idle, starts a run with it.
    pub fn follow_up(&self, message: UserMessage) {
        let _ = self.deliver(message, None, Delivery::FollowUp);
    }

    /// Deliver `message` as `delivery` says; `Ok(true)` when it started a run, which uses
    /// `model` (when given) for that run only — a message queued behind a run goes with
    /// that run's model.
    fn deliver(
        &self,
        message: UserMessage,
        model: Option<(Arc<Provider>, ModelInfo)>,
        delivery: Delivery,
    ) -> Result<bool, AgentError> {
        let mut state = lock(&self.shared.state);
        if !state.running {
            if delivery == Delivery::SteerRunning {
                return Err(AgentError::Idle);
            }
            if let Some((provider, model)) = model {
                let mut settings = lock(&self.shared.settings);
                let mut next = RunSettings::clone(&settings);
                let previous = (
                    std::mem::replace(&mut next.provider, provider),
                    std::mem::replace(&mut next.model, model),
                );
                *settings = Arc::new(next);
                state.model_after_run.get_or_insert(previous);
            }
            run::spawn_run(&self.shared, &mut state, vec![message]);
            return Ok(true);
        }
        match delivery {
            Delivery::Start => return Err(AgentError::Busy),
            Delivery::Steer | Delivery::SteerRunning => state.steering.push(message),
            Delivery::FollowUp => state.follow_up.push(message),
        }
        self.shared.emit(Shared::queue_update_event(&state));
        Ok(false)
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
        let sender = {
            let mut state = lock(&self.shared.state);
            if let (Approval::AllowRule(text), Some(pending)) =
                (&decision, state.approvals.get(tool_call_id))
            {
                // Checked before the request is taken: a rule that does not cover the call
                // leaves it waiting.
                let rules = state
                    .permissions
                    .rules_covering(pending.tool.as_ref(), &pending.call, text)
                    .map_err(AgentError::Rule)?;
                state.permissions.allow_rules(rules);
            }
            state.approvals.remove(tool_call_id).map(|p| p.sender)
        };
        match sender.map(|sender| sender.send(decision.clone())) {
            Some(Ok(())) => Ok(()),
            Some(Err(_)) => Err(AgentError::NoSuchApproval(tool_call_id.to_string())),
            // Not ours: a sub-agent's request, relayed.
            None => self.approve_child(tool_call_id, decision),
        }
    }

    /// Answer an approval request as it was made: `agent_id` is the sub-agent whose request
    /// was relayed (the request's `agent_id`), `None` for this agent's own. Sub-agents may
    /// use the same call ids, so a relayed request is answered through the one that asked.
    pub fn approve_for(
        &self,
        agent_id: Option<&str>,
        tool_call_id: &str,
        decision: Approval,
    ) -> Result<(), AgentError> {
        let Some(agent_id) = agent_id else {
            return self.approve(tool_call_id, decision);
        };
        match self.child(agent_id) {
            Some(child) => child.approve(tool_call_id, decision),
            None => Err(AgentError::NoSuchApproval(tool_call_id.to_string())),
        }
    }

    /// Whether approval requests can be answered; turning it off denies the pending ones.
    /// Running sub-agents follow.
    pub fn set_can_ask(&self, can_ask: bool) {
        {
            let mut state = lock(&self.shared.state);
            state.can_ask = can_ask;
            if !can_ask {
                state.approvals.clear();
                state.questions.clear();
            }
        }
        for child in self.running_children() {
            child.set_can_ask(can_ask);
        }
    }

    /// Whether mutating tools ask, run or are denied, from the next call on (calls waiting
    /// for approval keep waiting); announced with `config_changed`. Running sub-agents
    /// follow.
    pub fn set_permission_mode(&self, mode: PermissionMode) {
        self.follow_permission_mode(mode);
        self.shared.config_changed();
    }

    /// `set_permission_mode` without the announcement (a sub-agent follows its parent's).
    fn follow_permission_mode(&self, mode: PermissionMode) {
        lock(&self.shared.state).permissions.mode = mode;
        for child in self.running_children() {
            child.follow_permission_mode(mode);
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

    /// The context: every completed message the model will see (after a compaction, the
    /// summary and what it kept).
    /// The older part of a long resumed context is read back from the session file for
    /// this (and not kept): see `recent_messages` for what a screen shows.
    pub fn messages(&self) -> Vec<Arc<Message>> {
        let (cold, mut messages) = {
            let state = lock(&self.shared.state);
            (
                state.history.cold().cloned(),
                state.history.messages().to_vec(),
            )
        };
        if let Some(cold) = cold {
            match cold.load_all() {
                Ok(read) => {
                    messages.splice(0..0, read.into_iter().map(|(_, m)| m));
                }
                Err(error) => tracing::warn!(%error, "the earlier messages could not be read"),
            }
        }
        messages
    }

    /// The messages held as values: all of the context but the older part of a long
    /// resumed one (`session::cold`), which `messages` reads back.
    pub fn held_messages(&self) -> Vec<Arc<Message>> {
        lock(&self.shared.state).history.messages().to_vec()
    }

    /// The older part of a long resumed context, not read (`session::cold`).
    pub fn cold_part(&self) -> Option<crate::session::cold::ColdPart> {
        lock(&self.shared.state).history.cold().cloned()
    }

    /// `held_messages` with their session entry ids.
    pub fn held_entries(&self) -> Vec<(String, Arc<Message>)> {
        let state = lock(&self.shared.state);
        let history = &state.history;
        history
            .ids()
            .iter()
            .cloned()
            .zip(history.messages().iter().cloned())
            .collect()
    }

    /// How many messages the context has, the part not read included once it was found
    /// (`earlier_pending`: not yet; nothing is read here).
    pub fn message_count(&self) -> usize {
        lock(&self.shared.state).history.counted_len()
    }

    /// Whether the older part of a long resumed context is still to be found (then
    /// `message_count` does not count it yet): a thread finds it after start and
    /// announces its usage (`usage_update`).
    pub fn earlier_pending(&self) -> bool {
        lock(&self.shared.state).history.earlier_pending()
    }

    /// The context's first user message (read back from the file when it is in the part
    /// not read).
    pub fn first_user_message(&self) -> Option<Arc<Message>> {
        let state = lock(&self.shared.state);
        let history = &state.history;
        match history.cold() {
            Some(cold) => {
                let at = cold.entries().iter().position(|e| e.user)?;
                history.message(at)?.ok()
            }
            None => history
                .messages()
                .iter()
                .find(|m| matches!(m.as_ref(), Message::User(_)))
                .cloned(),
        }
    }

    /// Summarise the older part of the conversation now (`compact`, `/compact`). Only while
    /// idle; `abort` cancels it. Returns the tokens before and after.
    pub async fn compact(&self, instructions: Option<String>) -> Result<(u64, u64), AgentError> {
        let cancel = {
            let mut state = lock(&self.shared.state);
            if state.running {
                return Err(AgentError::Busy);
            }
            let cancel = tokio_util::sync::CancellationToken::new();
            state.running = true;
            state.cancel = Some(cancel.clone());
            self.shared.idle.send_replace(false);
            self.shared.enter(RunState::Compacting);
            cancel
        };
        // However this future ends — finished, or dropped by a front end that stopped
        // waiting — the agent goes back to idle (or on to the messages queued meanwhile).
        let _settle = SettleOnDrop(&self.shared);
        let settings = self.shared.settings();
        let before = lock(&self.shared.state).history.context_tokens();
        let result = compaction::compact(
            &self.shared,
            &settings,
            &cancel,
            CompactionReason::Manual,
            instructions.as_deref(),
        )
        .await;
        result
            .map(|after| (before, after))
            .map_err(AgentError::Compaction)
    }

    /// Use another model from the next model call on (also mid-run). The change takes
    /// effect (and is announced, `config_changed`) when this is called; the future only
    /// notes it in the session, so a caller may stop waiting for that without undoing the
    /// change.
    pub fn set_model(
        &self,
        provider: Arc<Provider>,
        model: ModelInfo,
    ) -> impl Future<Output = ()> + Send + '_ {
        let (provider_name, model_id) = (provider.settings().name.clone(), model.id.clone());
        self.change_settings(|settings, state| {
            // The user's choice stays, also after a run with a command's own model.
            state.model_after_run = None;
            settings.provider = provider;
            settings.model = model;
        });
        async move {
            self.shared
                .persist(crate::session::format::NewEntry::ModelChange {
                    provider: &provider_name,
                    model: &model_id,
                })
                .await;
        }
    }

    /// Change the reasoning level from the next model call on, and note it in the session.
    pub async fn set_thinking(&self, thinking: ThinkingLevel) {
        self.set_thinking_now(thinking).await
    }

    /// `set_thinking`: the change is made (and announced) when this is called; the future
    /// notes it in the session.
    fn set_thinking_now(&self, thinking: ThinkingLevel) -> impl Future<Output = ()> + Send + '_ {
        self.change_settings(|settings, _| settings.thinking = thinking);
        async move {
            self.shared
                .persist(crate::session::format::NewEntry::ThinkingChange(thinking))
                .await;
        }
    }

    /// Where the current conversation's tools keep output too long to show whole; a front
    /// end running a command for the user (`!command`, RPC `bash`) keeps it there too.
    pub fn spill_dir(&self) -> Arc<SpillDir> {
        lock(&self.shared.state).spill.clone()
    }

    /// The background shells the model started (`/ps` lists and kills them).
    pub fn background_shells(&self) -> Arc<crate::tools::background::BackgroundShells> {
        lock(&self.shared.state).shells.clone()
    }

    /// Take back the most recently queued message (follow-ups first), e.g. to edit it.
    pub fn unqueue_last(&self) -> Option<UserMessage> {
        let mut state = lock(&self.shared.state);
        let message = state
            .follow_up
            .pop_last()
            .or_else(|| state.steering.pop_last())?;
        self.shared.emit(Shared::queue_update_event(&state));
        Some(message)
    }

    /// The assistant message being streamed, with tool-call arguments parsed as far as they
    /// have arrived; `None` between model calls.
    pub fn streaming_message(&self) -> Option<AssistantMessage> {
        lock(&self.shared.streaming).as_ref().map(|a| a.snapshot())
    }

    /// The session's usage: totals, per model, per sub-agent, per tool, and cost.
    pub fn usage_report(&self) -> crate::protocol::usage::UsageReport {
        lock(&self.shared.state).ledger.report()
    }

    pub fn snapshot(&self) -> Snapshot {
        let settings = self.shared.settings();
        let session = self.shared.session_identity();
        let state = lock(&self.shared.state);
        let (run_state, state_elapsed) = self.shared.clock.current();
        Snapshot {
            provider: settings.provider.settings().name.clone(),
            model: settings.model.id.clone(),
            thinking: settings.thinking,
            is_running: state.running,
            message_count: state.history.counted_len(),
            pending_message_count: state.steering.len() + state.follow_up.len(),
            steering_mode: state.steering.mode,
            follow_up_mode: state.follow_up.mode,
            permission_mode: state.permissions.mode,
            usage: state.ledger.total().clone(),
            context_tokens: state.history.context_tokens(),
            context_window: settings.model.context_window,
            session_error: state.session_error.clone(),
            state: run_state,
            state_elapsed,
            session,
            auto_compaction: settings.compaction.enabled,
            auto_retry: settings.auto_retry,
            session_name: state.session_name.clone(),
            goal: state.goal.clone(),
            profile: settings.profile.clone(),
        }
    }
}

/// Settles the agent when dropped: the end of a manual compaction, however it ends.
struct SettleOnDrop<'a>(&'a Arc<Shared>);

impl Drop for SettleOnDrop<'_> {
    fn drop(&mut self) {
        run::settle(self.0, &mut lock(&self.0.state));
    }
}

impl Drop for Agent {
    /// No run outlives its handle: dropping the agent aborts it (killing its tools).
    fn drop(&mut self) {
        if !self.owner {
            return;
        }
        if let Some(cancel) = lock(&self.shared.state).cancel.take() {
            cancel.cancel();
        }
    }
}
