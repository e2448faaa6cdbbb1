//! The transcript view (ctrl+o) on the stack: the whole conversation on the alternate
//! screen, scrolled and searched like a pager (↑↓ j k, PgUp PgDn b space, Home End g G,
//! `/` searches, n N find again, esc or q closes). The pager keys are shared with the diff
//! and agent views (`pager_key`).

use super::super::screen::Painted;
use super::super::theme::Theme;
use super::super::transcript::{Log, View as Pager};
use super::{Cx, Next, Placement, View};
use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
use ratatui::buffer::Buffer;
use ratatui::text::Line;

/// Where a pager's keys are looked up: the transcript view's actions, unless a search is
/// being typed (then only the global keys).
pub fn pager_context(pager: &Pager) -> crate::tui::keymap::Context {
    match pager.input {
        Some(_) => crate::tui::keymap::Context::Global,
        None => crate::tui::keymap::Context::Transcript,
    }
}

/// A pager's key over `log`: `Next::Close` for esc or q (the search line, when one is being
/// typed, takes esc first); every other key is the pager's.
pub fn pager_key(pager: &mut Pager, log: &Log, key: KeyEvent, theme: &Theme) -> Next {
    if let Some(input) = pager.input.as_mut() {
        match key.code {
            KeyCode::Enter => pager.submit_search(log, theme),
            KeyCode::Esc => pager.input = None,
            KeyCode::Backspace => {
                input.pop();
            }
            KeyCode::Char(c) if !key.modifiers.contains(KeyModifiers::CONTROL) => input.push(c),
            _ => {}
        }
        return Next::Stay;
    }
    match key.code {
        KeyCode::Esc | KeyCode::Char('q') => return Next::Close,
        KeyCode::Up | KeyCode::Char('k') => pager.scroll(log, -1, theme),
        KeyCode::Down | KeyCode::Char('j') | KeyCode::Enter => pager.scroll(log, 1, theme),
        KeyCode::PageUp | KeyCode::Char('b') => pager.page_up(log, theme),
        KeyCode::PageDown | KeyCode::Char(' ') => pager.page_down(log, theme),
        KeyCode::Home | KeyCode::Char('g') => pager.to_start(),
        KeyCode::End | KeyCode::Char('G') => pager.to_end(),
        KeyCode::Char('/') => pager.input = Some(String::new()),
        KeyCode::Char('n') => pager.find(log, false, true, theme),
        KeyCode::Char('N') => pager.find(log, true, true, theme),
        _ => {}
    }
    Next::Stay
}

/// The conversation so far (the core's log, read through `Cx`).
#[derive(Default)]
pub struct TranscriptView {
    pager: Pager,
}

impl View for TranscriptView {
    fn key_context(&self) -> crate::tui::keymap::Context {
        pager_context(&self.pager)
    }
    /// Its keys need the log: `key_in`.
    fn key(&mut self, _key: KeyEvent) -> Next {
        Next::Stay
    }

    fn key_in(&mut self, key: KeyEvent, cx: &Cx) -> Next {
        pager_key(&mut self.pager, cx.log, key, cx.theme)
    }

    /// A paste goes to the composer under it, as it would with the view closed.
    fn paste(&mut self, _text: &str) -> bool {
        false
    }

    fn placement(&self) -> Placement {
        Placement::FullScreen
    }

    fn rows(&self, _width: u16, _max_rows: u16, _theme: &Theme) -> Vec<Line<'static>> {
        Vec::new()
    }

    fn render(&mut self, buffer: &mut Buffer, kept: bool, cx: &Cx) -> Painted {
        self.pager.render(cx.log, buffer, kept, cx.theme, cx.status)
    }
}

#[cfg(test)]
mod tests {
    use super::super::testing::key;
    use super::*;
    use crate::tui::transcript::Entry;

    #[test]
    fn esc_closes_unless_a_search_is_typed() {
        let mut log = Log::default();
        log.push(Entry::Notice("hello".into()));
        let theme = Theme::default();
        let mut pager = Pager::new();
        let mut press = |code| pager_key(&mut pager, &log, key(code), &theme);
        assert_eq!(press(KeyCode::Char('/')), Next::Stay);
        assert_eq!(
            press(KeyCode::Char('q')),
            Next::Stay,
            "typed into the search"
        );
        assert_eq!(press(KeyCode::Esc), Next::Stay, "the search closes");
        assert_eq!(press(KeyCode::Char('j')), Next::Stay);
        assert_eq!(press(KeyCode::Char('q')), Next::Close);
        assert_eq!(TranscriptView::default().placement(), Placement::FullScreen);
    }
}
