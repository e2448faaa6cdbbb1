//! `/help`'s keys and `/keys`' table, both drawn from the keymap, so that they tell the truth
//! after a rebinding: each context's actions with their effective chords and help line.

use super::{ACTIONS, Binding, Context, Keymap};
use crate::tui::cells;
use crate::tui::theme::Theme;
use ratatui::text::{Line, Span};
use std::path::Path;

/// Keys that are not actions but a newcomer needs, shown with the composer's.
const COMPOSER_EXTRAS: &[(&str, &str)] = &[
    ("tab", "complete the /command or the @ path"),
    ("@", "attach a file: type to filter, tab or enter picks"),
];

/// What `/help` shows of the keys: per context, the chords and what they do; `composer` adds
/// the composer's own rows (its editing modes) to the composer's.
pub fn help_rows(
    keymap: &Keymap,
    composer: &[(&'static str, &'static str)],
    theme: &Theme,
) -> Vec<Line<'static>> {
    let rows: Vec<(Context, String, &str)> = ACTIONS
        .iter()
        .map(|spec| (spec.context, keymap.chords_text(spec.action), spec.help))
        .chain(
            COMPOSER_EXTRAS
                .iter()
                .chain(composer)
                .map(|(keys, help)| (Context::Composer, keys.to_string(), *help)),
        )
        .map(|(context, chords, help)| (context, unbound(chords), help))
        .collect();
    let width = rows
        .iter()
        .map(|(_, c, _)| c.chars().count())
        .max()
        .unwrap_or(0)
        + 2;
    let mut lines = vec![
        cells::blank(),
        Line::from(Span::styled("Keys", theme.bold())),
    ];
    for context in Context::ALL {
        lines.push(Line::from(Span::styled(
            format!("  {}", context.title()),
            theme.dim(),
        )));
        for (_, chords, help) in rows.iter().filter(|(c, _, _)| *c == context) {
            lines.push(Line::from(vec![
                Span::styled(format!("    {chords:<width$}"), theme.accent()),
                Span::raw(help.to_string()),
            ]));
        }
    }
    lines.push(Line::from(Span::styled(
        "  /keys lists every action's name; [keys] in config.toml rebinds them",
        theme.dim(),
    )));
    lines
}

/// `/keys`: every action's name, chords, help and, when `[keys]` set it, its line.
pub fn keys_rows(keymap: &Keymap, file: &Path, theme: &Theme) -> Vec<Line<'static>> {
    let file_name = file.file_name().map_or_else(
        || file.display().to_string(),
        |n| n.to_string_lossy().into_owned(),
    );
    let mut lines = vec![
        cells::blank(),
        Line::from(Span::styled(
            format!("Key bindings ([keys] in {} rebinds them)", file.display()),
            theme.bold(),
        )),
    ];
    for context in Context::ALL {
        lines.push(Line::from(Span::styled(
            format!("  {}", context.title()),
            theme.dim(),
        )));
        let rows: Vec<(&Binding, String)> = keymap
            .bindings()
            .iter()
            .filter(|b| b.action.context() == context)
            .map(|b| (b, unbound(keymap.chords_text(b.action))))
            .collect();
        // The columns fit this context's longest name and chords.
        let name_width = rows
            .iter()
            .map(|(b, _)| b.action.name().len())
            .max()
            .unwrap_or(0)
            + 2;
        let chord_width = rows
            .iter()
            .map(|(_, c)| c.chars().count())
            .max()
            .unwrap_or(0)
            + 2;
        for (binding, chords) in rows {
            lines.push(Line::from(vec![
                Span::raw(format!("    {:<name_width$}", binding.action.name())),
                Span::styled(format!("{chords:<chord_width$}"), theme.accent()),
                Span::raw(binding.action.spec().help.to_string()),
            ]));
            // On a line of its own: the row is as wide as a terminal already.
            if let Some(line) = binding.line {
                lines.push(Line::from(Span::styled(
                    format!("    {:<name_width$}↳ set at {file_name}:{line}", ""),
                    theme.dim(),
                )));
            }
        }
    }
    if keymap
        .bindings()
        .iter()
        .flat_map(|b| &b.chords)
        .any(|c| c.needs_reporting_terminal())
    {
        lines.push(Line::from(Span::styled(
            "  shift+enter and the like need a terminal that reports them (the kitty keyboard protocol: kitty, WezTerm, foot, Ghostty); others send plain enter",
            theme.dim(),
        )));
    }
    lines
}

fn unbound(chords: String) -> String {
    if chords.is_empty() {
        "(none)".to_string()
    } else {
        chords
    }
}
