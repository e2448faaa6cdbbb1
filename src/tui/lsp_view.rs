//! The language servers in the interface (docs/protocol.md §5.4): `/lsp` as transcript rows —
//! each server with its status, root, open files, counts, work in progress and last error —
//! the status line's `lsp ✗E ⚠W`, and the counts line closing an edit's cell.

use super::cells;
use super::theme::Theme;
use crate::lsp::{Lsp, View};
use ratatui::text::{Line, Span};
use serde_json::Value;

/// `/lsp`: every configured and built-in server.
pub fn rows(lsp: Option<&Lsp>, width: u16, theme: &Theme) -> Vec<Line<'static>> {
    let mut rows = vec![cells::blank()];
    let views = lsp.map(Lsp::views).unwrap_or_default();
    if lsp.is_none() {
        rows.push(Line::from(Span::styled(
            "Language servers are off ([lsp] enabled = false, or --no-tools).",
            theme.dim(),
        )));
        return rows;
    }
    rows.push(Line::from(Span::styled("Language servers", theme.bold())));
    let room = usize::from(width).saturating_sub(8).max(20);
    for view in &views {
        rows.extend(server_rows(view, room, lsp.map(Lsp::cwd), theme));
    }
    rows
}

fn server_rows(
    view: &View,
    room: usize,
    cwd: Option<&std::path::Path>,
    theme: &Theme,
) -> Vec<Line<'static>> {
    let style = match view.status.as_str() {
        "ready" => theme.success(),
        "failed" => theme.error(),
        "restarting" => theme.warning(),
        _ => theme.dim(),
    };
    let types: Vec<String> = view.filetypes.iter().map(|t| format!(".{t}")).collect();
    let detail = match (&view.root, cwd) {
        (Some(root), Some(cwd)) => format!(
            " · root {} · {} open · {}",
            crate::lsp::location::shown(root, cwd),
            view.open_files,
            counts(view.errors, view.warnings)
        ),
        _ if view.status == "not installed" => {
            format!(" · {} · `{}` is not on PATH", types.join(" "), view.command)
        }
        _ => format!(" · {}", types.join(" ")),
    };
    let mut rows = vec![Line::from(vec![
        Span::styled(format!("  {} ", view.name), theme.accent()),
        Span::styled(view.status.clone(), style),
        Span::styled(cells::cut(&detail, room), theme.dim()),
    ])];
    for busy in &view.busy {
        rows.push(Line::from(Span::styled(
            format!("    {}", cells::cut(busy, room)),
            theme.dim(),
        )));
    }
    if let Some(error) = &view.error {
        rows.push(Line::from(Span::styled(
            format!("    {}", cells::cut(error, room)),
            theme.error(),
        )));
    }
    rows
}

/// `✗2 ⚠1`.
fn counts(errors: usize, warnings: usize) -> String {
    format!("✗{errors} ⚠{warnings}")
}

/// The status line's part: `lsp ✗E ⚠W` once a server has started.
pub fn status(lsp: Option<&Lsp>) -> Option<String> {
    let (errors, warnings) = lsp?.totals()?;
    Some(format!("lsp {}", counts(errors, warnings)))
}

/// The line closing the cell of a call whose result carries diagnostics.
pub fn cell_row(details: Option<&Value>, theme: &Theme) -> Option<Line<'static>> {
    let (errors, warnings) = crate::lsp::report::counts_of(details)?;
    let text = format!(
        "lsp: {}, {}",
        cells::counted(usize::try_from(errors).unwrap_or(usize::MAX), "error"),
        cells::counted(usize::try_from(warnings).unwrap_or(usize::MAX), "warning")
    );
    let style = if errors > 0 {
        theme.error()
    } else if warnings > 0 {
        theme.warning()
    } else {
        theme.dim()
    };
    Some(Line::from(vec![
        Span::raw("    "),
        Span::styled(text, style),
    ]))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::lsp::{LspTable, resolve};
    use serde_json::json;

    fn texts(rows: &[Line<'_>]) -> Vec<String> {
        rows.iter()
            .map(|row| row.spans.iter().map(|s| s.content.to_string()).collect())
            .collect()
    }

    #[test]
    fn lsp_lists_every_server_with_its_status() {
        let table: LspTable =
            toml::from_str("[x]\ncommand = \"/bin/sh\"\nfiletypes = [\"x\"]\n").unwrap();
        let settings = resolve(&table, None, std::path::Path::new("/")).unwrap();
        let lsp = Lsp::new(settings, "/w".into(), Vec::new());
        let theme = Theme::plain();
        let listed = texts(&rows(Some(&lsp), 100, &theme));
        assert!(listed.contains(&"  x idle · .x".to_string()), "{listed:?}");
        assert!(
            listed.contains(&"  gopls not installed · .go · `gopls` is not on PATH".to_string()),
            "{listed:?}"
        );
        assert_eq!(status(Some(&lsp)), None, "nothing started yet");
        assert_eq!(
            texts(&rows(None, 100, &theme))[1],
            "Language servers are off ([lsp] enabled = false, or --no-tools)."
        );
    }

    #[test]
    fn a_cell_ends_with_its_counts() {
        let theme = Theme::plain();
        let details = json!({"diff": "", "lsp": {"errors": 1, "warnings": 2}});
        let row = cell_row(Some(&details), &theme).unwrap();
        assert_eq!(texts(&[row])[0], "    lsp: 1 error, 2 warnings");
        assert!(cell_row(Some(&json!({"diff": ""})), &theme).is_none());
    }
}
