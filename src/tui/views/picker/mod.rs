//! The session picker of `/resume` and `agent -r`: this directory's sessions, most recent
//! first, each with its title (`session::title`: its name, else its first prompt), when it
//! was last used and its messages; forks right under the session they were forked from.
//! Typing searches: the titles are matched fuzzily (`nucleo-matcher`) and ranked by score
//! at once, and sessions whose text holds the typed words (only when no title matches well
//! enough to fill the list) follow, marked "in content", as a search off the key path finds
//! them (`content`). The highlighted session can be renamed or deleted (`manage`).

mod content;
mod manage;

use super::super::theme::Theme;
use super::menu::Choice;
use super::{Next, View};
use crate::session::store;
use crate::tui::app::TaskResult;
use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
use nucleo_matcher::pattern::{CaseMatching, Normalization, Pattern};
use nucleo_matcher::{Config, Matcher, Utf32Str};
use ratatui::text::{Line, Span};
use std::path::{Path, PathBuf};
use std::time::SystemTime;
use tokio::sync::mpsc::UnboundedSender;
use tokio_util::sync::CancellationToken;

pub use manage::Update;

/// Rows of sessions shown at once.
const VISIBLE: usize = 8;

/// The title shown for a session with no prompt yet.
const NO_TITLE: &str = "(no messages)";

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
    /// What the keys edit or answer now: the search line, a new title, a y/n question.
    mode: manage::Mode,
    /// Where the picker's work off the key path reports, and what it needs; `None` in unit
    /// tests, where the search through contents runs at once.
    link: Option<Link>,
    /// The search through contents going on (cancelled when the search line changes).
    searching: Option<CancellationToken>,
    /// The number of the current search, so a stale match is dropped.
    generation: u64,
    /// What the last rename or delete said, and whether it was a refusal.
    said: Option<(String, bool)>,
}

/// What the picker needs to work off the key path.
pub struct Link {
    pub tasks: UnboundedSender<TaskResult>,
    pub checkpoints_dir: PathBuf,
    /// The session open in this interface: never deleted from here.
    pub open_here: Option<PathBuf>,
    /// The effective chords of `picker.rename` and `picker.delete`, for the footer.
    pub rename_keys: String,
    pub delete_keys: String,
}

impl Drop for Picker {
    fn drop(&mut self) {
        if let Some(search) = &self.searching {
            search.cancel();
        }
    }
}

impl Picker {
    /// The picker with its link to the interface.
    pub fn linked(mut self, link: Link) -> Picker {
        self.link = Some(link);
        self.search();
        self
    }

    pub fn load(sessions_dir: &Path, cwd: &Path, exclude: Option<&Path>) -> Picker {
        let sessions: Vec<_> = store::list_for(sessions_dir, cwd)
            .into_iter()
            .filter(|s| Some(s.path.as_path()) != exclude)
            .collect();
        let entries: Vec<PickerEntry> = store::forks_under_parents(sessions)
            .into_iter()
            .map(|(depth, s)| PickerEntry {
                title: s.title.unwrap_or_else(|| NO_TITLE.to_string()),
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
            mode: manage::Mode::Search,
            link: None,
            searching: None,
            generation: 0,
            said: None,
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
        self.said = None;
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
    /// that match, best first, at once, then (while the list is not full) the sessions
    /// whose file holds the query's words, as the search through contents finds them.
    fn search(&mut self) {
        self.selected = 0;
        self.generation += 1;
        if let Some(search) = self.searching.take() {
            search.cancel();
        }
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
        let candidates: Vec<(usize, PathBuf)> = self
            .entries
            .iter()
            .enumerate()
            .filter(|(entry, _)| !self.shown.iter().any(|s| s.entry == *entry))
            .map(|(entry, session)| (entry, session.path.clone()))
            .collect();
        let cancel = CancellationToken::new();
        match &self.link {
            Some(link) => {
                self.searching = Some(cancel.clone());
                content::start(
                    self.generation,
                    candidates,
                    words,
                    cancel,
                    link.tasks.clone(),
                );
            }
            None => {
                for (entry, path) in candidates {
                    if content::file_holds(&path, &words, &cancel) {
                        self.found_in_content(self.generation, entry);
                    }
                }
            }
        }
    }

    /// The search through contents found `entry` (for search `generation`): it goes after
    /// the rows shown, which keep their places.
    fn found_in_content(&mut self, generation: u64, entry: usize) {
        if generation != self.generation || self.shown.iter().any(|s| s.entry == entry) {
            return;
        }
        self.shown.push(Shown {
            entry,
            in_content: true,
        });
    }

    /// What the work off the key path found or did.
    pub fn update(&mut self, update: Update) {
        match update {
            Update::Found(content::Found::Match { generation, entry }) => {
                self.found_in_content(generation, entry);
            }
            Update::Found(content::Found::Done { generation }) => {
                if generation == self.generation {
                    self.searching = None;
                }
            }
            other => self.managed(other),
        }
    }

    pub fn rows(&self, width: u16, theme: &Theme) -> Vec<Line<'static>> {
        let mut rows = vec![Line::from(vec![
            Span::styled("Resume a session ", theme.bold()),
            Span::styled("(type to search · ↑↓ choose)", theme.dim()),
        ])];
        rows.push(match self.mode_line(theme) {
            Some(line) => line,
            None if self.query.is_empty() => Line::from(vec![
                Span::styled("  search: ", theme.dim()),
                Span::styled("titles and contents", theme.dim()),
            ]),
            None => {
                let mut spans = vec![
                    Span::styled("  search: ", theme.dim()),
                    Span::styled(format!("{}▏", self.query), theme.accent()),
                ];
                if self.searching.is_some() {
                    spans.push(Span::styled("  searching contents…", theme.dim()));
                }
                Line::from(spans)
            }
        });
        if let Some((said, refused)) = &self.said {
            let style = if *refused { theme.error() } else { theme.dim() };
            rows.push(Line::from(Span::styled(format!("  {said}"), style)));
        }
        if self.entries.is_empty() {
            rows.push(Line::from(Span::styled("  no sessions left", theme.dim())));
        } else if self.shown.is_empty() && self.searching.is_none() {
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
        rows.push(self.footer(theme));
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
            Span::styled(super::super::cells::cut(&entry.title, room), style),
            Span::styled(facts, theme.dim()),
        ])
    }
}

impl View for Picker {
    /// ↑↓ move, typing searches (ctrl+u empties the search line), enter continues the
    /// highlighted session, esc empties the search line first, then closes; ctrl+r renames
    /// and ctrl+d deletes the highlighted session (`manage`).
    fn key(&mut self, key: KeyEvent) -> Next {
        if let Some(next) = self.manage_key(key) {
            return next;
        }
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

    fn key_context(&self) -> crate::tui::keymap::Context {
        // While a title is typed only the global keys are bindable.
        match self.mode {
            manage::Mode::Search => crate::tui::keymap::Context::Picker,
            _ => crate::tui::keymap::Context::Global,
        }
    }

    fn rows(&self, width: u16, _max_rows: u16, theme: &Theme) -> Vec<Line<'static>> {
        Picker::rows(self, width, theme)
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

    /// The session open in this interface is refused at once (even spelled otherwise), and
    /// no question is asked; another one is asked about, naming it.
    #[tokio::test]
    async fn the_session_open_here_is_not_deleted() {
        let dir = tempfile::tempdir().unwrap();
        let here = dir.path().join("T_here1.jsonl");
        let other = dir.path().join("T_other1.jsonl");
        std::fs::write(&here, "x").unwrap();
        std::fs::write(&other, "y").unwrap();
        let (tasks, _results) = tokio::sync::mpsc::unbounded_channel();
        let link = Link {
            tasks,
            checkpoints_dir: dir.path().join("checkpoints"),
            open_here: Some(dir.path().join(".").join("T_here1.jsonl")),
            rename_keys: "ctrl+r".into(),
            delete_keys: "ctrl+d".into(),
        };
        let mut picker =
            Picker::of(vec![entry("Here", &here), entry("Other", &other)]).linked(link);
        let ctrl_d = KeyEvent::new(KeyCode::Char('d'), KeyModifiers::CONTROL);
        assert_eq!(picker.key(ctrl_d), Next::Stay);
        let said = picker.said.clone().unwrap();
        assert!(said.1, "{said:?}");
        assert!(
            said.0.contains("“Here” is the session open here"),
            "{said:?}"
        );
        assert_eq!(picker.mode, manage::Mode::Search);
        // y now is only a search.
        picker.key(KeyEvent::new(KeyCode::Char('y'), KeyModifiers::NONE));
        assert!(here.is_file());
        picker.clear_query();
        picker.down();
        picker.key(ctrl_d);
        let theme = Theme::default();
        let rows: Vec<String> = picker
            .rows(80, &theme)
            .iter()
            .map(|l| l.to_string())
            .collect();
        assert!(
            rows.iter().any(|r| r.contains("Delete “Other” (other1)?")),
            "{rows:?}"
        );
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
}
