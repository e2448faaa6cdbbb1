//! Goals: an objective the user sets (`/goal TEXT`, RPC `set_goal`, ACP `/goal`) that keeps
//! the agent working across turns. The goal is noted in the session (a `goal` entry, and
//! in every compaction entry), so it survives compaction and resume verbatim. While one is
//! set, the model is offered the `goal` tool; a run that would end goes on with a
//! continuation message instead, until the model calls `goal` with status `done` (the goal
//! is cleared) or `blocked` (the run ends, the goal stays), the user clears it, or a limit
//! or budget of the run stops it (`max_turns`, `timeout_secs`, the budgets).

use super::run::Run;
use super::state::lock;
use super::{Agent, AgentError};
use crate::llm::request::ToolSpec;
use crate::protocol::event::GoalChange;
use crate::protocol::message::{Message, UserMessage};
use crate::session::format::NewEntry;
use crate::tools::{Tool, ToolContext, ToolOutput};
use futures_util::future::BoxFuture;
use serde_json::{Value, json};
use std::borrow::Cow;

/// The tool the model marks the goal with.
pub const TOOL: &str = "goal";

/// How every message the engine sends for a goal starts (never taken for the user's own).
pub const PREFIX: &str = "[goal] ";

/// What the model is told when the user sets a goal while the agent is idle.
pub fn start_text(goal: &str) -> String {
    format!(
        "{PREFIX}The user set this goal:\n\n{goal}\n\nWork toward it across as many turns as it \
         takes. When it is achieved, call the `{TOOL}` tool with status `done`; if it cannot be \
         achieved without the user, call it with status `blocked` and say why."
    )
}

/// What the model is told when a run would end while the goal is not marked done.
pub fn continue_text(goal: &str) -> String {
    format!(
        "{PREFIX}The goal is not marked done yet. Keep working toward it:\n\n{goal}\n\nWhen it \
         is achieved, call the `{TOOL}` tool with status `done` (or `blocked`, with the reason, \
         if you need the user)."
    )
}

/// The tools a request offers: `specs` without the `goal` tool unless a goal is set.
pub(crate) fn offered(specs: &[ToolSpec], goal: bool) -> Cow<'_, [ToolSpec]> {
    if goal || !specs.iter().any(|t| t.name == TOOL) {
        Cow::Borrowed(specs)
    } else {
        Cow::Owned(specs.iter().filter(|t| t.name != TOOL).cloned().collect())
    }
}

/// Whether `message` is one the engine sent for a goal.
pub fn is_goal_message(message: &Message) -> bool {
    matches!(message, Message::User(user) if user.typed_text().starts_with(PREFIX))
}

/// How the model marked the goal.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Mark {
    Done,
    Blocked(String),
}

/// The mark a successful `goal` call carries.
pub fn mark_of_result(tool_name: &str, output: &ToolOutput) -> Option<Mark> {
    if tool_name != TOOL || output.is_error {
        return None;
    }
    let details = output.details.as_ref()?;
    let reason = details
        .get("reason")
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_string();
    match details.get("status").and_then(Value::as_str)? {
        "done" => Some(Mark::Done),
        "blocked" => Some(Mark::Blocked(reason)),
        _ => None,
    }
}

/// The `goal` tool: offered to the model only while a goal is set.
pub struct GoalTool;

impl Tool for GoalTool {
    fn name(&self) -> &'static str {
        TOOL
    }

    fn description(&self) -> &'static str {
        "Mark the goal the user set: status `done` once it is achieved (the agent then stops \
         working on it), or `blocked` when it cannot go on without the user (say why in \
         `reason`). Do not call it for anything else."
    }

    fn parameters(&self) -> Value {
        json!({
            "type": "object",
            "properties": {
                "status": {"type": "string", "enum": ["done", "blocked"]},
                "reason": {"type": "string", "description": "What was achieved, or why it is blocked"}
            },
            "required": ["status"],
            "additionalProperties": false
        })
    }

    /// It changes nothing outside the agent: it runs in every mode without asking.
    fn read_only(&self) -> bool {
        true
    }

    fn summarize(&self, args: &Value) -> String {
        args.get("status")
            .and_then(Value::as_str)
            .unwrap_or("?")
            .to_string()
    }

    fn execute(&self, args: Value, _ctx: ToolContext) -> BoxFuture<'static, ToolOutput> {
        Box::pin(async move {
            let status = args.get("status").and_then(Value::as_str).unwrap_or("");
            let text = match status {
                "done" => "The goal is marked done.",
                "blocked" => "The goal is marked blocked: the agent stops and waits for the user.",
                _ => return ToolOutput::error("`status` must be `done` or `blocked`."),
            };
            ToolOutput::text(text).with_details(args)
        })
    }
}

impl Agent {
    /// The session's goal, if one is set.
    pub fn goal(&self) -> Option<String> {
        lock(&self.shared.state).goal.clone()
    }

    /// Set the session's goal (`Some`, surrounding blanks dropped) or clear it (`None`, or
    /// only blanks), noted in the session. Setting one while idle starts a run that works
    /// toward it; while a run is going it goes on toward the goal instead of ending.
    /// Returns the goal now.
    pub async fn set_goal(&self, goal: Option<&str>) -> Result<Option<String>, AgentError> {
        let goal = goal.map(str::trim).filter(|g| !g.is_empty());
        self.shared.persist(NewEntry::Goal { goal }).await;
        if let Some(error) = self.shared.unsaved() {
            return Err(AgentError::Unsaved(error));
        }
        let goal = goal.map(str::to_string);
        let mut state = lock(&self.shared.state);
        state.goal = goal.clone();
        let reason = if goal.is_some() {
            GoalChange::Set
        } else {
            GoalChange::Cleared
        };
        self.shared.goal_changed(&state, reason);
        if let Some(text) = &goal
            && !state.running
        {
            super::run::spawn_run(
                &self.shared,
                &mut state,
                vec![UserMessage::text(start_text(text))],
            );
        }
        Ok(goal)
    }
}

impl Run {
    /// A `goal` call's result, after the engine acted on it: `done` clears the goal (noted
    /// in the session), `blocked` ends the run after this turn (the goal stays). Without a
    /// goal there is nothing to mark: the model is told so.
    pub(crate) async fn note_goal_mark(
        &mut self,
        tool_name: &str,
        output: ToolOutput,
    ) -> ToolOutput {
        let Some(mark) = mark_of_result(tool_name, &output) else {
            return output;
        };
        if lock(&self.shared.state).goal.is_none() {
            return ToolOutput::error("No goal is set: there is nothing to mark.");
        }
        match mark {
            Mark::Done => {
                self.shared.persist(NewEntry::Goal { goal: None }).await;
                let mut state = lock(&self.shared.state);
                state.goal = None;
                self.shared.goal_changed(&state, GoalChange::Done);
            }
            Mark::Blocked(_) => {
                self.goal_blocked = true;
                let state = lock(&self.shared.state);
                self.shared.goal_changed(&state, GoalChange::Blocked);
            }
        }
        output
    }

    /// The message that keeps a run going toward the goal when it would end: `None` when
    /// there is no goal, the model marked it blocked, or the run was cancelled.
    pub(crate) fn goal_continuation(&self) -> Option<UserMessage> {
        if self.goal_blocked || self.cancel.is_cancelled() {
            return None;
        }
        let goal = lock(&self.shared.state).goal.clone()?;
        Some(UserMessage::text(continue_text(&goal)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_a_successful_call_with_a_known_status_marks_the_goal() {
        let done = ToolOutput::text("x").with_details(json!({"status": "done"}));
        assert_eq!(mark_of_result(TOOL, &done), Some(Mark::Done));
        assert_eq!(mark_of_result("todo_write", &done), None);
        let blocked =
            ToolOutput::text("x").with_details(json!({"status": "blocked", "reason": "no key"}));
        assert_eq!(
            mark_of_result(TOOL, &blocked),
            Some(Mark::Blocked("no key".into()))
        );
        assert_eq!(mark_of_result(TOOL, &ToolOutput::error("bad")), None);
        let message = Message::User(UserMessage::text(continue_text("ship")));
        assert!(is_goal_message(&message));
        assert!(!is_goal_message(&Message::User(UserMessage::text("ship"))));
    }
}
