//! The session picker of `/resume` and `agent -r`: this directory's sessions, most recent
//! first, each with when it was last used and how it began; forks right under the session
//! they were forked from.

use super::theme::Theme;
use crate::protocol::message::Message;
use crate::session::format::Entry;
use crate::session::store;
use ratatui::text::{Line, Span};
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::time::SystemTime;

/// Rows of sessions shown at once.
const VISIBLE: usize = 8;

pub struct PickerEntry {
    pub path: PathBuf,
    pub id: String,
    pub modified: SystemTime,
    pub preview: String,
    /// 0 for a session, 1 for a fork shown under it, and so on.
    pub depth: usize,
}

pub struct Picker {
    pub entries: Vec<PickerEntry>,
    pub selected: usize,
}

impl Picker {
    pub fn load(sessions_dir: &Path, cwd: &Path, exclude: Option<&Path>) -> Picker {
        let sessions: Vec<_> = store::list_for(sessions_dir, cwd)
            .into_iter()
            .filter(|s| Some(s.path.as_path()) != exclude)
            .collect();
        let entries = store::forks_under_parents(sessions)
            .into_iter()
            .map(|(depth, s)| PickerEntry {
                preview: first_prompt(&s.path).unwrap_or_else(|| "(no messages)".to_string()),
                path: s.path,
                id: s.id,
                modified: s.modified,
                depth,
            })
            .collect();
        Picker {
            entries,
            selected: 0,
        }
    }

    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    pub fn up(&mut self) {
        self.selected = self.selected.saturating_sub(1);
    }

    pub fn down(&mut self) {
        if self.selected + 1 < self.entries.len() {
            self.selected += 1;
        }
    }

    pub fn selected_path(&self) -> Option<PathBuf> {
        self.entries.get(self.selected).map(|e| e.path.clone())
    }

    pub fn rows(&self, width: u16, theme: &Theme) -> Vec<Line<'static>> {
        let mut rows = vec![Line::from(vec![
            Span::styled("Resume a session ", theme.bold()),
            Span::styled("(↑↓ choose · enter opens · esc cancels)", theme.dim()),
        ])];
        let start = self.selected.saturating_sub(VISIBLE - 1);
        for (i, entry) in self.entries.iter().enumerate().skip(start).take(VISIBLE) {
            let selected = i == self.selected;
            let marker = if selected { "› " } else { "  " };
            let when = ago(entry.modified);
            // A fork sits under the session it came from.
            let fork = if entry.depth == 0 {
                String::new()
            } else {
                format!("{}↳ fork: ", "  ".repeat(entry.depth - 1))
            };
            let room = (width as usize).saturating_sub(when.len() + 6 + fork.chars().count());
            let style = if selected {
                theme.accent()
            } else {
                theme.text()
            };
            rows.push(Line::from(vec![
                Span::styled(marker, theme.accent()),
                Span::styled(format!("{when:>8}  "), theme.dim()),
                Span::styled(fork, theme.dim()),
                Span::styled(super::cells::cut(&entry.preview, room), style),
            ]));
        }
        rows
    }
}

/// The first user message of a session file (reading only its beginning).
fn first_prompt(path: &Path) -> Option<String> {
    let file = std::fs::File::open(path).ok()?;
    for line in BufReader::new(file).lines().take(200) {
        let line = line.ok()?;
        if let Ok(Entry::Message {
            message: Message::User(user),
            ..
        }) = serde_json::from_str(&line)
        {
            return Some(
                user.typed_text()
                    .split_whitespace()
                    .collect::<Vec<_>>()
                    .join(" "),
            );
        }
    }
    None
}

/// "just now", "5 min", "3 h", "2 d".
fn ago(when: SystemTime) -> String {
    let seconds = SystemTime::now()
        .duration_since(when)
        .map(|d| d.as_secs())
        .unwrap_or(0);
    match seconds {
        0..60 => "just now".to_string(),
        60..3600 => format!("{} min", seconds / 60),
        3600..86_400 => format!("{} h", seconds / 3600),
        _ => format!("{} d", seconds / 86_400),
    }
}
