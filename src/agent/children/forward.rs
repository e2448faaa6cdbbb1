//! Passing a child's events on to its parent as `subagent_event`s. Text, thinking and
//! tool-argument deltas are coalesced to at most one event per 50 ms per child (merged, in
//! order: no text is lost); every other event goes on as it is, after the deltas before it.
//! On the way, the child's record is kept current (turns, usage — which also rolls up into
//! the parent's totals), and its approval requests are relayed as the parent's own, labelled
//! with the child, so any front end can answer them.

use super::Child;
use crate::agent::state::{Shared, lock};
use crate::protocol::event::{AgentEvent, AssistantMessageEvent, RunStatus};
use std::sync::{Arc, Weak};
use std::time::Duration;
use tokio::sync::{mpsc, oneshot};
use tokio::time::Instant;

/// At most one delta event per child per this long.
pub const DELTA_INTERVAL: Duration = Duration::from_millis(50);

/// How the child's last run ended.
#[derive(Clone, Debug)]
pub struct ChildEnd {
    pub status: RunStatus,
    pub error: Option<String>,
}

pub struct Forwarder {
    pub parent: Weak<Shared>,
    /// The child's own state: whether another run follows an `agent_end`.
    pub child_shared: Weak<Shared>,
    pub child: Arc<Child>,
    pub agent_id: String,
    pub parent_tool_call_id: String,
    pub name: String,
}

impl Forwarder {
    /// Pass events on until the child's channel closes; `ended` gets the outcome of the
    /// child's last run (an `agent_end` after which the child is idle).
    pub async fn run(
        self,
        mut events: mpsc::UnboundedReceiver<AgentEvent>,
        ended: oneshot::Sender<ChildEnd>,
    ) {
        let mut ended = Some(ended);
        let mut pending: Option<AssistantMessageEvent> = None;
        // When the last delta went out.
        let mut last_delta: Option<Instant> = None;
        loop {
            let deadline = last_delta.map(|t| t + DELTA_INTERVAL);
            let event = tokio::select! {
                event = events.recv() => event,
                () = sleep_until(deadline), if pending.is_some() => {
                    self.flush(&mut pending, &mut last_delta);
                    continue;
                }
            };
            let Some(event) = event else {
                self.flush(&mut pending, &mut last_delta);
                return;
            };
            if let AgentEvent::MessageUpdate {
                assistant_message_event: delta,
            } = event
            {
                if delta.delta().is_none() {
                    self.flush(&mut pending, &mut last_delta);
                    self.pass_on(AgentEvent::MessageUpdate {
                        assistant_message_event: delta,
                    });
                    continue;
                }
                pending = match pending.take() {
                    None => Some(delta),
                    Some(mut held) => {
                        if held.absorb(&delta) {
                            Some(held)
                        } else {
                            // A different block: what was held goes first.
                            self.send_delta(held, &mut last_delta);
                            Some(delta)
                        }
                    }
                };
                if last_delta.is_none_or(|t| t.elapsed() >= DELTA_INTERVAL) {
                    self.flush(&mut pending, &mut last_delta);
                }
                continue;
            }
            self.flush(&mut pending, &mut last_delta);
            self.observe(&event);
            let end = match &event {
                AgentEvent::AgentEnd { status, error, .. } => Some(ChildEnd {
                    status: *status,
                    error: error.clone(),
                }),
                _ => None,
            };
            self.pass_on(event);
            if let Some(end) = end {
                // `agent_end` is emitted under the child's state lock, just before it settles:
                // not running now means no run follows (none was queued).
                let idle = self
                    .child_shared
                    .upgrade()
                    .is_none_or(|shared| !lock(&shared.state).running);
                if idle && let Some(ended) = ended.take() {
                    let _ = ended.send(end);
                }
            }
        }
    }

    fn flush(&self, pending: &mut Option<AssistantMessageEvent>, last: &mut Option<Instant>) {
        if let Some(delta) = pending.take() {
            self.send_delta(delta, last);
        }
    }

    fn send_delta(&self, delta: AssistantMessageEvent, last: &mut Option<Instant>) {
        *last = Some(Instant::now());
        self.pass_on(AgentEvent::MessageUpdate {
            assistant_message_event: delta,
        });
    }

    /// Keep the child's record current; roll its usage up into the parent's.
    fn observe(&self, event: &AgentEvent) {
        match event {
            AgentEvent::TurnStart => lock(&self.child.info).turns += 1,
            AgentEvent::MessageEnd { .. } | AgentEvent::SubagentEvent { .. } => {
                // The child's own calls and its descendants' (passed on to it), all under it.
                let Some(assistant) = model_call(event) else {
                    return;
                };
                lock(&self.child.info).usage.add(&assistant.usage);
                if let Some(parent) = self.parent.upgrade() {
                    let mut state = lock(&parent.state);
                    state.ledger.record_child_call(
                        &self.agent_id,
                        &self.name,
                        &assistant.provider,
                        &assistant.model,
                        &assistant.usage,
                    );
                    parent.usage_update(&state);
                }
            }
            _ => {}
        }
    }

    fn pass_on(&self, event: AgentEvent) {
        let Some(parent) = self.parent.upgrade() else {
            return;
        };
        // The child's request reaches the user through the parent's front end: the same
        // request, labelled, as the parent's own (answered with the parent's `approve`).
        let relayed = match &event {
            AgentEvent::ToolApprovalRequest {
                tool_call_id,
                tool_name,
                args,
                reason,
                cwd,
                preview,
                suggested_rule,
                ..
            } => Some(AgentEvent::ToolApprovalRequest {
                tool_call_id: tool_call_id.clone(),
                tool_name: tool_name.clone(),
                args: args.clone(),
                reason: format!("sub-agent `{}` ({}): {reason}", self.name, self.agent_id),
                agent_id: Some(self.agent_id.clone()),
                cwd: cwd.clone(),
                preview: preview.clone(),
                suggested_rule: suggested_rule.clone(),
            }),
            // A question names the sub-agent that asked: this child, or — for a question this
            // child relays from its own child — the path of ids down to the one that asked
            // (`a1/a2`, as `Agent::descendant` finds it), with that one's name.
            AgentEvent::UserQuestion {
                tool_call_id,
                agent_id,
                agent_name,
                questions,
            } => Some(AgentEvent::UserQuestion {
                tool_call_id: tool_call_id.clone(),
                agent_id: Some(match agent_id {
                    Some(below) => format!("{}/{below}", self.agent_id),
                    None => self.agent_id.clone(),
                }),
                agent_name: match agent_id {
                    Some(_) => agent_name.clone(),
                    None => Some(self.name.clone()),
                },
                questions: questions.clone(),
            }),
            _ => None,
        };
        parent.emit(AgentEvent::SubagentEvent {
            agent_id: self.agent_id.clone(),
            parent_tool_call_id: self.parent_tool_call_id.clone(),
            event: Box::new(event),
        });
        if let Some(relayed) = relayed {
            parent.emit(relayed);
        }
    }
}

/// The finished model call an event reports: a `message_end` of an assistant message, or
/// one a descendant passed on.
fn model_call(event: &AgentEvent) -> Option<&crate::protocol::message::AssistantMessage> {
    match event {
        AgentEvent::MessageEnd { message } => message.as_assistant(),
        AgentEvent::SubagentEvent { event, .. } => model_call(event),
        _ => None,
    }
}

async fn sleep_until(deadline: Option<Instant>) {
    match deadline {
        Some(deadline) => tokio::time::sleep_until(deadline).await,
        None => std::future::pending().await,
    }
}
