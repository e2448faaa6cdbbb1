//! A list to choose from at the bottom of the screen, for `/rewind`, `/fork`, `/tree`,
//! `/ps`, plan approval and hook trust: a title, items that each say what choosing them
//! does, ↑↓ to move, enter to choose, esc to close (or to answer "not now").

use super::super::theme::Theme;
use super::{Next, View};
use crate::agent::rewind::RestoreMode;
use crossterm::event::{KeyCode, KeyEvent};
use ratatui::text::{Line, Span};

/// Rows of items shown at once.
const VISIBLE: usize = 8;

/// What choosing an item does.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Choice {
    /// Ask how to rewind to before user message `entry` (`preview`: its start).
    RewindTo {
        entry: String,
        preview: String,
    },
    Rewind {
        entry: String,
        mode: RestoreMode,
        force: bool,
    },
    UndoRewind {
        force: bool,
    },
    /// Fork at entry `.0`.
    Fork(String),
    /// Continue on the branch whose tip is entry `.0`.
    Switch(String),
    /// Kill background shell `.0` (`/ps`).
    KillShell(String),
    /// Carry out the plan just presented, in this mode.
    ApprovePlan(crate::tools::permission::PermissionMode),
    /// Run the project's hooks (or not; `None`: not now, ask again next time).
    TrustHooks(Option<bool>),
    /// Continue this session (the session picker).
    Resume(std::path::PathBuf),
    Cancel,
}

pub struct MenuItem {
    pub label: String,
    /// Levels of indentation (a branch of `/tree`).
    pub indent: usize,
    /// Shown dimmed after the label.
    pub note: String,
    pub choice: Choice,
}

impl MenuItem {
    pub fn new(label: impl Into<String>, choice: Choice) -> MenuItem {
        MenuItem {
            label: label.into(),
            indent: 0,
            note: String::new(),
            choice,
        }
    }

    pub fn note(mut self, note: impl Into<String>) -> MenuItem {
        self.note = note.into();
        self
    }
}

pub struct Menu {
    pub title: String,
    pub items: Vec<MenuItem>,
    pub selected: usize,
    /// What esc means, when closing is an answer too (the hook-trust question).
    pub on_esc: Option<Choice>,
}

impl Menu {
    pub fn new(title: impl Into<String>, items: Vec<MenuItem>) -> Menu {
        Menu {
            title: title.into(),
            items,
            selected: 0,
            on_esc: None,
        }
    }

    /// esc chooses `choice` (it still closes the menu).
    pub fn on_esc(mut self, choice: Choice) -> Menu {
        self.on_esc = Some(choice);
        self
    }

    pub fn up(&mut self) {
        self.selected = self.selected.saturating_sub(1);
    }

    pub fn down(&mut self) {
        if self.selected + 1 < self.items.len() {
            self.selected += 1;
        }
    }

    pub fn chosen(&self) -> Option<Choice> {
        self.items
            .get(self.selected)
            .map(|item| item.choice.clone())
    }

    pub fn rows(&self, width: u16, theme: &Theme) -> Vec<Line<'static>> {
        let mut rows = vec![Line::from(vec![
            Span::styled(format!("{} ", self.title), theme.bold()),
            Span::styled("(↑↓ choose · enter · esc cancels)", theme.dim()),
        ])];
        let start = self.selected.saturating_sub(VISIBLE - 1);
        for (i, item) in self.items.iter().enumerate().skip(start).take(VISIBLE) {
            let selected = i == self.selected;
            let marker = if selected { "› " } else { "  " };
            let indent = "  ".repeat(item.indent);
            let note = if item.note.is_empty() {
                String::new()
            } else {
                format!("  {}", item.note)
            };
            let room = usize::from(width)
                .saturating_sub(2 + indent.chars().count() + note.chars().count());
            let style = if selected {
                theme.accent()
            } else {
                theme.text()
            };
            rows.push(Line::from(vec![
                Span::styled(marker, theme.accent()),
                Span::raw(indent),
                Span::styled(super::super::cells::cut(&item.label, room), style),
                Span::styled(note, theme.dim()),
            ]));
        }
        if self.items.len() > VISIBLE {
            rows.push(Line::from(Span::styled(
                format!("  {} of {}", self.selected + 1, self.items.len()),
                theme.dim(),
            )));
        }
        rows
    }
}

impl View for Menu {
    /// ↑↓ move, enter chooses, esc closes; any other key is swallowed (the composer is
    /// hidden under the menu).
    fn key(&mut self, key: KeyEvent) -> Next {
        match key.code {
            KeyCode::Up => self.up(),
            KeyCode::Down => self.down(),
            KeyCode::Enter => return self.chosen().map_or(Next::Stay, Next::Choose),
            KeyCode::Esc => return self.on_esc.clone().map_or(Next::Close, Next::Choose),
            _ => {}
        }
        Next::Stay
    }

    fn rows(&self, width: u16, _max_rows: u16, theme: &Theme) -> Vec<Line<'static>> {
        Menu::rows(self, width, theme)
    }
}

#[cfg(test)]
mod tests {
    use super::super::testing::{draw, key};
    use super::*;

    fn menu(items: usize) -> Menu {
        let items = (0..items)
            .map(|i| MenuItem::new(format!("item {i}"), Choice::Fork(format!("e{i}"))))
            .collect();
        Menu::new("Fork from", items)
    }

    #[test]
    fn arrows_move_enter_chooses_the_highlighted_item() {
        let mut menu = menu(3);
        assert_eq!(menu.key(key(KeyCode::Down)), Next::Stay);
        assert_eq!(menu.key(key(KeyCode::Down)), Next::Stay);
        assert_eq!(
            menu.key(key(KeyCode::Down)),
            Next::Stay,
            "stops at the last"
        );
        assert_eq!(menu.key(key(KeyCode::Up)), Next::Stay);
        assert_eq!(
            menu.key(key(KeyCode::Enter)),
            Next::Choose(Choice::Fork("e1".into()))
        );
    }

    #[test]
    fn esc_closes_and_other_keys_are_swallowed() {
        let mut menu = menu(2);
        assert_eq!(menu.key(key(KeyCode::Char('x'))), Next::Stay);
        assert_eq!(menu.selected, 0);
        assert_eq!(menu.key(key(KeyCode::Esc)), Next::Close);
        assert_eq!(
            Menu::new("empty", Vec::new()).key(key(KeyCode::Enter)),
            Next::Stay
        );
    }

    #[test]
    fn draws_title_marker_and_position_when_the_list_scrolls() {
        let mut menu = menu(10);
        for _ in 0..9 {
            menu.key(key(KeyCode::Down));
        }
        let screen = draw(&menu, 50, 10);
        assert!(screen[0].starts_with("Fork from (↑↓ choose"), "{screen:?}");
        assert_eq!(screen[1], "  item 2", "the first two scrolled away");
        assert_eq!(screen[8], "› item 9");
        assert_eq!(screen[9], "  10 of 10");
        assert_eq!(menu.placement(), super::super::Placement::Bottom);
    }
}
