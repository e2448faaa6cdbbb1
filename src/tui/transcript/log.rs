//! The whole conversation as the transcript view shows it: every message, thought, tool
//! call with its complete output, `!command` and notice, in order — kept as data (not
//! rows), so the view renders only what is on screen, at the current width.
//!
//! Entries point into the messages the engine already holds (`Arc<Message>`): the log adds
//! no copy of their text, so it costs a few words per entry whatever the session's size.
//! A long answer is cut into pieces at paragraph breaks, so the view never renders more
//! than a piece of it at once.

use crate::protocol::message::{AssistantContent, Message, ToolCall, ToolResultMessage, join_text};
use serde_json::Value;
use std::collections::HashMap;
use std::ops::Range;
use std::sync::Arc;

/// A piece of an answer is cut at the first paragraph break after this many bytes.
const PIECE_BYTES: usize = 16 * 1024;

/// Text the log shows: a range of a message's text (shared with the engine), or a string
/// of the interface's own (a notice, a sub-agent's streaming answer).
#[derive(Clone, Debug)]
pub struct Text {
    source: Source,
    range: Range<usize>,
}

#[derive(Clone, Debug)]
enum Source {
    Own(Arc<str>),
    /// The typed text of a user message.
    User(Arc<Message>),
    /// A text or thinking block of an assistant message.
    Block(Arc<Message>, usize),
}

impl Text {
    pub fn own(text: impl Into<Arc<str>>) -> Text {
        let text: Arc<str> = text.into();
        let range = 0..text.len();
        Text {
            source: Source::Own(text),
            range,
        }
    }

    fn whole(&self) -> &str {
        match &self.source {
            Source::Own(text) => text,
            Source::User(message) => match message.as_ref() {
                Message::User(user) => user.typed_text(),
                _ => "",
            },
            Source::Block(message, index) => match message.as_ref() {
                Message::Assistant(assistant) => match assistant.content.get(*index) {
                    Some(AssistantContent::Text { text }) => text,
                    Some(AssistantContent::Thinking { thinking, .. }) => thinking,
                    _ => "",
                },
                _ => "",
            },
        }
    }

    pub fn as_str(&self) -> &str {
        self.whole().get(self.range.clone()).unwrap_or("")
    }

    /// The same text cut into pieces (see `pieces`).
    fn pieces(&self) -> Vec<Text> {
        pieces(self.as_str())
            .into_iter()
            .map(|r| Text {
                source: self.source.clone(),
                range: self.range.start + r.start..self.range.start + r.end,
            })
            .collect()
    }
}

/// A tool call and its result.
#[derive(Clone, Debug)]
pub enum Tool {
    /// A model's call (`index` in its message's content) and the result message, if any.
    Call {
        message: Arc<Message>,
        index: usize,
        result: Option<Arc<Message>>,
    },
    /// A `!command` the user ran.
    Own {
        name: String,
        args: Value,
        output: String,
        details: Option<Value>,
        is_error: bool,
    },
    /// A call still running, with its output so far (a sub-agent's, in the agent view).
    Running {
        name: String,
        args: Value,
        output: String,
    },
}

/// What the view needs of a tool entry, borrowed from wherever it is kept.
pub struct ToolParts<'a> {
    pub name: &'a str,
    pub args: &'a Value,
    pub output: std::borrow::Cow<'a, str>,
    pub details: Option<&'a Value>,
    pub is_error: bool,
    /// The call has no result yet.
    pub running: bool,
}

impl Tool {
    pub fn parts(&self) -> ToolParts<'_> {
        static NULL: Value = Value::Null;
        match self {
            Tool::Own {
                name,
                args,
                output,
                details,
                is_error,
            } => ToolParts {
                name,
                args,
                output: output.as_str().into(),
                details: details.as_ref(),
                is_error: *is_error,
                running: false,
            },
            Tool::Running { name, args, output } => ToolParts {
                name,
                args,
                output: output.as_str().into(),
                details: None,
                is_error: false,
                running: true,
            },
            Tool::Call {
                message,
                index,
                result,
            } => {
                let call: Option<&ToolCall> = match message.as_ref() {
                    Message::Assistant(a) => match a.content.get(*index) {
                        Some(AssistantContent::ToolCall(call)) => Some(call),
                        _ => None,
                    },
                    _ => None,
                };
                let result = result.as_deref().and_then(|m| match m {
                    Message::ToolResult(r) => Some(r),
                    _ => None,
                });
                ToolParts {
                    name: call.map_or("", |c| c.name.as_str()),
                    args: call.map_or(&NULL, |c| &c.arguments),
                    output: result
                        .map(|r| join_text(&r.content))
                        .unwrap_or_default()
                        .into(),
                    details: result.and_then(|r| r.details.as_ref()),
                    is_error: result.is_some_and(|r| r.is_error),
                    running: result.is_none(),
                }
            }
        }
    }
}

#[derive(Clone, Debug)]
pub enum Entry {
    User(Text),
    /// A piece of an answer; `first` is the piece that starts its block (it gets the bullet).
    Assistant {
        text: Text,
        first: bool,
    },
    Thinking(Text),
    Tool(Tool),
    Notice(String),
    Warning(String),
    Error(String),
    /// A file the session changed (`/diff`).
    FileChange(crate::checkpoint::FileChange),
}

impl Entry {
    /// An answer of the interface's own text, in one piece.
    pub fn assistant(text: impl Into<Arc<str>>) -> Entry {
        Entry::Assistant {
            text: Text::own(text),
            first: true,
        }
    }

    /// Everything the entry says, for search.
    pub fn text(&self) -> String {
        match self {
            Entry::User(text) | Entry::Assistant { text, .. } | Entry::Thinking(text) => {
                text.as_str().to_string()
            }
            Entry::Notice(text) | Entry::Warning(text) | Entry::Error(text) => text.clone(),
            Entry::FileChange(change) => format!(
                "{}\n{}",
                change.path.display(),
                change.diff.as_deref().unwrap_or("")
            ),
            Entry::Tool(tool) => {
                let parts = tool.parts();
                let diff = parts
                    .details
                    .and_then(|d| d.get("diff"))
                    .and_then(Value::as_str)
                    .unwrap_or("");
                format!("{} {}\n{}\n{diff}", parts.name, parts.args, parts.output)
            }
        }
    }
}

#[derive(Default)]
pub struct Log {
    entries: Vec<Entry>,
    /// Messages of the conversation before the first entry, not in the log yet: the
    /// older part of a long resumed session (`session::cold`), read back from the session
    /// file when the view first opens — also after a compaction summarised them.
    earlier: Option<crate::session::cold::ColdPart>,
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

    /// Calls without a result that are still running show their output so far
    /// (`output`: text by call id).
    pub fn show_running(&mut self, output: &[(String, String)]) {
        for entry in &mut self.entries {
            let Entry::Tool(Tool::Call {
                message,
                index,
                result: None,
            }) = entry
            else {
                continue;
            };
            let Some(AssistantContent::ToolCall(call)) = message
                .as_assistant()
                .and_then(|assistant| assistant.content.get(*index))
            else {
                continue;
            };
            let Some((_, text)) = output.iter().find(|(id, _)| *id == call.id) else {
                continue;
            };
            let running = Tool::Running {
                name: call.name.clone(),
                args: call.arguments.clone(),
                output: text.clone(),
            };
            *entry = Entry::Tool(running);
        }
    }

    pub fn clear(&mut self) {
        self.entries.clear();
        self.earlier = None;
    }

    /// The messages before the log's first entry that are not in it yet.
    pub fn set_earlier(&mut self, earlier: Option<crate::session::cold::ColdPart>) {
        self.earlier = earlier;
    }

    /// Read the earlier messages (`set_earlier`) back and put them before everything the
    /// log holds.
    pub fn load_earlier(&mut self) -> std::io::Result<()> {
        let Some(earlier) = &self.earlier else {
            return Ok(());
        };
        let messages: Vec<Arc<Message>> = earlier.load_all()?.into_iter().map(|(_, m)| m).collect();
        let mut before = Log::default();
        before.push_messages(&messages);
        before.entries.append(&mut self.entries);
        self.entries = before.entries;
        self.earlier = None;
        Ok(())
    }

    /// A user's message (its typed text).
    pub fn push_user(&mut self, message: &Arc<Message>) {
        if matches!(message.as_ref(), Message::User(_)) {
            let text = Text {
                source: Source::User(message.clone()),
                range: 0..0,
            };
            let range = 0..text.whole().len();
            self.push(Entry::User(Text { range, ..text }));
        }
    }

    /// A finished turn: the assistant's text, thoughts and calls, each call with its result.
    pub fn push_turn(&mut self, message: &Arc<Message>, results: &[Arc<Message>]) {
        let by_id = results_by_id(results);
        self.push_assistant(message, &by_id);
    }

    fn push_assistant(&mut self, message: &Arc<Message>, results: &HashMap<&str, &Arc<Message>>) {
        let Message::Assistant(assistant) = message.as_ref() else {
            return;
        };
        for (index, block) in assistant.content.iter().enumerate() {
            let shared = || {
                let text = Text {
                    source: Source::Block(message.clone(), index),
                    range: 0..0,
                };
                let range = 0..text.whole().len();
                Text { range, ..text }
            };
            match block {
                AssistantContent::Text { text } if !text.trim().is_empty() => {
                    for (i, piece) in shared().pieces().into_iter().enumerate() {
                        self.push(Entry::Assistant {
                            text: piece,
                            first: i == 0,
                        });
                    }
                }
                AssistantContent::Thinking {
                    thinking,
                    redacted: false,
                    ..
                } if !thinking.trim().is_empty() => self.push(Entry::Thinking(shared())),
                AssistantContent::ToolCall(call) => self.push(Entry::Tool(Tool::Call {
                    message: message.clone(),
                    index,
                    result: results.get(call.id.as_str()).map(|r| (*r).clone()),
                })),
                AssistantContent::WebSearch(search) => self.push(Entry::Notice(search.summary())),
                _ => {}
            }
        }
        if let Some(error) = &assistant.error_message {
            self.push(Entry::Error(error.clone()));
        }
    }

    /// A whole conversation (a resumed session): results are looked up for their calls.
    pub fn push_messages(&mut self, messages: &[Arc<Message>]) {
        let results = results_by_id(messages);
        for message in messages {
            match message.as_ref() {
                Message::User(_) => self.push_user(message),
                Message::Assistant(_) => self.push_assistant(message, &results),
                Message::ToolResult(_) => {}
            }
        }
    }
}

fn results_by_id(messages: &[Arc<Message>]) -> HashMap<&str, &Arc<Message>> {
    messages
        .iter()
        .filter_map(|m| match m.as_ref() {
            Message::ToolResult(ToolResultMessage { tool_call_id, .. }) => {
                Some((tool_call_id.as_str(), m))
            }
            _ => None,
        })
        .collect()
}

/// `text` cut at paragraph breaks (a blank line outside a fenced code block) into pieces of
/// at least `PIECE_BYTES` (the last one may be shorter). Markdown renders block by block, so
/// pieces rendered one after the other look like the whole rendered at once.
fn pieces(text: &str) -> Vec<Range<usize>> {
    let mut cuts = Vec::new();
    if text.len() <= PIECE_BYTES {
        cuts.push(0..text.len());
        return cuts;
    }
    let (mut start, mut at) = (0, 0);
    let mut fence: Option<&str> = None;
    let mut previous_blank = false;
    for line in text.split_inclusive('\n') {
        let trimmed = line.trim_start_matches(' ');
        let indent = line.len() - trimmed.len();
        let blank = line.trim().is_empty();
        if indent < 4 {
            let marker = ["```", "~~~"].into_iter().find(|m| trimmed.starts_with(m));
            match (fence, marker) {
                (None, Some(marker)) => fence = Some(marker),
                (Some(open), Some(marker)) if open == marker => fence = None,
                _ => {}
            }
        }
        // Cut before the first line of a paragraph that follows a blank line.
        if fence.is_none()
            && previous_blank
            && !blank
            && indent < 4
            && !starts_list_item(trimmed)
            && at - start >= PIECE_BYTES
        {
            cuts.push(start..at);
            start = at;
        }
        previous_blank = blank && fence.is_none();
        at += line.len();
    }
    cuts.push(start..text.len());
    cuts
}

/// Whether a line starts a list item (`-`, `*`, `+`, `1.`, `1)`): a list is not cut, so
/// its items keep their spacing and numbering.
fn starts_list_item(line: &str) -> bool {
    let digits = line.bytes().take_while(u8::is_ascii_digit).count();
    let rest = &line[digits..];
    let marker = if digits > 0 {
        rest.strip_prefix(['.', ')'])
    } else {
        rest.strip_prefix(['-', '*', '+'])
    };
    marker.is_some_and(|after| after.is_empty() || after.starts_with([' ', '\t', '\n']))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_long_answer_is_cut_at_paragraph_breaks_outside_code() {
        let paragraph = "word ".repeat(1000) + "\n\n";
        let code = format!(
            "```\n{}\n\n{}\n```\n\n",
            "x".repeat(20_000),
            "y".repeat(100)
        );
        let text = format!("{paragraph}{code}{}", paragraph.repeat(10));
        let cuts = pieces(&text);
        assert!(cuts.len() > 2, "{cuts:?}");
        // Nothing lost, nothing repeated, and never a cut inside the code block.
        assert_eq!(cuts.first().map(|r| r.start), Some(0));
        assert_eq!(cuts.last().map(|r| r.end), Some(text.len()));
        for pair in cuts.windows(2) {
            assert_eq!(pair[0].end, pair[1].start);
            assert!(text[..pair[0].end].ends_with("\n\n"));
            assert!(text[pair[0].end..].starts_with("word"));
        }
        assert_eq!(pieces("short"), std::iter::once(0..5).collect::<Vec<_>>());
    }
}
