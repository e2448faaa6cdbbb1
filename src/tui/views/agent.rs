//! The agent view (ctrl+g, `/agents ID`) on the stack: a sub-agent's transcript as it
//! streams, on the alternate screen, in the transcript view's pager; `s` types a message
//! that steers it, `x` stops it, tab goes to the next sub-agent, esc or q closes.

use super::super::agents::SubagentRow;
use super::super::screen::Painted;
use super::super::theme::Theme;
use super::super::transcript::{Entry, Log, View as Pager};
use super::transcript::pager_key;
use super::{Cx, Next, Placement, View};
use crate::live::link::EngineLink;
use crate::protocol::command::Command;
use crate::protocol::outcome::CommandError;
use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
use ratatui::buffer::Buffer;
use ratatui::text::Line;

pub struct AgentView {
    agent_id: String,
    name: String,
    pager: Pager,
    /// The child's transcript as last read.
    log: Log,
    /// A steering message being typed.
    steer: Option<String>,
    /// Why the last steer or stop failed.
    status: String,
    /// The log holds the child's transcript as it ended: nothing more to read.
    settled: bool,
}

impl AgentView {
    pub fn new(agent_id: String, name: String) -> AgentView {
        AgentView {
            agent_id,
            name,
            pager: Pager::new(),
            log: Log::default(),
            steer: None,
            status: String::new(),
            settled: false,
        }
    }

    /// The child shown.
    pub fn agent_id(&self) -> &str {
        &self.agent_id
    }

    /// A key while a steering message is typed: enter sends it, esc drops it.
    fn steer_key(&mut self, key: KeyEvent) -> Next {
        let Some(steer) = self.steer.as_mut() else {
            return Next::Stay;
        };
        match key.code {
            KeyCode::Enter => {
                let text = std::mem::take(steer);
                self.steer = None;
                if !text.trim().is_empty() {
                    let agent_id = self.agent_id.clone();
                    return Next::Execute(Command::SteerAgent { agent_id, text });
                }
            }
            KeyCode::Esc => self.steer = None,
            KeyCode::Backspace => {
                steer.pop();
            }
            KeyCode::Char(c) if !key.modifiers.contains(KeyModifiers::CONTROL) => steer.push(c),
            _ => {}
        }
        Next::Stay
    }

    /// Tab: the next sub-agent's view in place of this one.
    fn next_agent(&self, agent: &EngineLink) -> Next {
        let agents = agent.agents();
        let at = agents
            .iter()
            .position(|a| a.agent_id == self.agent_id)
            .map_or(0, |i| (i + 1) % agents.len().max(1));
        match agents.get(at) {
            Some(next) => Next::Replace(Box::new(AgentView::new(
                next.agent_id.clone(),
                next.name.clone(),
            ))),
            None => Next::Stay,
        }
    }

    /// Read the child's transcript afresh while it runs (it grows as it streams), with what
    /// the live tree knows and the transcript does not yet: the running calls' output so
    /// far, and the steering messages not yet delivered.
    fn refresh(&mut self, agent: &EngineLink, subagents: &[SubagentRow]) {
        let running = agent.child(&self.agent_id);
        if running.is_none() && self.settled {
            return;
        }
        self.settled = running.is_none();
        let mut log = Log::default();
        log.push_messages(&agent.agent_messages(&self.agent_id).unwrap_or_default());
        if let Some(streaming) = running.and_then(|child| child.streaming_message()) {
            let text = streaming.text();
            if !text.trim().is_empty() {
                log.push(Entry::assistant(text));
            }
        }
        if let Some(row) = subagents.iter().find(|r| r.agent_id == self.agent_id) {
            log.show_running(&row.output);
            for text in &row.steering {
                let first_line = text.lines().next().unwrap_or("");
                log.push(Entry::Notice(format!("↳ queued steer: {first_line}")));
            }
        }
        self.log = log;
        // The entries change as the child streams: render them afresh.
        self.pager.invalidate();
    }

    /// The footer: the child, its state and the keys, or the steering message typed.
    fn footer(&self, agent: &EngineLink) -> String {
        if let Some(text) = &self.steer {
            return format!("steer {}: {text}▏ enter sends · esc cancels", self.agent_id);
        }
        let state = agent
            .agents()
            .into_iter()
            .find(|a| a.agent_id == self.agent_id)
            .and_then(|a| serde_json::to_value(a.status).ok())
            .and_then(|v| v.as_str().map(str::to_string))
            .unwrap_or_default();
        let note = if self.status.is_empty() {
            String::new()
        } else {
            format!("{} · ", self.status)
        };
        format!(
            "agent {} {} · {state} · {note}s steer · x stop · tab next",
            self.agent_id, self.name
        )
    }
}

impl View for AgentView {
    /// The agent view's keys (the transcript view's as its fallback), unless a steer or a
    /// search is being typed (then only the global keys).
    fn key_context(&self) -> crate::tui::keymap::Context {
        match self.steer.is_some() || self.pager.input.is_some() {
            true => crate::tui::keymap::Context::Global,
            false => crate::tui::keymap::Context::AgentView,
        }
    }
    /// Its keys need the engine: `key_in`.
    fn key(&mut self, _key: KeyEvent) -> Next {
        Next::Stay
    }

    fn key_in(&mut self, key: KeyEvent, cx: &Cx) -> Next {
        if self.steer.is_some() {
            return self.steer_key(key);
        }
        // A search being typed takes every key.
        if self.pager.input.is_some() {
            return pager_key(&mut self.pager, &self.log, key, cx.theme);
        }
        match key.code {
            KeyCode::Char('s') => self.steer = Some(String::new()),
            KeyCode::Char('x') => {
                let agent_id = self.agent_id.clone();
                return Next::Execute(Command::AbortAgent { agent_id });
            }
            KeyCode::Tab => return self.next_agent(cx.agent),
            _ => return pager_key(&mut self.pager, &self.log, key, cx.theme),
        }
        Next::Stay
    }

    /// A paste goes to the composer under it, as it would with the view closed.
    fn paste(&mut self, _text: &str) -> bool {
        false
    }

    /// The steer or stop it asked for failed: the footer says why.
    fn command_failed(&mut self, error: &CommandError) {
        self.status = error.to_string();
    }

    fn placement(&self) -> Placement {
        Placement::FullScreen
    }

    fn rows(&self, _width: u16, _max_rows: u16, _theme: &Theme) -> Vec<Line<'static>> {
        Vec::new()
    }

    fn render(&mut self, buffer: &mut Buffer, kept: bool, cx: &Cx) -> Painted {
        self.refresh(cx.agent, cx.subagents);
        let footer = self.footer(cx.agent);
        self.pager
            .render(&self.log, buffer, kept, cx.theme, &footer)
    }
}
