//! Renaming and deleting the picker's highlighted session, through what `agent sessions
//! rename|rm` use (`session::manage::rename`, `housekeeping::delete`), off the key path:
//! ctrl+r edits the title in place (enter saves, esc cancels), ctrl+d asks y/n naming the
//! session. The session open in this interface, and one a running agent holds, are refused
//! with a message saying why; nothing is deleted then.

use super::content::Found;
use super::{Picker, Theme};
use crate::session::SessionError;
use crate::tui::app::TaskResult;
use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
use ratatui::text::{Line, Span};
use std::path::{Path, PathBuf};

/// What the picker's keys do now.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Mode {
    /// Typing searches.
    Search,
    /// Typing edits the highlighted session's new title.
    Rename { path: PathBuf, title: String },
    /// y deletes the session, n (or esc) keeps it.
    ConfirmDelete { path: PathBuf, title: String },
}

/// What the picker's work off the key path reports.
#[derive(Debug)]
pub enum Update {
    /// The search through contents found a session, or is done.
    Found(Found),
    /// A rename ended: the new title, or why not.
    Renamed {
        path: PathBuf,
        result: Result<String, String>,
    },
    /// A deletion ended: what to say, or why not.
    Deleted {
        path: PathBuf,
        result: Result<String, String>,
    },
}

impl Picker {
    /// The keys of renaming and deleting; `None` when the key is the search's.
    pub(super) fn manage_key(&mut self, key: KeyEvent) -> Option<super::Next> {
        let control = key.modifiers.contains(KeyModifiers::CONTROL);
        match &mut self.mode {
            Mode::Search => match key.code {
                KeyCode::Char('r') if control => {
                    self.start_rename();
                    Some(super::Next::Stay)
                }
                KeyCode::Char('d') if control => {
                    self.ask_delete();
                    Some(super::Next::Stay)
                }
                _ => None,
            },
            Mode::Rename { title, .. } => {
                match key.code {
                    KeyCode::Esc => self.mode = Mode::Search,
                    KeyCode::Enter => self.rename(),
                    KeyCode::Backspace => {
                        title.pop();
                    }
                    KeyCode::Char('u') if control => title.clear(),
                    KeyCode::Char(c) if !control => title.push(c),
                    _ => {}
                }
                Some(super::Next::Stay)
            }
            Mode::ConfirmDelete { .. } => {
                match key.code {
                    KeyCode::Char('y' | 'Y') => self.delete(),
                    KeyCode::Char('n' | 'N') | KeyCode::Esc => {
                        self.mode = Mode::Search;
                        self.said = Some(("Nothing was deleted.".to_string(), false));
                    }
                    _ => {}
                }
                Some(super::Next::Stay)
            }
        }
    }

    /// The highlighted session's file and title.
    fn highlighted(&self) -> Option<(PathBuf, String)> {
        let shown = self.shown.get(self.selected)?;
        let entry = self.entries.get(shown.entry)?;
        Some((entry.path.clone(), entry.title.clone()))
    }

    fn start_rename(&mut self) {
        let Some((path, title)) = self.highlighted() else {
            return;
        };
        let title = if title == super::NO_TITLE {
            String::new()
        } else {
            title
        };
        self.said = None;
        self.mode = Mode::Rename { path, title };
    }

    /// Save the typed title (`session::manage::rename`, as `agent sessions rename`).
    fn rename(&mut self) {
        let Mode::Rename { path, title } = std::mem::replace(&mut self.mode, Mode::Search) else {
            return;
        };
        let Some(link) = &self.link else {
            return;
        };
        let tasks = link.tasks.clone();
        crate::tasks::spawn(async move {
            let result = crate::session::manage::rename(&path, &title)
                .await
                .map_err(|e| match e {
                    SessionError::Locked(_) => {
                        "that session is open in a running agent: rename it there with /rename"
                            .to_string()
                    }
                    e => e.to_string(),
                });
            let _ = tasks.send(TaskResult::Picker(Update::Renamed { path, result }));
        });
    }

    /// Ask before deleting the highlighted session; the session open here is refused at
    /// once.
    fn ask_delete(&mut self) {
        let Some((path, title)) = self.highlighted() else {
            return;
        };
        let open_here = self
            .link
            .as_ref()
            .and_then(|link| link.open_here.as_deref());
        if open_here.is_some_and(|open| same_file(open, &path)) {
            self.said = Some((
                format!("“{title}” is the session open here: it cannot be deleted while in use"),
                true,
            ));
            return;
        }
        self.said = None;
        self.mode = Mode::ConfirmDelete { path, title };
    }

    /// Delete the session (`housekeeping::delete`, as `agent sessions rm`), on a blocking
    /// thread: it locks the session and its sub-agents' first, and is refused when a
    /// running agent holds one of them.
    fn delete(&mut self) {
        let Mode::ConfirmDelete { path, title } = std::mem::replace(&mut self.mode, Mode::Search)
        else {
            return;
        };
        let Some(link) = &self.link else {
            return;
        };
        self.said = Some((format!("Deleting “{title}”…"), false));
        let tasks = link.tasks.clone();
        let checkpoints = link.checkpoints_dir.clone();
        crate::tasks::spawn_blocking(move || {
            let result = delete_session(&path, &title, &checkpoints);
            let _ = tasks.send(TaskResult::Picker(Update::Deleted { path, result }));
        });
    }

    /// A rename or deletion ended.
    pub(super) fn managed(&mut self, update: Update) {
        match update {
            Update::Found(_) => {}
            Update::Renamed { path, result } => match result {
                Ok(title) => {
                    if let Some(entry) = self.entries.iter_mut().find(|e| e.path == path) {
                        entry.title = title.clone();
                    }
                    self.said = Some((format!("Renamed to “{title}”."), false));
                }
                Err(why) => self.said = Some((why, true)),
            },
            Update::Deleted { path, result } => match result {
                Ok(said) => {
                    self.entries.retain(|e| e.path != path);
                    self.said = Some((said, false));
                    let selected = self.selected;
                    self.search();
                    self.selected = selected.min(self.shown.len().saturating_sub(1));
                }
                Err(why) => self.said = Some((why, true)),
            },
        }
    }

    /// The second line while renaming or asking; `None` while searching.
    pub(super) fn mode_line(&self, theme: &Theme) -> Option<Line<'static>> {
        match &self.mode {
            Mode::Search => None,
            Mode::Rename { title, .. } => Some(Line::from(vec![
                Span::styled("  new title: ", theme.dim()),
                Span::styled(format!("{title}▏"), theme.accent()),
            ])),
            Mode::ConfirmDelete { path, title } => {
                let id = crate::session::store::id_of(path).unwrap_or("?");
                Some(Line::from(vec![
                    Span::styled(format!("  Delete “{title}” ({id})? "), theme.warning()),
                    Span::styled(
                        "Its tool outputs, sub-agents and unshared checkpoints go too.",
                        theme.dim(),
                    ),
                ]))
            }
        }
    }

    /// The keys, as the keymap binds them.
    pub(super) fn footer(&self, theme: &Theme) -> Line<'static> {
        let text = match &self.mode {
            Mode::Search => {
                let (rename, delete) = self.link.as_ref().map_or(("ctrl+r", "ctrl+d"), |l| {
                    (l.rename_keys.as_str(), l.delete_keys.as_str())
                });
                let mut keys = vec!["enter opens".to_string()];
                if !rename.is_empty() {
                    keys.push(format!("{rename} renames"));
                }
                if !delete.is_empty() {
                    keys.push(format!("{delete} deletes"));
                }
                keys.push("esc cancels".to_string());
                keys.join(" · ")
            }
            Mode::Rename { .. } => "enter saves · esc cancels".to_string(),
            Mode::ConfirmDelete { .. } => "y deletes · n keeps it".to_string(),
        };
        Line::from(Span::styled(format!("  {text}"), theme.dim()))
    }
}

/// Whether two paths name the same file (a path given with `--session` may be spelled
/// otherwise than the listing's).
fn same_file(a: &Path, b: &Path) -> bool {
    match (std::fs::canonicalize(a), std::fs::canonicalize(b)) {
        (Ok(a), Ok(b)) => a == b,
        _ => a == b,
    }
}

/// Delete the session at `path` with everything that belongs to it; what to say.
fn delete_session(path: &Path, title: &str, checkpoints: &Path) -> Result<String, String> {
    let removal = crate::session::manage::plan_removal(path).map_err(|e| match e {
        SessionError::Locked(locked) if locked == path => {
            format!("“{title}” is open in a running agent: quit it first (nothing was deleted)")
        }
        SessionError::Locked(_) => format!(
            "a sub-agent session of “{title}” is open in a running agent: quit it first (nothing was deleted)"
        ),
        e => format!("{e} (nothing was deleted)"),
    })?;
    let records = crate::housekeeping::delete(removal, checkpoints)?;
    let freed = crate::housekeeping::sweep(checkpoints, records);
    let mut said = format!("Deleted “{title}”.");
    if let crate::housekeeping::Freed::Failed(why) = &freed {
        said.push_str(&format!(" Its checkpoint data could not be freed: {why}"));
    }
    Ok(said)
}
