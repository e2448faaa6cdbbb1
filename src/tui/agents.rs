//! Sub-agents in the interface: the live tree under each running `task` cell (name, what
//! the child is doing, elapsed time, tokens), `/agents`, and opening the agent view (ctrl+g,
//! `/agents ID`: `views::agent`).

use super::app::{App, Phase};
use super::views::agent::AgentView;
use crate::protocol::event::{AgentEvent, AssistantMessageEvent, RunState, RunStatus};
use crate::protocol::message::Message;
use ratatui::text::{Line, Span};
use std::time::Instant;

/// One child as the live tree shows it.
pub struct SubagentRow {
    pub agent_id: String,
    /// The `task` call that started it.
    pub call_id: String,
    pub name: String,
    pub activity: String,
    pub since: Instant,
    pub tokens: u64,
    /// The call the child runs now (`bash for i in …`): what it is doing again once an
    /// approval it asked for is answered and while the call's output streams.
    pub tool: Option<String>,
    /// The output so far of the child's running calls (each the tail its tool sends), by
    /// call id: the agent view shows it before the call ends.
    pub output: Vec<(String, String)>,
    /// Steering messages sent to the child and not yet delivered (its queue).
    pub steering: Vec<String>,
}

impl App {
    /// A child's event: keep its row in the tree current.
    pub fn on_subagent(&mut self, agent_id: String, call_id: String, event: AgentEvent) {
        // A child's approval was answered: the parent is back to running its task calls.
        if self.views.asked_at().is_none() && matches!(self.run.working, Some((_, Phase::Approval)))
        {
            self.set_phase(Phase::Tool(crate::agent::children::TASK_TOOL.to_string()));
        }
        if !self.run.subagents.iter().any(|r| r.agent_id == agent_id) {
            let name = self
                .agent
                .agents()
                .into_iter()
                .find(|a| a.agent_id == agent_id)
                .map(|a| a.name)
                .unwrap_or_else(|| "agent".to_string());
            self.run.subagents.push(SubagentRow {
                agent_id: agent_id.clone(),
                call_id,
                name,
                activity: "starting".to_string(),
                since: Instant::now(),
                tokens: 0,
                tool: None,
                output: Vec::new(),
                steering: Vec::new(),
            });
        }
        let Some(row) = self
            .run
            .subagents
            .iter_mut()
            .find(|r| r.agent_id == agent_id)
        else {
            return;
        };
        if let Some(activity) = activity(row, event) {
            row.activity = activity;
        }
    }

    /// The task call `call_id` ended: its child leaves the tree.
    pub fn task_ended(&mut self, call_id: &str) {
        self.run.subagents.retain(|r| r.call_id != call_id);
    }

    /// The tree rows under the task cell of `call_id`.
    pub fn subagent_rows(&self, call_id: &str, width: u16) -> Vec<Line<'static>> {
        let theme = &self.theme;
        self.run
            .subagents
            .iter()
            .filter(|r| r.call_id == call_id)
            .map(|row| {
                let text = format!(
                    "{} {} · {} · {}s · {} tokens",
                    row.name,
                    row.agent_id,
                    row.activity,
                    row.since.elapsed().as_secs(),
                    short_count(row.tokens)
                );
                Line::from(vec![
                    Span::styled("  ⎿ ", theme.dim()),
                    Span::styled(
                        super::cells::cut(&text, usize::from(width).saturating_sub(20)),
                        theme.dim(),
                    ),
                    Span::styled("  ctrl+g to view", theme.dim()),
                ])
            })
            .collect()
    }

    /// ctrl+g: the agent view of the first child still running (else the newest one).
    pub fn open_agent_view(&mut self, agent_id: Option<&str>) {
        let agents = self.agent.agents();
        let chosen = match agent_id {
            Some(id) => agents.iter().find(|a| a.agent_id == id),
            None => agents
                .iter()
                .find(|a| self.agent.child(&a.agent_id).is_some())
                .or(agents.last()),
        };
        let Some(chosen) = chosen else {
            match agent_id {
                Some(id) => self.warning(&format!("no sub-agent `{id}` (/agents lists them)")),
                None => self.notice("no sub-agents yet: the model starts them with its task tool"),
            }
            return;
        };
        let view = AgentView::new(chosen.agent_id.clone(), chosen.name.clone());
        self.views.close_full_screen();
        self.views.push(Box::new(view));
        self.dirty = true;
    }

    /// `/agents`: every sub-agent of this process, one line each.
    pub fn list_agents(&mut self) {
        let agents = self.agent.agents();
        if agents.is_empty() {
            self.notice("no sub-agents yet: the model starts them with its task tool");
            return;
        }
        let mut text = String::from("Sub-agents (ctrl+g or /agents ID to view):");
        for a in agents {
            text.push_str(&format!(
                "\n  {} {} · {} · {} turns · {} tokens · {}",
                a.agent_id,
                a.name,
                serde_json::to_value(a.status)
                    .ok()
                    .and_then(|v| v.as_str().map(str::to_string))
                    .unwrap_or_default(),
                a.turns,
                short_count(a.usage.input.saturating_add(a.usage.output)),
                a.description
            ));
        }
        self.notice(&text);
    }
}

/// What a child's `event` says it is doing now (`None`: no change), keeping the row's
/// running call, its output and its queue current.
fn activity(row: &mut SubagentRow, event: AgentEvent) -> Option<String> {
    match event {
        AgentEvent::MessageUpdate {
            assistant_message_event,
        } => match assistant_message_event {
            AssistantMessageEvent::ThinkingStart { .. }
            | AssistantMessageEvent::ThinkingDelta { .. } => Some("thinking".to_string()),
            AssistantMessageEvent::TextStart { .. } | AssistantMessageEvent::TextDelta { .. } => {
                Some("responding".to_string())
            }
            AssistantMessageEvent::ToolCallStart { .. }
            | AssistantMessageEvent::ToolCallDelta { .. } => {
                Some("writing a tool call".to_string())
            }
            _ => None,
        },
        AgentEvent::MessageEnd { message } => {
            if let Message::Assistant(assistant) = message.as_ref() {
                row.tokens = row
                    .tokens
                    .saturating_add(assistant.usage.input)
                    .saturating_add(assistant.usage.output);
            }
            None
        }
        AgentEvent::ToolExecutionStart {
            tool_name, args, ..
        } => {
            let summary = crate::agent::call_summary::summarize_call(&tool_name, &args);
            let doing = format!("{tool_name} {summary}").trim().to_string();
            row.tool = Some(doing.clone());
            Some(doing)
        }
        AgentEvent::ToolApprovalRequest { .. } => Some("waiting for approval".to_string()),
        AgentEvent::UserQuestion { .. } => Some("waiting for your answer".to_string()),
        // The approval was answered (here or by another client): the call goes on.
        AgentEvent::State {
            previous: RunState::AwaitingHuman,
            ..
        } => row.tool.clone(),
        AgentEvent::ToolExecutionUpdate {
            tool_call_id,
            partial_result,
            ..
        } => {
            let text = crate::protocol::message::join_text(&partial_result.content);
            match row.output.iter_mut().find(|(id, _)| *id == tool_call_id) {
                Some((_, kept)) => *kept = text,
                None => row.output.push((tool_call_id, text)),
            }
            row.tool.clone()
        }
        AgentEvent::ToolExecutionEnd { tool_call_id, .. } => {
            row.output.retain(|(id, _)| *id != tool_call_id);
            row.tool = None;
            Some("thinking".to_string())
        }
        AgentEvent::QueueUpdate { steering, .. } => {
            row.steering = steering;
            None
        }
        AgentEvent::AgentEnd { status, .. } => Some(
            match status {
                RunStatus::Completed => "done",
                RunStatus::Failed => "failed",
                RunStatus::Aborted => "stopped",
                RunStatus::Limit => "stopped at a limit",
            }
            .to_string(),
        ),
        _ => None,
    }
}

/// 1234 → "1.2k".
fn short_count(n: u64) -> String {
    if n < 1000 {
        n.to_string()
    } else {
        format!("{}.{}k", n / 1000, n % 1000 / 100)
    }
}
