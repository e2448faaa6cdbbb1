//! The engine's shared state: what the `Agent` handle and the running loop both touch —
//! history, queues, pending approvals, the streaming message — and the event fan-out.
//! Locks are held only for short, non-blocking sections; nothing awaits while holding one.

use super::Approval;
use super::compaction::CompactionSettings;
use super::history::History;
use super::limits::{Limits, RetryPolicy};
use super::phase::StateClock;
use super::queue::MessageQueue;
use super::usage::UsageLedger;
use crate::llm::assembler::Assembler;
use crate::llm::client::Provider;
use crate::llm::model::ModelInfo;
use crate::llm::request::{ThinkingLevel, ToolSpec};
use crate::protocol::event::{AgentEvent, RunState};
use crate::protocol::outcome::{SessionChange, SessionIdentity};
use crate::session::format::{NewEntry, new_entry_id};
use crate::session::{SessionError, SessionWriter};
use crate::tools::freshness::FileMemory;
use crate::tools::permission::Permissions;
use crate::tools::source::ToolSource;
use crate::tools::spill::SpillDir;
use crate::tools::{ToolSettings, Tools};
use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use tokio::sync::{mpsc, oneshot, watch};
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

/// Lock a mutex, recovering the data if a panicking thread poisoned it (the state itself is
/// always left consistent between statements, so a poison carries no information here).
pub(crate) fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}

/// What a run needs to call the model and tools. Replaced as a whole (e.g. by `set_model`);
/// a run picks up the current value at each model call.
#[derive(Clone)]
pub(crate) struct RunSettings {
    pub provider: Arc<Provider>,
    pub model: ModelInfo,
    pub thinking: ThinkingLevel,
    pub system_prompt: String,
    /// The built-in tools; `tools` adds the source's.
    pub base_tools: Tools,
    pub tools: Tools,
    pub tool_specs: Vec<ToolSpec>,
    pub tool_source: Option<Arc<dyn ToolSource>>,
    /// The source's generation `tools` was built from.
    pub source_generation: Option<u64>,
    pub tool_settings: Arc<ToolSettings>,
    pub limits: Limits,
    pub retry: RetryPolicy,
    /// Failed model calls are retried as `retry` says (`false`: never).
    pub auto_retry: bool,
    pub compaction: CompactionSettings,
    pub cwd: PathBuf,
    /// The profile in use (`SetProfile`, `--profile`), if any.
    pub profile: Option<String>,
}

/// A call waiting for the user's answer: where the answer goes, and the call (an
/// `allow_rule` answer is checked against it before it is taken).
pub(crate) struct PendingApproval {
    pub sender: oneshot::Sender<Approval>,
    pub tool: Arc<dyn crate::tools::Tool>,
    pub call: crate::protocol::message::ToolCall,
}

pub(crate) struct State {
    pub history: History,
    pub running: bool,
    pub steering: MessageQueue,
    pub follow_up: MessageQueue,
    pub cancel: Option<CancellationToken>,
    pub approvals: HashMap<String, PendingApproval>,
    /// `ask_user` calls waiting for the user's answer, by tool call id.
    pub questions: HashMap<String, super::ask_user::PendingQuestion>,
    pub permissions: Permissions,
    /// A front end answers `tool_approval_request`s (TUI, RPC); otherwise asks are denials.
    pub can_ask: bool,
    pub task: Option<JoinHandle<()>>,
    /// Set while the session file is behind memory: a write failed and none has succeeded
    /// since. Runs stop on it; front ends show it.
    pub session_error: Option<String>,
    /// Tokens and cost of every model call of the session so far (survives compaction),
    /// per model, sub-agent and tool.
    pub ledger: UsageLedger,
    /// What the model has seen of each file in this conversation (`write` checks it).
    pub files: Arc<FileMemory>,
    /// Where tools keep output too long to show whole: beside the session file.
    pub spill: Arc<SpillDir>,
    /// The background shells the model started; they end with the agent.
    pub shells: Arc<crate::tools::background::BackgroundShells>,
    /// The loopback network namespace the session's sandboxed commands share
    /// (`[sandbox] allow_local_binding`); it ends with the agent.
    pub session_net: Arc<crate::tools::process::session_net::SessionNet>,
    /// The model to go back to when the agent is idle again: a run started with another
    /// model for its prompt alone (a custom command's `model`).
    pub model_after_run: Option<(Arc<Provider>, ModelInfo)>,
    /// What SessionStart hooks printed, for the model with the next prompt.
    pub session_context: Vec<String>,
    /// The user was told that `[web] search` is on but the provider has no search of its
    /// own (said once per agent).
    pub search_unsupported_told: bool,
    /// Ends the wait before a model call's retry (`abort_retry`), while there is one.
    pub retry_wait: Option<CancellationToken>,
    /// The session's name (`set_session_name`), if it has one.
    pub session_name: Option<String>,
    /// The session's goal (`set_goal`), while one is set (`agent::goal`).
    pub goal: Option<String>,
}

pub(crate) struct Shared {
    pub state: Mutex<State>,
    /// The assistant message being streamed, readable while it grows.
    pub streaming: Mutex<Option<Assembler>>,
    pub settings: Mutex<Arc<RunSettings>>,
    /// Where messages are persisted; `None` with `--no-session`.
    pub session: Mutex<Option<Arc<SessionWriter>>>,
    /// The session's id (the writer's; for a session not on disk, the one it was given).
    pub session_id: Mutex<String>,
    /// Where new sessions are created (`None`: only sessions not on disk can be).
    pub sessions_dir: Option<PathBuf>,
    pub emitter: Emitter,
    /// `true` while no run is active.
    pub idle: watch::Sender<bool>,
    /// The state machine front ends see (`state` events, `get_state`).
    pub clock: StateClock,
    pub runtime: tokio::runtime::Handle,
    /// The working directory's checkpoints; `None` when they are off.
    pub checkpoints: Option<Arc<crate::checkpoint::Checkpoints>>,
    /// The sub-agents this agent starts (`None`: it has no `task` tool).
    pub children: Option<Arc<super::children::Children>>,
    /// The user's hooks (`agent::hook_points` runs them).
    pub hooks: Arc<crate::extensions::hooks::Hooks>,
    /// The models that can be chosen by name (`None`: none can).
    pub models: Option<Arc<dyn super::commands::models::Models>>,
    /// The custom commands and skills a prompt may start with.
    pub extensions: Arc<crate::extensions::Extensions>,
    /// What this agent (and its sub-agents) spent against the budgets.
    pub purse: Arc<super::budget::Purse>,
    /// The older part of the context this engine was built with (`session::cold`), until
    /// its usage count starts (`usage::count_earlier`): the front end starts it — the
    /// interface after its first frame, which the count would compete with — or a run.
    pub uncounted: Mutex<Option<crate::session::cold::ColdPart>>,
}

impl Shared {
    pub fn emit(&self, event: AgentEvent) {
        self.emitter.emit(event);
    }

    /// Move the agent's state machine to `next` (announced with a `state` event).
    pub fn enter(&self, next: RunState) {
        self.clock.enter(next, &self.emitter);
    }

    pub fn settings(&self) -> Arc<RunSettings> {
        lock(&self.settings).clone()
    }

    /// Offer the tool source's current tools, if they changed since the settings were
    /// built (a server became ready, a list changed): called before each model request.
    pub fn refresh_tools(&self) {
        let settings = self.settings();
        let Some(source) = &settings.tool_source else {
            return;
        };
        let generation = source.generation();
        if settings.source_generation == Some(generation) {
            return;
        }
        let tools = settings.base_tools.with_external(&source.tools());
        let specs = tools.specs();
        let mut current = lock(&self.settings);
        let mut next = RunSettings::clone(&current);
        next.tools = tools;
        next.tool_specs = specs;
        next.source_generation = Some(generation);
        *current = Arc::new(next);
    }

    pub fn session(&self) -> Option<Arc<SessionWriter>> {
        lock(&self.session).clone()
    }

    /// Which session the agent writes to, and the entry its conversation continues from:
    /// the last message of the context (as `get_tree` names the head).
    pub fn session_identity(&self) -> SessionIdentity {
        let id = lock(&self.session_id).clone();
        let path = self.session().map(|writer| writer.path().to_path_buf());
        let head = lock(&self.state).history.last_id();
        SessionIdentity { id, path, head }
    }

    /// Announce the session's identity after `change` (`session_changed`).
    pub fn session_changed(&self, change: SessionChange) {
        self.emit(AgentEvent::SessionChanged {
            session: self.session_identity(),
            reason: change,
        });
    }

    /// Persist an entry; returns its id and whether the session file now holds it. A
    /// failed write is remembered in `session_error` — the run stops at its next check and
    /// front ends show it — while the entry keeps its id and its place in the writer's
    /// queue: it is written first once writing works again (which clears the error).
    pub async fn persist(&self, entry: NewEntry<'_>) -> (String, bool) {
        self.persist_at(entry, crate::protocol::message::now_millis())
            .await
    }

    /// `persist` with the entry's timestamp chosen by the caller.
    pub async fn persist_at(&self, entry: NewEntry<'_>, timestamp: i64) -> (String, bool) {
        let Some(session) = self.session() else {
            return (new_entry_id(), true);
        };
        let (id, written) = session.append_at(entry, timestamp).await;
        (id, self.note_write(&session, written))
    }

    /// Write what is queued and flush the session to disk (end of turn, before a mutating
    /// tool); a failure is remembered like a failed write.
    pub async fn sync_session(&self) {
        if let Some(session) = self.session() {
            let synced = session.sync().await;
            self.note_write(&session, synced);
        }
    }

    /// Why the session file is behind what the agent holds in memory, if it is.
    pub fn unsaved(&self) -> Option<String> {
        lock(&self.state).session_error.clone()
    }

    /// Remember how a write to `session` went; `true` when it succeeded. The outcome of a
    /// session that was replaced meanwhile no longer matters.
    fn note_write(&self, session: &Arc<SessionWriter>, result: Result<(), SessionError>) -> bool {
        let current = self
            .session()
            .is_some_and(|active| Arc::ptr_eq(&active, session));
        let mut state = lock(&self.state);
        match result {
            Ok(()) => {
                if current && state.session_error.take().is_some() {
                    tracing::info!("the session file is written again");
                }
                true
            }
            Err(error) => {
                tracing::error!(%error, "session write failed");
                if current {
                    state.session_error = Some(format!("the session could not be saved: {error}"));
                }
                false
            }
        }
    }

    /// Announce the session's usage now (`usage_update`).
    pub fn usage_update(&self, state: &State) {
        self.emit(AgentEvent::UsageUpdate {
            usage: state.ledger.report(),
        });
    }

    /// Announce the session's goal now (`goal_update`).
    pub fn goal_changed(&self, state: &State, reason: crate::protocol::event::GoalChange) {
        self.emit(AgentEvent::GoalUpdate {
            goal: state.goal.clone(),
            reason,
        });
    }

    pub fn queue_update_event(state: &State) -> AgentEvent {
        AgentEvent::QueueUpdate {
            steering: state.steering.texts(),
            follow_up: state.follow_up.texts(),
        }
    }
}

/// Fans events out to every subscriber over unbounded channels, so the loop never waits
/// for a slow reader. Closed subscribers are dropped. A subscriber can leave out the
/// per-delta `message_update` events (`-p` only needs the outcome), which spares it a
/// wake-up per token.
#[derive(Default)]
pub(crate) struct Emitter {
    subscribers: Mutex<Vec<Subscriber>>,
}

struct Subscriber {
    tx: mpsc::UnboundedSender<AgentEvent>,
    deltas: bool,
}

impl Emitter {
    pub fn subscribe(&self, deltas: bool) -> mpsc::UnboundedReceiver<AgentEvent> {
        let (tx, rx) = mpsc::unbounded_channel();
        lock(&self.subscribers).push(Subscriber { tx, deltas });
        rx
    }

    pub fn emit(&self, event: AgentEvent) {
        let is_delta = event.is_delta();
        let mut subscribers = lock(&self.subscribers);
        subscribers.retain(|s| !s.tx.is_closed());
        let mut wanting = subscribers
            .iter()
            .filter(|s| s.deltas || !is_delta)
            .peekable();
        while let Some(subscriber) = wanting.next() {
            if wanting.peek().is_some() {
                let _ = subscriber.tx.send(event.clone());
            } else {
                let _ = subscriber.tx.send(event);
                break;
            }
        }
    }
}
