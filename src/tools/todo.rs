//! `todo_write`: the model keeps a task list for the work in hand. Each call replaces the
//! whole list; the engine reports it as a `todo_update` event (the TUI pins it above the
//! composer, json/rpc clients get the event, ACP editors a `plan` update). The list lives
//! in the conversation (the calls themselves), so a resumed session still has it.

use super::{Tool, ToolContext, ToolOutput, parse_args};
use crate::protocol::todo::{TodoItem, TodoStatus};
use futures_util::future::BoxFuture;
use serde::Deserialize;
use serde_json::{Value, json};

pub struct TodoWriteTool;

/// The tool's name, which the engine watches for to report the list.
pub const NAME: &str = "todo_write";

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Args {
    todos: Vec<TodoItem>,
}

/// Items at most: a list longer than this is not a plan anyone can follow.
const MAX_ITEMS: usize = 100;

impl Tool for TodoWriteTool {
    fn name(&self) -> &'static str {
        NAME
    }

    fn description(&self) -> &'static str {
        "Keep a task list for multi-step work, shown to the user. Each call replaces the whole \
         list: send every item with its status (pending, in_progress, completed). Keep exactly \
         one item in_progress while working, and mark items completed as soon as they are done. \
         Skip it for simple one-step requests."
    }

    fn parameters(&self) -> Value {
        json!({
            "type": "object",
            "properties": {
                "todos": {
                    "type": "array",
                    "maxItems": MAX_ITEMS,
                    "items": {
                        "type": "object",
                        "properties": {
                            "content": {"type": "string", "minLength": 1, "description": "What the task is, in a few words"},
                            "status": {"type": "string", "enum": ["pending", "in_progress", "completed"]}
                        },
                        "required": ["content", "status"],
                        "additionalProperties": false
                    }
                }
            },
            "required": ["todos"],
            "additionalProperties": false
        })
    }

    /// It changes nothing but the list the user sees: it runs in every mode, plan mode
    /// included, without asking.
    fn read_only(&self) -> bool {
        true
    }

    fn summarize(&self, args: &Value) -> String {
        let items = args
            .get("todos")
            .and_then(Value::as_array)
            .map_or(0, Vec::len);
        let done = args
            .get("todos")
            .and_then(Value::as_array)
            .map_or(0, |todos| {
                todos
                    .iter()
                    .filter(|t| t.get("status").and_then(Value::as_str) == Some("completed"))
                    .count()
            });
        format!("{done}/{items} done")
    }

    fn execute(&self, args: Value, _ctx: ToolContext) -> BoxFuture<'static, ToolOutput> {
        Box::pin(async move {
            let args: Args = match parse_args(NAME, args) {
                Ok(args) => args,
                Err(output) => return output,
            };
            if let Some(blank) = args.todos.iter().position(|t| t.content.trim().is_empty()) {
                return ToolOutput::error(format!(
                    "Item {} of the list has no content: describe each task.",
                    blank + 1
                ));
            }
            ToolOutput::text(render(&args.todos)).with_details(json!({ "todos": args.todos }))
        })
    }
}

/// The list as the model reads it back.
pub fn render(todos: &[TodoItem]) -> String {
    if todos.is_empty() {
        return "The task list is now empty.".to_string();
    }
    let mut text = String::from("The task list is now:\n");
    for item in todos {
        let mark = match item.status {
            TodoStatus::Pending => "[ ]",
            TodoStatus::InProgress => "[~]",
            TodoStatus::Completed => "[x]",
        };
        text.push_str(&format!("{mark} {}\n", item.content));
    }
    text
}

/// The list a successful `todo_write` result carries, for the `todo_update` event.
pub fn todos_of_result(tool_name: &str, output: &ToolOutput) -> Option<Vec<TodoItem>> {
    if tool_name != NAME || output.is_error {
        return None;
    }
    let todos = output.details.as_ref()?.get("todos")?.clone();
    serde_json::from_value(todos).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_result_renders_the_list_and_carries_it_for_the_event() {
        let todos = vec![
            TodoItem {
                content: "read the code".into(),
                status: TodoStatus::Completed,
            },
            TodoItem {
                content: "fix the bug".into(),
                status: TodoStatus::InProgress,
            },
        ];
        let text = render(&todos);
        assert!(
            text.contains("[x] read the code\n[~] fix the bug"),
            "{text}"
        );
        let output = ToolOutput::text(text).with_details(json!({ "todos": todos }));
        assert_eq!(todos_of_result(NAME, &output), Some(todos.clone()));
        assert_eq!(todos_of_result("bash", &output), None);
        let failed = ToolOutput {
            is_error: true,
            ..output
        };
        assert_eq!(todos_of_result(NAME, &failed), None);
    }
}
