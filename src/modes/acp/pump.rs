//! One session's event pump: every `AgentEvent` of its agent, in order, as `session/update`
//! notifications — streamed text and thinking, tool calls and their updates, notices — and
//! the answers of the prompts whose turns end. Runs as the session's own task, so the
//! connection never waits for the engine.

use super::link::Link;
use super::permission::{self, Asking};
use super::tool_view;
use super::turns::{Ticket, Turns};
use crate::agent::Agent;
use crate::protocol::command::PermissionMode;
use crate::protocol::event::{
    AgentEvent, AssistantMessageEvent, CompactionReason, NoticeLevel, RunStatus, ToolResultPayload,
};
use crate::protocol::message::{Content, Message};
use agent_client_protocol::v1::schema::{
    ConfigOptionUpdate, ContentBlock, ContentChunk, Cost, CurrentModeUpdate, NoticeSeverity,
    PromptResponse, SessionUpdate, StopReason, ToolCall, ToolCallStatus, ToolCallUpdate,
    ToolCallUpdateFields, UsageUpdate,
};

use serde_json::Value;
use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::{Arc, Mutex, PoisonError, Weak};
use tokio::sync::mpsc;

pub struct Pump {
    pub link: Arc<Link>,
    /// Weak: the agent's events end when the agent is dropped, which ends the pump.
    pub agent: Weak<Agent>,
    pub turns: Arc<Mutex<Turns<Ticket>>>,
    pub asking: Asking,
    pub cwd: PathBuf,
    /// The calls that started and have not ended: their arguments, and whether the editor
    /// was told they run.
    calls: HashMap<String, Call>,
}

struct Call {
    args: Value,
    running: bool,
}

impl Pump {
    pub fn new(
        link: Arc<Link>,
        agent: Weak<Agent>,
        turns: Arc<Mutex<Turns<Ticket>>>,
        asking: Asking,
        cwd: PathBuf,
    ) -> Pump {
        Pump {
            link,
            agent,
            turns,
            asking,
            cwd,
            calls: HashMap::new(),
        }
    }

    pub async fn run(mut self, mut events: mpsc::UnboundedReceiver<AgentEvent>) {
        let mut next = None;
        loop {
            let event = match next.take() {
                Some(event) => event,
                None => match events.recv().await {
                    Some(event) => event,
                    None => return,
                },
            };
            let (event, after) = coalesce(event, &mut events);
            self.handle(event);
            next = after;
        }
    }

    fn turns(&self) -> std::sync::MutexGuard<'_, Turns<Ticket>> {
        self.turns.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn handle(&mut self, event: AgentEvent) {
        match event {
            AgentEvent::MessageUpdate {
                assistant_message_event,
            } => match assistant_message_event {
                AssistantMessageEvent::TextDelta { delta, .. } => self.link.say(delta),
                AssistantMessageEvent::ThinkingDelta { delta, .. } => self.link.send(
                    SessionUpdate::AgentThoughtChunk(ContentChunk::new(ContentBlock::from(delta))),
                ),
                _ => {}
            },
            AgentEvent::MessageStart { message } => {
                if let Message::User(user) = message.as_ref() {
                    let ended = self.turns().user_message(user);
                    if let Some((ticket, stop)) = ended {
                        ticket.answer(Ok(PromptResponse::new(stop)));
                    }
                }
            }
            AgentEvent::MessageEnd { message } => {
                if let Message::Assistant(assistant) = message.as_ref() {
                    self.turns().model_stopped(assistant);
                    if let Some(refusal) = &assistant.refusal {
                        self.link.say(refusal.clone());
                    }
                }
            }
            AgentEvent::ToolExecutionStart {
                tool_call_id,
                tool_name,
                args,
            } => self.tool_started(tool_call_id, None, tool_name, args),
            AgentEvent::ToolExecutionUpdate {
                tool_call_id,
                partial_result,
                ..
            } => self.tool_updated(tool_call_id, &partial_result.content),
            AgentEvent::ToolExecutionEnd {
                tool_call_id,
                tool_name,
                result,
                is_error,
            } => self.tool_ended(tool_call_id, &tool_name, &result, is_error),
            AgentEvent::SubagentEvent {
                agent_id, event, ..
            } => self.child_event(&agent_id, *event),
            event @ AgentEvent::WebSearch { .. } => {
                if let Some(search) = event.into_web_search() {
                    self.link.send(super::web_search::update(&search));
                }
            }
            AgentEvent::ToolApprovalRequest {
                tool_call_id,
                tool_name,
                args,
                reason,
                agent_id,
                preview,
                suggested_rule,
                ..
            } => self.ask(permission::Request {
                shown_id: match &agent_id {
                    Some(agent_id) => shown_id(agent_id, &tool_call_id),
                    None => tool_call_id.clone(),
                },
                tool_call_id,
                agent_id,
                tool_name,
                args,
                reason,
                cwd: self.cwd.clone(),
                preview,
                suggested_rule,
            }),
            AgentEvent::UserQuestion {
                tool_call_id,
                agent_id,
                agent_name,
                questions,
            } => self.question(tool_call_id, agent_id.map(|id| (id, agent_name)), questions),
            AgentEvent::AutoRetryStart {
                attempt,
                max_attempts,
                delay_ms,
                error_message,
            } => self.link.inform(
                NoticeSeverity::Warning,
                &format!(
                    "The model call failed ({error_message}); retrying in {:.1} s (attempt {attempt} of {max_attempts}).",
                    delay_ms as f64 / 1000.0
                ),
            ),
            AgentEvent::AutoCompactionStart { reason } if reason != CompactionReason::Manual => {
                self.link
                    .inform(NoticeSeverity::Info, "Compacting the conversation to free context…");
            }
            AgentEvent::AutoCompactionEnd {
                tokens_before,
                tokens_after,
                aborted: false,
                error_message: None,
            } => self.link.inform(
                NoticeSeverity::Info,
                &format!("Compacted the conversation: {tokens_before} → {tokens_after} tokens."),
            ),
            AgentEvent::AutoCompactionEnd {
                error_message: Some(error),
                ..
            } => self.link.inform(
                NoticeSeverity::Warning,
                &format!("Compaction failed: {error}"),
            ),
            AgentEvent::AgentEnd { status, error, .. } => self.run_ended(status, error),
            AgentEvent::ConfigChanged {
                permission_mode, ..
            } => self.config_changed(permission_mode),
            AgentEvent::UsageUpdate { usage } => self.usage(&usage),
            AgentEvent::TodoUpdate { todos } => {
                self.link.send(SessionUpdate::Plan(super::plan::from_todos(&todos)))
            }
            AgentEvent::HookError {
                hook_event_name,
                command,
                message,
            } => self.link.inform(
                NoticeSeverity::Warning,
                &format!("The {hook_event_name} hook `{command}` failed ({message}); going on"),
            ),
            AgentEvent::Notice { level, message } => self.link.inform(
                match level {
                    NoticeLevel::Info => NoticeSeverity::Info,
                    NoticeLevel::Warning => NoticeSeverity::Warning,
                },
                &message,
            ),
            _ => {}
        }
    }

    /// A tool call of the agent, or of its sub-agent `agent_id`, starts: the editor gets it
    /// (a sub-agent's under an id of its own, its title naming the sub-agent).
    fn tool_started(
        &mut self,
        tool_call_id: String,
        agent_id: Option<&str>,
        tool_name: String,
        args: Value,
    ) {
        let title = tool_view::title(&tool_name, &args);
        let (id, title) = match agent_id {
            Some(agent_id) => (
                shown_id(agent_id, &tool_call_id),
                format!("{agent_id}: {title}"),
            ),
            None => (tool_call_id, title),
        };
        let call = ToolCall::new(id.clone(), title)
            .kind(tool_view::kind(&tool_name))
            .status(ToolCallStatus::Pending)
            .locations(tool_view::locations(&tool_name, &args, None, &self.cwd))
            .raw_input(args.clone())
            .name(tool_name);
        self.link.send(SessionUpdate::ToolCall(call));
        self.calls.insert(
            id,
            Call {
                args,
                running: false,
            },
        );
    }

    /// Live output of the call the editor knows as `id`.
    fn tool_updated(&mut self, id: String, partial: &[Content]) {
        let mut fields = ToolCallUpdateFields::new().content(tool_view::blocks(partial));
        if let Some(call) = self.calls.get_mut(&id)
            && !call.running
        {
            call.running = true;
            fields = fields.status(ToolCallStatus::InProgress);
        }
        self.link
            .send(SessionUpdate::ToolCallUpdate(ToolCallUpdate::new(
                id, fields,
            )));
    }

    /// The call the editor knows as `id` ended: its status, result and locations.
    fn tool_ended(
        &mut self,
        id: String,
        tool_name: &str,
        result: &ToolResultPayload,
        is_error: bool,
    ) {
        let args = self
            .calls
            .remove(&id)
            .map(|call| call.args)
            .unwrap_or(Value::Null);
        let details = result.details.as_ref();
        let status = if is_error {
            ToolCallStatus::Failed
        } else {
            ToolCallStatus::Completed
        };
        let mut fields = ToolCallUpdateFields::new()
            .status(status)
            .content(tool_view::result_content(
                tool_name,
                &args,
                &result.content,
                details,
                is_error,
                &self.cwd,
            ))
            .raw_output(result.details.clone());
        let locations = tool_view::locations(tool_name, &args, details, &self.cwd);
        if locations.iter().any(|l| l.line.is_some()) {
            fields = fields.locations(locations);
        }
        let update = ToolCallUpdate::new(id.clone(), fields);
        let link = &self.link;
        self.asking.ended(&id, || {
            link.send(SessionUpdate::ToolCallUpdate(update));
        });
    }

    /// A sub-agent's event: its tool calls are shown as calls of their own (so that a
    /// relayed approval names a call the editor has, and the call ends when the sub-agent's
    /// does); its text reaches the editor as the `task` call's result.
    fn child_event(&mut self, agent_id: &str, event: AgentEvent) {
        match event {
            AgentEvent::ToolExecutionStart {
                tool_call_id,
                tool_name,
                args,
            } => self.tool_started(tool_call_id, Some(agent_id), tool_name, args),
            AgentEvent::ToolExecutionUpdate {
                tool_call_id,
                partial_result,
                ..
            } => self.tool_updated(shown_id(agent_id, &tool_call_id), &partial_result.content),
            AgentEvent::ToolExecutionEnd {
                tool_call_id,
                tool_name,
                result,
                is_error,
            } => self.tool_ended(
                shown_id(agent_id, &tool_call_id),
                &tool_name,
                &result,
                is_error,
            ),
            _ => {}
        }
    }

    /// The model asks: the editor is asked in a task of its own (`question`).
    /// The model asks (`agent`: a sub-agent's id and name, its question relayed).
    fn question(
        &self,
        tool_call_id: String,
        agent: Option<(String, Option<String>)>,
        questions: Vec<crate::protocol::question::Question>,
    ) {
        let Some(engine) = self.agent.upgrade() else {
            return;
        };
        let (agent_id, agent_name) = agent.unzip();
        let shown_id = match &agent_id {
            Some(agent_id) => shown_id(agent_id, &tool_call_id),
            None => tool_call_id.clone(),
        };
        self.asking.begin(&shown_id);
        crate::tasks::spawn(super::question::ask(
            self.link.clone(),
            engine,
            self.asking.clone(),
            super::question::Asked {
                tool_call_id,
                shown_id,
                agent_id,
                agent_name: agent_name.flatten(),
                questions,
            },
        ));
    }

    fn ask(&self, request: permission::Request) {
        let Some(agent) = self.agent.upgrade() else {
            return;
        };
        self.asking.begin(&request.shown_id);
        crate::tasks::spawn(permission::ask(
            self.link.clone(),
            agent,
            self.asking.clone(),
            request,
        ));
    }

    /// The context's size and the session's cost after each model call (the sub-agents'
    /// included); the whole breakdown in `_meta.agent/usage`. No `cost` when a price is
    /// unknown: a cost of 0 would be a lie.
    fn usage(&self, usage: &crate::protocol::usage::UsageReport) {
        let Some(agent) = self.agent.upgrade() else {
            return;
        };
        let state = agent.snapshot();
        let mut meta = serde_json::Map::new();
        meta.insert(
            "agent/usage".to_string(),
            serde_json::to_value(usage).unwrap_or_default(),
        );
        let update = UsageUpdate::new(state.context_tokens, state.context_window)
            .cost(usage.cost.map(|total| Cost::new(total, "USD")))
            .meta(meta);
        self.link.send(SessionUpdate::UsageUpdate(update));
    }

    /// Answer the prompt of the run's last turn: how it ended, as ACP says it.
    /// The engine changed the model, thinking level or permission mode (whoever asked):
    /// the editor is told the mode and every config option's value now.
    fn config_changed(&self, mode: PermissionMode) {
        self.link
            .send(SessionUpdate::CurrentModeUpdate(CurrentModeUpdate::new(
                mode.as_str(),
            )));
        if let Some(agent) = self.agent.upgrade() {
            let options = super::options::all(&agent.snapshot(), &agent.available_models());
            self.link
                .send(SessionUpdate::ConfigOptionUpdate(ConfigOptionUpdate::new(
                    options,
                )));
        }
    }

    fn run_ended(&mut self, status: RunStatus, error: Option<String>) {
        let ended = self.turns().run_ended();
        let error = error.unwrap_or_default();
        let result = match status {
            RunStatus::Completed => Ok(ended
                .as_ref()
                .map_or(StopReason::EndTurn, |(_, stop)| *stop)),
            RunStatus::Aborted => Ok(StopReason::Cancelled),
            RunStatus::Limit => {
                self.link
                    .inform(NoticeSeverity::Warning, &format!("Stopped: {error}"));
                Ok(StopReason::MaxTurnRequests)
            }
            RunStatus::Failed => Err(super::internal_error(error.clone())),
        };
        match ended {
            Some((ticket, _)) => ticket.answer(result.map(PromptResponse::new)),
            None if status == RunStatus::Failed => self
                .link
                .inform(NoticeSeverity::Error, &format!("The run failed: {error}")),
            None => {}
        }
    }
}

/// The id the editor knows a sub-agent's call by: the sub-agent's id and the call's, so that
/// it never clashes with a call of the parent or of another sub-agent.
fn shown_id(agent_id: &str, tool_call_id: &str) -> String {
    format!("{agent_id}/{tool_call_id}")
}

/// A text or thinking delta together with the deltas of the same block that have already
/// queued up behind it, as one (the editor gets one chunk instead of many when the model
/// streams faster than it is forwarded; nothing waits for more), and the first other event
/// taken from the queue on the way.
fn coalesce(
    event: AgentEvent,
    events: &mut mpsc::UnboundedReceiver<AgentEvent>,
) -> (AgentEvent, Option<AgentEvent>) {
    let AgentEvent::MessageUpdate {
        assistant_message_event: mut first,
    } = event
    else {
        return (event, None);
    };
    let mut after = None;
    if matches!(
        first,
        AssistantMessageEvent::TextDelta { .. } | AssistantMessageEvent::ThinkingDelta { .. }
    ) {
        while let Ok(queued) = events.try_recv() {
            match queued {
                AgentEvent::MessageUpdate {
                    assistant_message_event: ref next,
                } if first.absorb(next) => {}
                other => {
                    after = Some(other);
                    break;
                }
            }
        }
    }
    let event = AgentEvent::MessageUpdate {
        assistant_message_event: first,
    };
    (event, after)
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::panic)]
    use super::*;

    fn text(index: usize, delta: &str) -> AgentEvent {
        AgentEvent::MessageUpdate {
            assistant_message_event: AssistantMessageEvent::TextDelta {
                content_index: index,
                delta: delta.to_string(),
            },
        }
    }

    fn text_of(event: &AgentEvent) -> (usize, &str) {
        match event {
            AgentEvent::MessageUpdate {
                assistant_message_event:
                    AssistantMessageEvent::TextDelta {
                        content_index,
                        delta,
                    },
            } => (*content_index, delta),
            other => panic!("not a text delta: {other:?}"),
        }
    }

    #[test]
    fn queued_deltas_of_one_block_go_as_one_and_the_next_event_keeps_its_place() {
        let (tx, mut rx) = mpsc::unbounded_channel();
        for (index, delta) in [(0, "b"), (0, "c"), (1, "x"), (1, "y")] {
            tx.send(text(index, delta)).unwrap();
        }
        let (first, after) = coalesce(text(0, "a"), &mut rx);
        assert_eq!(text_of(&first), (0, "abc"));
        let after = after.unwrap();
        assert_eq!(text_of(&after), (1, "x"), "another block is not merged in");
        let (second, after) = coalesce(after, &mut rx);
        assert_eq!(text_of(&second), (1, "xy"));
        assert!(after.is_none(), "nothing waited for");
        // A thinking delta is never merged into text.
        tx.send(AgentEvent::MessageUpdate {
            assistant_message_event: AssistantMessageEvent::ThinkingDelta {
                content_index: 1,
                delta: "hmm".into(),
            },
        })
        .unwrap();
        let (third, after) = coalesce(text(1, "z"), &mut rx);
        assert_eq!(text_of(&third), (1, "z"));
        assert!(matches!(
            after,
            Some(AgentEvent::MessageUpdate {
                assistant_message_event: AssistantMessageEvent::ThinkingDelta { .. }
            })
        ));
    }
}
