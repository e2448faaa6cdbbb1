//! The dialogs and full-screen views over the composer: the approval question (and those
//! waiting behind it), the session picker, the list menus (`/rewind`, `/fork`, `/tree`,
//! `/ps`, plan approval, hook trust), and the transcript, agent and diff views.
//!
//! Each view that has moved here owns its state and its keys behind [`View`]: it answers a
//! key with a [`Next`] saying what the core must do (nothing, close it, carry out a choice),
//! and the core (`tui/keys.rs`) does it. Which view gets the key is `Views::top`.

pub mod approval;
pub mod menu;
#[cfg(test)]
mod testing;

use super::theme::Theme;
use crossterm::event::KeyEvent;
use ratatui::text::Line;

/// A view over the composer: it takes the keys while it is on top, and says what the core
/// must do next. Views live in `Views` for the whole session (no allocation per key or
/// frame).
pub trait View {
    /// A key while this view is on top.
    fn key(&mut self, key: KeyEvent) -> Next;
    /// Pasted text while this view is on top: `true` when the view took it.
    fn paste(&mut self, _text: &str) -> bool {
        false
    }
    /// Where the view is drawn.
    fn placement(&self) -> Placement {
        Placement::Bottom
    }
    /// The view's rows at the bottom of the screen, at most `max_rows` of them.
    fn rows(&self, width: u16, max_rows: u16, theme: &Theme) -> Vec<Line<'static>>;
}

/// Where a view is drawn.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Placement {
    /// In the live area, under the transcript and in place of the composer's popup.
    Bottom,
    /// On the alternate screen, the whole terminal.
    FullScreen,
}

/// What the core does after a view took a key.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Next {
    /// The view took the key and stays as it is.
    Stay,
    /// Not the view's key: it goes on below (the composer).
    Pass,
    /// The view is done (esc): the core closes it and does what closing it means.
    Close,
    /// A menu's item was chosen: the core carries it out.
    Choose(menu::Choice),
    /// The approval's answer: the core sends it to the engine.
    Answer(crate::agent::Approval),
    /// Typed before the view could be seen (just opened): the composer takes the key.
    Early,
}

/// A dialog over the composer (`Views::top`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Dialog {
    Approval,
    Picker,
    Menu,
}

/// What is open over the composer. Which dialog is drawn and gets the keys is one order
/// (`Views::top`): approval over picker over menu.
#[derive(Default)]
pub struct Views {
    pub approval: Option<approval::Approval>,
    /// Requests that came while the dialog showed another, oldest first.
    pub approvals_waiting: std::collections::VecDeque<approval::Approval>,
    pub picker: Option<super::picker::Picker>,
    /// The list of `/rewind`, `/fork` or `/tree`, while it is open.
    pub menu: Option<menu::Menu>,
    /// A project's hooks waiting for the user's trust (the question is the open menu).
    pub untrusted_hooks: Option<crate::extensions::hooks::trust::ProjectHooks>,
    /// The transcript view, while it is open.
    pub view: Option<super::transcript::View>,
    /// The agent view's child (the view itself is `view`), while it is open.
    pub agent_focus: Option<super::agents::AgentFocus>,
    /// What `/diff` shows (the view itself is `view`), while it is open.
    pub diff_log: Option<super::transcript::Log>,
    /// The git snapshot taken at start, for `/diff` when checkpoints are off.
    pub git_baseline: Option<super::diff_view::GitBaseline>,
}

impl Views {
    /// The dialog over the composer that is drawn and gets the keys: an approval over the
    /// session picker over a menu (a hook-trust question, `/rewind`'s list) — one order for
    /// both, so the dialog seen is the one that answers (D23).
    pub fn top(&self) -> Option<Dialog> {
        if self.approval.is_some() {
            Some(Dialog::Approval)
        } else if self.picker.is_some() {
            Some(Dialog::Picker)
        } else if self.menu.is_some() {
            Some(Dialog::Menu)
        } else {
            None
        }
    }

    /// The top dialog (`top`) as a [`View`], when it is one (the session picker is not).
    pub fn top_view(&mut self) -> Option<&mut dyn View> {
        match self.top()? {
            Dialog::Approval => self.approval.as_mut().map(|a| a as &mut dyn View),
            Dialog::Menu => self.menu.as_mut().map(|menu| menu as &mut dyn View),
            Dialog::Picker => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::menu::{Choice, Menu, MenuItem};
    use super::testing::key;
    use super::*;
    use crossterm::event::KeyCode;

    fn two_item_menu() -> Menu {
        Menu::new(
            "Rewind to",
            vec![
                MenuItem::new("first", Choice::Fork("a".into())),
                MenuItem::new("second", Choice::Fork("b".into())),
            ],
        )
    }

    /// D23: an approval that comes while a menu is open is the view on top, and the one
    /// that answers the keys; the menu under it is untouched and answers again once the
    /// approval is gone.
    #[test]
    fn an_approval_over_a_menu_takes_the_keys() {
        let mut views = Views {
            menu: Some(two_item_menu()),
            ..Views::default()
        };
        views.approval = Some(approval::tests::command(1));
        assert_eq!(views.top(), Some(Dialog::Approval));
        let top = views.top_view().map(|view| view.key(key(KeyCode::Down)));
        assert_eq!(top, Some(Next::Stay));
        let enter = views.top_view().map(|view| view.key(key(KeyCode::Enter)));
        assert_eq!(enter, Some(Next::Answer(crate::agent::Approval::Allow)));
        assert_eq!(views.menu.as_ref().map(|m| m.selected), Some(0));
        views.approval = None;
        assert_eq!(views.top(), Some(Dialog::Menu));
        let enter = views.top_view().map(|view| view.key(key(KeyCode::Enter)));
        assert_eq!(enter, Some(Next::Choose(Choice::Fork("a".into()))));
    }

    #[test]
    fn nothing_open_is_no_view() {
        let mut views = Views::default();
        assert_eq!(views.top(), None);
        assert!(views.top_view().is_none());
    }
}
