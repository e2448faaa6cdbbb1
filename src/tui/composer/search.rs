//! ctrl+r: search the prompt history as you type, newest match first; ctrl+r again goes
//! to an older match, enter (or an arrow) takes the match into the composer to edit, esc
//! or ctrl+g puts back what was there.

use super::Composer;
use crate::tui::theme::Theme;
use crate::tui::width::cut;
use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
use ratatui::text::{Line, Span};

pub(super) struct Search {
    query: String,
    /// The history entry that matches, if any.
    found: Option<usize>,
    /// What the composer held before.
    draft: String,
    /// Chips that came while searching (a clipboard image read meanwhile): they go after
    /// whatever text the search ends with.
    pub(super) arrived: String,
}

impl Composer {
    pub fn is_searching(&self) -> bool {
        self.search.is_some()
    }

    pub(super) fn start_search(&mut self) {
        self.search = Some(Search {
            query: String::new(),
            found: None,
            draft: self.text(),
            arrived: String::new(),
        });
    }

    /// A key while searching.
    pub(super) fn search_key(&mut self, key: KeyEvent) {
        let ctrl = key.modifiers.contains(KeyModifiers::CONTROL);
        let Some(search) = self.search.as_mut() else {
            return;
        };
        match key.code {
            KeyCode::Char('r') if ctrl => {
                let before = search.found.unwrap_or(self.history.len());
                if let Some(older) = self.history.search(&search.query, before) {
                    search.found = Some(older);
                }
            }
            KeyCode::Esc => self.end_search(false),
            KeyCode::Char('g' | 'c') if ctrl => self.end_search(false),
            KeyCode::Char(c) if !ctrl => {
                search.query.push(c);
                search.found = self.history.search(&search.query, self.history.len());
            }
            KeyCode::Backspace => {
                search.query.pop();
                search.found = self.history.search(&search.query, self.history.len());
            }
            KeyCode::Enter
            | KeyCode::Left
            | KeyCode::Right
            | KeyCode::Up
            | KeyCode::Down
            | KeyCode::Home
            | KeyCode::End => self.end_search(true),
            _ => {}
        }
    }

    /// Leave the search, with the match (`accept`) or with what was there before.
    fn end_search(&mut self, accept: bool) {
        let Some(search) = self.search.take() else {
            return;
        };
        let mut text = match search.found.and_then(|i| self.history.entries().get(i)) {
            Some(found) if accept => found.clone(),
            _ => search.draft,
        };
        if !search.arrived.is_empty() {
            if !text.is_empty() && !text.ends_with(char::is_whitespace) {
                text.push(' ');
            }
            text.push_str(&search.arrived);
        }
        self.set_text(&text);
    }

    /// The search's two rows: what is typed and what it found.
    pub(super) fn search_rows(&self, width: u16, theme: &Theme) -> Vec<Line<'static>> {
        let Some(search) = &self.search else {
            return Vec::new();
        };
        let room = usize::from(width).saturating_sub(4);
        let found = match search.found.and_then(|i| self.history.entries().get(i)) {
            Some(text) => Span::styled(cut(&text.replace('\n', " ⏎ "), room), theme.text()),
            None if search.query.is_empty() => {
                Span::styled("type to search earlier prompts", theme.dim())
            }
            None => Span::styled("no earlier prompt matches", theme.warning()),
        };
        vec![
            Line::from(vec![
                Span::styled("search: ", theme.accent()),
                Span::raw(search.query.clone()),
                Span::styled("  ctrl+r older · enter takes it · esc cancels", theme.dim()),
            ]),
            Line::from(vec![Span::styled("  ", theme.dim()), found]),
        ]
    }
}
