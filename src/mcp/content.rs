//! An MCP tool result as our content blocks: text stays text, images stay images (also an
//! embedded image resource), a text resource becomes text headed by its URI, a resource link
//! or other binary content becomes a line that says what it is; `structuredContent` becomes
//! JSON text when the result has no text of its own; `isError` is kept. Text longer than a
//! model should read is cut like bash output (2000 lines / 50 KB), the whole saved to a file
//! named in the result.

use crate::protocol::message::Content;
use crate::tools::ToolOutput;
use crate::tools::spill::SpillDir;
use crate::tools::truncate::{MAX_BYTES, MAX_LINES, count_lines};
use rmcp::model::{CallToolResult, ContentBlock, ResourceContents};
use serde_json::json;

/// The result of an MCP call as the model and front ends see it.
pub fn to_output(result: CallToolResult, spill: &SpillDir) -> ToolOutput {
    let mut content: Vec<Content> = Vec::with_capacity(result.content.len());
    for block in result.content {
        content.push(block_to_content(block));
    }
    let has_text = content.iter().any(|c| matches!(c, Content::Text { .. }));
    if !has_text && let Some(structured) = &result.structured_content {
        let text =
            serde_json::to_string_pretty(structured).unwrap_or_else(|_| structured.to_string());
        content.push(Content::text(text));
    }
    if content.is_empty() {
        content.push(Content::text("(no output)"));
    }
    let is_error = result.is_error.unwrap_or(false);
    let (content, full_output) = limit(content, spill);
    let details = full_output.map(|path| json!({"fullOutputPath": path}));
    ToolOutput {
        content,
        details,
        is_error,
    }
}

fn block_to_content(block: ContentBlock) -> Content {
    match block {
        ContentBlock::Text(text) => Content::text(text.text),
        ContentBlock::Image(image) => Content::Image {
            data: image.data,
            mime_type: image.mime_type,
        },
        ContentBlock::Audio(audio) => Content::text(format!(
            "[audio ({}, {} bytes of base64) — not shown]",
            audio.mime_type,
            audio.data.len()
        )),
        ContentBlock::Resource(embedded) => match embedded.resource {
            ResourceContents::TextResourceContents { uri, text, .. } => {
                Content::text(format!("[resource {uri}]\n{text}"))
            }
            ResourceContents::BlobResourceContents {
                uri,
                mime_type,
                blob,
                ..
            } => match mime_type {
                Some(mime) if mime.starts_with("image/") => Content::Image {
                    data: blob,
                    mime_type: mime,
                },
                mime => Content::text(format!(
                    "[binary resource {uri} ({}, {} bytes of base64) — not shown]",
                    mime.as_deref().unwrap_or("unknown type"),
                    blob.len()
                )),
            },
            other => Content::text(format!(
                "[resource of a kind this agent does not know: {}]",
                json!(other)
            )),
        },
        ContentBlock::ResourceLink(link) => {
            let mut text = format!("[resource link: {} <{}>", link.name, link.uri);
            if let Some(mime) = &link.mime_type {
                text.push_str(&format!(" ({mime})"));
            }
            if let Some(description) = link.description.as_deref().filter(|d| !d.is_empty()) {
                text.push_str(&format!(": {description}"));
            }
            text.push(']');
            Content::text(text)
        }
        other => Content::text(format!(
            "[content of a kind this agent does not know: {}]",
            crate::tools::truncate::clip(&json!(other).to_string(), 2000)
        )),
    }
}

/// Keep the text within what the model should read: when all text together is longer, the
/// text blocks are joined, the beginning kept, and the whole saved to a file.
fn limit(content: Vec<Content>, spill: &SpillDir) -> (Vec<Content>, Option<String>) {
    let texts: Vec<&str> = content
        .iter()
        .filter_map(|c| match c {
            Content::Text { text } => Some(text.as_str()),
            Content::Image { .. } => None,
        })
        .collect();
    let total_bytes: usize = texts.iter().map(|t| t.len()).sum();
    let total_lines: usize = texts.iter().map(|t| count_lines(t)).sum();
    if total_bytes <= MAX_BYTES && total_lines <= MAX_LINES {
        return (content, None);
    }
    let whole = texts.join("\n");
    let saved = save_whole(whole.as_bytes(), spill);
    let (head, kept_lines) = head(&whole, MAX_LINES, MAX_BYTES);
    let mut text = head.to_string();
    text.push_str(&format!(
        "\n\n[Output truncated: showing the first {kept_lines} lines of {} bytes.",
        whole.len()
    ));
    match &saved {
        Some(path) => text.push_str(&format!(" Full output: {path}]")),
        None => text.push(']'),
    }
    let mut limited = vec![Content::text(text)];
    limited.extend(
        content
            .into_iter()
            .filter(|c| matches!(c, Content::Image { .. })),
    );
    (limited, saved)
}

/// Save a result too long to show in a file of its own (in the session's directory), as
/// bash does with long output; `None` (and a log line) when that fails — the cut result
/// still goes to the model.
fn save_whole(bytes: &[u8], spill: &SpillDir) -> Option<String> {
    use std::io::Write;
    let saved = spill.create("mcp-", ".txt").and_then(|(mut file, path)| {
        file.write_all(bytes)?;
        Ok(path)
    });
    match saved {
        Ok(path) => Some(path.display().to_string()),
        Err(error) => {
            tracing::warn!(%error, "could not save a long MCP result");
            None
        }
    }
}

/// The first `max_lines` lines / `max_bytes` bytes of `text`, cut on a character boundary,
/// and how many lines that is.
fn head(text: &str, max_lines: usize, max_bytes: usize) -> (&str, usize) {
    let mut end = 0;
    let mut lines = 0;
    for line in text.split_inclusive('\n') {
        if lines == max_lines || end + line.len() > max_bytes {
            break;
        }
        end += line.len();
        lines += 1;
    }
    if lines == 0 {
        // One line longer than the budget: keep its beginning.
        return (crate::tools::truncate::clip(text, max_bytes), 1);
    }
    (&text[..end], lines)
}

#[cfg(test)]
mod tests {
    use super::*;
    use rmcp::model::{EmbeddedResource, Resource};

    #[test]
    fn maps_every_kind_of_content() {
        let mut result = CallToolResult::success(vec![
            ContentBlock::text("hello"),
            ContentBlock::image("iVBORw0KGgo=", "image/png"),
            ContentBlock::Resource(EmbeddedResource::new(ResourceContents::text(
                "file body",
                "file:///a.txt",
            ))),
            ContentBlock::Resource(EmbeddedResource::new(
                ResourceContents::blob("AAAA", "file:///b.png").with_mime_type("image/png"),
            )),
            ContentBlock::ResourceLink(Resource::new("file:///c", "c")),
        ]);
        result.structured_content = Some(json!({"ignored": "there is text"}));
        let output = to_output(result, &SpillDir::default());
        assert!(!output.is_error);
        assert_eq!(
            output.content,
            vec![
                Content::text("hello"),
                Content::Image {
                    data: "iVBORw0KGgo=".into(),
                    mime_type: "image/png".into()
                },
                Content::text("[resource file:///a.txt]\nfile body"),
                Content::Image {
                    data: "AAAA".into(),
                    mime_type: "image/png".into()
                },
                Content::text("[resource link: c <file:///c>]"),
            ]
        );
    }

    #[test]
    fn structured_content_is_shown_when_there_is_no_text_and_errors_stay_errors() {
        let mut result = CallToolResult::error(vec![]);
        result.structured_content = Some(json!({"sum": 3}));
        let output = to_output(result, &SpillDir::default());
        assert!(output.is_error);
        assert_eq!(output.content, vec![Content::text("{\n  \"sum\": 3\n}")]);
        let empty = to_output(CallToolResult::success(vec![]), &SpillDir::default());
        assert_eq!(empty.content, vec![Content::text("(no output)")]);
    }

    #[test]
    fn long_text_is_cut_and_saved_whole() {
        let long: String = (0..3000).map(|i| format!("line {i}\n")).collect();
        let spill = SpillDir::default();
        let output = to_output(
            CallToolResult::success(vec![ContentBlock::text(long.clone())]),
            &spill,
        );
        let Content::Text { text } = &output.content[0] else {
            panic!("{:?}", output.content)
        };
        assert!(text.starts_with("line 0\n"));
        assert!(
            text.contains("[Output truncated: showing the first 2000 lines"),
            "{text}"
        );
        let path = output.details.unwrap()["fullOutputPath"]
            .as_str()
            .unwrap()
            .to_string();
        assert_eq!(std::fs::read_to_string(&path).unwrap(), long);
        assert!(path.starts_with(spill.made().unwrap().to_string_lossy().as_ref()));
        drop(spill);
        assert!(
            !std::path::Path::new(&path).exists(),
            "kept no longer than the conversation"
        );
        assert_eq!(head("ab\ncd\n", 1, 100), ("ab\n", 1));
        assert_eq!(head("héllo", 10, 2), ("h", 1));
    }
}
