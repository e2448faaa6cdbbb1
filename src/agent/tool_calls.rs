//! Executing the tool calls of one assistant message: lookup, argument checks, permission
//! (with the approval round-trip), the call itself, and the steering check after each call.
//! Every call gets exactly one result — skipped, denied, invalid, unknown, aborted and
//! limited calls included — and `tool_execution_start`/`_end` around it.

use super::Approval;
use super::event::{AgentEvent, ToolResultPayload};
use super::message::{Message, ToolCall, ToolResultMessage, UserMessage, now_millis};
use super::run::{Outcome, Run};
use super::state::lock;
use crate::llm::error::snippet;
use crate::tools::permission::{Verdict, cannot_ask_message};
use crate::tools::{Tool, ToolContext, ToolOutput};
use std::sync::Arc;
use std::time::Instant;
use tokio::sync::oneshot;

pub const SKIPPED_TEXT: &str = "Skipped due to queued user message.";

#[derive(Default)]
pub(crate) struct ToolRound {
    pub results: Vec<Arc<Message>>,
    /// Steering messages that arrived during the round, to inject before the next call.
    pub steering: Vec<UserMessage>,
    /// Set when the run must end after this round.
    pub stop: Option<Outcome>,
}

impl Run {
    pub(crate) async fn run_tool_calls(&mut self, calls: &[ToolCall]) -> ToolRound {
        let mut round = ToolRound::default();
        for (index, call) in calls.iter().enumerate() {
            if self.cancel.is_cancelled() {
                let text = self.cancel_text();
                for rest in &calls[index..] {
                    round
                        .results
                        .push(self.answer_without_running(rest, &text).await);
                }
                round.stop = Some(self.cancel_outcome());
                return round;
            }
            if let Some(max) = self.settings.limits.max_tool_calls
                && self.tool_calls >= max
            {
                let text = format!("Not executed: the run reached its limit of {max} tool calls.");
                for rest in &calls[index..] {
                    round
                        .results
                        .push(self.answer_without_running(rest, &text).await);
                }
                round.stop = Some(Outcome::Limit(format!(
                    "the run reached its limit of {max} tool calls (--max-tool-calls, limits.max_tool_calls)"
                )));
                return round;
            }
            self.tool_calls += 1;
            round.results.push(self.execute_call(call).await);
            let steering = {
                let mut state = lock(&self.shared.state);
                let taken = state.steering.take();
                if !taken.is_empty() {
                    self.shared
                        .emit(super::state::Shared::queue_update_event(&state));
                }
                taken
            };
            if !steering.is_empty() {
                for rest in &calls[index + 1..] {
                    round
                        .results
                        .push(self.answer_without_running(rest, SKIPPED_TEXT).await);
                }
                round.steering = steering;
                return round;
            }
        }
        if self.cancel.is_cancelled() {
            round.stop = Some(self.cancel_outcome());
        }
        round
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

    async fn execute_call(&mut self, call: &ToolCall) -> Arc<Message> {
        self.emit_start(call);
        let output = self.run_call(call).await;
        self.finish_call(call, output).await
    }

    fn emit_start(&self, call: &ToolCall) {
        self.shared.emit(AgentEvent::ToolExecutionStart {
            tool_call_id: call.id.clone(),
            tool_name: call.name.clone(),
            args: call.arguments.clone(),
        });
    }

    async fn finish_call(&mut self, call: &ToolCall, output: ToolOutput) -> Arc<Message> {
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

    async fn run_call(&mut self, call: &ToolCall) -> ToolOutput {
        let Some(tool) = self.settings.tools.get(&call.name).cloned() else {
            return ToolOutput::error(format!(
                "Tool `{}` does not exist. Available tools: {}.",
                call.name,
                self.settings.tools.names().join(", ")
            ));
        };
        if let Some(raw) = &call.invalid_arguments {
            return ToolOutput::error(format!(
                "The arguments of this `{}` call are not valid JSON (the response may have been \
                 cut off by the output token limit), so it was not run. Arguments received: {}",
                call.name,
                snippet(raw)
            ));
        }
        if let Err(denial) = self.check_permission(tool.as_ref(), call).await {
            return ToolOutput::error(denial);
        }
        if !tool.read_only() {
            // What the model did so far is on disk before anything changes the world.
            self.shared.sync_session().await;
        }
        self.phase.enter("tool_running");
        let shared = self.shared.clone();
        let (id, name) = (call.id.clone(), call.name.clone());
        let ctx = ToolContext {
            cwd: self.settings.cwd.clone(),
            cancel: self.cancel.clone(),
            on_update: Arc::new(move |partial| {
                shared.emit(AgentEvent::ToolExecutionUpdate {
                    tool_call_id: id.clone(),
                    tool_name: name.clone(),
                    partial_result: partial,
                });
            }),
            settings: self.settings.tool_settings.clone(),
        };
        let started = Instant::now();
        // Its own task, so a panicking tool becomes an error result instead of killing the run.
        let output = match self
            .shared
            .runtime
            .spawn(tool.execute(call.arguments.clone(), ctx))
            .await
        {
            Ok(output) => output,
            Err(e) => {
                ToolOutput::error(format!("The `{}` tool failed unexpectedly: {e}", call.name))
            }
        };
        tracing::info!(
            tool = %call.name,
            duration_ms = started.elapsed().as_millis() as u64,
            is_error = output.is_error,
            "tool finished"
        );
        output
    }

    /// `Ok` when the call may run; `Err` with the text the model is told otherwise.
    async fn check_permission(&mut self, tool: &dyn Tool, call: &ToolCall) -> Result<(), String> {
        let verdict = lock(&self.shared.state).permissions.judge(tool, call);
        let reason = match verdict {
            Verdict::Allow => return Ok(()),
            Verdict::Deny(text) => return Err(text),
            Verdict::Ask(reason) => reason,
        };
        let receiver = {
            let mut state = lock(&self.shared.state);
            if !state.can_ask {
                return Err(cannot_ask_message(&call.name));
            }
            let (sender, receiver) = oneshot::channel();
            state.approvals.insert(call.id.clone(), sender);
            receiver
        };
        self.phase.enter("awaiting_human");
        self.shared.emit(AgentEvent::ToolApprovalRequest {
            tool_call_id: call.id.clone(),
            tool_name: call.name.clone(),
            args: call.arguments.clone(),
            reason,
        });
        let decision = tokio::select! {
            _ = self.cancel.cancelled() => {
                lock(&self.shared.state).approvals.remove(&call.id);
                return Err(self.cancel_text());
            }
            decision = receiver => decision,
        };
        match decision {
            Ok(Approval::Allow) => Ok(()),
            Ok(Approval::AllowSession) => {
                lock(&self.shared.state).permissions.allow_for_session(call);
                Ok(())
            }
            Ok(Approval::Deny(message)) => {
                let mut text = format!("The user denied this `{}` call.", call.name);
                if let Some(message) = message.filter(|m| !m.trim().is_empty()) {
                    text.push_str(" The user says: ");
                    text.push_str(message.trim());
                }
                Err(text)
            }
            // Nobody is left to answer (e.g. the RPC client closed its input).
            Err(_) => Err(cannot_ask_message(&call.name)),
        }
    }
}
