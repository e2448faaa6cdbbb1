//! The whole conversation as the transcript view shows it: every message, thought, tool
//! call with its complete output, `!command` and notice, in order — kept as data (not
//! rows), so the view renders only what is on screen, at the current width.

use crate::protocol::message::{AssistantContent, Message, ToolResultMessage, join_text};
use serde_json::Value;
use std::collections::HashMap;
use std::sync::Arc;

#[derive(Clone, Debug)]
pub enum Entry {
    User(String),
    Assistant(String),
    Thinking(String),
    Tool {
        name: String,
        args: Value,
        output: String,
        details: Option<Value>,
        is_error: bool,
    },
    Notice(String),
    Warning(String),
    Error(String),
    /// A file the session changed (`/diff`).
    FileChange(crate::checkpoint::FileChange),
}

impl Entry {
    /// Everything the entry says, for search.
    pub fn text(&self) -> String {
        match self {
            Entry::User(text)
            | Entry::Assistant(text)
            | Entry::Thinking(text)
            | Entry::Notice(text)
            | Entry::Warning(text)
            | Entry::Error(text) => text.clone(),
            Entry::FileChange(change) => format!(
                "{}\n{}",
                change.path.display(),
                change.diff.as_deref().unwrap_or("")
            ),
            Entry::Tool {
                name,
                args,
                output,
                details,
                ..
            } => {
                let diff = details
                    .as_ref()
                    .and_then(|d| d.get("diff"))
                    .and_then(Value::as_str)
                    .unwrap_or("");
                format!("{name} {args}\n{output}\n{diff}")
            }
        }
    }
}

#[derive(Default)]
pub struct Log {
    entries: Vec<Entry>,
}

impl Log {
    pub fn entries(&self) -> &[Entry] {
        &self.entries
    }

    pub fn len(&self) -> usize {
        self.entries.len()
    }

    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    pub fn push(&mut self, entry: Entry) {
        self.entries.push(entry);
    }

    pub fn clear(&mut self) {
        self.entries.clear();
    }

    /// A finished turn: the assistant's text, thoughts and calls, each call with its result.
    pub fn push_turn(&mut self, message: &Message, results: &[Arc<Message>]) {
        let by_id: HashMap<&str, &ToolResultMessage> = results
            .iter()
            .filter_map(|m| match m.as_ref() {
                Message::ToolResult(r) => Some((r.tool_call_id.as_str(), r)),
                _ => None,
            })
            .collect();
        self.push_assistant(message, &by_id);
    }

    fn push_assistant(&mut self, message: &Message, results: &HashMap<&str, &ToolResultMessage>) {
        let Message::Assistant(assistant) = message else {
            return;
        };
        for block in &assistant.content {
            match block {
                AssistantContent::Text { text } if !text.trim().is_empty() => {
                    self.push(Entry::Assistant(text.clone()))
                }
                AssistantContent::Thinking {
                    thinking,
                    redacted: false,
                    ..
                } if !thinking.trim().is_empty() => self.push(Entry::Thinking(thinking.clone())),
                AssistantContent::ToolCall(call) => {
                    let result = results.get(call.id.as_str());
                    self.push(Entry::Tool {
                        name: call.name.clone(),
                        args: call.arguments.clone(),
                        output: result.map(|r| join_text(&r.content)).unwrap_or_default(),
                        details: result.and_then(|r| r.details.clone()),
                        is_error: result.is_some_and(|r| r.is_error),
                    });
                }
                _ => {}
            }
        }
        if let Some(error) = &assistant.error_message {
            self.push(Entry::Error(error.clone()));
        }
    }

    /// A whole conversation (a resumed session): results are looked up for their calls.
    pub fn push_messages(&mut self, messages: &[Arc<Message>]) {
        let results: HashMap<&str, &ToolResultMessage> = messages
            .iter()
            .filter_map(|m| match m.as_ref() {
                Message::ToolResult(r) => Some((r.tool_call_id.as_str(), r)),
                _ => None,
            })
            .collect();
        for message in messages {
            match message.as_ref() {
                Message::User(user) => self.push(Entry::User(user.typed_text().to_string())),
                Message::Assistant(_) => self.push_assistant(message, &results),
                Message::ToolResult(_) => {}
            }
        }
    }
}
