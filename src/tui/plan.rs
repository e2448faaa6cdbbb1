//! Plan mode in the interface: `/plan` (and shift+tab) switch it on; when a run in plan
//! mode ends, a menu asks whether to carry the plan out — in ask or in auto mode — or to
//! keep planning (the user then says what to change).

use super::app::App;
use super::views::menu::{Choice, Menu, MenuItem};
use crate::agent::plan_mode::APPROVED;
use crate::protocol::command::Command;
use crate::tools::permission::PermissionMode;

impl App {
    /// `/plan [task]`: plan mode on (and the task sent, if given); `/plan` in plan mode
    /// goes back to ask mode.
    pub fn plan_command(&mut self, task: &str) {
        let mode = self.agent.snapshot().permission_mode;
        if task.is_empty() && mode == PermissionMode::Plan {
            self.set_permission_mode(PermissionMode::Ask);
            return self.notice("Plan mode off: back to ask mode.");
        }
        self.set_permission_mode(PermissionMode::Plan);
        self.notice(
            "Plan mode: the agent only looks (read-only tools) and ends with a plan for you to \
             approve. /plan again or shift+tab leaves it.",
        );
        if !task.is_empty() {
            self.submit(task.to_string());
        }
    }

    /// The engine's `SetPermissionMode` (it answers at once).
    fn set_permission_mode(&mut self, mode: PermissionMode) {
        if let Some(Err(e)) = self.execute_now(Command::SetPermissionMode { mode }) {
            self.warning(&e.to_string());
        }
    }

    /// A run ended completed: in plan mode, ask whether to carry the plan out.
    pub fn offer_plan_approval(&mut self) {
        if self.agent.snapshot().permission_mode != PermissionMode::Plan || self.views.has::<Menu>()
        {
            return;
        }
        self.views.push(Box::new(Menu::new(
            "Carry out this plan?",
            vec![
                MenuItem::new(
                    "Yes, asking before changes",
                    Choice::ApprovePlan(PermissionMode::Ask),
                ),
                MenuItem::new(
                    "Yes, in auto mode",
                    Choice::ApprovePlan(PermissionMode::Auto),
                )
                .note("(every tool runs without asking)"),
                MenuItem::new("No, keep planning", Choice::Cancel).note("(type what to change)"),
            ],
        )));
        self.dirty = true;
    }

    /// The plan was approved: leave plan mode for `mode` and have the model carry it out.
    pub fn approve_plan(&mut self, mode: PermissionMode) {
        self.set_permission_mode(mode);
        self.notice(&format!(
            "Plan approved: carrying it out in {} mode.",
            mode.as_str()
        ));
        self.submit(APPROVED.to_string());
    }
}
