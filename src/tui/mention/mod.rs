//! The `@` file picker: while the word at the cursor starts with `@`, the best matching
//! paths of the working tree (`index`, matched off the UI thread) show under the composer;
//! ↑↓ choose, tab or enter insert `@path`, esc closes it until the word changes.

pub mod index;

use super::app::{App, TaskResult};
use super::theme::Theme;
use ratatui::text::{Line, Span};
use std::sync::mpsc;

pub struct MentionPicker {
    /// What follows the `@` now.
    pub query: String,
    /// The matches of the last answer, and the query they answer.
    pub results: Vec<String>,
    pub answered: Option<String>,
    pub selected: usize,
}

/// The worker's end, once started (on the first `@`).
#[derive(Default)]
pub struct MentionSearch {
    queries: Option<mpsc::Sender<index::Query>>,
    /// The word esc closed the picker on.
    pub dismissed: Option<String>,
}

impl App {
    /// After every key: open, follow or close the picker as the word at the cursor says.
    pub fn update_mention(&mut self) {
        let Some(query) = self.input.composer.mention_query() else {
            self.input.mention = None;
            self.input.mention_search.dismissed = None;
            return;
        };
        if self.input.mention_search.dismissed.as_deref() == Some(query.as_str()) {
            return;
        }
        self.input.mention_search.dismissed = None;
        let opening = self.input.mention.is_none();
        if !opening
            && self
                .input
                .mention
                .as_ref()
                .is_some_and(|m| m.query == query)
        {
            return;
        }
        match &mut self.input.mention {
            Some(picker) => picker.query = query.clone(),
            None => {
                self.input.mention = Some(MentionPicker {
                    query: query.clone(),
                    results: Vec::new(),
                    answered: None,
                    selected: 0,
                })
            }
        }
        let sender = self.input.mention_search.queries.get_or_insert_with(|| {
            let tasks = self.tasks.clone();
            index::start(self.settings.cwd.clone(), move |query, found| {
                let _ = tasks.send(TaskResult::Mentions(query, found));
            })
        });
        let _ = sender.send(index::Query {
            text: query,
            refresh: opening,
        });
        self.dirty = true;
    }

    /// The worker answered `query`.
    pub fn on_mentions(&mut self, query: String, found: Vec<String>) {
        if let Some(picker) = &mut self.input.mention
            && picker.query == query
        {
            picker.selected = picker.selected.min(found.len().saturating_sub(1));
            picker.results = found;
            picker.answered = Some(query);
            self.dirty = true;
        }
    }

    /// Whether the `@` word already names the highlighted path exactly.
    pub fn mention_is_exact(&self) -> bool {
        self.input
            .mention
            .as_ref()
            .is_some_and(|m| m.results.get(m.selected) == Some(&m.query))
    }

    /// Whether the picker is showing matches (its keys take precedence).
    pub fn mention_open(&self) -> bool {
        self.input
            .mention
            .as_ref()
            .is_some_and(|m| !m.results.is_empty())
    }

    pub fn mention_up(&mut self) {
        if let Some(picker) = &mut self.input.mention {
            picker.selected = picker.selected.saturating_sub(1);
        }
    }

    pub fn mention_down(&mut self) {
        if let Some(picker) = &mut self.input.mention {
            picker.selected = (picker.selected + 1).min(picker.results.len().saturating_sub(1));
        }
    }

    /// tab or enter: the chosen path replaces the `@` word.
    pub fn choose_mention(&mut self) {
        let Some(picker) = self.input.mention.take() else {
            return;
        };
        if let Some(path) = picker.results.get(picker.selected) {
            self.input.composer.complete_mention(path);
        }
        self.dirty = true;
    }

    /// esc: close the picker until the word changes.
    pub fn dismiss_mention(&mut self) {
        if let Some(picker) = self.input.mention.take() {
            self.input.mention_search.dismissed = Some(picker.query);
        }
        self.dirty = true;
    }
}

impl MentionPicker {
    pub fn rows(&self, width: u16, theme: &Theme) -> Vec<Line<'static>> {
        self.results
            .iter()
            .enumerate()
            .map(|(i, path)| {
                let (marker, style) = if i == self.selected {
                    ("› ", theme.accent())
                } else {
                    ("  ", theme.dim())
                };
                Line::from(vec![
                    Span::styled(marker, theme.accent()),
                    Span::styled(
                        super::cells::cut(
                            &format!("@{path}"),
                            usize::from(width).saturating_sub(2),
                        ),
                        style,
                    ),
                ])
            })
            .collect()
    }
}
