//! The stack of views over the composer: the approval question (and those waiting behind
//! it), the session picker, the list menus (`/rewind`, `/fork`, `/tree`, `/ps`, plan
//! approval, hook trust), and the full-screen views: the transcript (ctrl+o), a sub-agent's
//! (ctrl+g) and the session's changes (`/diff`).
//!
//! Each view owns its state and its keys behind [`View`]: it answers a key, a paste,
//! ctrl+c or an engine event with a [`Next`] saying what the core must do (nothing, pass
//! the key down, close it, push another view, carry out a choice), and the core
//! (`tui/keys.rs` routes, `tui/follow.rs` carries out) does it. The top view gets the keys
//! and is drawn. Views are ranked: a full-screen view (opened by the user's own key) over
//! a question the run waits on (an approval) over the rest; a view pushed later goes on
//! top of its rank, and a question that opens closes the full-screen views (it must be
//! seen).

pub mod agent;
pub mod approval;
pub mod approvals;
pub mod ask_user;
pub mod diff;
pub mod menu;
pub mod picker;
#[cfg(test)]
mod testing;
pub mod theme_picker;
pub mod transcript;

use super::screen::Painted;
use super::theme::Theme;
use crate::protocol::event::AgentEvent;
use approval::Approval;
use approvals::Approvals;
use crossterm::event::KeyEvent;
use ratatui::buffer::Buffer;
use ratatui::text::Line;
use std::any::Any;
use std::time::Instant;

/// A view over the composer: it takes the keys while it is on top, and says what the core
/// must do next. A view lives on the stack from when it is pushed until it closes (no
/// allocation per key or frame).
pub trait View: Any {
    /// A key while this view is on top (or the view above passed it).
    fn key(&mut self, key: KeyEvent) -> Next;
    /// A key, with what the view may read of the core (the conversation, the theme): the
    /// router calls this; a view that needs nothing of the core implements `key` alone.
    fn key_in(&mut self, key: KeyEvent, _cx: &Cx) -> Next {
        self.key(key)
    }
    /// Pasted text while this view is on top: `false` when it goes to the composer. A view
    /// takes (and ignores) a paste unless it says otherwise: the composer is under it.
    fn paste(&mut self, _text: &str) -> bool {
        true
    }
    /// ctrl+c while this view is on top: `Next::Pass` leaves it to the core (stop the run,
    /// or quit).
    fn ctrl_c(&mut self) -> Next {
        Next::Pass
    }
    /// An engine event (every open view sees it, the top one first).
    fn on_event(&mut self, _event: &AgentEvent) -> Next {
        Next::Stay
    }
    /// An approval request came: the view may keep it (`None`: the approval dialog queues
    /// it behind the one shown); else it goes on top of the stack in a dialog of its own.
    fn take_approval(&mut self, approval: Approval) -> Option<Approval> {
        Some(approval)
    }
    /// When this view is a question the run waits on: when it was asked. Such a view stays
    /// on top of views pushed after it, and the run's phase stays "waiting for you".
    fn asked_at(&self) -> Option<Instant> {
        None
    }
    /// Where this view's keys are looked up in the keymap (tui/keymap), before the global
    /// ones: `Global` (the default) when only the global keys are bindable — a view without
    /// named actions, or one typing text.
    fn key_context(&self) -> super::keymap::Context {
        super::keymap::Context::Global
    }
    /// Where the view is drawn.
    fn placement(&self) -> Placement {
        Placement::Bottom
    }
    /// A command this view asked for (`Next::Execute`) failed at once.
    fn command_failed(&mut self, _error: &crate::protocol::outcome::CommandError) {}
    /// The view's rows at the bottom of the screen, at most `max_rows` of them.
    fn rows(&self, width: u16, max_rows: u16, theme: &Theme) -> Vec<Line<'static>>;
    /// Draw a full-screen view over the whole (alternate) screen; `kept` says the buffer
    /// holds the last frame (see `Screen::draw_alternate`).
    fn render(&mut self, buffer: &mut Buffer, _kept: bool, _cx: &Cx) -> Painted {
        buffer.reset();
        Painted::All
    }
}

/// What a view may read of the core while it takes a key or draws.
pub struct Cx<'a> {
    /// The whole conversation.
    pub log: &'a super::transcript::Log,
    pub theme: &'a Theme,
    /// What the run is doing, for a full-screen view's footer (empty for a key).
    pub status: &'a str,
    /// The engine, to read (a sub-agent's transcript).
    pub agent: &'a crate::live::link::EngineLink,
    /// The running sub-agents as the live tree shows them.
    pub subagents: &'a [super::agents::SubagentRow],
}

/// Where a view goes on the stack: over the views of a lower rank.
fn rank(view: &dyn View) -> u8 {
    if view.placement() == Placement::FullScreen {
        2
    } else if view.asked_at().is_some() {
        1
    } else {
        0
    }
}

impl std::fmt::Debug for dyn View {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("View")
    }
}

/// Where a view is drawn.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Placement {
    /// In the live area, under the transcript and in place of the composer.
    Bottom,
    /// On the alternate screen, the whole terminal.
    FullScreen,
}

/// What the core does after a view took a key (or a paste, ctrl+c, an event).
#[derive(Debug)]
pub enum Next {
    /// The view took it and stays as it is.
    Stay,
    /// Not the view's key: it goes on to the view below, and then to the composer.
    Pass,
    /// The view is done (esc): the core takes it off the stack.
    Close,
    /// Open this view on top.
    Push(Box<dyn View>),
    /// Execute this engine command; if it fails at once, the view hears why
    /// (`View::command_failed`).
    Execute(crate::protocol::command::Command),
    /// This view gives way to another in its place.
    Replace(Box<dyn View>),
    /// A menu's item was chosen: the core closes the menu and carries the choice out.
    Choose(menu::Choice),
    /// The approval dialog's own answer (`Approvals` turns it into `Settled`).
    Answer(crate::agent::Approval),
    /// An approval was settled: the core tells the engine and goes on (`Approvals`).
    Settled(approvals::Settled),
    /// esc on a question: close it and stop the run.
    Stop,
    /// The model's question was answered (or declined): the core closes the dialog and
    /// tells the engine.
    Reply(ask_user::Reply),
    /// Typed before the view could be seen (just opened): the composer takes the key.
    Early,
}

impl PartialEq for Next {
    /// Views pushed or put in place are never equal (nothing compares them).
    fn eq(&self, other: &Next) -> bool {
        match (self, other) {
            (Next::Stay, Next::Stay)
            | (Next::Pass, Next::Pass)
            | (Next::Close, Next::Close)
            | (Next::Stop, Next::Stop)
            | (Next::Early, Next::Early) => true,
            (Next::Choose(a), Next::Choose(b)) => a == b,
            (Next::Answer(a), Next::Answer(b)) => a == b,
            (Next::Settled(a), Next::Settled(b)) => a == b,
            (Next::Reply(a), Next::Reply(b)) => a == b,
            _ => false,
        }
    }
}

/// What is open over the composer: the stack of views (the last one on top), and what the
/// menus and `/diff` keep while none is open.
#[derive(Default)]
pub struct Views {
    /// Open views, the bottom one first.
    stack: Vec<Box<dyn View>>,
    /// A project's hooks waiting for the user's trust (the question is a menu on the stack).
    pub untrusted_hooks: Option<crate::extensions::hooks::trust::ProjectHooks>,
    /// The git snapshot taken at start, for `/diff` when checkpoints are off.
    pub git_baseline: Option<super::diff_view::GitBaseline>,
}

impl Views {
    /// Nothing is open over the composer.
    pub fn is_empty(&self) -> bool {
        self.stack.is_empty()
    }

    /// How many views are open.
    pub fn len(&self) -> usize {
        self.stack.len()
    }

    /// The view that is drawn and gets the keys first.
    pub fn top(&self) -> Option<&dyn View> {
        self.stack.last().map(|view| view.as_ref())
    }

    /// The view on top, to hand it a paste.
    pub fn top_mut(&mut self) -> Option<&mut dyn View> {
        self.stack
            .last_mut()
            .map(|view| view.as_mut() as &mut dyn View)
    }

    /// Open `view` on top of the views of its rank (`rank`): a menu that opens after an
    /// approval goes under it (D23); a question closes the full-screen views first.
    pub fn push(&mut self, view: Box<dyn View>) {
        if view.asked_at().is_some() {
            self.close_full_screen();
        }
        let rank = rank(view.as_ref());
        let at = self
            .stack
            .iter()
            .rposition(|open| self::rank(open.as_ref()) <= rank)
            .map_or(0, |below| below + 1);
        self.stack.insert(at, view);
    }

    /// Close the full-screen views; `true` when one was open.
    pub fn close_full_screen(&mut self) -> bool {
        let open = self.stack.len();
        self.stack
            .retain(|view| view.placement() != Placement::FullScreen);
        self.stack.len() < open
    }

    /// Whether the alternate screen shows: a full-screen view is on top.
    pub fn full_screen(&self) -> bool {
        self.top()
            .is_some_and(|top| top.placement() == Placement::FullScreen)
    }

    /// The view at `index`, to tell it something.
    pub fn get_mut(&mut self, index: usize) -> Option<&mut dyn View> {
        self.stack
            .get_mut(index)
            .map(|view| view.as_mut() as &mut dyn View)
    }

    /// Take the view at `index` off the stack.
    pub fn remove(&mut self, index: usize) -> Option<Box<dyn View>> {
        (index < self.stack.len()).then(|| self.stack.remove(index))
    }

    /// Put `view` in place of the one at `index`.
    pub fn replace(&mut self, index: usize, view: Box<dyn View>) {
        match self.stack.get_mut(index) {
            Some(slot) => *slot = view,
            None => self.push(view),
        }
    }

    /// Offer `route` to the views top first: the first one that does not pass answers,
    /// with its place on the stack. `None`: every view passed (or none is open).
    pub fn route(&mut self, mut route: impl FnMut(&mut dyn View) -> Next) -> Option<(usize, Next)> {
        for index in (0..self.stack.len()).rev() {
            match route(self.stack[index].as_mut()) {
                Next::Pass => continue,
                next => return Some((index, next)),
            }
        }
        None
    }

    /// Show `event` to every view, top first: what each that does not stay wants done,
    /// top first (the places stay right while they are carried out in that order).
    pub fn on_event(&mut self, event: &AgentEvent) -> Vec<(usize, Next)> {
        let mut todo = Vec::new();
        for index in (0..self.stack.len()).rev() {
            match self.stack[index].on_event(event) {
                Next::Stay | Next::Pass => {}
                next => todo.push((index, next)),
            }
        }
        todo
    }

    /// An approval request: a view that takes it keeps it (the open dialog queues it);
    /// else it opens in a dialog of its own, on top. `true` when a dialog opened.
    pub fn offer_approval(&mut self, approval: Approval) -> bool {
        let mut approval = approval;
        for view in self.stack.iter_mut().rev() {
            match view.take_approval(approval) {
                None => return false,
                Some(back) => approval = back,
            }
        }
        self.push(Box::new(Approvals::new(approval)));
        true
    }

    /// When the question the run waits on was asked, if one is open.
    pub fn asked_at(&self) -> Option<Instant> {
        self.stack.iter().rev().find_map(|view| view.asked_at())
    }

    /// The open view of type `T` nearest the top.
    pub fn find<T: View>(&self) -> Option<&T> {
        self.stack
            .iter()
            .rev()
            .find_map(|view| (view.as_ref() as &dyn Any).downcast_ref::<T>())
    }

    /// The open view of type `T` nearest the top, to change it.
    pub fn find_mut<T: View>(&mut self) -> Option<&mut T> {
        self.stack
            .iter_mut()
            .rev()
            .find_map(|view| (view.as_mut() as &mut dyn Any).downcast_mut::<T>())
    }

    /// Whether a view of type `T` is open.
    pub fn has<T: View>(&self) -> bool {
        self.find::<T>().is_some()
    }

    /// The approval the dialog shows, if one is open.
    pub fn approval(&self) -> Option<&Approval> {
        self.find::<Approvals>().map(Approvals::shown)
    }

    /// The approval the dialog shows, to change it.
    pub fn approval_mut(&mut self) -> Option<&mut Approval> {
        self.find_mut::<Approvals>().map(Approvals::shown_mut)
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

    /// A view that passes every key but `x`, and counts the events it saw.
    #[derive(Default)]
    struct Passing {
        events: usize,
    }

    impl View for Passing {
        fn key(&mut self, key: KeyEvent) -> Next {
            match key.code {
                KeyCode::Char('x') => Next::Close,
                _ => Next::Pass,
            }
        }
        fn on_event(&mut self, _event: &AgentEvent) -> Next {
            self.events += 1;
            Next::Stay
        }
        fn rows(&self, _width: u16, _max_rows: u16, _theme: &Theme) -> Vec<Line<'static>> {
            vec![Line::from("passing")]
        }
    }

    fn top_key(views: &mut Views, code: KeyCode) -> Option<(usize, Next)> {
        views.route(|view| view.key(key(code)))
    }

    /// D23: an approval that comes while a menu is open goes on top, and is the one that
    /// answers the keys; the menu under it is untouched and answers again once the
    /// approval is gone. A menu opened after it goes under it.
    #[test]
    fn an_approval_over_a_menu_takes_the_keys() {
        let mut views = Views::default();
        views.push(Box::new(two_item_menu()));
        assert!(views.offer_approval(approval::tests::command(1)));
        views.push(Box::new(two_item_menu()));
        assert_eq!(views.len(), 3);
        assert!(views.top().is_some_and(|top| top.asked_at().is_some()));
        assert_eq!(top_key(&mut views, KeyCode::Down), Some((2, Next::Stay)));
        let Some((2, Next::Settled(settled))) = top_key(&mut views, KeyCode::Enter) else {
            panic!("the approval answers enter");
        };
        assert_eq!(settled.decision, Some(crate::agent::Approval::Allow));
        assert!(!settled.more);
        assert_eq!(views.find::<Menu>().map(|m| m.selected), Some(0));
        views.remove(2);
        assert_eq!(
            top_key(&mut views, KeyCode::Enter),
            Some((1, Next::Choose(Choice::Fork("a".into()))))
        );
    }

    /// A second request waits behind the dialog on top, which counts it.
    #[test]
    fn a_request_while_one_is_asked_waits_behind_it() {
        let mut views = Views::default();
        assert!(views.offer_approval(approval::tests::command(1)));
        assert!(!views.offer_approval(approval::tests::command(2)));
        assert_eq!(views.len(), 1);
        let rows = testing::draw(views.top().unwrap(), 60, 12);
        assert!(rows[0].contains("(1 more waiting)"), "{rows:?}");
    }

    /// A key the top view passes goes to the view below; one nobody takes goes on (to the
    /// composer); every view sees an event.
    #[test]
    fn a_passed_key_goes_down_the_stack() {
        let mut views = Views::default();
        views.push(Box::new(two_item_menu()));
        views.push(Box::new(Passing::default()));
        assert_eq!(
            top_key(&mut views, KeyCode::Char('x')),
            Some((1, Next::Close))
        );
        assert_eq!(top_key(&mut views, KeyCode::Down), Some((0, Next::Stay)));
        assert_eq!(views.find::<Menu>().map(|m| m.selected), Some(1));
        views.remove(0);
        assert_eq!(top_key(&mut views, KeyCode::Down), None);
        assert!(views.on_event(&AgentEvent::TurnStart).is_empty());
        assert_eq!(views.find::<Passing>().map(|p| p.events), Some(1));
    }

    /// A run that ends closes its questions, not the menus under them.
    #[test]
    fn the_end_of_a_run_closes_the_approval() {
        let mut views = Views::default();
        views.push(Box::new(two_item_menu()));
        views.offer_approval(approval::tests::command(1));
        let end = AgentEvent::AgentEnd {
            messages: Vec::new(),
            status: crate::protocol::event::RunStatus::Aborted,
            error: None,
        };
        let todo = views.on_event(&end);
        assert_eq!(todo, vec![(1, Next::Close)]);
    }

    /// The transcript view opened over a question shows (the user asked for it); a menu
    /// opened later goes under both; a new question closes the full-screen view.
    #[test]
    fn full_screen_views_rank_over_questions_and_give_way_to_new_ones() {
        let mut views = Views::default();
        views.offer_approval(approval::tests::command(1));
        views.push(Box::<transcript::TranscriptView>::default());
        views.push(Box::new(two_item_menu()));
        assert!(views.full_screen());
        assert!(views.find::<Menu>().is_some());
        assert!(!views.offer_approval(approval::tests::command(2)), "queued");
        assert!(views.full_screen(), "a queued request opens nothing");
        assert_eq!(views.len(), 3);

        let mut views = Views::default();
        views.push(Box::new(two_item_menu()));
        views.push(Box::<transcript::TranscriptView>::default());
        assert!(views.offer_approval(approval::tests::command(3)));
        assert!(!views.full_screen());
        assert_eq!(views.len(), 2, "the menu and the dialog");
        assert!(!views.close_full_screen());
    }

    #[test]
    fn nothing_open_is_no_view() {
        let mut views = Views::default();
        assert!(views.top().is_none());
        assert!(views.approval().is_none());
        assert_eq!(top_key(&mut views, KeyCode::Enter), None);
    }
}
