//! Transcript cells: how each finished piece of the conversation looks once it goes into the
//! terminal's scrollback — the user's message, the assistant's text and thinking, a tool call
//! with a summary of its result (edits as coloured diffs), and notices. Every function
//! returns rows already wrapped to the width.

use super::markdown;
use super::theme::Theme;
use super::wrap::{wrap_line, wrap_text};
use crate::protocol::message::{AssistantContent, Content, Message, ToolCall, join_text};
use crate::tools::meta::{OutputKind, output_kind};
use ratatui::text::{Line, Span};
use serde_json::Value;

/// Rows of a tool result shown under its call, at most.
const RESULT_ROWS: usize = 6;
/// Rows of a diff shown, at most.
const DIFF_ROWS: usize = 40;

pub fn blank() -> Line<'static> {
    Line::default()
}

pub fn user(text: &str, width: u16, theme: &Theme) -> Vec<Line<'static>> {
    let mut rows = vec![blank()];
    rows.extend(wrap_text(
        text.trim_end(),
        theme.user(),
        width,
        &[Span::styled("› ", theme.user())],
        &[Span::raw("  ")],
    ));
    rows
}

/// A user message shown again (a resumed session, `agent attach`): a long one (a paste) is
/// collapsed to its start and a dim row saying how much more there is, as the composer
/// showed it as a chip (`long_message`); the transcript view (ctrl+o) shows it whole.
fn replayed_user(text: &str, width: u16, theme: &Theme) -> Vec<Line<'static>> {
    match super::long_message::collapse(text) {
        Some(collapsed) => {
            let mut rows = user(&collapsed.head, width, theme);
            rows.extend(wrap_text(
                &collapsed.rest,
                theme.dim(),
                width,
                &[Span::raw("  ")],
                &[Span::raw("  ")],
            ));
            rows
        }
        None => user(text, width, theme),
    }
}

/// The assistant's text rendered as markdown, with a marker on the first row.
pub fn assistant_text(text: &str, width: u16, theme: &Theme) -> Vec<Line<'static>> {
    let mut rows = vec![blank()];
    rows.extend(
        markdown::render(text, width.saturating_sub(2), theme)
            .into_iter()
            .map(indent),
    );
    mark_first(&mut rows, theme);
    rows
}

/// Put the assistant's bullet on the first text row of a block.
pub fn mark_first(rows: &mut [Line<'static>], theme: &Theme) {
    if let Some(row) = rows.iter_mut().find(|r| r.width() > 0)
        && let Some(first) = row.spans.first_mut()
        && first.content == "  "
    {
        *first = Span::styled("● ", theme.accent());
    }
}

/// Two columns of indent in front of a rendered row.
pub fn indent(line: Line<'static>) -> Line<'static> {
    let mut spans = vec![Span::raw("  ")];
    spans.extend(line.spans);
    Line::from(spans).style(line.style)
}

/// Thinking: one dim line when collapsed, the whole text when expanded.
pub fn thinking(text: &str, expanded: bool, width: u16, theme: &Theme) -> Vec<Line<'static>> {
    let mut rows = vec![blank()];
    if expanded {
        rows.extend(wrap_text(
            text.trim(),
            theme.thinking(),
            width,
            &[Span::styled("✻ ", theme.thinking())],
            &[Span::raw("  ")],
        ));
    } else {
        let words = text.split_whitespace().count();
        rows.push(Line::from(vec![
            Span::styled("✻ ", theme.thinking()),
            Span::styled(
                format!(
                    "Thought ({}) · ctrl+t shows thinking",
                    counted(words, "word")
                ),
                theme.thinking(),
            ),
        ]));
    }
    rows
}

pub fn notice(text: &str, width: u16, theme: &Theme) -> Vec<Line<'static>> {
    let mut rows = vec![blank()];
    rows.extend(wrap_text(
        text,
        theme.dim(),
        width,
        &[Span::styled("· ", theme.dim())],
        &[Span::raw("  ")],
    ));
    rows
}

pub fn warning(text: &str, width: u16, theme: &Theme) -> Vec<Line<'static>> {
    let mut rows = vec![blank()];
    rows.extend(wrap_text(
        text,
        theme.warning(),
        width,
        &[Span::styled("⚠ ", theme.warning())],
        &[Span::raw("  ")],
    ));
    rows
}

/// A model's refusal: its answer, shown as a refusal rather than as a failure.
pub fn refusal(text: &str, width: u16, theme: &Theme) -> Vec<Line<'static>> {
    warning(&format!("The model refused: {text}"), width, theme)
}

pub fn error(text: &str, width: u16, theme: &Theme) -> Vec<Line<'static>> {
    let mut rows = vec![blank()];
    rows.extend(wrap_text(
        text,
        theme.error(),
        width,
        &[Span::styled("✗ ", theme.error())],
        &[Span::raw("  ")],
    ));
    rows
}

/// A one-line description of a call's arguments: the command, the path, the pattern, a
/// sub-agent's task (a `!command` is described as the bash tool's call).
pub fn summarize_args(name: &str, args: &Value) -> String {
    crate::agent::call_summary::summarize_call(tool_of(name), args)
}

/// The tool a cell's name stands for: `!` (the user's own command) is bash.
fn tool_of(name: &str) -> &str {
    if name == "!" { "bash" } else { name }
}

/// The whole command line of a call to a tool that runs one (bash, a `!` command).
pub fn full_command<'a>(name: &str, args: &'a Value) -> Option<&'a str> {
    crate::tools::meta::command_of_call(tool_of(name), args)
}

/// The header row of a tool call: marker, name, argument summary (cut to the width). A
/// command of several lines says how many more there are (the transcript view shows them).
pub fn tool_header(
    name: &str,
    args: &Value,
    marker: Span<'static>,
    width: u16,
    theme: &Theme,
) -> Line<'static> {
    let summary = summarize_args(name, args);
    let more = full_command(name, args)
        .map(|command| command.trim_end().lines().count().saturating_sub(1))
        .filter(|more| *more > 0)
        .map(|more| format!(" (+{})", counted(more, "line")))
        .unwrap_or_default();
    let room = usize::from(width)
        .saturating_sub(super::width::str_width(name) + 4 + super::width::str_width(&more));
    let summary = cut(&summary, room);
    Line::from(vec![
        marker,
        Span::styled(name.to_string(), theme.bold()),
        Span::raw(" "),
        Span::styled(summary, theme.dim()),
        Span::styled(more, theme.dim()),
    ])
}

/// `text` cut to `max` columns with an ellipsis.
pub fn cut(text: &str, max: usize) -> String {
    super::width::cut(text, max)
}

/// A finished tool call: its header and what came of it.
pub fn tool(
    name: &str,
    args: &Value,
    content: &[Content],
    details: Option<&Value>,
    is_error: bool,
    width: u16,
    theme: &Theme,
) -> Vec<Line<'static>> {
    let marker_style = if is_error {
        theme.error()
    } else {
        theme.success()
    };
    let mut rows = vec![
        blank(),
        tool_header(name, args, Span::styled("● ", marker_style), width, theme),
    ];
    let text = join_text(content);
    let body_first = [Span::styled("  ⎿ ", theme.dim())];
    let body_rest = [Span::raw("    ")];
    if let Some(diff) = details
        .and_then(|d| d.get("diff"))
        .and_then(Value::as_str)
        .filter(|_| !is_error)
    {
        rows.extend(diff_rows(diff, width, Some(DIFF_ROWS), theme));
        rows.extend(super::lsp_view::cell_row(details, theme));
        return rows;
    }
    let summary = result_summary(name, &text, details, is_error);
    let style = if is_error { theme.error() } else { theme.dim() };
    let more = |hidden: usize| {
        Line::from(vec![
            Span::raw("    "),
            Span::styled(
                format!("… {hidden} more line{}", if hidden == 1 { "" } else { "s" }),
                theme.dim(),
            ),
        ])
    };
    if summary.hidden > 0 && summary.from_end {
        rows.push(Line::from(vec![
            Span::styled("  ⎿ ", theme.dim()),
            Span::styled(
                format!(
                    "… {} earlier line{}",
                    summary.hidden,
                    if summary.hidden == 1 { "" } else { "s" }
                ),
                theme.dim(),
            ),
        ]));
    }
    for (i, line) in summary.lines.iter().enumerate() {
        let first_row = i == 0 && !(summary.hidden > 0 && summary.from_end);
        let prefix: &[Span<'static>] = if first_row { &body_first } else { &body_rest };
        // Without colours (NO_COLOR), a command's own colours go too.
        let styled = if theme.color {
            super::ansi::lines(line, style)
        } else {
            super::ansi::lines(&super::ansi::strip(line), style)
        };
        for styled in styled {
            // At most two rows per line: one minified line must not flood the scrollback.
            rows.extend(at_most_two_rows(wrap_line(
                &styled, width, prefix, &body_rest,
            )));
        }
    }
    if summary.hidden > 0 && !summary.from_end {
        rows.push(more(summary.hidden));
    }
    rows.extend(super::lsp_view::cell_row(details, theme));
    rows
}

/// The first two of `rows`, the second ending in "…" when there were more.
fn at_most_two_rows(mut rows: Vec<Line<'static>>) -> Vec<Line<'static>> {
    if rows.len() > 2 {
        rows.truncate(2);
        if let Some(last) = rows.last_mut()
            && let Some(span) = last.spans.last_mut()
        {
            let mut text = span.content.to_string();
            text.pop();
            text.push('…');
            span.content = text.into();
        }
    }
    rows
}

struct Summary {
    lines: Vec<String>,
    hidden: usize,
    /// The lines shown are the last ones (command output), not the first.
    from_end: bool,
}

fn result_summary(name: &str, text: &str, details: Option<&Value>, is_error: bool) -> Summary {
    let mut all: Vec<&str> = text.lines().collect();
    let kind = output_kind(tool_of(name));
    if !is_error && kind == OutputKind::FileContents {
        // Sessions written before `shownLines` existed: count the text's lines.
        let count = details
            .and_then(|d| d.get("shownLines"))
            .and_then(Value::as_u64)
            .and_then(|n| usize::try_from(n).ok())
            .unwrap_or(all.len());
        return Summary {
            lines: vec![format!(
                "Read {count} line{}",
                if count == 1 { "" } else { "s" }
            )],
            hidden: 0,
            from_end: false,
        };
    }
    let command = kind == OutputKind::CommandOutput;
    if command && !is_error && all.last() == Some(&"[exit code 0]") {
        all.pop();
        while all.last().is_some_and(|l| l.trim().is_empty()) {
            all.pop();
        }
    }
    if all.is_empty() {
        return Summary {
            lines: vec!["(no output)".to_string()],
            hidden: 0,
            from_end: false,
        };
    }
    // Commands: their end matters most; everything else: the beginning.
    let shown: Vec<String> = if command {
        all.iter()
            .rev()
            .take(RESULT_ROWS)
            .rev()
            .map(|s| s.to_string())
            .collect()
    } else {
        all.iter()
            .take(RESULT_ROWS)
            .map(|s| s.to_string())
            .collect()
    };
    Summary {
        hidden: all.len() - shown.len(),
        lines: shown,
        from_end: command,
    }
}

/// `n` and the noun, singular for one: "1 line", "2 lines".
pub fn counted(n: usize, noun: &str) -> String {
    if n == 1 {
        format!("1 {noun}")
    } else {
        format!("{n} {noun}s")
    }
}

/// A unified diff in colour: additions green, removals red, hunk headers dim; at most
/// `limit` lines of it (then a count of the rest).
pub fn diff_rows(
    diff: &str,
    width: u16,
    limit: Option<usize>,
    theme: &Theme,
) -> Vec<Line<'static>> {
    let mut rows = Vec::new();
    let lines: Vec<&str> = diff
        .lines()
        .filter(|l| !l.starts_with("--- ") && !l.starts_with("+++ "))
        .collect();
    let limit = limit.unwrap_or(usize::MAX);
    for line in lines.iter().take(limit) {
        let style = if line.starts_with('+') {
            theme.diff_added()
        } else if line.starts_with('-') {
            theme.diff_removed()
        } else if line.starts_with("@@") {
            theme.diff_hunk()
        } else {
            theme.dim()
        };
        rows.extend(wrap_line(
            &Line::from(Span::styled(super::wrap::visible(line).into_owned(), style)),
            width,
            &[Span::raw("    ")],
            &[Span::raw("    ")],
        ));
    }
    if lines.len() > limit {
        rows.push(Line::from(Span::styled(
            {
                let more = lines.len() - limit;
                format!(
                    "    … {more} more diff line{}",
                    if more == 1 { "" } else { "s" }
                )
            },
            theme.dim(),
        )));
    }
    rows
}

/// A whole message, for replaying a resumed session. Tool results are shown with their
/// call, so a result message is looked up by the caller and passed in `results`.
pub fn message(
    message: &Message,
    results: &[&Message],
    show_thinking: bool,
    width: u16,
    theme: &Theme,
) -> Vec<Line<'static>> {
    match message {
        Message::User(user_message) => replayed_user(user_message.typed_text(), width, theme),
        Message::ToolResult(_) => Vec::new(),
        Message::Assistant(assistant) => {
            let mut rows = Vec::new();
            for block in &assistant.content {
                match block {
                    AssistantContent::Text { text } if !text.trim().is_empty() => {
                        rows.extend(assistant_text(text, width, theme))
                    }
                    AssistantContent::Thinking {
                        thinking: text,
                        redacted: false,
                        ..
                    } if !text.trim().is_empty() => {
                        rows.extend(thinking(text, show_thinking, width, theme))
                    }
                    AssistantContent::ToolCall(call) => {
                        rows.extend(replayed_call(call, results, width, theme))
                    }
                    AssistantContent::WebSearch(search) => {
                        rows.extend(notice(&search.summary(), width, theme))
                    }
                    _ => {}
                }
            }
            if let Some(text) = &assistant.refusal {
                rows.extend(refusal(text, width, theme));
            }
            if let Some(error) = &assistant.error_message {
                rows.extend(error_cell_for_stop(
                    error,
                    assistant.stop_reason,
                    width,
                    theme,
                ));
            }
            rows
        }
    }
}

fn replayed_call(
    call: &ToolCall,
    results: &[&Message],
    width: u16,
    theme: &Theme,
) -> Vec<Line<'static>> {
    let result = results.iter().find_map(|m| match m {
        Message::ToolResult(r) if r.tool_call_id == call.id => Some(r),
        _ => None,
    });
    match result {
        Some(r) => tool(
            &call.name,
            &call.arguments,
            &r.content,
            r.details.as_ref(),
            r.is_error,
            width,
            theme,
        ),
        None => vec![
            blank(),
            tool_header(
                &call.name,
                &call.arguments,
                Span::styled("● ", theme.dim()),
                width,
                theme,
            ),
        ],
    }
}

/// How a response that ended badly is shown.
pub fn error_cell_for_stop(
    message: &str,
    stop: crate::protocol::message::StopReason,
    width: u16,
    theme: &Theme,
) -> Vec<Line<'static>> {
    match stop {
        crate::protocol::message::StopReason::Aborted => notice("Interrupted.", width, theme),
        _ => error(message, width, theme),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn texts(rows: &[Line<'_>]) -> Vec<String> {
        rows.iter()
            .map(|l| l.spans.iter().map(|s| s.content.as_ref()).collect())
            .collect()
    }

    #[test]
    fn tool_cells_summarise_their_result() {
        let theme = Theme::plain();
        let output =
            (1..=20).map(|i| format!("line {i}\n")).collect::<String>() + "\n[exit code 0]";
        let rows = tool(
            "bash",
            &json!({"command": "seq 20"}),
            &[Content::text(output)],
            None,
            false,
            40,
            &theme,
        );
        let t = texts(&rows);
        assert_eq!(t[1], "● bash seq 20");
        assert_eq!(t[2], "  ⎿ … 14 earlier lines");
        assert_eq!(t[3], "    line 15");
        assert_eq!(t.last().unwrap(), "    line 20");
        let failed = [Content::text("(no output)\n\n[exit code 1]")];
        let rows = tool(
            "bash",
            &json!({"command": "false"}),
            &failed,
            None,
            true,
            40,
            &theme,
        );
        assert_eq!(texts(&rows).last().unwrap(), "    [exit code 1]");
        let rows = tool(
            "read",
            &json!({"path": "a.rs"}),
            &[Content::text("x\ny\n")],
            None,
            false,
            40,
            &theme,
        );
        assert_eq!(texts(&rows)[2], "  ⎿ Read 2 lines");
        let rows = tool(
            "edit",
            &json!({"path": "a.rs", "edits": [{}]}),
            &[Content::text("ok")],
            Some(&json!({"diff": "--- a\n+++ b\n@@ -1 +1 @@\n-old\n+new\n"})),
            false,
            40,
            &theme,
        );
        assert_eq!(
            &texts(&rows)[1..],
            [
                "● edit a.rs (1 edit)",
                "    @@ -1 +1 @@",
                "    -old",
                "    +new"
            ]
        );
    }

    #[test]
    fn a_refusal_is_shown_as_one_not_as_an_error() {
        let theme = Theme::plain();
        let mut answer = crate::protocol::message::AssistantMessage::empty("p", "m");
        answer.refusal = Some("I can't help with that.".into());
        let rows = message(&Message::Assistant(answer), &[], false, 60, &theme);
        assert_eq!(
            texts(&rows),
            ["", "⚠ The model refused: I can't help with that."]
        );
    }

    #[test]
    fn headers_are_cut_to_the_width() {
        let theme = Theme::plain();
        let line = tool_header(
            "bash",
            &json!({"command": "x".repeat(100)}),
            Span::raw("● "),
            20,
            &theme,
        );
        assert!(line.width() <= 20, "{}", line.width());
        assert!(texts(&[line])[0].ends_with('…'));
    }

    #[test]
    fn one_line_left_is_one_line() {
        let theme = Theme::plain();
        let diff = "@@ -1,3 +1,3 @@\n-a\n+b\n c\n";
        let rows = diff_rows(diff, 40, Some(3), &theme);
        assert_eq!(texts(&rows).last().unwrap(), "    … 1 more diff line");
        let rows = diff_rows(diff, 40, Some(2), &theme);
        assert_eq!(texts(&rows).last().unwrap(), "    … 2 more diff lines");
    }

    #[test]
    fn a_command_of_several_lines_says_so_in_its_header() {
        let theme = Theme::plain();
        let args = json!({"command": "make\nrm -rf ~/important-data\n"});
        let line = tool_header("bash", &args, Span::raw("● "), 60, &theme);
        assert_eq!(texts(&[line])[0], "● bash make (+1 line)");
        let line = tool_header("!", &json!({"command": "ls"}), Span::raw("● "), 60, &theme);
        assert_eq!(texts(&[line])[0], "● ! ls");
    }

    #[test]
    fn a_web_search_is_one_dim_line() {
        use crate::protocol::message::{
            AssistantContent, AssistantMessage, WebSearch, WebSearchResult, WebSearchStatus,
        };
        let mut answer = AssistantMessage::empty("p", "m");
        answer.content.push(AssistantContent::WebSearch(WebSearch {
            id: "s".into(),
            query: "tokyo population".into(),
            status: WebSearchStatus::Completed,
            results: vec![
                WebSearchResult {
                    title: "a".into(),
                    url: "https://a.example/".into(),
                };
                5
            ],
            error: None,
            api: "anthropic".into(),
            provider_blocks: vec![],
        }));
        let theme = Theme::plain();
        let rows = message(&Message::Assistant(answer), &[], false, 80, &theme);
        assert_eq!(
            texts(&rows),
            ["", "· Searched the web: \"tokyo population\" — 5 results"]
        );
        assert_eq!(rows[1].spans[1].style, theme.dim());
    }
}
