//! The model's task list (`todo_update` events), pinned above the composer while a run is
//! going: one row per item, a check for the done ones, the one in progress highlighted.
//! A long list shows the items around the one in progress and says how many are left out.

use super::cells;
use super::theme::Theme;
use crate::protocol::todo::{TodoItem, TodoStatus};
use ratatui::text::{Line, Span};

/// Item rows shown at most.
const MAX_ROWS: usize = 8;

/// The panel's rows (none for an empty list).
pub fn rows(todos: &[TodoItem], width: u16, theme: &Theme) -> Vec<Line<'static>> {
    if todos.is_empty() {
        return Vec::new();
    }
    let done = todos
        .iter()
        .filter(|t| t.status == TodoStatus::Completed)
        .count();
    let mut rows = vec![
        cells::blank(),
        Line::from(vec![
            Span::styled("☰ Tasks ", theme.bold()),
            Span::styled(format!("{done}/{} done", todos.len()), theme.dim()),
        ]),
    ];
    // The window of items shown: starting a little before the first one not done.
    let focus = todos
        .iter()
        .position(|t| t.status != TodoStatus::Completed)
        .unwrap_or(todos.len().saturating_sub(1));
    let start = focus
        .saturating_sub(1)
        .min(todos.len().saturating_sub(MAX_ROWS));
    let end = (start + MAX_ROWS).min(todos.len());
    if start > 0 {
        rows.push(Line::from(Span::styled(
            format!("  … {start} done above"),
            theme.dim(),
        )));
    }
    let room = usize::from(width).saturating_sub(6);
    for item in &todos[start..end] {
        let (mark, style) = match item.status {
            TodoStatus::Completed => ("✔", theme.dim()),
            TodoStatus::InProgress => ("▶", theme.accent()),
            TodoStatus::Pending => ("☐", theme.text()),
        };
        let first_line = item.content.lines().next().unwrap_or("");
        rows.push(Line::from(vec![
            Span::styled(format!("  {mark} "), style),
            Span::styled(cells::cut(first_line, room), style),
        ]));
    }
    if end < todos.len() {
        rows.push(Line::from(Span::styled(
            format!("  … {} more", todos.len() - end),
            theme.dim(),
        )));
    }
    rows
}
