//! Unit-test helpers for the views: draw a view's rows on ratatui's `TestBackend` and read
//! the screen back as text, and build keys.

use super::super::theme::Theme;
use super::View;
use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
use ratatui::Terminal;
use ratatui::backend::TestBackend;
use ratatui::widgets::Paragraph;

/// The screen a view draws at the bottom, `width` × `height`, one string per row (trailing
/// blanks cut).
pub fn draw(view: &dyn View, width: u16, height: u16) -> Vec<String> {
    let mut terminal = Terminal::new(TestBackend::new(width, height)).unwrap();
    let rows = view.rows(width, height, &Theme::default());
    terminal
        .draw(|frame| frame.render_widget(Paragraph::new(rows), frame.area()))
        .unwrap();
    let buffer = terminal.backend().buffer();
    (0..height)
        .map(|y| {
            let row: String = (0..width)
                .map(|x| buffer[(x, y)].symbol().to_string())
                .collect();
            row.trim_end().to_string()
        })
        .collect()
}

/// A key with no modifier.
pub fn key(code: KeyCode) -> KeyEvent {
    KeyEvent::new(code, KeyModifiers::NONE)
}
