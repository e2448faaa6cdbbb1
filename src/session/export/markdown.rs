//! A session rendered as Markdown (`agent sessions export --format md`): a heading with the
//! title and where it ran, then the current branch's messages in order — what the user
//! typed, the model's text and thinking, each tool call with its arguments and its result
//! in code blocks. The text of a message is kept as written (it is usually Markdown
//! already); everything put in a code block gets a fence longer than any run of backticks
//! in it, so no content can close it early.

use super::html::Item;
use crate::protocol::message::{AssistantContent, Content, Message};

/// Facts for the document's heading.
pub struct Heading<'a> {
    pub id: &'a str,
    pub title: Option<&'a str>,
    pub cwd: &'a str,
    /// When the session was created (milliseconds since the epoch).
    pub created: Option<i64>,
}

pub fn render(heading: &Heading<'_>, items: &[Item]) -> String {
    let mut out = String::new();
    let title = heading.title.unwrap_or("Session");
    out.push_str(&format!("# {}\n\n", title.replace('\n', " ")));
    out.push_str(&format!("- Session: `{}`\n", heading.id));
    out.push_str(&format!("- Directory: `{}`\n", heading.cwd));
    if let Some(created) = heading.created {
        out.push_str(&format!("- Created: {}\n", crate::time::utc_date(created)));
    }
    for item in items {
        out.push('\n');
        match item {
            Item::Message(message) => message_section(&mut out, message),
            Item::ModelChange { provider, model } => {
                out.push_str(&format!("*Model: {provider} / {model}*\n"));
            }
            Item::ThinkingChange(level) => out.push_str(&format!("*Reasoning: {level}*\n")),
            Item::Compaction {
                summary,
                tokens_before,
                tokens_after,
            } => {
                out.push_str(&format!(
                    "## Compaction ({tokens_before} → {tokens_after} tokens)\n\n"
                ));
                out.push_str(summary.trim_end());
                out.push('\n');
            }
        }
    }
    out
}

fn message_section(out: &mut String, message: &Message) {
    match message {
        Message::User(user) => {
            out.push_str("## User\n\n");
            content(out, &user.content);
        }
        Message::Assistant(assistant) => {
            out.push_str("## Assistant\n\n");
            for block in &assistant.content {
                match block {
                    AssistantContent::Text { text } => {
                        out.push_str(text.trim_end());
                        out.push_str("\n\n");
                    }
                    AssistantContent::Thinking {
                        thinking, redacted, ..
                    } => {
                        if *redacted {
                            out.push_str("> *(thinking redacted by the provider)*\n\n");
                        } else if !thinking.trim().is_empty() {
                            for line in thinking.trim_end().lines() {
                                out.push_str(&format!("> {line}\n"));
                            }
                            out.push('\n');
                        }
                    }
                    AssistantContent::ToolCall(call) => {
                        out.push_str(&format!("**Tool call** `{}`\n\n", call.name));
                        let arguments = call.invalid_arguments.clone().unwrap_or_else(|| {
                            serde_json::to_string_pretty(&call.arguments).unwrap_or_default()
                        });
                        code_block(out, "json", &arguments);
                    }
                    AssistantContent::WebSearch(search) => {
                        out.push_str(&format!("*{}*\n\n", search.summary()));
                    }
                }
            }
            if let Some(refusal) = &assistant.refusal {
                out.push_str(&format!("*Refused:* {}\n\n", refusal.trim_end()));
            }
            if let Some(error) = &assistant.error_message {
                out.push_str(&format!("*Error:* {}\n\n", error.trim_end()));
            }
        }
        Message::ToolResult(result) => {
            let error = if result.is_error { " (error)" } else { "" };
            out.push_str(&format!("**Result of** `{}`{error}\n\n", result.tool_name));
            let text = crate::protocol::message::join_text(&result.content);
            code_block(out, "", &text);
            images(out, &result.content);
        }
    }
    while out.ends_with("\n\n") {
        out.pop();
    }
}

fn content(out: &mut String, blocks: &[Content]) {
    for block in blocks {
        if let Content::Text { text } = block {
            out.push_str(text.trim_end());
            out.push_str("\n\n");
        }
    }
    images(out, blocks);
}

fn images(out: &mut String, blocks: &[Content]) {
    for block in blocks {
        if let Content::Image { mime_type, .. } = block {
            out.push_str(&format!("*[image: {mime_type}]*\n\n"));
        }
    }
}

/// `text` in a fenced block whose fence is longer than any run of backticks in it.
fn code_block(out: &mut String, language: &str, text: &str) {
    let longest = text.split(|c| c != '`').map(str::len).max().unwrap_or(0);
    let fence = "`".repeat(longest.max(2) + 1);
    out.push_str(&format!(
        "{fence}{language}\n{}\n{fence}\n\n",
        text.trim_end()
    ));
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::protocol::message::UserMessage;

    #[test]
    fn a_code_block_cannot_be_closed_by_its_content() {
        let mut out = String::new();
        code_block(&mut out, "", "a ```` b");
        assert!(out.starts_with("`````\n"), "{out}");
        assert!(out.ends_with("\n`````\n\n"), "{out}");
    }

    #[test]
    fn the_heading_names_the_session() {
        let items = [Item::Message(Message::User(UserMessage::text("hello")))];
        let text = render(
            &Heading {
                id: "abc",
                title: Some("Fix the build"),
                cwd: "/w",
                created: Some(0),
            },
            &items,
        );
        assert!(text.starts_with("# Fix the build\n"), "{text}");
        assert!(text.contains("## User\n\nhello\n"), "{text}");
        assert!(text.contains("1970-01-01"), "{text}");
    }
}
