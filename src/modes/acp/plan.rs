//! The model's task list (`todo_update`) as an ACP `plan` session update: every item, in
//! order, with its status (the editor replaces its whole plan with each update). Our items
//! have no priority; every entry is sent as `medium`.

use crate::protocol::todo::{TodoItem, TodoStatus};
use agent_client_protocol::v1::schema::{Plan, PlanEntry, PlanEntryPriority, PlanEntryStatus};

pub fn from_todos(todos: &[TodoItem]) -> Plan {
    Plan::new(
        todos
            .iter()
            .map(|item| {
                let status = match item.status {
                    TodoStatus::Pending => PlanEntryStatus::Pending,
                    TodoStatus::InProgress => PlanEntryStatus::InProgress,
                    TodoStatus::Completed => PlanEntryStatus::Completed,
                };
                PlanEntry::new(item.content.clone(), PlanEntryPriority::Medium, status)
            })
            .collect(),
    )
}
