//! A session rendered as one self-contained HTML page: inline styles, no scripts, no remote
//! resources. Everything from the conversation is escaped; assistant text is rendered as
//! Markdown with raw HTML shown as text and only web and mail links kept.

use crate::protocol::message::{AssistantContent, Content, Message};
use pulldown_cmark::{CowStr, Event, Options, Parser, Tag, TagEnd};
use pulldown_cmark_escape::escape_html;
use std::time::{Duration, UNIX_EPOCH};

/// What the page shows, in order.
pub enum Item {
    Message(Message),
    ModelChange {
        provider: String,
        model: String,
    },
    ThinkingChange(String),
    Compaction {
        summary: String,
        tokens_before: u64,
        tokens_after: u64,
    },
}

/// Facts for the page's heading.
pub struct Heading<'a> {
    pub id: &'a str,
    pub cwd: &'a str,
    pub file: Option<&'a str>,
    pub exported_at: std::time::SystemTime,
}

pub fn render(heading: &Heading<'_>, items: &[Item]) -> String {
    let mut page = String::with_capacity(16 * 1024);
    page.push_str("<!doctype html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n");
    page.push_str("<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n");
    page.push_str("<title>Session ");
    text(&mut page, heading.id);
    page.push_str("</title>\n<style>");
    page.push_str(STYLE);
    page.push_str("</style>\n</head>\n<body>\n<header>\n<h1>Session ");
    text(&mut page, heading.id);
    page.push_str("</h1>\n<dl>");
    field(&mut page, "Directory", heading.cwd);
    if let Some(file) = heading.file {
        field(&mut page, "File", file);
    }
    field(
        &mut page,
        "Exported",
        &httpdate::fmt_http_date(heading.exported_at),
    );
    page.push_str("</dl>\n</header>\n<main>\n");
    for item in items {
        match item {
            Item::Message(message) => render_message(&mut page, message),
            Item::ModelChange { provider, model } => {
                note(&mut page, &format!("Model: {provider}/{model}"));
            }
            Item::ThinkingChange(level) => note(&mut page, &format!("Thinking: {level}")),
            Item::Compaction {
                summary,
                tokens_before,
                tokens_after,
            } => {
                page.push_str("<section class=\"compaction\"><details><summary>");
                text(
                    &mut page,
                    &format!(
                        "The conversation above was compacted ({tokens_before} → {tokens_after} tokens); the model saw this summary instead"
                    ),
                );
                page.push_str("</summary>");
                markdown(&mut page, summary);
                page.push_str("</details></section>\n");
            }
        }
    }
    page.push_str("</main>\n</body>\n</html>\n");
    page
}

fn render_message(page: &mut String, message: &Message) {
    match message {
        Message::User(user) => {
            page.push_str("<section class=\"user\"><div class=\"role\">You");
            when(page, user.timestamp);
            page.push_str("</div>");
            contents(page, &user.content);
            page.push_str("</section>\n");
        }
        Message::Assistant(assistant) => {
            page.push_str("<section class=\"assistant\"><div class=\"role\">");
            text(
                page,
                &format!("Assistant · {}/{}", assistant.provider, assistant.model),
            );
            when(page, assistant.timestamp);
            page.push_str("</div>");
            for block in &assistant.content {
                match block {
                    AssistantContent::Text { text: body } => markdown(page, body),
                    AssistantContent::Thinking {
                        thinking, redacted, ..
                    } => {
                        page.push_str("<details class=\"thinking\"><summary>Thinking</summary>");
                        if *redacted {
                            preformatted(page, "(redacted by the provider)");
                        } else {
                            preformatted(page, thinking);
                        }
                        page.push_str("</details>");
                    }
                    AssistantContent::WebSearch(search) => {
                        page.push_str("<div class=\"call\"><span class=\"tool\">");
                        text(page, &search.summary());
                        page.push_str("</span>");
                        let urls: Vec<&str> =
                            search.results.iter().map(|r| r.url.as_str()).collect();
                        if !urls.is_empty() {
                            preformatted(page, &urls.join("\n"));
                        }
                        page.push_str("</div>");
                    }
                    AssistantContent::ToolCall(call) => {
                        page.push_str("<div class=\"call\"><span class=\"tool\">");
                        text(page, &call.name);
                        page.push_str("</span>");
                        let arguments = match &call.invalid_arguments {
                            Some(raw) => raw.clone(),
                            None => {
                                serde_json::to_string_pretty(&call.arguments).unwrap_or_default()
                            }
                        };
                        preformatted(page, &arguments);
                        page.push_str("</div>");
                    }
                }
            }
            if let Some(error) = &assistant.error_message {
                page.push_str("<p class=\"error\">");
                text(page, error);
                page.push_str("</p>");
            }
            page.push_str("</section>\n");
        }
        Message::ToolResult(result) => {
            let class = if result.is_error {
                "result failed"
            } else {
                "result"
            };
            page.push_str("<section class=\"");
            page.push_str(class);
            page.push_str("\"><details><summary>");
            let outcome = if result.is_error { " (error)" } else { "" };
            text(page, &format!("{} result{outcome}", result.tool_name));
            page.push_str("</summary>");
            contents(page, &result.content);
            page.push_str("</details></section>\n");
        }
    }
}

fn contents(page: &mut String, content: &[Content]) {
    for block in content {
        match block {
            Content::Text { text: body } => preformatted(page, body),
            Content::Image { data, mime_type } => image(page, data, mime_type),
        }
    }
}

/// An inline image, when its type and data are what they claim to be; a note otherwise.
fn image(page: &mut String, data: &str, mime_type: &str) {
    let type_ok = mime_type.strip_prefix("image/").is_some_and(|subtype| {
        !subtype.is_empty()
            && subtype
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || b"+-.".contains(&b))
    });
    let data_ok = data
        .bytes()
        .all(|b| b.is_ascii_alphanumeric() || b"+/=".contains(&b));
    if type_ok && data_ok {
        page.push_str("<img alt=\"image\" src=\"data:");
        page.push_str(mime_type);
        page.push_str(";base64,");
        page.push_str(data);
        page.push_str("\">");
    } else {
        page.push_str("<p class=\"note\">(an image that could not be shown)</p>");
    }
}

fn field(page: &mut String, name: &str, value: &str) {
    page.push_str("<dt>");
    text(page, name);
    page.push_str("</dt><dd>");
    text(page, value);
    page.push_str("</dd>");
}

fn note(page: &mut String, line: &str) {
    page.push_str("<p class=\"note\">");
    text(page, line);
    page.push_str("</p>\n");
}

fn when(page: &mut String, millis: i64) {
    let Ok(millis) = u64::try_from(millis) else {
        return;
    };
    let Some(at) = UNIX_EPOCH.checked_add(Duration::from_millis(millis)) else {
        return;
    };
    page.push_str(" <time>");
    text(page, &httpdate::fmt_http_date(at));
    page.push_str("</time>");
}

fn preformatted(page: &mut String, body: &str) {
    page.push_str("<pre>");
    text(page, body);
    page.push_str("</pre>");
}

fn text(page: &mut String, body: &str) {
    // Writing into a String cannot fail.
    let _ = escape_html(&mut *page, body);
}

/// Markdown as HTML, made safe: raw HTML becomes text, images become links (nothing is
/// fetched when the page opens), and a link keeps its target only for http(s) and mailto.
fn markdown(page: &mut String, body: &str) {
    let options =
        Options::ENABLE_TABLES | Options::ENABLE_STRIKETHROUGH | Options::ENABLE_TASKLISTS;
    let events = Parser::new_ext(body, options).map(|event| match event {
        Event::Html(raw) | Event::InlineHtml(raw) => Event::Text(raw),
        Event::Start(Tag::Link {
            link_type,
            dest_url,
            title,
            id,
        })
        | Event::Start(Tag::Image {
            link_type,
            dest_url,
            title,
            id,
        }) => Event::Start(Tag::Link {
            link_type,
            dest_url: safe_url(dest_url),
            title,
            id,
        }),
        Event::End(TagEnd::Image) => Event::End(TagEnd::Link),
        other => other,
    });
    page.push_str("<div class=\"text\">");
    pulldown_cmark::html::push_html(page, events);
    page.push_str("</div>");
}

fn safe_url(url: CowStr<'_>) -> CowStr<'_> {
    let lower = url.trim_start().to_ascii_lowercase();
    let scheme = lower
        .split_once(':')
        .map(|(scheme, _)| scheme)
        .filter(|scheme| !scheme.contains(['/', '?', '#']));
    match scheme {
        None | Some("http" | "https" | "mailto") => url,
        Some(_) => CowStr::Borrowed("#"),
    }
}

const STYLE: &str = "
:root { color-scheme: light dark; --fg: #1d1f21; --bg: #fafafa; --dim: #6a6f75;
  --user: #e8f0fe; --card: #ffffff; --line: #d7dbe0; --bad: #b3261e; }
@media (prefers-color-scheme: dark) { :root { --fg: #e3e5e8; --bg: #16181b; --dim: #9aa0a6;
  --user: #1f2a3a; --card: #1e2125; --line: #33373d; --bad: #f2b8b5; } }
body { margin: 0 auto; max-width: 52rem; padding: 1.5rem; background: var(--bg);
  color: var(--fg); font: 15px/1.55 system-ui, sans-serif; }
header h1 { font-size: 1.3rem; margin: 0 0 .5rem; word-break: break-all; }
dl { display: grid; grid-template-columns: max-content 1fr; gap: .1rem 1rem; color: var(--dim);
  margin: 0 0 1.5rem; } dd { margin: 0; word-break: break-all; }
section { background: var(--card); border: 1px solid var(--line); border-radius: 8px;
  padding: .6rem .9rem; margin: .7rem 0; }
section.user { background: var(--user); }
.role { color: var(--dim); font-size: .85rem; margin-bottom: .3rem; }
time { margin-left: .4rem; }
pre { white-space: pre-wrap; word-break: break-word; margin: .3rem 0;
  font: 13px/1.45 ui-monospace, SFMono-Regular, Menlo, monospace; }
.text pre { background: var(--bg); padding: .5rem; border-radius: 6px; }
.call { border-left: 3px solid var(--line); padding-left: .6rem; margin: .4rem 0; }
.tool { font-family: ui-monospace, monospace; font-weight: 600; }
.result summary, .thinking summary, .compaction summary { cursor: pointer; color: var(--dim); }
.failed summary, .error { color: var(--bad); }
.note { color: var(--dim); font-size: .85rem; text-align: center; margin: .4rem 0; }
img { max-width: 100%; }
table { border-collapse: collapse; } td, th { border: 1px solid var(--line); padding: .2rem .5rem; }
";

#[cfg(test)]
mod tests {
    use super::*;
    use crate::protocol::message::{AssistantMessage, ToolCall, ToolResultMessage, UserMessage};
    use serde_json::json;

    fn page(items: &[Item]) -> String {
        let heading = Heading {
            id: "s1",
            cwd: "/work/<repo>",
            file: None,
            exported_at: UNIX_EPOCH,
        };
        render(&heading, items)
    }

    #[test]
    fn everything_from_the_conversation_is_escaped() {
        let mut assistant = AssistantMessage::empty("p", "m");
        assistant.content = vec![
            AssistantContent::Text {
                text: "# Title\n<script>alert(1)</script> and <b>bold</b>\n\n[x](javascript:alert(1)) [ok](https://example.com) ![pic](https://example.com/a.png)".into(),
            },
            AssistantContent::ToolCall(ToolCall {
                id: "c".into(),
                name: "bash".into(),
                arguments: json!({"command": "echo '<hi>'"}),
                invalid_arguments: None,
            }),
        ];
        let html = page(&[
            Item::Message(Message::User(UserMessage::text("</pre><script>x</script>"))),
            Item::Message(Message::Assistant(assistant)),
        ]);
        assert!(!html.contains("<script"), "{html}");
        assert!(!html.contains("<b>"), "{html}");
        assert!(!html.contains("javascript:"), "{html}");
        assert!(html.contains("&lt;script&gt;x&lt;/script&gt;"), "{html}");
        assert!(html.contains("<h1>Title</h1>"), "{html}");
        assert!(
            html.contains("<a href=\"https://example.com\">ok</a>"),
            "{html}"
        );
        assert!(!html.contains("<img"), "no remote image is fetched: {html}");
        assert!(html.contains("echo &#39;&lt;hi&gt;&#39;"), "{html}");
        assert!(html.contains("/work/&lt;repo&gt;"), "{html}");
    }

    #[test]
    fn images_are_inlined_only_when_they_are_images() {
        let result = |data: &str, mime: &str| {
            Item::Message(Message::ToolResult(ToolResultMessage {
                tool_call_id: "c".into(),
                tool_name: "read".into(),
                content: vec![Content::Image {
                    data: data.into(),
                    mime_type: mime.into(),
                }],
                details: None,
                is_error: false,
                timestamp: 0,
            }))
        };
        let html = page(&[result("iVBORw0KGgo=", "image/png")]);
        assert!(
            html.contains("src=\"data:image/png;base64,iVBORw0KGgo=\""),
            "{html}"
        );
        let html = page(&[
            result("AA\"onerror=x", "image/png"),
            result("AA==", "text/html"),
        ]);
        assert!(!html.contains("<img"), "{html}");
        assert_eq!(html.matches("could not be shown").count(), 2);
    }
}
