//! The approval dialog as a view on the stack: the request shown (`approval::Approval`)
//! and those that came while it showed, oldest first (sub-agents ask at the same time). An
//! answer, or the call running or ending because another client answered it, settles the
//! shown request and the next one takes its place; the end of the run closes the dialog.

use super::super::theme::Theme;
use super::approval::Approval;
use super::{Next, View};
use crate::agent::Approval as Decision;
use crate::protocol::event::AgentEvent;
use crossterm::event::KeyEvent;
use ratatui::text::Line;
use std::collections::VecDeque;
use std::time::Instant;

/// A request that was settled: what the core tells the engine, and how the run goes on.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Settled {
    pub tool_call_id: String,
    /// The sub-agent that asked, `None` for the agent's own call.
    pub agent_id: Option<String>,
    /// The user's answer; `None` when it was answered elsewhere (nothing to send).
    pub decision: Option<Decision>,
    /// The tool the run goes on with: the call's, or `task` for a sub-agent's call.
    pub running: String,
    /// Another request took its place: the dialog stays open.
    pub more: bool,
    /// For an `allow_rule` answer: the request, asked again if the engine refuses the rule.
    pub request: Option<Box<super::approval::Request>>,
}

pub struct Approvals {
    shown: Approval,
    waiting: VecDeque<Approval>,
}

impl Approvals {
    pub fn new(approval: Approval) -> Approvals {
        Approvals {
            shown: approval,
            waiting: VecDeque::new(),
        }
    }

    /// The request the dialog shows.
    pub fn shown(&self) -> &Approval {
        &self.shown
    }

    pub fn shown_mut(&mut self) -> &mut Approval {
        &mut self.shown
    }

    /// The shown request is settled: the next one waiting takes its place.
    fn settle(&mut self, decision: Option<Decision>) -> Next {
        let request = &self.shown.request;
        let running = match request.agent_id {
            Some(_) => crate::agent::children::TASK_TOOL.to_string(),
            None => request.tool_name.clone(),
        };
        let settled = Settled {
            tool_call_id: request.tool_call_id.clone(),
            agent_id: request.agent_id.clone(),
            decision: decision.clone(),
            running,
            more: !self.waiting.is_empty(),
            request: matches!(decision, Some(Decision::AllowRule(_)))
                .then(|| Box::new(request.clone())),
        };
        if let Some(mut next) = self.waiting.pop_front() {
            next.opened = Instant::now();
            self.shown = next;
        }
        Next::Settled(settled)
    }

    /// Call `tool_call_id` runs or ended (answered by another client of a live session):
    /// its dialog, or its place in the queue, goes.
    fn settled_elsewhere(&mut self, tool_call_id: &str) -> Next {
        self.waiting
            .retain(|a| a.request.tool_call_id != tool_call_id);
        if self.shown.request.tool_call_id != tool_call_id {
            return Next::Stay;
        }
        self.settle(None)
    }
}

impl View for Approvals {
    /// The shown request's keys; esc stops the run.
    fn key(&mut self, key: KeyEvent) -> Next {
        match self.shown.key(key) {
            Next::Answer(decision) => self.settle(Some(decision)),
            Next::Close => Next::Stop,
            next => next,
        }
    }

    fn paste(&mut self, text: &str) -> bool {
        self.shown.paste(text)
    }

    fn on_event(&mut self, event: &AgentEvent) -> Next {
        match event {
            AgentEvent::ToolExecutionUpdate { tool_call_id, .. }
            | AgentEvent::ToolExecutionEnd { tool_call_id, .. } => {
                self.settled_elsewhere(tool_call_id)
            }
            // Nothing waits for an answer any more.
            AgentEvent::AgentEnd { .. } => Next::Close,
            _ => Next::Stay,
        }
    }

    /// A request while one is shown waits behind it.
    fn take_approval(&mut self, approval: Approval) -> Option<Approval> {
        self.waiting.push_back(approval);
        None
    }

    fn asked_at(&self) -> Option<Instant> {
        Some(self.shown.opened)
    }

    /// The approval's keys, unless a message to go with a denial is being typed.
    fn key_context(&self) -> crate::tui::keymap::Context {
        match self.shown.message {
            Some(_) => crate::tui::keymap::Context::Global,
            None => crate::tui::keymap::Context::Approval,
        }
    }

    /// The dialog, with how many more wait behind it.
    fn rows(&self, width: u16, max_rows: u16, theme: &Theme) -> Vec<Line<'static>> {
        self.shown.rows(width, max_rows, theme, self.waiting.len())
    }
}

#[cfg(test)]
mod tests {
    use super::super::approval::tests::command;
    use super::super::testing::key;
    use super::*;
    use crossterm::event::KeyCode;

    fn call(id: &str, agent: Option<&str>) -> Approval {
        let mut approval = command(1);
        approval.request.tool_call_id = id.into();
        approval.request.agent_id = agent.map(str::to_string);
        approval
    }

    #[test]
    fn an_answer_shows_the_next_request_then_lets_the_run_go_on() {
        let mut dialog = Approvals::new(call("c1", None));
        assert!(dialog.take_approval(call("c2", Some("child"))).is_none());
        let first = dialog.key(key(KeyCode::Char('n')));
        let Next::Settled(first) = first else {
            panic!("{first:?}")
        };
        assert_eq!(first.tool_call_id, "c1");
        assert_eq!(first.decision, Some(Decision::Deny(None)));
        assert!(first.more);
        assert_eq!(dialog.shown().request.tool_call_id, "c2");
        // The next request just opened: keys are early until the grace is over.
        dialog.shown_mut().opened = command(1).opened;
        let second = dialog.key(key(KeyCode::Char('y')));
        let Next::Settled(second) = second else {
            panic!("{second:?}")
        };
        assert_eq!(second.agent_id.as_deref(), Some("child"));
        assert_eq!(second.running, crate::agent::children::TASK_TOOL);
        assert!(!second.more);
        assert_eq!(dialog.key(key(KeyCode::Esc)), Next::Stop);
    }

    fn nothing() -> crate::protocol::event::ToolResultPayload {
        crate::protocol::event::ToolResultPayload {
            content: Vec::new(),
            details: None,
        }
    }

    #[test]
    fn a_call_answered_elsewhere_leaves_the_dialog_and_the_queue() {
        let mut dialog = Approvals::new(call("c1", None));
        dialog.take_approval(call("c2", None));
        dialog.take_approval(call("c3", None));
        let end = AgentEvent::ToolExecutionEnd {
            tool_call_id: "c2".into(),
            tool_name: "bash".into(),
            result: nothing(),
            is_error: false,
        };
        assert_eq!(dialog.on_event(&end), Next::Stay, "a waiting one just goes");
        let update = AgentEvent::ToolExecutionUpdate {
            tool_call_id: "c1".into(),
            tool_name: "bash".into(),
            partial_result: nothing(),
        };
        let Next::Settled(settled) = dialog.on_event(&update) else {
            panic!("the shown one is settled")
        };
        assert_eq!(settled.decision, None, "nothing to send");
        assert!(settled.more);
        assert_eq!(dialog.shown().request.tool_call_id, "c3");
    }
}
