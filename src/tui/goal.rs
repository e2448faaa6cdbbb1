//! The goal as the interface shows it: `/goal TEXT` sets it (the engine's `set_goal`),
//! `/goal` shows it, `/goal clear` clears it; each `goal_update` is one notice line, and the
//! status line shows the goal while one is set (`status`).

use super::app::{App, TaskResult};
use crate::agent::commands::Control;
use crate::protocol::command::Command;
use crate::protocol::event::GoalChange;

/// The goal as the status line shows it: `goal: TEXT`, cut to `max` characters.
pub fn status_part(goal: &str, max: usize) -> String {
    let mut chars = goal.chars();
    let head: String = chars.by_ref().take(max).collect();
    if chars.next().is_some() {
        format!("goal: {}…", head.trim_end())
    } else {
        format!("goal: {head}")
    }
}

impl App {
    /// `/goal [TEXT|clear]`.
    pub(super) fn goal_command(&mut self, arg: &str) {
        if arg.is_empty() {
            let text = match self.agent.goal() {
                Some(goal) => format!("Goal: {goal} (/goal clear clears it)"),
                None => "No goal is set. /goal TEXT sets one: the agent works toward it across \
                         turns until it marks it done."
                    .to_string(),
            };
            return self.notice(&text);
        }
        let goal = (arg != "clear").then(|| arg.to_string());
        let agent = self.agent.clone();
        let tasks = self.tasks.clone();
        // The goal is noted in the session first: its answer comes as `goal_update`.
        crate::tasks::spawn(async move {
            if let Err(e) = agent
                .execute(Command::SetGoal { goal }, Control::new())
                .await
            {
                let _ = tasks.send(TaskResult::Warning(format!("The goal was not set: {e}")));
            }
        });
    }

    /// `goal_update`: one line saying what happened to the goal.
    pub(super) fn on_goal_update(&mut self, goal: Option<String>, reason: GoalChange) {
        let text = match (reason, goal) {
            (GoalChange::Set, Some(goal)) => format!("Goal set: {goal}"),
            (GoalChange::Done, _) => "The model marked the goal done.".to_string(),
            (GoalChange::Blocked, _) => {
                "The model marked the goal blocked: it waits for you (/goal clear drops it)."
                    .to_string()
            }
            (GoalChange::Cleared, _) => "Goal cleared.".to_string(),
            (GoalChange::Session, Some(goal)) => format!("Goal: {goal}"),
            (GoalChange::Set | GoalChange::Session, None) => return,
        };
        self.notice(&text);
    }
}
