//! Code blocks without syntax highlighting: the build left out the `syntect` feature
//! (`highlight.rs` is the real one). Every block renders plain.

use ratatui::style::Style;

use super::styled::StyledText;

pub fn preload() {}

/// No language is highlighted, so none is looked for.
pub(crate) fn language(_info: &str) -> &str {
    ""
}

/// Never made: `for_language` has no highlighter to give.
pub(crate) enum LineHighlighter {}

impl LineHighlighter {
    pub(crate) fn for_language(_lang: &str, _theme: &str) -> Option<LineHighlighter> {
        None
    }

    pub(crate) fn line(&mut self, _line: &str, _base: Style) -> Option<StyledText> {
        match *self {}
    }

    pub(crate) fn peek(&self, _line: &str, _base: Style) -> Option<StyledText> {
        match *self {}
    }
}
