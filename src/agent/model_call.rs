//! One model call of a run: stream the response into the shared assembler (so the partial
//! message is readable while it grows), emit its deltas, and retry transient failures with
//! backoff. A failed attempt ends with its own `message_end` but never enters the history.

use super::compaction::compact;
use super::retry::{Attempts, Next};
use super::run::Run;
use super::state::lock;
use crate::llm::assembler::Assembler;
use crate::llm::error::ProviderError;
use crate::llm::request::{ModelRequest, WebSearchTool};
use crate::llm::stream_event::FinishReason;
use crate::protocol::event::{AgentEvent, CompactionReason, RunState};
use crate::protocol::message::{AssistantMessage, Message, StopReason};
use std::sync::Arc;

impl Run {
    /// Call the model until it answers or fails for good; the returned assistant message
    /// is already committed to the history.
    pub(crate) async fn call_model(&mut self) -> Arc<Message> {
        let mut attempts = Attempts::default();
        let mut compacted_for_overflow = false;
        loop {
            if let Some(source) = self.settings.tool_source.clone() {
                source.catch_up(&self.cancel).await;
            }
            self.shared.refresh_tools();
            self.settings = self.shared.settings();
            // The first attempt's reservation was made before the turn; a retry makes its own.
            let reservation = match self.reservation.take() {
                Some(reservation) => reservation,
                None => match self.reserve_budget() {
                    Ok(reservation) => reservation,
                    Err(reason) => return self.refused_by_budget(reason).await,
                },
            };
            self.shared.enter(RunState::ModelRunning);
            let (message, error) = self.attempt(reservation.max_output_tokens).await;
            reservation.settle(&message.usage);
            // Too long for the model: compact, then try the turn once more.
            if let Some(error) = error.as_ref().filter(|e| e.is_context_overflow())
                && !compacted_for_overflow
                && self.settings.compaction.enabled
                && !self.cancel.is_cancelled()
            {
                compacted_for_overflow = true;
                tracing::warn!(%error, "context overflow; compacting");
                self.shared.emit(AgentEvent::MessageEnd {
                    message: Arc::new(Message::Assistant(message.clone())),
                });
                self.shared.enter(RunState::Compacting);
                let settings = self.settings.clone();
                if compact(
                    &self.shared,
                    &settings,
                    &self.cancel,
                    CompactionReason::Overflow,
                    None,
                )
                .await
                .is_ok()
                {
                    continue;
                }
                self.shared.emit(AgentEvent::MessageStart {
                    message: Arc::new(Message::Assistant(AssistantMessage::empty(
                        &message.provider,
                        &message.model,
                    ))),
                });
                return self.commit(Arc::new(Message::Assistant(message))).await;
            }
            let Some(error) = error.filter(|_| !self.cancel.is_cancelled()) else {
                return self.end_retries(attempts.retries(), message).await;
            };
            let next = if self.settings.auto_retry {
                attempts.after(&self.settings.retry, &error)
            } else {
                Next::GiveUp
            };
            let delay = match next {
                Next::Retry { delay, .. } => delay,
                Next::TooLong(requested) => {
                    // The server wants a longer pause than the policy allows: fail now,
                    // with its reason, instead of waiting and failing later.
                    let mut message = message;
                    message.error_message = Some(format!(
                        "{error} (the provider asks to wait {} before trying again, more than \
                         retry.max_retry_delay_ms allows)",
                        crate::llm::timeouts::describe(requested)
                    ));
                    return self.end_retries(attempts.retries(), message).await;
                }
                Next::GiveUp => return self.end_retries(attempts.retries(), message).await,
            };
            let retries = attempts.retries();
            // The failed attempt is over for subscribers, but is not part of the history
            // (unless the wait is ended, below).
            let failed = Arc::new(Message::Assistant(message));
            self.shared.emit(AgentEvent::MessageEnd {
                message: failed.clone(),
            });
            tracing::warn!(attempt = retries, delay_ms = crate::time::millis(delay), error = %error, "retrying model call");
            self.shared.enter(RunState::Retrying);
            // The wait can be ended (`abort_retry`) before anyone hears of it: a front end
            // answering `auto_retry_start` at once must find it.
            let wait = tokio_util::sync::CancellationToken::new();
            lock(&self.shared.state).retry_wait = Some(wait.clone());
            self.shared.emit(AgentEvent::AutoRetryStart {
                attempt: retries,
                max_attempts: self.settings.retry.max_retries,
                delay_ms: crate::time::millis(delay),
                error_message: error.to_string(),
            });
            let ended = tokio::select! {
                _ = self.cancel.cancelled() => Some(true),
                _ = wait.cancelled() => Some(false),
                _ = tokio::time::sleep(delay) => None,
            };
            lock(&self.shared.state).retry_wait = None;
            if ended == Some(false) {
                // `abort_retry`: the call ends with the failure it was waiting to retry.
                self.shared.emit(AgentEvent::AutoRetryEnd {
                    success: false,
                    attempt: retries,
                    final_error: Some(error.to_string()),
                });
                self.shared.emit(AgentEvent::MessageStart {
                    message: failed.clone(),
                });
                return self.commit(failed).await;
            }
            if ended == Some(true) {
                self.shared.emit(AgentEvent::AutoRetryEnd {
                    success: false,
                    attempt: retries,
                    final_error: Some(format!("aborted while waiting to retry after: {error}")),
                });
                let mut aborted = AssistantMessage::empty(
                    &self.settings.provider.settings().name,
                    &self.settings.model.id,
                );
                aborted.stop_reason = StopReason::Aborted;
                aborted.error_message = Some("aborted while waiting to retry".to_string());
                let aborted = Arc::new(Message::Assistant(aborted));
                self.shared.emit(AgentEvent::MessageStart {
                    message: aborted.clone(),
                });
                return self.commit(aborted).await;
            }
        }
    }

    /// No (more) retries: report how the retries went, if there were any, and commit the
    /// final attempt.
    async fn end_retries(&mut self, retries: u32, message: AssistantMessage) -> Arc<Message> {
        if retries > 0 {
            let failed = matches!(message.stop_reason, StopReason::Error | StopReason::Aborted);
            self.shared.emit(AgentEvent::AutoRetryEnd {
                success: !failed,
                attempt: retries,
                final_error: if failed {
                    message.error_message.clone()
                } else {
                    None
                },
            });
        }
        self.commit(Arc::new(Message::Assistant(message))).await
    }

    /// A retry the budgets do not allow: the call ends with an error saying which budget,
    /// and the run with `limit`.
    async fn refused_by_budget(&mut self, reason: String) -> Arc<Message> {
        let mut refused = AssistantMessage::empty(
            &self.settings.provider.settings().name,
            &self.settings.model.id,
        );
        refused.stop_reason = StopReason::Error;
        refused.error_message = Some(format!("not retried: {reason}"));
        self.budget_stop = Some(reason);
        let refused = Arc::new(Message::Assistant(refused));
        self.shared.emit(AgentEvent::MessageStart {
            message: refused.clone(),
        });
        self.commit(refused).await
    }

    /// One streamed attempt, its output limit cut to `max_output_tokens` when a budget
    /// says so. Emits `message_start` and the deltas, not `message_end`.
    async fn attempt(
        &mut self,
        max_output_tokens: Option<u64>,
    ) -> (AssistantMessage, Option<ProviderError>) {
        let mut settings = self.settings.clone();
        if let Some(max) = max_output_tokens {
            let mut cut = crate::agent::state::RunSettings::clone(&settings);
            cut.model.max_output_tokens = max.min(cut.model.max_output_tokens);
            settings = Arc::new(cut);
        }
        let provider_name = &settings.provider.settings().name;
        let (messages, mode, goal) = {
            let state = lock(&self.shared.state);
            let messages: Vec<Arc<Message>> = state.history.messages().to_vec();
            (messages, state.permissions.mode, state.goal.is_some())
        };
        // The `goal` tool is offered only while there is a goal to mark.
        let tool_specs = super::goal::offered(&settings.tool_specs, goal);
        let asks = settings
            .base_tools
            .get(crate::tools::ASK_USER_TOOL)
            .is_some();
        let system_prompt = super::plan_mode::system_prompt(&settings.system_prompt, mode, asks);
        // One cache per session: its requests share their prefix.
        let session_id = lock(&self.shared.session_id).clone();
        let request = ModelRequest {
            model: &settings.model,
            system_prompt: &system_prompt,
            messages: &messages,
            tools: &tool_specs,
            thinking: settings.thinking,
            web_search: settings
                .tool_settings
                .web
                .search
                .map(|max_uses| WebSearchTool { max_uses }),
            cache_key: Some(&session_id),
        };
        let assembler = Assembler::new(provider_name, &settings.model.id);
        self.shared.emit(AgentEvent::MessageStart {
            message: Arc::new(Message::Assistant(assembler.message().clone())),
        });
        *lock(&self.shared.streaming) = Some(assembler);

        let shared = self.shared.clone();
        let mut deltas = Vec::new();
        let mut on_event = |event| {
            let searches = match lock(&shared.streaming).as_mut() {
                Some(assembler) => {
                    assembler.apply(event, &mut deltas);
                    assembler.finished_searches()
                }
                None => Vec::new(),
            };
            for delta in deltas.drain(..) {
                shared.emit(AgentEvent::MessageUpdate {
                    assistant_message_event: delta,
                });
            }
            for search in searches {
                shared.emit(AgentEvent::web_search(search));
            }
        };
        let result = settings
            .provider
            .stream(&request, &self.cancel, &mut on_event)
            .await;

        let assembler = lock(&self.shared.streaming)
            .take()
            .unwrap_or_else(|| Assembler::new(provider_name, &settings.model.id));
        let mut deltas = Vec::new();
        self.paused = false;
        let (mut message, error) = match result {
            Ok(()) => {
                let (message, report) = assembler.finish(&mut deltas);
                self.paused = report.finish == Some(FinishReason::Pause);
                (message, None)
            }
            Err(ProviderError::Aborted) => {
                let (message, _) =
                    assembler.fail(StopReason::Aborted, self.cancel_reason(), &mut deltas);
                (message, Some(ProviderError::Aborted))
            }
            Err(error) => {
                tracing::warn!(error = %error, "model call failed");
                let (message, _) =
                    assembler.fail(StopReason::Error, error.to_string(), &mut deltas);
                (message, Some(error))
            }
        };
        for delta in deltas {
            self.shared.emit(AgentEvent::MessageUpdate {
                assistant_message_event: delta,
            });
        }
        settings.model.price(&mut message.usage);
        (message, error)
    }
}
