//! The core's side of the approval dialog (the dialog itself is `views::approval`): a
//! request opens it or waits behind the one shown, an answer goes to the engine and the
//! next request takes its place, and its rows with the count of those waiting.

use super::app::App;
use super::composer::Action;
use super::screen::clamp_u16;
use super::views::approval::Approval;
use crate::agent::Approval as Decision;
use crossterm::event::KeyEvent;
use ratatui::text::Line;
use std::time::Instant;

impl App {
    /// A tool call waits for approval: show it (after those already waiting: sub-agents ask
    /// at the same time).
    pub fn open_approval(&mut self, approval: Approval) {
        if self.views.approval.is_some() {
            self.views.approvals_waiting.push_back(approval);
            return;
        }
        self.views.approval = Some(approval);
        // The question must be seen: the transcript view gives way.
        self.views.view = None;
    }

    /// The dialog was answered: the next request waiting, if any, takes its place; else the
    /// run goes on with the answered call (a sub-agent's: the parent's `task` call).
    fn open_next_approval(&mut self, answered: &Approval) {
        if let Some(mut next) = self.views.approvals_waiting.pop_front() {
            next.opened = Instant::now();
            self.views.approval = Some(next);
            self.views.view = None;
            self.set_phase(super::app::Phase::Approval);
            return;
        }
        let tool = match answered.agent_id {
            Some(_) => crate::agent::children::TASK_TOOL.to_string(),
            None => answered.tool_name.clone(),
        };
        self.set_phase(super::app::Phase::Tool(tool));
    }

    /// A call's approval was answered elsewhere (another client of a live session): once
    /// the call runs or ends, its dialog, or its place in the queue, goes.
    pub fn approval_settled(&mut self, tool_call_id: &str) {
        self.views
            .approvals_waiting
            .retain(|a| a.tool_call_id != tool_call_id);
        let open = self.views.approval.as_ref();
        if open.is_some_and(|a| a.tool_call_id == tool_call_id)
            && let Some(answered) = self.views.approval.take()
        {
            self.open_next_approval(&answered);
        }
    }

    /// Rows of the dialog when it is open, fitted into `max_rows`.
    pub fn approval_rows(&self, width: u16, max_rows: u16) -> Option<(u16, Vec<Line<'static>>)> {
        let approval = self.views.approval.as_ref()?;
        let waiting = self.views.approvals_waiting.len();
        let rows = approval.rows(width, max_rows, &self.theme, waiting);
        Some((clamp_u16(rows.len()), rows))
    }

    /// A key typed before the dialog could be seen: it was meant for the composer.
    pub(super) fn early_approval_key(&mut self, key: KeyEvent) {
        if let Action::Submit(text) = self.input.composer.handle_key(key) {
            self.submit(text);
        }
        self.set_hint("a tool is waiting for approval: y, a or n");
    }

    pub(super) fn answer(&mut self, decision: Decision) {
        let Some(approval) = self.views.approval.take() else {
            return;
        };
        // The call runs from now: its timer starts now, not when it asked.
        if let Some(view) = self
            .run
            .tools
            .iter_mut()
            .find(|t| t.id.as_deref() == Some(approval.tool_call_id.as_str()))
        {
            view.since = Instant::now();
        }
        let answer = crate::protocol::command::Command::Approve {
            tool_call_id: approval.tool_call_id.clone(),
            agent_id: approval.agent_id.clone(),
            decision,
        };
        if let Some(Err(_)) = self.execute_now(answer) {
            self.set_hint("that request is no longer waiting");
        }
        self.open_next_approval(&approval);
    }
}
