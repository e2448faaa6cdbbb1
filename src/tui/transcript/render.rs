//! One transcript entry as rows, expanded: thoughts in full, a tool call with its whole
//! argument summary and every line of its output (colours kept) or its whole diff.

use super::log::{Entry, ToolParts};
use crate::tui::cells;
use crate::tui::theme::Theme;
use crate::tui::wrap::{visible, wrap_line, wrap_text};
use ratatui::text::{Line, Span};
use serde_json::Value;

pub fn rows(entry: &Entry, width: u16, theme: &Theme) -> Vec<Line<'static>> {
    match entry {
        Entry::User(text) => cells::user(text.as_str(), width, theme),
        Entry::Assistant { text, first: true } => {
            cells::assistant_text(text.as_str(), width, theme)
        }
        // A later piece of an answer: its first block is separated by a blank row, as
        // blocks are, and has no bullet.
        Entry::Assistant { text, first: false } => {
            let mut rows = vec![cells::indent(cells::blank())];
            rows.extend(
                crate::tui::markdown::render(text.as_str(), width.saturating_sub(2), theme)
                    .into_iter()
                    .map(cells::indent),
            );
            rows
        }
        Entry::Thinking(text) => cells::thinking(text.as_str(), true, width, theme),
        Entry::Notice(text) => cells::notice(text, width, theme),
        Entry::Warning(text) => cells::warning(text, width, theme),
        Entry::Error(text) => cells::error(text, width, theme),
        Entry::FileChange(change) => file_change(change, width, theme),
        Entry::Tool(call) => {
            let parts = call.parts();
            tool(&parts, width, theme)
        }
    }
}

fn tool(parts: &ToolParts<'_>, width: u16, theme: &Theme) -> Vec<Line<'static>> {
    let (name, args, details, is_error) = (parts.name, parts.args, parts.details, parts.is_error);
    let marker = if parts.running {
        theme.dim()
    } else if is_error {
        theme.error()
    } else {
        theme.success()
    };
    // A command is shown whole, every line of it.
    let summary = match cells::full_command(name, args) {
        Some(command) => command.trim_end().to_string(),
        None => cells::summarize_args(name, args),
    };
    let mut rows = vec![cells::blank()];
    rows.extend(wrap_text(
        &visible(&summary),
        theme.dim(),
        width,
        &[
            Span::styled("● ", marker),
            Span::styled(format!("{name} "), theme.bold()),
        ],
        &[Span::raw("  ")],
    ));
    if let Some(diff) = details
        .and_then(|d| d.get("diff"))
        .and_then(Value::as_str)
        .filter(|_| !is_error)
    {
        rows.extend(cells::diff_rows(diff, width, None, theme));
        return rows;
    }
    let style = if is_error { theme.error() } else { theme.dim() };
    let first = [Span::styled("  ⎿ ", theme.dim())];
    let rest = [Span::raw("    ")];
    let text = parts.output.trim_end_matches('\n');
    if text.is_empty() {
        let empty = if parts.running {
            "(running)"
        } else {
            "(no output)"
        };
        rows.push(Line::from(vec![
            first[0].clone(),
            Span::styled(empty, theme.dim()),
        ]));
        return rows;
    }
    let lines = if theme.color {
        crate::tui::ansi::lines(text, style)
    } else {
        crate::tui::ansi::lines(&crate::tui::ansi::strip(text), style)
    };
    for (i, line) in lines.iter().enumerate() {
        let prefix: &[Span<'static>] = if i == 0 { &first } else { &rest };
        rows.extend(wrap_line(line, width, prefix, &rest));
    }
    rows
}

/// A changed file: a header with the path, what happened and the line counts, then its
/// diff in colour (or why there is none).
fn file_change(
    change: &crate::checkpoint::FileChange,
    width: u16,
    theme: &Theme,
) -> Vec<Line<'static>> {
    use crate::checkpoint::ChangeKind;
    let what = match change.kind {
        ChangeKind::Added => "new file",
        ChangeKind::Removed => "deleted",
        ChangeKind::Modified => "modified",
    };
    let mut header = vec![
        Span::styled("● ", theme.accent()),
        Span::styled(change.path.to_string_lossy().into_owned(), theme.bold()),
        Span::styled(format!("  {what}  "), theme.dim()),
    ];
    if change.diff.is_some() {
        header.push(Span::styled(
            format!("+{}", change.added),
            theme.diff_added(),
        ));
        header.push(Span::raw(" "));
        header.push(Span::styled(
            format!("-{}", change.removed),
            theme.diff_removed(),
        ));
    }
    let mut rows = vec![cells::blank()];
    rows.extend(wrap_line(
        &Line::from(header),
        width,
        &[],
        &[Span::raw("  ")],
    ));
    if let Some(note) = &change.note {
        rows.push(Line::from(Span::styled(
            format!("    ({note})"),
            theme.dim(),
        )));
    }
    if let Some(diff) = &change.diff {
        rows.extend(cells::diff_rows(diff, width, None, theme));
    }
    rows
}
