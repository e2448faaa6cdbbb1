//! The core's side of the approval dialog (the dialog is `views::approvals` on the view
//! stack): a request opens it or waits behind the one shown, and a settled request's answer
//! goes to the engine while the run's phase follows.

use super::app::{App, Phase};
use super::composer::Action;
use super::views::approval::{Approval, Request};
use super::views::approvals::Settled;
use crate::agent::Approval as Decision;
use crate::protocol::outcome::CommandError;
use crossterm::event::KeyEvent;
use std::time::Instant;

impl App {
    /// A tool call waits for approval: show it (after those already waiting: sub-agents ask
    /// at the same time).
    pub(super) fn on_approval_request(&mut self, request: Request) {
        self.show_approval(Approval::new(request));
    }

    /// A `tool_approval_request` event: its request, shown.
    pub(super) fn on_approval_event(&mut self, event: crate::protocol::event::AgentEvent) {
        let crate::protocol::event::AgentEvent::ToolApprovalRequest {
            tool_call_id,
            tool_name,
            args,
            reason,
            agent_id,
            cwd,
            preview,
            suggested_rule,
        } = event
        else {
            return;
        };
        self.on_approval_request(Request {
            tool_call_id,
            agent_id,
            tool_name,
            args,
            reason,
            cwd,
            preview,
            suggested_rule,
        });
    }

    /// Show `approval` (a new request, or one asked again because the engine refused the
    /// rule given).
    fn show_approval(&mut self, approval: Approval) {
        // A question opening closes the full-screen views (`Views` ranks them): it must be
        // seen.
        self.views.offer_approval(approval);
        self.set_phase(Phase::Approval);
    }

    /// A request was settled (`Next::Settled`) by the dialog at `index`: the user's answer
    /// goes to the engine; the next request waiting shows, or the run goes on.
    pub(super) fn settled(&mut self, index: usize, settled: Settled) {
        if let Some(decision) = settled.decision {
            // The call runs from now: its timer starts now, not when it asked.
            if let Some(view) = self
                .run
                .tools
                .iter_mut()
                .find(|t| t.id.as_deref() == Some(settled.tool_call_id.as_str()))
            {
                view.since = Instant::now();
            }
            let answer = crate::protocol::command::Command::Approve {
                tool_call_id: settled.tool_call_id,
                agent_id: settled.agent_id,
                decision: decision.clone(),
            };
            match (self.execute_now(answer), settled.request) {
                // The engine refused the rule: the request is still waiting; ask again.
                (Some(Err(CommandError::Rule(why))), Some(request)) => {
                    if !settled.more {
                        self.views.remove(index);
                    }
                    let mut again = Approval::new(*request);
                    again.rule_error = Some(why);
                    if let Decision::AllowRule(rule) = decision {
                        again.rule = Some(rule);
                    }
                    self.show_approval(again);
                    return;
                }
                (Some(Err(_)), _) => self.set_hint("that request is no longer waiting"),
                _ => {}
            }
        }
        if settled.more {
            self.views.close_full_screen();
            self.set_phase(Phase::Approval);
        } else {
            self.views.remove(index);
            self.set_phase(Phase::Tool(settled.running));
        }
    }

    /// A key typed before the dialog could be seen: it was meant for the composer.
    pub(super) fn early_approval_key(&mut self, key: KeyEvent) {
        if let Action::Submit(text) = self.input.composer.handle_key(key) {
            self.submit(text);
        }
        self.set_hint("a tool is waiting for approval: y, a or n");
    }
}
