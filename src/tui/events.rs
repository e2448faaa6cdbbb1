//! How each engine event changes the interface: a user message or a finished piece of the
//! answer becomes transcript rows (and a transcript entry), deltas feed the streaming
//! markdown, tool events drive the live tool views, a retry takes back the failed attempt.

use super::app::{App, LIVE_OUTPUT_ROWS, Phase, Stream, ToolState, ToolView};
use super::cells;
use super::markdown::StreamingMarkdown;
use crate::protocol::event::{AgentEvent, AssistantMessageEvent, NoticeLevel, RunStatus};
use crate::protocol::message::{AssistantContent, Content, Message, StopReason, join_text};
use ratatui::text::Line;
use serde_json::Value;
use std::time::{Duration, Instant};

impl App {
    pub fn on_agent_event(&mut self, event: AgentEvent) {
        self.dirty = true;
        self.notify_unfocused(&event);
        self.views_on_event(&event);
        if let Some(event) = self.on_run_event(event) {
            self.on_other_event(event);
        }
    }

    /// The run's own course: its messages, tools, retries and end; any other event is
    /// handed back.
    fn on_run_event(&mut self, event: AgentEvent) -> Option<AgentEvent> {
        match event {
            AgentEvent::AgentStart => self.run.working = Some((Instant::now(), Phase::Waiting)),
            AgentEvent::MessageStart { message } => self.on_message_start(&message),
            AgentEvent::MessageUpdate {
                assistant_message_event,
            } => self.on_delta(assistant_message_event),
            AgentEvent::MessageEnd { message } => {
                if let Message::Assistant(assistant) = message.as_ref() {
                    self.end_stream(assistant);
                }
            }
            AgentEvent::ToolExecutionStart {
                tool_call_id,
                tool_name,
                args,
            } => {
                let view = self.tool_view(&tool_call_id, &tool_name, args);
                view.state = ToolState::Running;
                view.since = Instant::now();
                self.set_phase(Phase::Tool(tool_name));
            }
            AgentEvent::ToolExecutionUpdate {
                tool_call_id,
                partial_result,
                ..
            } => self.on_tool_output(&tool_call_id, &partial_result.content),
            AgentEvent::ToolExecutionEnd {
                tool_call_id,
                tool_name,
                result,
                is_error,
            } => self.on_tool_end(&tool_call_id, &tool_name, &result, is_error),
            // The status line reads the state from the agent (`Snapshot::state`).
            AgentEvent::TurnStart | AgentEvent::State { .. } => {}
            AgentEvent::TurnEnd {
                message,
                tool_results,
            } => self.log.push_turn(&message, &tool_results),
            AgentEvent::AgentEnd { status, error, .. } => self.on_agent_end(status, error),
            AgentEvent::AutoRetryStart {
                attempt,
                max_attempts,
                delay_ms,
                error_message,
            } => self.on_retry(attempt, max_attempts, delay_ms, &error_message),
            AgentEvent::AutoRetryEnd { .. } => self.set_phase(Phase::Waiting),
            other => return Some(other),
        }
        None
    }

    /// Compaction, approvals, the queue, notices, checkpoints, todos, sub-agents, hooks.
    fn on_other_event(&mut self, event: AgentEvent) {
        match event {
            AgentEvent::AutoCompactionStart { .. } => self.on_compaction_start(),
            AgentEvent::AutoCompactionEnd {
                tokens_before,
                tokens_after,
                aborted,
                error_message,
            } => {
                self.compaction_ended(tokens_before, tokens_after, aborted, error_message);
                self.after_compaction();
            }
            AgentEvent::UserQuestion {
                tool_call_id,
                agent_id,
                agent_name,
                questions,
            } => {
                self.on_user_question(tool_call_id, agent_id.map(|id| (id, agent_name)), questions)
            }
            event @ AgentEvent::ToolApprovalRequest { .. } => self.on_approval_event(event),
            AgentEvent::QueueUpdate {
                steering,
                follow_up,
            } => {
                self.run.steering = steering;
                self.run.follow_up = follow_up;
            }
            AgentEvent::Notice { level, message } => match level {
                NoticeLevel::Info => self.notice(&message),
                NoticeLevel::Warning => self.warning(&message),
            },
            AgentEvent::Checkpoint { skipped, .. } => self.on_checkpoint(&skipped),
            AgentEvent::TodoUpdate { todos } => self.run.todos = todos,
            AgentEvent::GoalUpdate { goal, reason } => self.on_goal_update(goal, reason),
            event @ AgentEvent::WebSearch { .. } => self.on_web_search(event),
            // Sub-agents' own events (their approval requests also come relayed as ours).
            AgentEvent::SubagentEvent {
                agent_id,
                parent_tool_call_id,
                event,
            } => self.on_subagent(agent_id, parent_tool_call_id, *event),
            AgentEvent::HookError {
                hook_event_name,
                command,
                message,
            } => self.warning(&format!(
                "The {hook_event_name} hook `{command}` failed ({message}); going on without it"
            )),
            AgentEvent::HookStart { .. } | AgentEvent::HookEnd { .. } => {}
            // The session's identity, the settings and the usage are read from the engine when
            // shown (`snapshot()`); the redraw this event causes shows them.
            AgentEvent::SessionChanged { .. } | AgentEvent::ConfigChanged { .. } => {}
            // Also sent once the older part of a long resumed session was counted.
            AgentEvent::UsageUpdate { .. } => super::earlier::counted(self),
            // The run's own events went to `on_run_event`. Named, not `_`: a new event is a
            // compile error here until the interface decides what it shows.
            AgentEvent::AgentStart
            | AgentEvent::TurnStart
            | AgentEvent::MessageStart { .. }
            | AgentEvent::MessageUpdate { .. }
            | AgentEvent::MessageEnd { .. }
            | AgentEvent::ToolExecutionStart { .. }
            | AgentEvent::ToolExecutionUpdate { .. }
            | AgentEvent::ToolExecutionEnd { .. }
            | AgentEvent::TurnEnd { .. }
            | AgentEvent::AgentEnd { .. }
            | AgentEvent::AutoRetryStart { .. }
            | AgentEvent::AutoRetryEnd { .. }
            | AgentEvent::State { .. } => {}
        }
    }

    /// A `/compact` reports through the task channel too, and the two channels are read in
    /// no fixed order: a compaction already over when its events are read leaves nothing
    /// working.
    fn on_compaction_start(&mut self) {
        if self.run.working.is_none() && self.agent.is_running() {
            self.run.working = Some((Instant::now(), Phase::Compacting));
        }
        self.set_phase(Phase::Compacting);
    }

    /// One dim line now; the transcript gets it with the message's turn.
    fn on_web_search(&mut self, event: AgentEvent) {
        if let Some(search) = event.into_web_search() {
            let (summary, theme) = (search.summary(), self.theme);
            self.push_cell(move |width| cells::notice(&summary, width, &theme));
        }
    }

    fn on_message_start(&mut self, message: &std::sync::Arc<Message>) {
        match message.as_ref() {
            Message::User(user) => {
                self.log.push_user(message);
                self.run.collapsed_thoughts.clear();
                // A long paste is echoed as its chip, as the composer showed it.
                let typed = self.input.composer.collapse_pastes(user.typed_text());
                let theme = self.theme;
                self.push_cell(move |width| cells::user(&typed, width, &theme));
            }
            Message::Assistant(_) => {
                self.run.attempt_rows = 0;
                self.scrollback.start_attempt();
                self.run.stream = Some(Stream {
                    text: None,
                    source: String::new(),
                    marked: false,
                    thinking: None,
                });
                self.set_phase(Phase::Waiting);
            }
            Message::ToolResult(_) => {}
        }
    }

    /// A running tool's output so far: its last lines are shown live.
    fn on_tool_output(
        &mut self,
        tool_call_id: &str,
        content: &[crate::protocol::message::Content],
    ) {
        if let Some(view) = self
            .run
            .tools
            .iter_mut()
            .find(|t| t.id.as_deref() == Some(tool_call_id))
        {
            let text = join_text(content);
            let lines: Vec<&str> = text.lines().collect();
            view.output = lines[lines.len().saturating_sub(LIVE_OUTPUT_ROWS)..]
                .iter()
                .map(|s| s.to_string())
                .collect();
        }
    }

    fn on_tool_end(
        &mut self,
        tool_call_id: &str,
        tool_name: &str,
        result: &crate::protocol::event::ToolResultPayload,
        is_error: bool,
    ) {
        self.task_ended(tool_call_id);
        let index = self
            .run
            .tools
            .iter()
            .position(|t| t.id.as_deref() == Some(tool_call_id));
        let args = index
            .map(|i| self.run.tools.remove(i).args)
            .unwrap_or(Value::Null);
        // The block draws the result's text only: images are not kept for it (the
        // transcript view has them).
        let content: Vec<Content> = result
            .content
            .iter()
            .filter(|c| matches!(c, Content::Text { .. }))
            .cloned()
            .collect();
        let (name, details) = (tool_name.to_string(), result.details.clone());
        let theme = self.theme;
        self.push_cell(move |width| {
            cells::tool(
                &name,
                &args,
                &content,
                details.as_ref(),
                is_error,
                width,
                &theme,
            )
        });
        self.set_phase(Phase::Waiting);
    }

    fn on_agent_end(&mut self, status: RunStatus, error: Option<String>) {
        self.run.working = None;
        // An answer that could not be saved ends without `message_end`; it is kept in
        // memory, so it stays on screen too.
        self.flush_stream();
        self.run.stream = None;
        self.run.tools.clear();
        match status {
            RunStatus::Completed => self.offer_plan_approval(),
            RunStatus::Aborted => self.notice("Interrupted."),
            RunStatus::Failed => self.error(error.as_deref().unwrap_or("the run failed")),
            RunStatus::Limit => self.warning(&format!(
                "Stopped: {}",
                error.as_deref().unwrap_or("a limit was reached")
            )),
        }
    }

    /// A failed model call is retried: the failed attempt is taken back.
    fn on_retry(&mut self, attempt: u32, max_attempts: u32, delay_ms: u64, error_message: &str) {
        self.take_back_attempt();
        let seconds = (delay_ms as f64 / 1000.0).ceil();
        self.warning(&format!(
            "{error_message} — retrying in {seconds} s ({attempt}/{max_attempts})"
        ));
        self.set_phase(Phase::Retrying {
            until: Instant::now() + Duration::from_millis(delay_ms),
            attempt,
            max: max_attempts,
        });
    }

    /// A compaction ended: the run goes on, or nothing is working any more.
    fn after_compaction(&mut self) {
        if self.agent.is_running() {
            self.set_phase(Phase::Waiting);
        } else {
            self.run.working = None;
        }
    }

    fn on_delta(&mut self, delta: AssistantMessageEvent) {
        let width = self.width.saturating_sub(2);
        let theme = self.theme;
        let Some(stream) = self.run.stream.as_mut() else {
            return;
        };
        match delta {
            AssistantMessageEvent::TextStart { .. } => {
                stream.text = Some(StreamingMarkdown::new(width, theme));
                stream.source.clear();
                stream.marked = false;
                self.set_phase(Phase::Responding);
            }
            AssistantMessageEvent::TextDelta { delta, .. } => {
                if let Some(text) = stream.text.as_mut() {
                    text.push(&delta);
                    stream.source.push_str(&delta);
                    let rows = text.take_stable();
                    self.commit_text(rows);
                }
            }
            AssistantMessageEvent::TextEnd { .. } => {
                if let Some(mut text) = stream.text.take() {
                    let rows = text.finish();
                    self.commit_text(rows);
                    self.close_answer();
                }
            }
            AssistantMessageEvent::ThinkingStart { .. } => {
                stream.thinking = Some(String::new());
                self.set_phase(Phase::Thinking);
            }
            AssistantMessageEvent::ThinkingDelta { delta, .. } => {
                if let Some(thinking) = stream.thinking.as_mut() {
                    thinking.push_str(&delta);
                }
            }
            AssistantMessageEvent::ThinkingEnd { .. } => {
                if let Some(thinking) = stream.thinking.take()
                    && !thinking.trim().is_empty()
                {
                    let (shown, theme) = (self.run.show_thinking, self.theme);
                    let thought = thinking.clone();
                    let before = self.out.len();
                    self.push_cell(move |width| cells::thinking(&thought, shown, width, &theme));
                    self.run.attempt_rows += self.out.len() - before;
                    if !self.run.show_thinking {
                        self.run.collapsed_thoughts.push(thinking);
                    }
                }
            }
            AssistantMessageEvent::ToolCallStart { content_index } => {
                let name = self
                    .agent
                    .streaming_message()
                    .and_then(|m| match m.content.get(content_index) {
                        Some(AssistantContent::ToolCall(call)) => Some(call.name.clone()),
                        _ => None,
                    })
                    .unwrap_or_default();
                self.run.tools.push(ToolView {
                    content_index: Some(content_index),
                    id: None,
                    name,
                    args: Value::Null,
                    state: ToolState::Streaming,
                    output: Vec::new(),
                    since: Instant::now(),
                });
            }
            AssistantMessageEvent::ToolCallDelta { .. }
            | AssistantMessageEvent::ToolCallEnd { .. } => {}
        }
    }

    /// One message per compaction, saying what happened in words that fit: "nothing to
    /// compact yet" is not a failure, a summary no smaller than what it replaced is said so,
    /// and the same message is not repeated at every turn.
    fn compaction_ended(&mut self, before: u64, after: u64, aborted: bool, error: Option<String>) {
        let tokens = super::status::tokens;
        let (text, warn) = match error {
            Some(_) if aborted => ("Compaction stopped.".to_string(), false),
            Some(e) if e.starts_with("nothing to compact: the conversation is empty") => (
                "Nothing to compact: the conversation is empty.".to_string(),
                false,
            ),
            Some(e) if e.starts_with("nothing to compact") => (
                "Nothing to compact yet: all of the conversation is recent.".to_string(),
                false,
            ),
            Some(e) => (
                format!("The conversation could not be compacted: {e}"),
                true,
            ),
            None if after < before => (
                format!(
                    "Compacted the conversation: {} → {} tokens.",
                    tokens(before),
                    tokens(after)
                ),
                false,
            ),
            None => (
                format!(
                    "Compacted the conversation, but its summary ({} tokens) is no smaller than \
                     what it replaced ({} tokens).",
                    tokens(after),
                    tokens(before)
                ),
                false,
            ),
        };
        if self.run.last_compaction_note.as_deref() == Some(text.as_str()) {
            return;
        }
        if warn {
            self.warning(&text);
        } else {
            self.notice(&text);
        }
        self.run.last_compaction_note = Some(text);
    }

    /// A response failed and will be retried: what it showed goes away, so the retried
    /// answer replaces it. Rows not drawn yet are dropped; drawn ones are taken back from
    /// the screen at the next frame.
    fn take_back_attempt(&mut self) {
        let rows = std::mem::take(&mut self.run.attempt_rows);
        let undrawn = rows.min(self.out.len());
        self.out.truncate(self.out.len() - undrawn);
        self.scrollback.retract += rows - undrawn;
        self.scrollback.take_back_attempt();
    }

    /// Rows of the streaming text that can no longer change go to the scrollback now.
    fn commit_text(&mut self, rows: Vec<Line<'static>>) {
        let theme = self.theme;
        let Some(stream) = self.run.stream.as_mut() else {
            return;
        };
        let out = super::scrollback::mark_answer(rows, &mut stream.marked, &theme);
        if out.is_empty() {
            return;
        }
        self.run.attempt_rows += out.len();
        self.scrollback.open_answer();
        self.scrollback.grow_answer(out.len());
        self.out.extend(out);
        self.dirty = true;
    }

    /// The streaming text ended: the scrollback keeps its whole source, to lay it out again.
    fn close_answer(&mut self) {
        if let Some(stream) = self.run.stream.as_mut() {
            let source = std::mem::take(&mut stream.source);
            self.scrollback.close_answer(&source, self.theme);
        }
    }

    fn end_stream(&mut self, assistant: &crate::protocol::message::AssistantMessage) {
        self.flush_stream();
        if let Some(text) = &assistant.refusal {
            let (text, theme) = (text.clone(), self.theme);
            self.push_cell(move |width| cells::refusal(&text, width, &theme));
        }
        if matches!(
            assistant.stop_reason,
            StopReason::Error | StopReason::Aborted
        ) {
            // A failed response's calls are answered (or dropped, if it is retried) without
            // running: forget the live views of calls that never got an id.
            self.run.tools.retain(|t| t.state != ToolState::Streaming);
        }
        for call in assistant.tool_calls() {
            let index = assistant
                .content
                .iter()
                .position(|b| matches!(b, AssistantContent::ToolCall(c) if c.id == call.id));
            if let Some(view) = self
                .run
                .tools
                .iter_mut()
                .find(|t| t.id.is_none() && t.content_index == index)
            {
                view.id = Some(call.id.clone());
                view.name = call.name.clone();
                view.args = call.arguments.clone();
                view.state = ToolState::Pending;
            }
        }
    }

    /// Put what was streamed of the current answer into the transcript.
    fn flush_stream(&mut self) {
        if let Some(mut stream) = self.run.stream.take()
            && let Some(mut text) = stream.text.take()
        {
            let rows = text.finish();
            self.run.stream = Some(stream);
            self.commit_text(rows);
            self.close_answer();
            self.run.stream = None;
        }
    }

    /// The live view of a call, created if the stream never announced it.
    fn tool_view(&mut self, id: &str, name: &str, args: Value) -> &mut ToolView {
        let index = match self
            .run
            .tools
            .iter()
            .position(|t| t.id.as_deref() == Some(id))
        {
            Some(index) => index,
            None => {
                self.run.tools.push(ToolView {
                    content_index: None,
                    id: Some(id.to_string()),
                    name: name.to_string(),
                    args: Value::Null,
                    state: ToolState::Pending,
                    output: Vec::new(),
                    since: Instant::now(),
                });
                self.run.tools.len() - 1
            }
        };
        let view = &mut self.run.tools[index];
        view.args = args;
        view
    }
}
