//! The composer: where the user writes. A ratatui-textarea with soft wrap, plus the
//! agent's keys — Enter submits, Alt+Enter queues a follow-up, Shift+Enter / Ctrl+J insert a
//! newline — Up/Down recall earlier prompts (kept across restarts, per directory) when the
//! cursor is on the first/last row, ctrl+r searches them (`search`), and readline's editing
//! keys work on whole grapheme clusters (`editing`). Pasted and clipboard images and long
//! pastes are chips that edit as one element (`chips`, `pastes`).

mod chips;
mod editing;
mod mention;
mod pastes;
mod search;
mod vim;

pub use pastes::{PASTE_CHARS, PASTE_LINES, thousands};

use super::history::History;
use super::screen::clamp_u16;
use super::theme::Theme;
use super::wrap::wrap_text;
use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
use ratatui::buffer::Buffer;
use ratatui::layout::{Position, Rect};
use ratatui::style::Style;
use ratatui::widgets::Widget;
use ratatui_textarea::{CursorMove, TextArea, WrapMode};

/// The most rows the composer grows to before it scrolls.
const MAX_ROWS: u16 = 10;
const PROMPT: &str = "› ";
/// The prompt sign's width in columns.
const PROMPT_WIDTH: u16 = 2;

/// The composer's own keys for `/help` (key, what it does).
pub const HELP_ROWS: &[(&str, &str)] = &[
    (
        "tab",
        "at a [pasted N lines] chip: put the pasted text in place (10+ lines or 1,000+ chars paste as a chip)",
    ),
    (
        "/vim",
        "vim keys in the composer: esc normal mode, i a I A o O insert, v visual, enter sends",
    ),
];

#[derive(Debug, PartialEq, Eq)]
pub enum Action {
    /// Enter: a prompt (or a steering message while a run is active).
    Submit(String),
    /// Alt+Enter: a follow-up.
    FollowUp(String),
    /// The key was handled (or ignored); nothing to do.
    Edited,
}

pub struct Composer {
    textarea: TextArea<'static>,
    history: History,
    /// Why the last prompt could not be saved to the history file (shown once).
    history_error: Option<String>,
    search: Option<search::Search>,
    /// Index into `history` while recalling; the draft is what was typed before.
    recalling: Option<usize>,
    draft: String,
    /// Every image chip made this session: its label and its file.
    images: Vec<crate::agent::mentions::LabelledImage>,
    /// Every long paste made this session: its chip's label and its text.
    pastes: Vec<pastes::Paste>,
    /// Vim mode's state, when it is on (`[tui] editor_mode = "vim"`, `/vim`).
    vim: Option<vim::Vim>,
}

impl Composer {
    pub fn new(theme: &Theme) -> Self {
        let mut textarea = TextArea::default();
        textarea.set_wrap_mode(WrapMode::WordOrGlyph);
        textarea.set_cursor_line_style(Style::default());
        // The terminal's own cursor marks the position.
        textarea.set_cursor_style(Style::default());
        textarea.set_placeholder_text("Ask anything · / for commands · ! runs a shell command");
        textarea.set_placeholder_style(theme.dim());
        textarea.set_max_histories(200);
        Composer {
            textarea,
            history: History::default(),
            history_error: None,
            search: None,
            recalling: None,
            draft: String::new(),
            images: Vec::new(),
            pastes: Vec::new(),
            vim: None,
        }
    }

    /// The text as it is sent: long pastes whole, not as their chips.
    pub fn text(&self) -> String {
        self.expand_pastes(&self.textarea.lines().join("\n"))
    }

    pub fn is_empty(&self) -> bool {
        self.textarea.is_empty()
    }

    /// The text when it is one line (a command being typed), else `""`: cheap per key.
    pub fn single_line(&self) -> &str {
        match self.textarea.lines() {
            [line] => line,
            _ => "",
        }
    }

    /// Put `text` in the composer (the long pastes it holds shown as their chips).
    pub fn set_text(&mut self, text: &str) {
        let text = self.collapse_pastes(text);
        self.replace_lines(text.split('\n').map(String::from).collect());
        self.textarea.move_cursor(CursorMove::Bottom);
        self.textarea.move_cursor(CursorMove::End);
    }

    /// A new textarea holding `lines` as they are, set up as the composer's.
    fn replace_lines(&mut self, lines: Vec<String>) {
        let style = self.textarea.placeholder_style();
        let placeholder = self.textarea.placeholder_text().to_string();
        self.textarea = TextArea::new(lines);
        self.textarea.set_wrap_mode(WrapMode::WordOrGlyph);
        self.textarea.set_cursor_line_style(Style::default());
        self.textarea.set_cursor_style(Style::default());
        self.textarea.set_placeholder_text(placeholder);
        if let Some(style) = style {
            self.textarea.set_placeholder_style(style);
        }
    }

    pub fn clear(&mut self) {
        self.set_text("");
        self.recalling = None;
        self.vim_restart();
    }

    /// The prompt history to recall from and save to.
    pub fn set_history(&mut self, history: History) {
        self.history = history;
    }

    /// Remember a submitted prompt for Up/Down recall and ctrl+r, on disk too.
    pub fn remember(&mut self, text: &str) {
        if let Err(e) = self.history.add(text) {
            self.history_error.get_or_insert(e);
        }
    }

    /// Why a prompt could not be saved, once.
    pub fn take_history_error(&mut self) -> Option<String> {
        self.history_error.take()
    }

    pub fn handle_key(&mut self, key: KeyEvent) -> Action {
        let alt = key.modifiers.contains(KeyModifiers::ALT);
        let shift = key.modifiers.contains(KeyModifiers::SHIFT);
        let ctrl = key.modifiers.contains(KeyModifiers::CONTROL);
        if self.search.is_some() {
            self.search_key(key);
            return Action::Edited;
        }
        if let Some(action) = self.vim_key(key) {
            return action;
        }
        if let KeyCode::Char('r') = key.code
            && ctrl
        {
            self.start_search();
            return Action::Edited;
        }
        match key.code {
            KeyCode::Enter if alt => self.take(Action::FollowUp),
            KeyCode::Enter if shift || ctrl => {
                self.textarea.insert_newline();
                Action::Edited
            }
            KeyCode::Char('j') if ctrl => {
                self.textarea.insert_newline();
                Action::Edited
            }
            KeyCode::Enter => self.take(Action::Submit),
            KeyCode::Tab if key.modifiers.is_empty() && self.expand_paste_at_cursor() => {
                Action::Edited
            }
            KeyCode::Up if !alt && self.cursor_row() == 0 && self.recall(-1) => Action::Edited,
            KeyCode::Down if !alt && self.on_last_row() && self.recall(1) => Action::Edited,
            _ => {
                let before = self.before_key();
                if !self.edit_key(key) {
                    self.textarea.input(key);
                }
                self.after_key(before);
                Action::Edited
            }
        }
    }

    fn take(&mut self, make: fn(String) -> Action) -> Action {
        let text = self.text();
        if text.trim().is_empty() {
            return Action::Edited;
        }
        self.remember(&text);
        self.clear();
        make(text)
    }

    fn cursor_row(&self) -> usize {
        self.textarea.cursor().0
    }

    fn on_last_row(&self) -> bool {
        self.cursor_row() + 1 >= self.textarea.lines().len()
    }

    /// Step through the prompt history; `false` when there is nowhere to go.
    fn recall(&mut self, step: isize) -> bool {
        if self.history.is_empty() {
            return false;
        }
        let next = match (self.recalling, step < 0) {
            (None, true) => {
                self.draft = self.text();
                Some(self.history.len() - 1)
            }
            (None, false) => return false,
            (Some(0), true) => return true,
            (Some(i), true) => Some(i - 1),
            (Some(i), false) if i + 1 < self.history.len() => Some(i + 1),
            (Some(_), false) => None,
        };
        self.recalling = next;
        let text = match next {
            Some(i) => self.history.entries().get(i).cloned().unwrap_or_default(),
            None => std::mem::take(&mut self.draft),
        };
        let recalling = self.recalling;
        self.set_text(&text);
        self.recalling = recalling;
        true
    }

    /// Rows the composer needs at `width` (prompt sign included), capped.
    pub fn height(&self, width: u16) -> u16 {
        if self.search.is_some() {
            return 2;
        }
        let inner = width.saturating_sub(PROMPT_WIDTH).max(1);
        // Counting stops at the cap: a huge paste costs no more than ten rows.
        let mut rows = 0usize;
        for line in self.textarea.lines() {
            rows += wrap_text(line, Style::default(), inner, &[], &[]).len();
            if rows >= MAX_ROWS as usize {
                break;
            }
        }
        clamp_u16(rows).clamp(1, MAX_ROWS)
    }

    /// Draw into `area`; returns where the cursor is.
    pub fn render(&self, area: Rect, buffer: &mut Buffer, theme: &Theme) -> Option<Position> {
        if area.width <= PROMPT_WIDTH || area.height == 0 {
            return None;
        }
        if self.search.is_some() {
            let rows = self.search_rows(area.width, theme);
            let cursor_x = rows
                .first()
                .map(|r| clamp_u16(r.spans.iter().take(2).map(|s| s.width()).sum::<usize>()));
            ratatui::widgets::Paragraph::new(ratatui::text::Text::from(rows)).render(area, buffer);
            return cursor_x.map(|x| Position::new(area.x + x.min(area.width - 1), area.y));
        }
        buffer.set_string(area.x, area.y, self.prompt_sign(), theme.accent());
        let text_area = Rect {
            x: area.x + PROMPT_WIDTH,
            width: area.width - PROMPT_WIDTH,
            ..area
        };
        (&self.textarea).render(text_area, buffer);
        if self.textarea.is_empty() {
            // The placeholder in the theme shown now: the textarea's own style for it was
            // set when the composer was made, and `/theme` changes the theme after that.
            let width = clamp_u16(super::width::str_width(self.textarea.placeholder_text()));
            let placeholder = Rect {
                width: width.min(text_area.width),
                height: 1,
                ..text_area
            };
            buffer.set_style(placeholder, Style::reset().patch(theme.dim()));
        }
        self.style_chips(text_area, buffer, theme.accent());
        let cursor = self.textarea.screen_cursor();
        let row = u16::try_from(cursor.row).ok()?;
        let col = u16::try_from(cursor.col).ok()?;
        (row < text_area.height && col < text_area.width)
            .then(|| Position::new(text_area.x + col, text_area.y + row))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key(code: KeyCode, modifiers: KeyModifiers) -> KeyEvent {
        KeyEvent::new(code, modifiers)
    }

    fn type_text(composer: &mut Composer, text: &str) {
        for c in text.chars() {
            composer.handle_key(key(KeyCode::Char(c), KeyModifiers::NONE));
        }
    }

    #[test]
    fn enter_submits_and_alt_enter_queues() {
        let mut c = Composer::new(&Theme::plain());
        type_text(&mut c, "hello");
        c.handle_key(key(KeyCode::Enter, KeyModifiers::SHIFT));
        type_text(&mut c, "world");
        assert_eq!(c.text(), "hello\nworld");
        assert_eq!(
            c.handle_key(key(KeyCode::Enter, KeyModifiers::NONE)),
            Action::Submit("hello\nworld".into())
        );
        assert!(c.is_empty());
        type_text(&mut c, "later");
        assert_eq!(
            c.handle_key(key(KeyCode::Enter, KeyModifiers::ALT)),
            Action::FollowUp("later".into())
        );
        assert_eq!(
            c.handle_key(key(KeyCode::Enter, KeyModifiers::NONE)),
            Action::Edited,
            "empty is not sent"
        );
        c.handle_key(key(KeyCode::Char('j'), KeyModifiers::CONTROL));
        assert_eq!(c.text(), "\n");
    }

    #[test]
    fn up_and_down_recall_prompts_and_keep_the_draft() {
        let mut c = Composer::new(&Theme::plain());
        c.remember("first");
        c.remember("second");
        type_text(&mut c, "draft");
        c.handle_key(key(KeyCode::Up, KeyModifiers::NONE));
        assert_eq!(c.text(), "second");
        c.handle_key(key(KeyCode::Up, KeyModifiers::NONE));
        assert_eq!(c.text(), "first");
        c.handle_key(key(KeyCode::Up, KeyModifiers::NONE));
        assert_eq!(c.text(), "first");
        c.handle_key(key(KeyCode::Down, KeyModifiers::NONE));
        c.handle_key(key(KeyCode::Down, KeyModifiers::NONE));
        assert_eq!(c.text(), "draft");
    }

    #[test]
    fn pastes_keep_newlines_and_height_grows_with_the_text() {
        let mut c = Composer::new(&Theme::plain());
        c.insert("a\r\nb\rc");
        assert_eq!(c.text(), "a\nb\nc");
        assert_eq!(c.height(40), 3);
        c.set_text(&"word ".repeat(200));
        assert_eq!(c.height(40), MAX_ROWS);
    }
}
