//! `/theme`'s picker: the themes (built-in and the user's files), ↑↓ to move — the interface
//! shows the selected one at once (`palette_shown`: the core draws with it while the picker is
//! open) —, enter keeps it (and writes it to the config), esc goes back to the theme it had.

use super::super::theme::Theme;
use super::super::theme::palette::Palette;
use super::menu::Choice;
use super::{Next, View};
use crossterm::event::{KeyCode, KeyEvent};
use ratatui::text::{Line, Span};

pub struct ThemePicker {
    palettes: Vec<&'static Palette>,
    selected: usize,
    /// The theme when the picker opened: esc goes back to it.
    original: &'static Palette,
}

impl ThemePicker {
    /// The picker over `palettes`, on the one in use (`current`).
    pub fn new(palettes: Vec<&'static Palette>, current: &'static Palette) -> ThemePicker {
        let selected = palettes
            .iter()
            .position(|p| p.name == current.name)
            .unwrap_or(0);
        ThemePicker {
            palettes,
            selected,
            original: current,
        }
    }

    /// The theme to draw with while the picker is open: the selected one.
    pub fn palette_shown(&self) -> &'static Palette {
        self.palettes
            .get(self.selected)
            .copied()
            .unwrap_or(self.original)
    }
}

impl View for ThemePicker {
    fn key(&mut self, key: KeyEvent) -> Next {
        match key.code {
            KeyCode::Up => self.selected = self.selected.saturating_sub(1),
            KeyCode::Down if self.selected + 1 < self.palettes.len() => self.selected += 1,
            KeyCode::Enter => {
                return Next::Choose(Choice::Theme {
                    palette: self.palette_shown(),
                    keep: true,
                });
            }
            KeyCode::Esc => {
                return Next::Choose(Choice::Theme {
                    palette: self.original,
                    keep: false,
                });
            }
            _ => {}
        }
        Next::Stay
    }

    /// ctrl+c is esc here: back to the theme it had.
    fn ctrl_c(&mut self) -> Next {
        self.key(KeyEvent::from(KeyCode::Esc))
    }

    fn rows(&self, width: u16, _max_rows: u16, theme: &Theme) -> Vec<Line<'static>> {
        // Drawn in the selected theme whatever the core passes, so the list is the preview.
        let theme = theme.with_palette(self.palette_shown());
        let mut rows = vec![Line::from(vec![
            Span::styled("Theme ", theme.bold()),
            Span::styled("(↑↓ preview · enter keeps · esc goes back)", theme.dim()),
        ])];
        for (i, palette) in self.palettes.iter().enumerate() {
            let selected = i == self.selected;
            let marker = if selected { "› " } else { "  " };
            let note = if palette.name == self.original.name {
                "  (in use)"
            } else {
                ""
            };
            let room = usize::from(width).saturating_sub(2 + note.len());
            let style = if selected {
                theme.accent()
            } else {
                theme.text()
            };
            rows.push(Line::from(vec![
                Span::styled(marker, theme.accent()),
                Span::styled(super::super::cells::cut(&palette.name, room), style),
                Span::styled(note, theme.dim()),
            ]));
        }
        // A sample of the roles, in the selected theme.
        rows.push(Line::from(vec![
            Span::styled("  ● ", theme.accent()),
            Span::styled("heading ", theme.heading(2)),
            Span::styled("`code` ", theme.inline_code()),
            Span::styled("link ", theme.link()),
            Span::styled("+added ", theme.diff_added()),
            Span::styled("-removed ", theme.diff_removed()),
            Span::styled("warning ", theme.warning()),
            Span::styled("error", theme.error()),
        ]));
        rows
    }
}

#[cfg(test)]
mod tests {
    use super::super::testing::key;
    use super::*;
    use crate::tui::theme::palette::{BUILTIN, DARK, HIGH_CONTRAST, LIGHT};

    #[test]
    fn arrows_preview_enter_keeps_esc_goes_back() {
        let mut picker = ThemePicker::new(BUILTIN.to_vec(), &LIGHT);
        assert_eq!(picker.palette_shown().name, "light");
        assert_eq!(picker.key(key(KeyCode::Down)), Next::Stay);
        assert_eq!(picker.palette_shown().name, HIGH_CONTRAST.name);
        assert_eq!(
            picker.key(key(KeyCode::Down)),
            Next::Stay,
            "stops at the last"
        );
        assert_eq!(picker.palette_shown().name, HIGH_CONTRAST.name);
        assert_eq!(
            picker.key(key(KeyCode::Esc)),
            Next::Choose(Choice::Theme {
                palette: &LIGHT,
                keep: false
            })
        );
        picker.key(key(KeyCode::Up));
        picker.key(key(KeyCode::Up));
        assert_eq!(
            picker.key(key(KeyCode::Enter)),
            Next::Choose(Choice::Theme {
                palette: &DARK,
                keep: true
            })
        );
    }
}
