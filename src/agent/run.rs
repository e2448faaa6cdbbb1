//! The agent loop. One run: an outer loop that picks up follow-up messages around an inner
//! loop of model turn → tool calls → steering check. Every failure becomes data (an error
//! tool result, a `stopReason`, an `agent_end` status); events are the only output.

use super::compaction::compact;
use super::guard::LoopGuard;
use super::state::{RunSettings, Shared, State, lock};
use crate::protocol::event::{AgentEvent, CompactionReason, NoticeLevel, RunState, RunStatus};
use crate::protocol::message::{Message, StopReason, UserMessage};
use crate::session::format::NewEntry;
use futures_util::FutureExt;
use std::panic::AssertUnwindSafe;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use tokio_util::sync::CancellationToken;

/// How a run ended.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Outcome {
    Completed,
    Failed(String),
    Aborted,
    Limit(String),
}

pub(crate) struct Run {
    pub shared: Arc<Shared>,
    pub cancel: CancellationToken,
    pub settings: Arc<RunSettings>,
    /// Everything this run added to the history, for `agent_end`.
    pub new_messages: Vec<Arc<Message>>,
    pub turns: u32,
    pub tool_calls: u32,
    /// Watches the run's tool calls for loops.
    pub guard: LoopGuard,
    timed_out: Arc<AtomicBool>,
    /// The mutating call whose `before` checkpoint was taken, until its `after` one is.
    pub checkpointed_call: Option<String>,
    /// A checkpoint could not be stored: why. The run stops.
    pub checkpoint_failure: Option<String>,
    /// The last model call was paused by the provider mid-turn (Anthropic's `pause_turn`,
    /// after many server-side searches): the model is called again to go on.
    pub paused: bool,
    /// What the next request may spend, reserved against the budgets before it is sent.
    pub reservation: Option<super::budget::Reservation>,
    /// A budget stopped a retry: which. The run ends with `limit`.
    pub budget_stop: Option<String>,
    /// The model marked the goal blocked: the run ends instead of going on toward it.
    pub goal_blocked: bool,
}

/// Start a run in the background. The caller holds the state lock, so the run cannot
/// finish before it is registered.
pub(crate) fn spawn_run(shared: &Arc<Shared>, state: &mut State, prompts: Vec<UserMessage>) {
    let cancel = CancellationToken::new();
    state.running = true;
    state.cancel = Some(cancel.clone());
    shared.idle.send_replace(false);
    shared.enter(RunState::Preparing);
    let task = crate::tasks::spawn_on(&shared.runtime, run(shared.clone(), prompts, cancel));
    state.task = Some(task);
}

async fn run(shared: Arc<Shared>, prompts: Vec<UserMessage>, cancel: CancellationToken) {
    // The settings only the older part of a long resumed session says, before any are used
    // (and its usage counted, if the front end did not start that yet).
    super::usage::count_earlier(&shared);
    super::usage::adopt_older(&shared).await;
    let settings = shared.settings();
    let timed_out = Arc::new(AtomicBool::new(false));
    let timer = settings.limits.timeout.map(|limit| {
        let cancel = cancel.clone();
        let timed_out = timed_out.clone();
        crate::tasks::spawn_on(&shared.runtime, async move {
            tokio::time::sleep(limit).await;
            timed_out.store(true, Ordering::SeqCst);
            cancel.cancel();
        })
    });
    let mut run = Run {
        shared,
        cancel,
        guard: LoopGuard::new(settings.limits.loop_guard.clone()),
        settings,
        new_messages: Vec::new(),
        turns: 0,
        tool_calls: 0,
        timed_out,
        checkpointed_call: None,
        checkpoint_failure: None,
        paused: false,
        reservation: None,
        budget_stop: None,
        goal_blocked: false,
    };
    // A bug must not wedge the agent: a panic ends the run as failed, with `agent_end`.
    let outcome = match AssertUnwindSafe(run.execute(prompts)).catch_unwind().await {
        Ok(outcome) => outcome,
        Err(panic) => {
            let what = panic
                .downcast_ref::<&str>()
                .map(|s| s.to_string())
                .or_else(|| panic.downcast_ref::<String>().cloned())
                .unwrap_or_default();
            tracing::error!(panic = %what, "the run panicked");
            lock(&run.shared.streaming).take();
            Outcome::Failed(format!("internal error: {what}"))
        }
    };
    if let Some(timer) = timer {
        timer.abort();
    }
    // The run's records are stored before it ends: a front end that sees `agent_end` (or
    // a `-p` process about to exit) finds them all.
    run.settle_checkpoints().await;
    run.finish(outcome);
}

/// End of a run (or a manual compaction): messages queued meanwhile start the next run at
/// once, so none is stranded; otherwise the agent goes idle. The caller holds the lock.
pub(crate) fn settle(shared: &Arc<Shared>, state: &mut State) {
    state.cancel = None;
    state.task = None;
    let mut leftover = state.steering.take_all();
    leftover.extend(state.follow_up.take_all());
    if leftover.is_empty() {
        if let Some((provider, model)) = state.model_after_run.take() {
            let mut settings = lock(&shared.settings);
            let mut next = RunSettings::clone(&settings);
            next.provider = provider;
            next.model = model;
            *settings = Arc::new(next);
        }
        state.running = false;
        shared.enter(RunState::Idle);
        shared.idle.send_replace(true);
    } else {
        shared.emit(Shared::queue_update_event(state));
        spawn_run(shared, state, leftover);
    }
}

impl Run {
    async fn execute(&mut self, prompts: Vec<UserMessage>) -> Outcome {
        self.shared.emit(AgentEvent::AgentStart);
        self.shared.purse.start_run(&self.settings.limits.budgets);
        if let Err(error) = self.shared.purse.check_prices(&self.settings.model) {
            // Refused before anything is sent or written.
            return Outcome::Failed(error);
        }
        let prompts = self.accepted(prompts).await;
        if prompts.is_empty() {
            // A UserPromptSubmit hook blocked it (the user was told): nothing to answer.
            return Outcome::Completed;
        }
        self.shared.emit(AgentEvent::TurnStart);
        for prompt in prompts {
            self.commit_user(prompt).await;
        }
        self.settle_tools().await;
        self.tell_search_unsupported();
        let mut first_turn = true;
        let mut pending = self.take_steering();
        // A Stop hook's reason to go on, and whether the run went on because of one.
        let mut injected: Option<UserMessage> = None;
        let mut stop_hook_active = false;
        loop {
            // The first pass answers the prompts; later ones the follow-ups (or a Stop hook).
            let mut has_tool_calls = first_turn;
            while has_tool_calls || !pending.is_empty() || injected.is_some() {
                let messages = self.accepted(std::mem::take(&mut pending)).await;
                if !has_tool_calls && messages.is_empty() && injected.is_none() {
                    // Every queued message was blocked by a hook: nothing new to answer.
                    break;
                }
                if !first_turn {
                    self.shared.emit(AgentEvent::TurnStart);
                }
                first_turn = false;
                if let Some(message) = injected.take() {
                    self.commit_user(message).await;
                }
                for message in messages {
                    self.commit_user(message).await;
                }
                if let Some(outcome) = self.check_before_model_call() {
                    return outcome;
                }
                self.compact_if_needed().await;
                if let Err(error) = warm_context(&self.shared) {
                    return Outcome::Failed(error);
                }
                match self.reserve_budget() {
                    Ok(reservation) => self.reservation = Some(reservation),
                    Err(reason) => return Outcome::Limit(reason),
                }
                self.turns += 1;
                let assistant = self.call_model().await;
                if let Some(reason) = self.budget_stop.take() {
                    return Outcome::Limit(reason);
                }
                let Some(message) = assistant.as_assistant() else {
                    return Outcome::Failed(
                        "internal error: the model call produced no assistant message".into(),
                    );
                };
                let calls: Vec<_> = message.tool_calls().cloned().collect();
                let unsaved = self.shared.unsaved();
                if unsaved.is_some()
                    || matches!(message.stop_reason, StopReason::Error | StopReason::Aborted)
                {
                    // Calls the failed (or unsaved) response already streamed still get their
                    // answer.
                    let text = match (&unsaved, &message.stop_reason) {
                        (Some(error), _) => format!("Not executed: {error}."),
                        (None, StopReason::Aborted) => self.cancel_text(),
                        _ => {
                            "Not executed: the response failed before it was complete.".to_string()
                        }
                    };
                    let mut results = Vec::with_capacity(calls.len());
                    for call in &calls {
                        results.push(self.answer_without_running(call, &text).await);
                    }
                    let outcome = match (unsaved, &message.stop_reason) {
                        (Some(error), _) => Outcome::Failed(error),
                        (None, StopReason::Aborted) => self.cancel_outcome(),
                        _ => Outcome::Failed(
                            message
                                .error_message
                                .clone()
                                .unwrap_or_else(|| "the model call failed".to_string()),
                        ),
                    };
                    self.shared.emit(AgentEvent::TurnEnd {
                        message: assistant,
                        tool_results: results,
                    });
                    self.shared.sync_session().await;
                    return outcome;
                }
                // A paused turn goes on like one with calls: the model is asked again, with
                // its unfinished answer as the last message.
                has_tool_calls = !calls.is_empty() || std::mem::take(&mut self.paused);
                let round = self.run_tool_calls(&calls).await;
                self.shared.emit(AgentEvent::TurnEnd {
                    message: assistant,
                    tool_results: round.results,
                });
                self.shared.sync_session().await;
                if let Some(outcome) = round.stop {
                    return outcome;
                }
                if let Some(error) = self.shared.unsaved() {
                    return Outcome::Failed(error);
                }
                pending = if round.steering.is_empty() {
                    self.take_steering()
                } else {
                    round.steering
                };
            }
            pending = self.take_follow_up();
            if pending.is_empty() {
                match self.stop_hooks(stop_hook_active).await {
                    Some(reason) if !self.cancel.is_cancelled() => {
                        stop_hook_active = true;
                        injected = Some(UserMessage::text(reason));
                    }
                    // A goal not marked done keeps the run going (bounded by its limits).
                    _ => match self.goal_continuation() {
                        Some(message) => injected = Some(message),
                        None => return Outcome::Completed,
                    },
                }
            }
        }
    }

    /// The messages the UserPromptSubmit hooks let through (with their context added).
    async fn accepted(&self, messages: Vec<UserMessage>) -> Vec<UserMessage> {
        let mut accepted = Vec::with_capacity(messages.len());
        for message in messages {
            if let Some(message) = self.prompt_hooks(message).await {
                accepted.push(message);
            }
        }
        accepted
    }

    /// `[web] search` is on but the provider's wire API has no web search of its own: say so
    /// once (the requests go out without it).
    fn tell_search_unsupported(&mut self) {
        let api = self.settings.provider.settings().api;
        let native = api.wire().native_web_search();
        if self.settings.tool_settings.web.search.is_none() || native {
            return;
        }
        {
            let mut state = lock(&self.shared.state);
            if std::mem::replace(&mut state.search_unsupported_told, true) {
                return;
            }
        }
        self.shared.emit(AgentEvent::Notice {
            level: NoticeLevel::Warning,
            message: format!(
                "[web] search is on, but provider `{}` ({}) has no web search of its own: \
                 the model is asked without it",
                self.settings.provider.settings().name,
                api.as_str()
            ),
        });
    }

    /// Wait (bounded) for tools still on their way (MCP servers starting), and tell the
    /// user once about those that will not come.
    async fn settle_tools(&mut self) {
        let Some(source) = self.settings.tool_source.clone() else {
            return;
        };
        for message in source.settle(&self.cancel).await {
            tracing::warn!(%message, "tools unavailable");
            self.shared.emit(AgentEvent::Notice {
                level: NoticeLevel::Warning,
                message,
            });
        }
    }

    /// Compact first when the context has outgrown the model's window minus the reserve.
    async fn compact_if_needed(&mut self) {
        let compaction = &self.settings.compaction;
        if !compaction.enabled {
            return;
        }
        let limit = self
            .settings
            .model
            .context_window
            .saturating_sub(compaction.reserve_tokens);
        let size = lock(&self.shared.state).history.context_tokens();
        if size > limit {
            self.shared.enter(RunState::Compacting);
            let _ = compact(
                &self.shared,
                &self.settings,
                &self.cancel,
                CompactionReason::Threshold,
                None,
            )
            .await;
        }
    }

    /// A session that cannot be written, cancellation and the turn limit, checked before
    /// each model call (the budgets after a compaction, with `reserve_budget`): a run never
    /// goes on with memory and disk apart.
    fn check_before_model_call(&self) -> Option<Outcome> {
        if let Some(error) = self.shared.unsaved() {
            return Some(Outcome::Failed(error));
        }
        if self.cancel.is_cancelled() {
            return Some(self.cancel_outcome());
        }
        if let Some(max) = self.settings.limits.max_turns
            && self.turns >= max
        {
            return Some(Outcome::Limit(format!(
                "the run reached its limit of {max} model turns (--max-turns, limits.max_turns)"
            )));
        }
        None
    }

    /// Reserve what the next request may cost against the budgets (`agent::budget`), with
    /// the current settings (the model may have changed): `Err` names the budget it would
    /// cross.
    pub fn reserve_budget(&mut self) -> Result<super::budget::Reservation, String> {
        self.settings = self.shared.settings();
        let settings = &self.settings;
        let purse = &self.shared.purse;
        purse.check_prices(&settings.model)?;
        let prompt_chars = settings.system_prompt.len()
            + serde_json::to_string(&settings.tool_specs).map_or(0, |s| s.len());
        let context = lock(&self.shared.state).history.context_tokens();
        let input = context.saturating_add((prompt_chars as u64).div_ceil(4));
        purse.reserve(&settings.model, input)
    }

    /// Aborted by the user, or stopped by the run's time limit.
    pub fn cancel_outcome(&self) -> Outcome {
        if self.timed_out.load(Ordering::SeqCst) {
            Outcome::Limit(self.timeout_text())
        } else {
            Outcome::Aborted
        }
    }

    /// Why the run was cancelled, for messages.
    pub fn cancel_reason(&self) -> String {
        if self.timed_out.load(Ordering::SeqCst) {
            self.timeout_text()
        } else {
            "the user aborted the run".to_string()
        }
    }

    /// What a call that could not run because of cancellation is answered with.
    pub fn cancel_text(&self) -> String {
        format!("Not executed: {}.", self.cancel_reason())
    }

    fn timeout_text(&self) -> String {
        let secs = self
            .settings
            .limits
            .timeout
            .map(|t| t.as_secs())
            .unwrap_or(0);
        format!("the run reached its time limit of {secs} s (--timeout, limits.timeout_secs)")
    }

    /// Steering messages due now, taken from the queue.
    pub(crate) fn take_steering(&self) -> Vec<UserMessage> {
        self.take_queued(|state| state.steering.take())
    }

    fn take_follow_up(&self) -> Vec<UserMessage> {
        self.take_queued(|state| state.follow_up.take())
    }

    fn take_queued(&self, take: impl FnOnce(&mut State) -> Vec<UserMessage>) -> Vec<UserMessage> {
        let mut state = lock(&self.shared.state);
        let taken = take(&mut state);
        if !taken.is_empty() {
            self.shared.emit(Shared::queue_update_event(&state));
        }
        taken
    }

    pub async fn commit_user(&mut self, mut message: UserMessage) {
        if let Some(note) = self.shell_exit_notes() {
            message.content.push(note);
        }
        let message = Arc::new(Message::User(message));
        self.shared.emit(AgentEvent::MessageStart {
            message: message.clone(),
        });
        self.commit(message).await;
    }

    /// Write a finished message to the session, add it to the history, then announce it
    /// with `message_end`: a message a front end treats as done is already on disk. One
    /// that could not be written is kept in the history (and queued in the writer, to be
    /// written once writing works again) but never announced as done: the run stops at its
    /// next check and `agent_end` says why.
    pub async fn commit(&mut self, message: Arc<Message>) -> Arc<Message> {
        let (id, saved) = self.shared.persist(NewEntry::Message(&message)).await;
        {
            let mut state = lock(&self.shared.state);
            match message.as_ref() {
                Message::Assistant(assistant) => state.ledger.record_call(
                    &assistant.provider,
                    &assistant.model,
                    &assistant.usage,
                ),
                Message::ToolResult(_) => state.ledger.record_tool_result(&message),
                Message::User(_) => {}
            }
            state.history.push(id, message.clone());
        }
        if saved {
            self.new_messages.push(message.clone());
            self.shared.emit(AgentEvent::MessageEnd {
                message: message.clone(),
            });
        }
        if matches!(message.as_ref(), Message::Assistant(_)) {
            self.shared.usage_update(&lock(&self.shared.state));
        }
        message
    }

    /// Emit `agent_end` and go idle — or, if messages were queued after the last check,
    /// start the next run with them at once so none is stranded (`settle`).
    fn finish(mut self, outcome: Outcome) {
        let (status, error) = match outcome {
            Outcome::Completed => (RunStatus::Completed, None),
            Outcome::Failed(error) => (RunStatus::Failed, Some(error)),
            Outcome::Aborted => (RunStatus::Aborted, Some("aborted by the user".to_string())),
            Outcome::Limit(error) => (RunStatus::Limit, Some(error)),
        };
        self.shared.enter(match status {
            RunStatus::Completed | RunStatus::Limit => RunState::Completed,
            RunStatus::Failed => RunState::Failed,
            RunStatus::Aborted => RunState::Aborted,
        });
        if let Some(error) = &error {
            tracing::info!(status = ?status, %error, "run ended");
        }
        let shared = self.shared.clone();
        shared.notify(
            "idle_prompt",
            match &error {
                Some(error) => format!("The agent stopped: {error}"),
                None => "The agent finished and waits for your input".to_string(),
            },
        );
        let mut state = lock(&shared.state);
        shared.emit(AgentEvent::AgentEnd {
            messages: std::mem::take(&mut self.new_messages),
            status,
            error,
        });
        settle(&shared, &mut state);
    }
}

/// The request sends every message: the part of a resumed context not read yet (a cold
/// part the compaction did not summarise: compaction off, or a window that holds it all)
/// is read back from the session file now.
pub(crate) fn warm_context(shared: &Shared) -> Result<(), String> {
    lock(&shared.state)
        .history
        .warm_all()
        .map_err(|e| format!("the earlier messages could not be read back from the session: {e}"))
}
