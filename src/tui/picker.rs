//! The session picker of `/resume` and `agent -r`: this directory's sessions, most recent
//! first, each with its title (`session::title`: its name, else its first prompt), when it
//! was last used and its messages; forks right under the session they were forked from.
//! Typing searches: the titles are matched fuzzily (`nucleo-matcher`) and ranked by score,
//! and sessions whose text holds the typed words (a byte search through each file, only
//! when no title matches well enough to fill the list) follow, marked "in content".

use super::theme::Theme;
use super::views::menu::Choice;
use super::views::{Next, View};
use crate::session::store;
use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
use nucleo_matcher::pattern::{CaseMatching, Normalization, Pattern};
use nucleo_matcher::{Config, Matcher, Utf32Str};
use ratatui::text::{Line, Span};
use std::path::{Path, PathBuf};
use std::time::SystemTime;

/// Rows of sessions shown at once.
const VISIBLE: usize = 8;

pub struct PickerEntry {
    pub path: PathBuf,
    pub id: String,
    pub modified: SystemTime,
    pub title: String,
    pub messages: usize,
    /// 0 for a session, 1 for a fork shown under it, and so on.
    pub depth: usize,
}

/// A shown row: which entry, and whether only its content matched the search.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Shown {
    entry: usize,
    in_content: bool,
}

pub struct Picker {
    pub entries: Vec<PickerEntry>,
    /// The rows shown: every entry in tree order, or those matching the search, best first.
    shown: Vec<Shown>,
    /// The selected row (in `shown`).
    pub selected: usize,
    /// The search line.
    pub query: String,
}

impl Picker {
    pub fn load(sessions_dir: &Path, cwd: &Path, exclude: Option<&Path>) -> Picker {
        let sessions: Vec<_> = store::list_for(sessions_dir, cwd)
            .into_iter()
            .filter(|s| Some(s.path.as_path()) != exclude)
            .collect();
        let entries: Vec<PickerEntry> = store::forks_under_parents(sessions)
            .into_iter()
            .map(|(depth, s)| PickerEntry {
                title: s.title.unwrap_or_else(|| "(no messages)".to_string()),
                messages: s.messages,
                path: s.path,
                id: s.id,
                modified: s.modified,
                depth,
            })
            .collect();
        Picker::of(entries)
    }

    fn of(entries: Vec<PickerEntry>) -> Picker {
        let mut picker = Picker {
            entries,
            shown: Vec::new(),
            selected: 0,
            query: String::new(),
        };
        picker.search();
        picker
    }

    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    pub fn up(&mut self) {
        self.selected = self.selected.saturating_sub(1);
    }

    pub fn down(&mut self) {
        if self.selected + 1 < self.shown.len() {
            self.selected += 1;
        }
    }

    /// A character typed on the search line.
    pub fn type_char(&mut self, c: char) {
        self.query.push(c);
        self.search();
    }

    pub fn backspace(&mut self) {
        self.query.pop();
        self.search();
    }

    /// Empty the search line; `false` when it was empty already.
    pub fn clear_query(&mut self) -> bool {
        if self.query.is_empty() {
            return false;
        }
        self.query.clear();
        self.search();
        true
    }

    pub fn selected_path(&self) -> Option<PathBuf> {
        let shown = self.shown.get(self.selected)?;
        self.entries.get(shown.entry).map(|e| e.path.clone())
    }

    /// Show what matches the search line: every entry when it is empty; else the titles
    /// that match, best first, then (while the list is not full) the sessions whose file
    /// holds the query's words.
    fn search(&mut self) {
        self.selected = 0;
        let query = self.query.trim();
        if query.is_empty() {
            self.shown = (0..self.entries.len())
                .map(|entry| Shown {
                    entry,
                    in_content: false,
                })
                .collect();
            return;
        }
        let mut matcher = Matcher::new(Config::DEFAULT);
        let pattern = Pattern::parse(query, CaseMatching::Smart, Normalization::Smart);
        let mut buffer = Vec::new();
        let mut scored: Vec<(u32, usize)> = self
            .entries
            .iter()
            .enumerate()
            .filter_map(|(i, e)| {
                let score = pattern.score(Utf32Str::new(&e.title, &mut buffer), &mut matcher)?;
                Some((score, i))
            })
            .collect();
        scored.sort_by(|a, b| b.0.cmp(&a.0).then(a.1.cmp(&b.1)));
        self.shown = scored
            .into_iter()
            .map(|(_, entry)| Shown {
                entry,
                in_content: false,
            })
            .collect();
        if self.shown.len() >= VISIBLE {
            return;
        }
        let words: Vec<String> = query.split_whitespace().map(str::to_lowercase).collect();
        for (entry, session) in self.entries.iter().enumerate() {
            if self.shown.iter().any(|s| s.entry == entry) {
                continue;
            }
            if file_holds(&session.path, &words) {
                self.shown.push(Shown {
                    entry,
                    in_content: true,
                });
            }
        }
    }

    pub fn rows(&self, width: u16, theme: &Theme) -> Vec<Line<'static>> {
        let mut rows = vec![Line::from(vec![
            Span::styled("Resume a session ", theme.bold()),
            Span::styled(
                "(type to search · ↑↓ choose · enter opens · esc cancels)",
                theme.dim(),
            ),
        ])];
        rows.push(if self.query.is_empty() {
            Line::from(vec![
                Span::styled("  search: ", theme.dim()),
                Span::styled("titles and contents", theme.dim()),
            ])
        } else {
            Line::from(vec![
                Span::styled("  search: ", theme.dim()),
                Span::styled(format!("{}▏", self.query), theme.accent()),
            ])
        });
        if self.shown.is_empty() {
            rows.push(Line::from(Span::styled(
                "  no session matches",
                theme.dim(),
            )));
        }
        let start = self.selected.saturating_sub(VISIBLE - 1);
        for (i, shown) in self.shown.iter().enumerate().skip(start).take(VISIBLE) {
            let Some(entry) = self.entries.get(shown.entry) else {
                continue;
            };
            rows.push(self.row(entry, *shown, i == self.selected, width, theme));
        }
        rows
    }

    /// `› title · 3 h ago · 12 messages`, a fork indented under its parent while no search
    /// reorders the list.
    fn row(
        &self,
        entry: &PickerEntry,
        shown: Shown,
        selected: bool,
        width: u16,
        theme: &Theme,
    ) -> Line<'static> {
        let marker = if selected { "› " } else { "  " };
        let fork = if entry.depth == 0 {
            String::new()
        } else if self.query.is_empty() {
            format!("{}↳ fork: ", "  ".repeat(entry.depth - 1))
        } else {
            "fork: ".to_string()
        };
        let messages = match entry.messages {
            1 => "1 message".to_string(),
            n => format!("{n} messages"),
        };
        let found = if shown.in_content {
            " · in content"
        } else {
            ""
        };
        let facts = format!(
            " · {} · {messages}{found}",
            crate::time::ago(entry.modified)
        );
        let room = (width as usize)
            .saturating_sub(2 + fork.chars().count() + facts.chars().count())
            .max(10);
        let style = if selected {
            theme.accent()
        } else {
            theme.text()
        };
        Line::from(vec![
            Span::styled(marker, theme.accent()),
            Span::styled(fork, theme.dim()),
            Span::styled(super::cells::cut(&entry.title, room), style),
            Span::styled(facts, theme.dim()),
        ])
    }
}

impl View for Picker {
    /// ↑↓ move, typing searches (ctrl+u empties the search line), enter continues the
    /// highlighted session, esc empties the search line first, then closes.
    fn key(&mut self, key: KeyEvent) -> Next {
        let control = key.modifiers.contains(KeyModifiers::CONTROL);
        match key.code {
            KeyCode::Up => self.up(),
            KeyCode::Down => self.down(),
            KeyCode::Enter => {
                return self
                    .selected_path()
                    .map_or(Next::Close, |path| Next::Choose(Choice::Resume(path)));
            }
            KeyCode::Esc if self.clear_query() => {}
            KeyCode::Esc => return Next::Close,
            KeyCode::Char('u') if control => {
                self.clear_query();
            }
            KeyCode::Char(c) if !control => self.type_char(c),
            KeyCode::Backspace => self.backspace(),
            _ => {}
        }
        Next::Stay
    }

    fn rows(&self, width: u16, _max_rows: u16, theme: &Theme) -> Vec<Line<'static>> {
        Picker::rows(self, width, theme)
    }
}

/// Whether the file at `path` holds every one of `words` (lowercase), ignoring ASCII case:
/// a byte search (`memchr::memmem`) through the file, one block of it in memory at a time.
fn file_holds(path: &Path, words: &[String]) -> bool {
    use std::io::Read;
    let Ok(mut file) = std::fs::File::open(path) else {
        return false;
    };
    let finders: Vec<memchr::memmem::Finder<'_>> = words
        .iter()
        .map(|w| memchr::memmem::Finder::new(w.as_bytes()))
        .collect();
    let mut found = vec![false; finders.len()];
    let overlap = words.iter().map(String::len).max().unwrap_or(0);
    let mut block = vec![0u8; 256 * 1024];
    let mut kept = 0;
    loop {
        let Ok(read) = file.read(&mut block[kept..]) else {
            return false;
        };
        if read == 0 {
            return false;
        }
        let filled = kept + read;
        block[kept..filled].make_ascii_lowercase();
        for (finder, found) in finders.iter().zip(found.iter_mut()) {
            *found = *found || finder.find(&block[..filled]).is_some();
        }
        if found.iter().all(|f| *f) {
            return true;
        }
        // The block's end is searched again with what follows: a word across the boundary.
        kept = overlap.min(filled);
        block.copy_within(filled - kept..filled, 0);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry(title: &str, path: &Path) -> PickerEntry {
        PickerEntry {
            path: path.to_path_buf(),
            id: title.to_string(),
            modified: SystemTime::now(),
            title: title.to_string(),
            messages: 2,
            depth: 0,
        }
    }

    #[test]
    fn typing_filters_titles_fuzzily_then_contents() {
        let dir = tempfile::tempdir().unwrap();
        let file = |name: &str, text: &str| {
            let path = dir.path().join(name);
            std::fs::write(&path, text).unwrap();
            path
        };
        let mut picker = Picker::of(vec![
            entry("Fix the parser", &file("a", "nothing")),
            entry("Release notes", &file("b", "the PARSER table")),
            entry("Write docs", &file("c", "other")),
        ]);
        assert_eq!(picker.shown.len(), 3);
        for c in "prsr".chars() {
            picker.type_char(c);
        }
        let titles = |p: &Picker| -> Vec<(String, bool)> {
            p.shown
                .iter()
                .map(|s| (p.entries[s.entry].title.clone(), s.in_content))
                .collect()
        };
        assert_eq!(titles(&picker), [("Fix the parser".to_string(), false)]);
        picker.clear_query();
        for c in "parser".chars() {
            picker.type_char(c);
        }
        assert_eq!(
            titles(&picker),
            [
                ("Fix the parser".to_string(), false),
                ("Release notes".to_string(), true)
            ]
        );
        picker.down();
        assert_eq!(picker.selected_path(), Some(dir.path().join("b")));
        picker.backspace();
        assert_eq!(picker.selected, 0);
    }

    #[test]
    fn a_word_across_blocks_is_found() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("s");
        let mut text = "x".repeat(256 * 1024 - 3);
        text.push_str("needle");
        std::fs::write(&path, text).unwrap();
        assert!(file_holds(&path, &["needle".to_string()]));
        assert!(!file_holds(
            &path,
            &["needle".to_string(), "hay".to_string()]
        ));
    }
}
