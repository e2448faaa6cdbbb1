//! Executing the tool calls of one assistant message: lookup, argument checks (JSON and
//! schema), permission (with the approval round-trip), the call itself, the loop guard, and
//! the steering check after each result. Consecutive read-only calls run concurrently (at
//! most `max_parallel` at once); a mutating call runs alone. Results are reported in call
//! order whatever order the calls finish in. Every call gets exactly one result — skipped,
//! denied, invalid, unknown, aborted and limited calls included — and
//! `tool_execution_start`/`_end` around it.

use super::Approval;
use super::commands::approval_preview;
use super::commands::shell::Caller;
use super::guard::GuardAction;
use super::hook_points::PreTool;
use super::run::{Outcome, Run};
use super::state::{PendingApproval, lock};
use crate::llm::error::snippet;
use crate::protocol::event::{AgentEvent, RunState, ToolResultPayload};
use crate::protocol::message::{
    Content, Message, ToolCall, ToolResultMessage, UserMessage, now_millis,
};
use crate::tools::meta::Denial;
use crate::tools::permission::{PermissionMode, Verdict};
use crate::tools::{Execution, Tool, ToolOutput, ToolSettings};
use serde_json::json;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Instant;
use tokio::sync::{Semaphore, oneshot};
use tokio::task::JoinHandle;

/// Whether a call that may run runs inside the command sandbox (when there is one).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Sandboxed {
    Yes,
    /// The user chose "allow without sandbox".
    No,
}

pub const SKIPPED_TEXT: &str = "Skipped due to queued user message.";

#[derive(Default)]
pub(crate) struct ToolRound {
    pub results: Vec<Arc<Message>>,
    /// Steering messages that arrived during the round, to inject before the next call.
    pub steering: Vec<UserMessage>,
    /// Set when the run must end after this round.
    pub stop: Option<Outcome>,
}

/// Why the calls that have not started must not run.
enum Halt {
    Steering(Vec<UserMessage>),
    Cancelled,
    /// The tool-call limit: its value.
    CallLimit(u32),
    /// The loop guard: why.
    Guard(String),
    /// The session file cannot be written: why.
    Unsaved(String),
}

/// One call of a batch on its way to a result.
enum Slot {
    /// Answered without running (unknown tool, invalid arguments, denied).
    Ready(ToolOutput),
    /// Not started because the batch was halted before it.
    NotRun,
    /// Running (or waiting for a free place); `None` when it never started.
    Running(JoinHandle<Option<ToolOutput>>),
}

impl Run {
    pub(crate) async fn run_tool_calls(&mut self, calls: &[ToolCall]) -> ToolRound {
        let mut round = ToolRound::default();
        if !calls.is_empty() {
            self.shared.enter(RunState::ToolRunning);
        }
        let mut next = 0;
        while next < calls.len() {
            let size = self.batch_size(&calls[next..]);
            let halt = self.run_batch(&calls[next..next + size], &mut round).await;
            next += size;
            let halt = halt.or_else(|| self.cancel.is_cancelled().then_some(Halt::Cancelled));
            if let Some(halt) = halt {
                let text = self.halt_text(&halt);
                for rest in &calls[next..] {
                    round
                        .results
                        .push(self.answer_without_running(rest, &text).await);
                }
                match halt {
                    Halt::Steering(messages) => round.steering = messages,
                    Halt::Cancelled => round.stop = Some(self.cancel_outcome()),
                    Halt::CallLimit(max) => {
                        round.stop = Some(Outcome::Limit(format!(
                            "the run reached its limit of {max} tool calls (--max-tool-calls, limits.max_tool_calls)"
                        )))
                    }
                    Halt::Guard(reason) => round.stop = Some(Outcome::Limit(reason)),
                    Halt::Unsaved(error) => round.stop = Some(Outcome::Failed(error)),
                }
                return round;
            }
        }
        round
    }

    /// How many of `calls` (from the first) may run together: a run of read-only calls in
    /// parallel mode, otherwise one.
    fn batch_size(&self, calls: &[ToolCall]) -> usize {
        if self.settings.tool_settings.execution == Execution::Sequential {
            return 1;
        }
        let read_only = |call: &ToolCall| {
            // An unknown tool never runs, so it cannot conflict with anything.
            self.settings
                .tools
                .get(&call.name)
                .is_none_or(|tool| tool.read_only())
        };
        calls.iter().take_while(|c| read_only(c)).count().max(1)
    }

    /// Run one batch: start the calls in order, then report their results in order.
    /// Returns why the calls after the batch must not run, if they must not.
    async fn run_batch(&mut self, batch: &[ToolCall], round: &mut ToolRound) -> Option<Halt> {
        let places = match self.settings.tool_settings.execution {
            Execution::Sequential => 1,
            Execution::Parallel => self.settings.tool_settings.max_parallel.max(1),
        };
        let semaphore = Arc::new(Semaphore::new(places));
        // Set once the batch is halted: calls that have not started by then never do.
        let halted = Arc::new(AtomicBool::new(false));
        let mut halt: Option<Halt> = None;
        let mut slots = Vec::with_capacity(batch.len());
        for call in batch {
            if halt.is_none() {
                halt = self.halt_before(call);
            }
            if halt.is_some() {
                slots.push(Slot::NotRun);
                continue;
            }
            self.tool_calls += 1;
            self.emit_start(call);
            slots.push(match self.prepare(call).await {
                Err(output) => Slot::Ready(output),
                Ok((tool, sandboxed)) => {
                    Slot::Running(self.spawn_call(call, tool, sandboxed, &semaphore, &halted))
                }
            });
        }
        for (call, slot) in batch.iter().zip(slots) {
            // Calls dispatched above already had their `tool_execution_start`.
            let announced = !matches!(slot, Slot::NotRun);
            let ran = matches!(slot, Slot::Running(_));
            let output = match slot {
                Slot::Ready(output) => Some(output),
                Slot::NotRun => None,
                Slot::Running(task) => task.await.unwrap_or_else(|e| {
                    Some(ToolOutput::error(format!(
                        "The `{}` tool failed unexpectedly: {e}",
                        call.name
                    )))
                }),
            };
            let output = match output {
                Some(output) => Some(self.offer_rerun_outside_sandbox(call, output).await),
                None => None,
            };
            let Some(mut output) = output else {
                // Never started: the batch was halted, steering arrived, or the run was
                // cancelled before it got a place.
                if halt.is_none() {
                    halted.store(true, Ordering::SeqCst);
                    let steering = self.take_steering();
                    halt = Some(if steering.is_empty() {
                        Halt::Cancelled
                    } else {
                        Halt::Steering(steering)
                    });
                }
                let text = halt.as_ref().map(|h| self.halt_text(h)).unwrap_or_default();
                let result = if announced {
                    self.finish_call(call, ToolOutput::error(text)).await
                } else {
                    self.answer_without_running(call, &text).await
                };
                round.results.push(result);
                continue;
            };
            if ran {
                self.post_tool_hooks(call, &mut output).await;
                self.lsp_after(call, &mut output).await;
            }
            self.checkpoint_after(call);
            if let GuardAction::Stop(reason) = self.guard.after(call, &mut output)
                && halt.is_none()
            {
                halted.store(true, Ordering::SeqCst);
                halt = Some(Halt::Guard(reason));
            }
            round.results.push(self.finish_call(call, output).await);
            if halt.is_none()
                && let Some(error) = self
                    .checkpoint_failure
                    .take()
                    .or_else(|| self.shared.unsaved())
            {
                halted.store(true, Ordering::SeqCst);
                halt = Some(Halt::Unsaved(error));
            }
            if halt.is_none() {
                let steering = self.take_steering();
                if !steering.is_empty() {
                    halted.store(true, Ordering::SeqCst);
                    halt = Some(Halt::Steering(steering));
                }
            }
        }
        halt
    }

    /// Why `call` must not start, checked in order before each call.
    fn halt_before(&self, call: &ToolCall) -> Option<Halt> {
        if let Some(error) = self.shared.unsaved() {
            return Some(Halt::Unsaved(error));
        }
        if self.cancel.is_cancelled() {
            return Some(Halt::Cancelled);
        }
        if let Some(max) = self.settings.limits.max_tool_calls
            && self.tool_calls >= max
        {
            return Some(Halt::CallLimit(max));
        }
        self.guard.before(call).map(Halt::Guard)
    }

    fn halt_text(&self, halt: &Halt) -> String {
        match halt {
            Halt::Steering(_) => SKIPPED_TEXT.to_string(),
            Halt::Cancelled => self.cancel_text(),
            Halt::CallLimit(max) => {
                format!("Not executed: the run reached its limit of {max} tool calls.")
            }
            Halt::Guard(reason) | Halt::Unsaved(reason) => format!("Not executed: {reason}."),
        }
    }

    /// An image goes only to a model that takes image input (the request sends others a
    /// placeholder): a result with one says so, to the user and to the model.
    fn note_unseen_images(&self, output: &mut ToolOutput) {
        let model = &self.settings.model;
        let has_images = output
            .content
            .iter()
            .any(|c| matches!(c, Content::Image { .. }));
        if model.images || !has_images {
            return;
        }
        output.content.push(Content::text(format!(
            "(The model `{}` does not take image input, so the image is not sent to it. If it \
             does, set `images = true` for it in config.toml.)",
            model.id
        )));
    }

    /// Answer a call that will not run (skipped, aborted, limited) with an error result.
    pub(crate) async fn answer_without_running(
        &mut self,
        call: &ToolCall,
        text: &str,
    ) -> Arc<Message> {
        self.emit_start(call);
        self.finish_call(call, ToolOutput::error(text)).await
    }

    fn emit_start(&self, call: &ToolCall) {
        self.shared.emit(AgentEvent::ToolExecutionStart {
            tool_call_id: call.id.clone(),
            tool_name: call.name.clone(),
            args: call.arguments.clone(),
        });
    }

    async fn finish_call(&mut self, call: &ToolCall, mut output: ToolOutput) -> Arc<Message> {
        // Where every result passes on its way to the events, the history and the model.
        if let Some(note) = self.shell_exit_notes() {
            output.content.push(note);
        }
        output.redact_secrets();
        self.note_unseen_images(&mut output);
        let output = self.note_goal_mark(&call.name, output).await;
        if let Some(todos) = crate::tools::todo::todos_of_result(&call.name, &output) {
            self.shared.emit(AgentEvent::TodoUpdate { todos });
        }
        self.shared.emit(AgentEvent::ToolExecutionEnd {
            tool_call_id: call.id.clone(),
            tool_name: call.name.clone(),
            result: ToolResultPayload {
                content: output.content.clone(),
                details: output.details.clone(),
            },
            is_error: output.is_error,
        });
        let message = Arc::new(Message::ToolResult(ToolResultMessage {
            tool_call_id: call.id.clone(),
            tool_name: call.name.clone(),
            content: output.content,
            details: output.details,
            is_error: output.is_error,
            timestamp: now_millis(),
        }));
        self.shared.emit(AgentEvent::MessageStart {
            message: message.clone(),
        });
        self.commit(message).await
    }

    /// Everything before a call may run: the tool exists, its arguments parse and fit the
    /// schema, and it is permitted. `Err` is the result the model gets instead.
    async fn prepare(&mut self, call: &ToolCall) -> Result<(Arc<dyn Tool>, Sandboxed), ToolOutput> {
        let Some(tool) = self.settings.tools.get(&call.name).cloned() else {
            // The tools offered: `goal` only while there is a goal.
            let goal = lock(&self.shared.state).goal.is_some();
            let names: Vec<&str> = self
                .settings
                .tools
                .names()
                .into_iter()
                .filter(|name| goal || *name != super::goal::TOOL)
                .collect();
            return Err(ToolOutput::error(format!(
                "Tool `{}` does not exist. Available tools: {}.",
                call.name,
                names.join(", ")
            )));
        };
        if let Some(raw) = &call.invalid_arguments {
            return Err(ToolOutput::error(format!(
                "The arguments of this `{}` call are not valid JSON (the response may have been \
                 cut off by the output token limit), so it was not run. Arguments received: {}",
                call.name,
                snippet(raw)
            )));
        }
        self.settings
            .tools
            .validate(&call.name, &call.arguments)
            .map_err(ToolOutput::error)?;
        let approved = match self.pre_tool_hooks(call).await {
            PreTool::Block(output) => return Err(output),
            PreTool::Aborted => return Err(ToolOutput::error(self.cancel_text())),
            PreTool::Approve => true,
            PreTool::Go => false,
        };
        let sandboxed = self.check_permission(&tool, call, approved).await?;
        if !tool.read_only() {
            // What the model did so far is on disk before anything changes the world.
            self.shared.sync_session().await;
            if let Some(error) = self.shared.unsaved() {
                return Err(ToolOutput::error(format!("Not executed: {error}.")));
            }
            self.checkpoint_before(call).await?;
        }
        Ok((tool, sandboxed))
    }

    /// Start a prepared call on its own task (so a panicking tool becomes an error result
    /// instead of killing the run). A call that gets a free place now starts now; one that
    /// has to wait for a place does not start at all if, by the time it gets one, the batch
    /// was halted, a steering message is queued, or the run was cancelled.
    fn spawn_call(
        &mut self,
        call: &ToolCall,
        tool: Arc<dyn Tool>,
        sandboxed: Sandboxed,
        semaphore: &Arc<Semaphore>,
        halted: &Arc<AtomicBool>,
    ) -> JoinHandle<Option<ToolOutput>> {
        let shared = self.shared.clone();
        let (id, name) = (call.id.clone(), call.name.clone());
        let ctx = self.shared.tool_context(
            call.id.clone(),
            self.cancel.clone(),
            Arc::new(move |partial| {
                shared.emit(AgentEvent::ToolExecutionUpdate {
                    tool_call_id: id.clone(),
                    tool_name: name.clone(),
                    partial_result: partial,
                });
            }),
            self.tool_settings(sandboxed),
            Caller::Model,
        );
        let own_limit = tool.limits_own_concurrency();
        let place_now = if own_limit {
            None
        } else {
            semaphore.clone().try_acquire_owned().ok()
        };
        let (semaphore, halted, shared) = (semaphore.clone(), halted.clone(), self.shared.clone());
        let (name, args) = (call.name.clone(), call.arguments.clone());
        crate::tasks::spawn_on(&self.shared.runtime, async move {
            let _place = match place_now {
                Some(place) => Some(place),
                None if own_limit => None,
                None => {
                    let place = tokio::select! {
                        _ = ctx.cancel.cancelled() => return None,
                        place = semaphore.acquire_owned() => place.ok()?,
                    };
                    let steering_queued = !lock(&shared.state).steering.is_empty();
                    if halted.load(Ordering::SeqCst) || steering_queued || ctx.cancel.is_cancelled()
                    {
                        return None;
                    }
                    Some(place)
                }
            };
            let started = Instant::now();
            let output = tool.execute(args, ctx).await;
            tracing::info!(
                tool = %name,
                duration_ms = crate::time::millis(started.elapsed()),
                is_error = output.is_error,
                "tool finished"
            );
            Some(output)
        })
    }

    /// The tool settings a call runs with: without the sandbox's policy when the user
    /// allowed it to run outside.
    fn tool_settings(&self, sandboxed: Sandboxed) -> Arc<ToolSettings> {
        let settings = &self.settings.tool_settings;
        if sandboxed == Sandboxed::No && settings.sandbox.policy.is_some() {
            let mut outside = ToolSettings::clone(settings);
            outside.sandbox.policy = None;
            Arc::new(outside)
        } else {
            settings.clone()
        }
    }

    /// A command the sandbox stopped, in ask mode with someone to ask: offer to run it
    /// again outside the sandbox (one approval). The result is the rerun's, or the
    /// sandboxed one when the user declines.
    async fn offer_rerun_outside_sandbox(
        &mut self,
        call: &ToolCall,
        output: ToolOutput,
    ) -> ToolOutput {
        let Some(boundary) = output
            .details
            .as_ref()
            .and_then(|d| d.pointer("/sandbox/blocked"))
            .and_then(|b| b.as_str())
            .map(str::to_string)
        else {
            return output;
        };
        let Some(tool) = self.settings.tools.get(&call.name).cloned() else {
            return output;
        };
        let asks = |state: &super::state::State| {
            state.can_ask && state.permissions.mode == PermissionMode::Ask
        };
        if !asks(&lock(&self.shared.state)) {
            return output;
        }
        let Some(preview) = approval_preview(
            tool.clone(),
            &call.arguments,
            &self.settings.cwd,
            &self.cancel,
        )
        .await
        else {
            return output;
        };
        let receiver = {
            let mut state = lock(&self.shared.state);
            if !asks(&state) {
                return output;
            }
            let (sender, receiver) = oneshot::channel();
            state.approvals.insert(
                call.id.clone(),
                PendingApproval {
                    sender,
                    tool: tool.clone(),
                    call: call.clone(),
                },
            );
            receiver
        };
        self.shared.enter(RunState::AwaitingHuman);
        self.shared.emit(AgentEvent::ToolApprovalRequest {
            tool_call_id: call.id.clone(),
            tool_name: call.name.clone(),
            args: call.arguments.clone(),
            reason: format!(
                "the sandbox stopped it ({boundary}); allow to run it again outside the sandbox"
            ),
            agent_id: None,
            cwd: self.settings.cwd.clone(),
            preview,
            suggested_rule: None,
        });
        self.shared.notify(
            "permission_prompt",
            format!(
                "The agent needs your permission to run {} outside the sandbox",
                call.name
            ),
        );
        let decision = tokio::select! {
            _ = self.cancel.cancelled() => {
                lock(&self.shared.state).approvals.remove(&call.id);
                return output;
            }
            decision = receiver => decision,
        };
        match decision {
            Ok(
                Approval::Allow
                | Approval::AllowSession
                | Approval::AllowRule(_)
                | Approval::AllowUnsandboxed,
            ) => {}
            _ => return output,
        }
        self.shared.enter(RunState::ToolRunning);
        let semaphore = Arc::new(Semaphore::new(1));
        let halted = Arc::new(AtomicBool::new(false));
        let task = self.spawn_call(call, tool, Sandboxed::No, &semaphore, &halted);
        match task.await {
            Ok(Some(mut rerun)) => {
                rerun.content.insert(
                    0,
                    Content::text(format!(
                        "(The sandbox stopped the first run: {boundary}. The user allowed \
                         running it again outside the sandbox; this is that run.)"
                    )),
                );
                rerun
            }
            _ => output,
        }
    }

    /// `Ok` when the call may run, and whether inside the sandbox; `Err` with the result
    /// the model gets otherwise (a denial says why in `details.denied`). `hook_approved`: a
    /// PreToolUse hook approved it, which skips the question (not a deny rule).
    async fn check_permission(
        &mut self,
        tool: &Arc<dyn Tool>,
        call: &ToolCall,
        hook_approved: bool,
    ) -> Result<Sandboxed, ToolOutput> {
        let denied = |why: Denial, text: String| {
            ToolOutput::error(text).with_details(json!({"denied": why.as_str()}))
        };
        let verdict = lock(&self.shared.state)
            .permissions
            .judge(tool.as_ref(), call);
        let (reason, unanswered) = match verdict {
            Verdict::Allow => return Ok(Sandboxed::Yes),
            Verdict::Deny(why, text) => return Err(denied(why, text)),
            Verdict::Ask { .. } if hook_approved => return Ok(Sandboxed::Yes),
            Verdict::Ask { reason, unanswered } => (reason, unanswered),
        };
        if !lock(&self.shared.state).can_ask {
            return Err(denied(Denial::NoApprover, unanswered));
        }
        let Some(preview) = approval_preview(
            tool.clone(),
            &call.arguments,
            &self.settings.cwd,
            &self.cancel,
        )
        .await
        else {
            return Err(ToolOutput::error(self.cancel_text()));
        };
        let (receiver, suggested_rule) = {
            let mut state = lock(&self.shared.state);
            // Nobody may be left to answer by now (the RPC client closed its input).
            if !state.can_ask {
                return Err(denied(Denial::NoApprover, unanswered));
            }
            let suggested_rule = state.permissions.suggest_rule(tool.as_ref(), call);
            let (sender, receiver) = oneshot::channel();
            state.approvals.insert(
                call.id.clone(),
                PendingApproval {
                    sender,
                    tool: tool.clone(),
                    call: call.clone(),
                },
            );
            (receiver, suggested_rule)
        };
        self.shared.enter(RunState::AwaitingHuman);
        self.shared.emit(AgentEvent::ToolApprovalRequest {
            tool_call_id: call.id.clone(),
            tool_name: call.name.clone(),
            args: call.arguments.clone(),
            reason,
            agent_id: None,
            cwd: self.settings.cwd.clone(),
            preview,
            suggested_rule,
        });
        self.shared.notify(
            "permission_prompt",
            format!("The agent needs your permission to use {}", call.name),
        );
        let decision = tokio::select! {
            _ = self.cancel.cancelled() => {
                lock(&self.shared.state).approvals.remove(&call.id);
                return Err(ToolOutput::error(self.cancel_text()));
            }
            decision = receiver => decision,
        };
        // Answered: the round goes on with its calls.
        self.shared.enter(RunState::ToolRunning);
        match decision {
            // The rules were checked and added when the answer was taken (`Agent::approve`).
            Ok(Approval::Allow | Approval::AllowRule(_)) => Ok(Sandboxed::Yes),
            Ok(Approval::AllowUnsandboxed) => Ok(Sandboxed::No),
            Ok(Approval::AllowSession) => {
                lock(&self.shared.state).permissions.allow_for_session(call);
                Ok(Sandboxed::Yes)
            }
            Ok(Approval::Deny(message)) => {
                let mut text = format!("The user denied this `{}` call.", call.name);
                if let Some(message) = message.filter(|m| !m.trim().is_empty()) {
                    text.push_str(" The user says: ");
                    text.push_str(message.trim());
                }
                Err(denied(Denial::User, text))
            }
            Ok(Approval::DenySession) => {
                lock(&self.shared.state)
                    .permissions
                    .deny_for_session(&call.name);
                Err(denied(
                    Denial::User,
                    format!(
                        "The user denied this `{}` call and every further `{}` call in this session.",
                        call.name, call.name
                    ),
                ))
            }
            // Nobody is left to answer (e.g. the RPC client closed its input).
            Err(_) => Err(denied(Denial::NoApprover, unanswered)),
        }
    }
}
