//! Sub-agents in the interface: the live tree under each running `task` cell (name, what
//! the child is doing, elapsed time, tokens), and the agent view (ctrl+g, `/agents ID`): a
//! child's transcript as it streams, on the alternate screen, where `s` steers it, `x`
//! stops it and tab goes to the next one.

use super::app::{App, Phase};
use super::screen::Painted;
use super::transcript::{Entry, Log, View};
use crate::protocol::command::Command;
use crate::protocol::event::{AgentEvent, AssistantMessageEvent, RunStatus};
use crate::protocol::message::Message;
use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
use ratatui::buffer::Buffer;
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
}

/// The agent view's child, its transcript as last read, and a steering message being typed.
pub struct AgentFocus {
    pub agent_id: String,
    pub name: String,
    pub log: Log,
    pub steer: Option<String>,
    pub status: String,
    /// The log holds the child's transcript as it ended: nothing more to read.
    pub settled: bool,
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
        let activity = match event {
            AgentEvent::MessageUpdate {
                assistant_message_event,
            } => match assistant_message_event {
                AssistantMessageEvent::ThinkingStart { .. }
                | AssistantMessageEvent::ThinkingDelta { .. } => Some("thinking".to_string()),
                AssistantMessageEvent::TextStart { .. }
                | AssistantMessageEvent::TextDelta { .. } => Some("responding".to_string()),
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
                let summary =
                    crate::tools::meta::builtin_summary(&tool_name, &args).unwrap_or_default();
                Some(format!("{tool_name} {summary}").trim().to_string())
            }
            AgentEvent::ToolApprovalRequest { .. } => Some("waiting for approval".to_string()),
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
        };
        if let Some(activity) = activity {
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
        self.views.agent_focus = Some(AgentFocus {
            agent_id: chosen.agent_id.clone(),
            name: chosen.name.clone(),
            log: Log::default(),
            steer: None,
            status: String::new(),
            settled: false,
        });
        self.views.view = Some(View::new());
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

    /// A key while the agent view is open.
    pub fn agent_view_key(&mut self, key: KeyEvent) {
        let Some(focus) = self.views.agent_focus.as_mut() else {
            return;
        };
        if let Some(steer) = focus.steer.as_mut() {
            match key.code {
                KeyCode::Enter => {
                    let text = std::mem::take(steer);
                    focus.steer = None;
                    let agent_id = focus.agent_id.clone();
                    if !text.trim().is_empty()
                        && let Some(Err(error)) =
                            self.execute_now(Command::SteerAgent { agent_id, text })
                        && let Some(focus) = self.views.agent_focus.as_mut()
                    {
                        focus.status = error.to_string();
                    }
                }
                KeyCode::Esc => focus.steer = None,
                KeyCode::Backspace => {
                    steer.pop();
                }
                KeyCode::Char(c) if !key.modifiers.contains(KeyModifiers::CONTROL) => steer.push(c),
                _ => {}
            }
            return;
        }
        match key.code {
            KeyCode::Esc | KeyCode::Char('q') => {
                self.views.agent_focus = None;
                self.views.view = None;
            }
            KeyCode::Char('s') => focus.steer = Some(String::new()),
            KeyCode::Char('x') => {
                let agent_id = focus.agent_id.clone();
                if let Some(Err(error)) = self.execute_now(Command::AbortAgent { agent_id })
                    && let Some(focus) = self.views.agent_focus.as_mut()
                {
                    focus.status = error.to_string();
                }
            }
            KeyCode::Tab => {
                let agents = self.agent.agents();
                let at = agents
                    .iter()
                    .position(|a| a.agent_id == focus.agent_id)
                    .map_or(0, |i| (i + 1) % agents.len().max(1));
                if let Some(next) = agents.get(at) {
                    let id = next.agent_id.clone();
                    self.open_agent_view(Some(&id));
                }
            }
            _ => self.view_key(key),
        }
    }

    /// Draw the agent view: the child's transcript read afresh (it grows as it streams).
    pub fn render_agent_view(&mut self, buffer: &mut Buffer, kept: bool) -> Painted {
        let theme = self.theme;
        let (Some(focus), Some(view)) = (self.views.agent_focus.as_mut(), self.views.view.as_mut())
        else {
            buffer.reset();
            return Painted::All;
        };
        let info = self
            .agent
            .agents()
            .into_iter()
            .find(|a| a.agent_id == focus.agent_id);
        let running = self.agent.child(&focus.agent_id);
        if running.is_some() || !focus.settled {
            focus.settled = running.is_none();
            let mut log = Log::default();
            log.push_messages(
                &self
                    .agent
                    .agent_messages(&focus.agent_id)
                    .unwrap_or_default(),
            );
            if let Some(streaming) = running.and_then(|child| child.streaming_message()) {
                let text = streaming.text();
                if !text.trim().is_empty() {
                    log.push(Entry::assistant(text));
                }
            }
            focus.log = log;
            // The entries change as the child streams: render them afresh.
            view.invalidate();
        }
        let state = info
            .as_ref()
            .and_then(|a| serde_json::to_value(a.status).ok())
            .and_then(|v| v.as_str().map(str::to_string))
            .unwrap_or_default();
        let footer = match &focus.steer {
            Some(text) => format!(
                "steer {}: {text}▏ enter sends · esc cancels",
                focus.agent_id
            ),
            None => {
                let note = if focus.status.is_empty() {
                    String::new()
                } else {
                    format!("{} · ", focus.status)
                };
                format!(
                    "agent {} {} · {state} · {note}s steer · x stop · tab next",
                    focus.agent_id, focus.name
                )
            }
        };
        view.render(&focus.log, buffer, kept, &theme, &footer)
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
