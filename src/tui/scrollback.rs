//! What the interface put into the terminal's scrollback, kept as blocks that can be laid
//! out again at any width, so that a width change prints the conversation again instead of
//! leaving it as the terminal rewrapped it (`run::reprint`).
//!
//! Why print again rather than follow the terminal: a terminal that rewraps its rows when
//! its width changes (tmux, kitty, VTE, iTerm2…) moves rows — ours included — up into its
//! scrollback or down the screen by amounts that depend on its own reflow rules, and
//! differ between terminals (tmux's cursor report disagreed with its content by rows);
//! predicting it left copies of a streamed partial line, lost rows the terminal pushed out
//! of reach, and needed a cursor query each time. After a width change the interface
//! clears the screen and the scrollback and prints the blocks again at the new width (as
//! pi and Claude Code do): correct whatever the terminal's reflow does.
//!
//! The record is bounded: blocks are dropped from the front beyond `KEEP_ROWS` rows, and a
//! reprint prints at most `REPRINT_ROWS` rows (newest first) with a dim line before them
//! when something older was left out — the transcript view (ctrl+o) has all of it.

use super::markdown::StreamingMarkdown;
use super::theme::Theme;
use ratatui::text::Line;
use std::collections::VecDeque;
use std::sync::Arc;

/// The most rows a resize prints again: within what terminals keep by default (xterm
/// 1,024 rows, tmux and kitty 2,000), so the dim line before them is not lost off the top.
pub const REPRINT_ROWS: usize = 1000;
/// Rows (at the width each block was last laid out) kept for reprinting: more than are
/// printed, so a narrower width still fills `REPRINT_ROWS`.
const KEEP_ROWS: usize = 4 * REPRINT_ROWS;

/// Lays a block out at a width.
pub type Render = Arc<dyn Fn(u16) -> Vec<Line<'static>> + Send + Sync>;

enum Body {
    /// Rows laid out again at any width.
    Cell(Render),
    /// Rows made for one width (tables); at another they are cut as a terminal would.
    Fixed(Vec<Line<'static>>),
    /// The text of an answer still streaming: its rows come from the stream itself.
    OpenAnswer,
    /// A streamed answer's markdown source.
    Answer(Arc<str>, Theme),
}

struct Block {
    body: Body,
    /// Rows it took the last time it was laid out.
    rows: usize,
}

/// The blocks that went (or are about to go) into the scrollback, oldest first, and the
/// rows the next frame must take back from the screen (a retried response).
#[derive(Default)]
pub struct Scrollback {
    blocks: VecDeque<Block>,
    /// Rows of all `blocks`.
    rows: usize,
    /// Blocks were dropped from the front.
    dropped: bool,
    /// Where the current response's blocks start (taken back when it is retried), counted
    /// from the first block ever pushed.
    attempt: u64,
    /// Blocks ever dropped from the front.
    first: u64,
    /// Rows already drawn that the next frame must take back from the screen.
    pub retract: usize,
}

impl Scrollback {
    /// A block laid out by `render`; `rows` is how many rows it took now.
    pub fn push_cell(&mut self, render: Render, rows: usize) {
        self.push(Body::Cell(render), rows);
    }

    pub fn push_fixed(&mut self, rows: Vec<Line<'static>>) {
        let count = rows.len();
        self.push(Body::Fixed(rows), count);
    }

    /// The streaming answer put its first rows into the scrollback: its place.
    pub fn open_answer(&mut self) {
        if !self
            .blocks
            .iter()
            .any(|b| matches!(b.body, Body::OpenAnswer))
        {
            self.push(Body::OpenAnswer, 0);
        }
    }

    /// The streaming answer put `rows` more rows into the scrollback.
    pub fn grow_answer(&mut self, rows: usize) {
        if let Some(block) = self
            .blocks
            .iter_mut()
            .find(|b| matches!(b.body, Body::OpenAnswer))
        {
            block.rows += rows;
            self.rows += rows;
        }
        self.prune();
    }

    /// The streaming answer ended: its whole source is kept in its place.
    pub fn close_answer(&mut self, source: &str, theme: Theme) {
        if let Some(block) = self
            .blocks
            .iter_mut()
            .find(|b| matches!(b.body, Body::OpenAnswer))
        {
            block.body = Body::Answer(source.into(), theme);
        }
    }

    /// A response starts: what it pushes from now on is taken back if it is retried.
    pub fn start_attempt(&mut self) {
        self.attempt = self.first + self.blocks.len() as u64;
    }

    /// The response is retried: its blocks go.
    pub fn take_back_attempt(&mut self) {
        let keep = usize::try_from(self.attempt.saturating_sub(self.first)).unwrap_or(usize::MAX);
        while self.blocks.len() > keep {
            if let Some(block) = self.blocks.pop_back() {
                self.rows -= block.rows;
            }
        }
    }

    /// Rows of the current response's blocks, as last laid out.
    pub fn attempt_rows(&self) -> usize {
        let from = usize::try_from(self.attempt.saturating_sub(self.first)).unwrap_or(usize::MAX);
        self.blocks.iter().skip(from).map(|b| b.rows).sum()
    }

    /// Every block laid out at `width`, newest first until `REPRINT_ROWS` rows, oldest
    /// first in the result, after a dim line when older ones were left out. `answer` lays
    /// out the text of the answer still streaming (and starts its stream again at `width`).
    pub fn render(
        &mut self,
        width: u16,
        theme: &Theme,
        mut answer: impl FnMut() -> Vec<Line<'static>>,
    ) -> Vec<Line<'static>> {
        let mut laid_out: Vec<Vec<Line<'static>>> = Vec::new();
        let mut total = 0usize;
        let mut left_out = self.dropped;
        for block in self.blocks.iter_mut().rev() {
            if total >= REPRINT_ROWS {
                left_out = true;
                break;
            }
            let rows = match &block.body {
                Body::Cell(render) => render(width),
                Body::Fixed(rows) => rows.iter().flat_map(|row| cut(row, width)).collect(),
                Body::OpenAnswer => answer(),
                Body::Answer(source, theme) => answer_rows(source, width, *theme),
            };
            self.rows = self.rows - block.rows + rows.len();
            block.rows = rows.len();
            total += rows.len();
            laid_out.push(rows);
        }
        let mut out = Vec::with_capacity(total + 2);
        if left_out {
            out.extend(super::cells::notice(
                "… earlier output: ctrl+o shows the whole conversation",
                width,
                theme,
            ));
        }
        out.extend(laid_out.into_iter().rev().flatten());
        out
    }

    /// Whether the text of a streaming answer has rows in the scrollback.
    pub fn answer_is_open(&self) -> bool {
        self.blocks
            .iter()
            .any(|b| matches!(b.body, Body::OpenAnswer))
    }

    fn push(&mut self, body: Body, rows: usize) {
        self.blocks.push_back(Block { body, rows });
        self.rows += rows;
        self.prune();
    }

    /// Drop the oldest blocks beyond `KEEP_ROWS` rows (never the streaming answer's).
    fn prune(&mut self) {
        while self.rows > KEEP_ROWS && self.blocks.len() > 1 {
            if matches!(self.blocks.front().map(|b| &b.body), Some(Body::OpenAnswer)) {
                break;
            }
            if let Some(block) = self.blocks.pop_front() {
                self.rows -= block.rows;
                self.first += 1;
                self.dropped = true;
            }
        }
    }
}

/// A streamed answer's rows as they went into the scrollback: the markdown at `width`
/// less the indent, each row indented, the first one with text marked (and a blank row
/// before it), rows before it left out (`mark_answer`).
pub fn answer_rows(source: &str, width: u16, theme: Theme) -> Vec<Line<'static>> {
    let mut text = StreamingMarkdown::new(width.saturating_sub(2), theme);
    text.push(source);
    let mut marked = false;
    mark_answer(text.finish(), &mut marked, &theme)
}

/// Rows of a streamed answer's text as they go into the scrollback: indented, the first
/// one with text gets the answer's bullet and a blank row before it (`marked` says it was
/// given); rows before it are left out.
pub fn mark_answer(
    rows: Vec<Line<'static>>,
    marked: &mut bool,
    theme: &Theme,
) -> Vec<Line<'static>> {
    let mut out = Vec::with_capacity(rows.len() + 1);
    for row in rows {
        let mut row = super::cells::indent(row);
        if !*marked && row.width() > 2 {
            if out.is_empty() {
                out.push(super::cells::blank());
            }
            super::cells::mark_first(std::slice::from_mut(&mut row), theme);
            *marked = true;
        } else if !*marked {
            continue;
        }
        out.push(row);
    }
    out
}

/// `row` cut into rows of at most `width` columns, as a terminal cuts a row too long for
/// it (a wide character that does not fit starts the next row).
fn cut(row: &Line<'static>, width: u16) -> Vec<Line<'static>> {
    let width = usize::from(width.max(2));
    if row.width() <= width {
        return vec![row.clone()];
    }
    let mut rows = Vec::new();
    let mut current: Vec<ratatui::text::Span<'static>> = Vec::new();
    let mut used = 0usize;
    for span in &row.spans {
        let mut piece = String::new();
        for grapheme in
            unicode_segmentation::UnicodeSegmentation::graphemes(span.content.as_ref(), true)
        {
            let w = unicode_width::UnicodeWidthStr::width(grapheme);
            if used + w > width && used > 0 {
                if !piece.is_empty() {
                    current.push(ratatui::text::Span::styled(
                        std::mem::take(&mut piece),
                        span.style,
                    ));
                }
                rows.push(Line::from(std::mem::take(&mut current)).style(row.style));
                used = 0;
            }
            piece.push_str(grapheme);
            used += w;
        }
        if !piece.is_empty() {
            current.push(ratatui::text::Span::styled(piece, span.style));
        }
    }
    if !current.is_empty() {
        rows.push(Line::from(current).style(row.style));
    }
    rows
}

#[cfg(test)]
mod tests {
    use super::*;

    fn text(rows: &[Line<'static>]) -> Vec<String> {
        rows.iter()
            .map(|r| r.to_string().trim_end().to_string())
            .collect()
    }

    fn cell(words: &'static str) -> Render {
        Arc::new(move |width| {
            super::super::wrap::wrap_text(words, ratatui::style::Style::default(), width, &[], &[])
        })
    }

    #[test]
    fn blocks_are_laid_out_again_at_the_new_width() {
        let mut s = Scrollback::default();
        s.push_cell(cell("alpha beta gamma"), 1);
        s.push_fixed(vec![Line::from("abcdefgh")]);
        let rows = s.render(6, &Theme::default(), Vec::new);
        assert_eq!(text(&rows), ["alpha", "beta", "gamma", "abcdef", "gh"]);
    }

    #[test]
    fn a_retried_response_takes_its_blocks_back() {
        let mut s = Scrollback::default();
        s.push_cell(cell("kept"), 1);
        s.start_attempt();
        s.push_cell(cell("dropped"), 1);
        s.open_answer();
        s.take_back_attempt();
        assert!(!s.answer_is_open());
        assert_eq!(text(&s.render(20, &Theme::default(), Vec::new)), ["kept"]);
    }

    #[test]
    fn the_streaming_answer_keeps_its_place_and_is_kept_whole_once_closed() {
        let mut s = Scrollback::default();
        s.push_cell(cell("before"), 1);
        s.open_answer();
        s.push_cell(cell("after"), 1);
        let rows = s.render(20, &Theme::default(), || vec![Line::from("streaming")]);
        assert_eq!(text(&rows), ["before", "streaming", "after"]);
        s.close_answer("one two three four", Theme::default());
        let rows = s.render(10, &Theme::default(), Vec::new);
        assert_eq!(
            text(&rows),
            ["before", "", "● one two", "  three", "  four", "after"]
        );
    }

    #[test]
    fn a_long_record_is_printed_from_its_newest_rows_after_a_note() {
        let mut s = Scrollback::default();
        for _ in 0..REPRINT_ROWS + 10 {
            s.push_cell(cell("row"), 1);
        }
        s.push_cell(cell("newest"), 1);
        let rows = s.render(80, &Theme::default(), Vec::new);
        let rows = text(&rows);
        assert!(rows[1].contains("ctrl+o"), "{:?}", &rows[..3]);
        assert_eq!(rows.last().map(String::as_str), Some("newest"));
        assert_eq!(rows.len(), 2 + REPRINT_ROWS);
    }

    #[test]
    fn the_record_keeps_a_bounded_number_of_rows() {
        let mut s = Scrollback::default();
        for _ in 0..KEEP_ROWS {
            s.push_cell(cell("row"), 3);
        }
        assert!(s.rows <= KEEP_ROWS);
        assert!(s.dropped);
    }
}
