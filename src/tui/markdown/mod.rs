//! Markdown to terminal lines (`Line<'static>`), all at once (`render`) or while the message is
//! still arriving (`StreamingMarkdown`), for the transcript's "in place" streaming: lines that
//! can no longer change go into the terminal's scrollback, the open rest is drawn live.
//!
//! # Units and the stability rule
//!
//! The source is cut into *units*: top-level blocks, except that a top-level list is cut into
//! its items. Each unit is parsed and rendered on its own (`segment`, `writer`), and units are
//! joined by one blank line (none between items of one list). `render` is the stream fed the
//! whole text at once, so streaming and whole rendering share one code path, and the
//! concatenation of all `take_stable` output plus `finish` equals `render` of the full text.
//!
//! A unit is **stable** (rendered once, handed out by `take_stable`, never recomputed) when:
//! - a later unit has started on a complete line: a new paragraph, heading, fence, rule, table,
//!   quote, or a new item of the list (a new item closes the previous item);
//! - or it is a heading or thematic break, once its line is complete;
//! - or it is a paragraph, block quote or table followed by a complete blank line (a blank line
//!   ends them; it does not end a list item or an indented code block, which may continue
//!   after one);
//! - inside a top-level fenced code block, every complete source line is stable as soon as its
//!   newline arrives (code lines render one-to-one, or one-to-several when hard-wrapped), so
//!   long code streams into scrollback line by line; the block's highlighting state is kept
//!   between lines, and the block is followed without re-parsing it.
//!
//! Only complete lines decide structure: a line still arriving can change meaning (`#` then
//! `#x`), so it only ever appears in `tail`. The tail starts with the blank line that will
//! separate it from the lines above, so taken lines plus the tail always look like `render` of
//! what has arrived. Known limit of rendering units alone: a reference link resolves only if
//! its definition comes earlier in the message.
//!
//! Use one `StreamingMarkdown` per message (it is reusable after `finish`). Syntax highlighting
//! loads its grammars at the first code block with a language; `preload_highlighting` lets a
//! caller pay for that earlier, off the UI thread.
//!
//! Input is model output, so anything goes: nothing here panics, control characters are shown
//! as visible symbols, and widths down to 0 are accepted (treated as 1; lines then overflow).

mod code;
#[cfg(feature = "syntect")]
mod highlight;
#[cfg(not(feature = "syntect"))]
#[path = "highlight_off.rs"]
mod highlight;
mod segment;
mod stream;
mod styled;
mod table;
mod writer;

#[cfg(test)]
mod stream_tests;
#[cfg(test)]
mod tests;

use ratatui::text::Line;

pub use highlight::preload as preload_highlighting;
pub use stream::StreamingMarkdown;

use crate::tui::theme::Theme;

/// Renders a whole markdown document to lines wrapped at `width` columns.
pub fn render(markdown: &str, width: u16, theme: &Theme) -> Vec<Line<'static>> {
    let mut stream = StreamingMarkdown::new(width, *theme);
    stream.push(markdown);
    let mut lines = stream.take_stable();
    lines.extend(stream.finish());
    lines
}
