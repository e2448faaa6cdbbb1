//! The diff view (`/diff`) on the stack: what this session changed, file by file, in the
//! transcript view's pager (its own log: the changes read when it opened). The changes are
//! read by `tui/diff_view.rs`.

use super::super::screen::Painted;
use super::super::theme::Theme;
use super::super::transcript::{Log, View as Pager};
use super::transcript::{pager_context, pager_key};
use super::{Cx, Next, Placement, View};
use crossterm::event::KeyEvent;
use ratatui::buffer::Buffer;
use ratatui::text::Line;

pub struct DiffView {
    pager: Pager,
    /// The changes, as transcript entries.
    log: Log,
}

impl DiffView {
    /// The view of `log`, from its start.
    pub fn new(log: Log) -> DiffView {
        let mut pager = Pager::titled("Diff");
        pager.to_start();
        DiffView { pager, log }
    }
}

impl View for DiffView {
    fn key_context(&self) -> crate::tui::keymap::Context {
        pager_context(&self.pager)
    }
    /// Its keys need the theme: `key_in`.
    fn key(&mut self, _key: KeyEvent) -> Next {
        Next::Stay
    }

    fn key_in(&mut self, key: KeyEvent, cx: &Cx) -> Next {
        pager_key(&mut self.pager, &self.log, key, cx.theme)
    }

    /// A paste goes to the composer under it, as it would with the view closed.
    fn paste(&mut self, _text: &str) -> bool {
        false
    }

    fn placement(&self) -> Placement {
        Placement::FullScreen
    }

    fn rows(&self, _width: u16, _max_rows: u16, _theme: &Theme) -> Vec<Line<'static>> {
        Vec::new()
    }

    fn render(&mut self, buffer: &mut Buffer, kept: bool, cx: &Cx) -> Painted {
        self.pager
            .render(&self.log, buffer, kept, cx.theme, cx.status)
    }
}
