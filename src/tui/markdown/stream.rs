//! `StreamingMarkdown`: the message as it arrives, cut into units (see `segment`) that are
//! rendered once, when they can no longer change, plus a cached rendering of the still-open
//! rest for the live area. Only the open part of the source is kept and re-parsed; a top-level
//! fenced code block is followed line by line without re-parsing at all.

use std::borrow::Cow;
use std::cell::{Cell, OnceCell};
use std::collections::HashMap;

use ratatui::text::Line;

use super::code::{CodeBlock, Fence};
use super::segment::{Kind, Segments, Unit, segment};
use super::writer::{self, Ctx, Refs};
use crate::tui::theme::Theme;

/// Incremental rendering of a message that is still arriving (see the module docs for when a
/// line becomes stable).
pub struct StreamingMarkdown {
    width: u16,
    theme: Theme,
    /// The source not yet rendered for good. It starts at the first line of a unit (or at blank
    /// lines and link definitions before one); in code mode, after the last complete code line.
    buf: String,
    mode: Mode,
    stable: Vec<Line<'static>>,
    /// Whether any line was produced: the next unit is then preceded by a blank line.
    emitted: bool,
    /// Set when `buf` starts with an item continuing the list of the last rendered unit: the
    /// number that item takes.
    list: Option<u64>,
    /// Link reference definitions from the rendered part: normalized label → (dest, title).
    refs: HashMap<String, (String, String)>,
    tail: OnceCell<Vec<Line<'static>>>,
    /// When the open part is a single paragraph: how far (bytes of `buf`) it is known to be
    /// one. Lines that cannot interrupt or transform a paragraph only extend it, so they are
    /// not re-parsed — a long paragraph then costs linear, not quadratic, work.
    paragraph_until: Option<usize>,
    /// Source bytes parsed or rendered so far (tests check work stays proportional).
    work: Cell<usize>,
}

enum Mode {
    Blocks,
    Code(Box<OpenCode>),
}

/// A top-level fenced code block whose closing fence has not arrived.
struct OpenCode {
    fence: Fence,
    block: CodeBlock,
    /// Whether it produced a line yet (the blank line before it goes with its first line).
    started: bool,
}

/// Whether `line` can only continue an open paragraph: not blank, and not starting with
/// anything that could interrupt it or turn it into something else (a heading, a fence, a
/// quote, a list item, a rule, a setext underline, a table's delimiter row, HTML).
fn continues_paragraph(line: &str) -> bool {
    let trimmed = line.trim_start_matches([' ', '\t']);
    match trimmed.chars().next() {
        None => false,
        Some(c) => !matches!(
            c,
            '#' | '>' | '-' | '*' | '+' | '=' | '|' | ':' | '<' | '`' | '~' | '_' | '0'..='9'
        ),
    }
}

impl StreamingMarkdown {
    pub fn new(width: u16, theme: Theme) -> StreamingMarkdown {
        StreamingMarkdown {
            width,
            theme,
            buf: String::new(),
            mode: Mode::Blocks,
            stable: Vec::new(),
            emitted: false,
            list: None,
            refs: HashMap::new(),
            tail: OnceCell::new(),
            paragraph_until: None,
            work: Cell::new(0),
        }
    }

    /// Appends a delta of the source text. Carriage returns are dropped (CRLF is read as LF).
    /// Work is proportional to the delta plus the still-open unit, and happens only when the
    /// delta completes a line.
    pub fn push(&mut self, delta: &str) {
        if delta.is_empty() {
            return;
        }
        self.tail = OnceCell::new();
        let had_newline = delta.contains('\n');
        if delta.contains('\r') {
            self.buf.extend(delta.chars().filter(|c| *c != '\r'));
        } else {
            self.buf.push_str(delta);
        }
        if had_newline && !self.extends_open_paragraph() {
            self.advance(false);
        }
    }

    /// Whether the lines completed since the last parse only continue an open paragraph
    /// (then nothing can have become stable); remembers how far that is known.
    fn extends_open_paragraph(&mut self) -> bool {
        let (Some(from), Mode::Blocks) = (self.paragraph_until, &self.mode) else {
            return false;
        };
        let Some(end) = self.buf.rfind('\n').map(|i| i + 1) else {
            return false;
        };
        let continues = self.buf[from.min(end)..end]
            .lines()
            .all(continues_paragraph);
        if continues {
            self.paragraph_until = Some(end);
        }
        continues
    }

    /// Lines that can no longer change and have not been taken before, in order.
    pub fn take_stable(&mut self) -> Vec<Line<'static>> {
        std::mem::take(&mut self.stable)
    }

    /// The rendering of the still-open part, for the live area; computed once per change. It
    /// starts with the blank line that will separate it from the lines above, when there is
    /// one, so that taken lines followed by the tail look exactly like the final result.
    pub fn tail(&self) -> &[Line<'static>] {
        self.tail.get_or_init(|| self.render_tail())
    }

    /// The message is complete: every remaining line (also those not yet taken). The stream
    /// is then empty and can be used for a new message.
    pub fn finish(&mut self) -> Vec<Line<'static>> {
        if !self.buf.is_empty() && !self.buf.ends_with('\n') {
            self.push("\n");
        }
        self.advance(true);
        self.mode = Mode::Blocks; // an unclosed fence ends with the message
        self.paragraph_until = None;
        self.buf.clear();
        self.tail = OnceCell::new();
        self.emitted = false;
        self.list = None;
        self.refs.clear();
        self.take_stable()
    }

    /// Future lines use the new width; lines already taken stay as they are.
    pub fn set_width(&mut self, width: u16) {
        self.width = width;
        self.tail = OnceCell::new();
    }

    /// Future lines, and the open rest shown in the live area, use the new theme (`/theme`).
    pub fn set_theme(&mut self, theme: Theme) {
        if theme != self.theme {
            self.theme = theme;
            self.tail = OnceCell::new();
        }
    }

    #[cfg(test)]
    pub(crate) fn work(&self) -> usize {
        self.work.get()
    }

    fn width(&self) -> usize {
        usize::from(self.width).max(1)
    }

    fn count_work(&self, bytes: usize) {
        self.work.set(self.work.get().saturating_add(bytes));
    }

    /// Renders everything that has become stable. With `all`, the source is complete (it ends
    /// with a newline) and every unit is stable.
    fn advance(&mut self, all: bool) {
        loop {
            let switched = match self.mode {
                Mode::Code(_) => self.advance_code(),
                Mode::Blocks => self.advance_blocks(all),
            };
            if !switched {
                return;
            }
        }
    }

    /// Code mode: every complete line is a code line, until the closing fence. Returns whether
    /// the block closed.
    fn advance_code(&mut self) -> bool {
        let Mode::Code(mut code) = std::mem::replace(&mut self.mode, Mode::Blocks) else {
            return false;
        };
        let width = self.width();
        let mut consumed = 0;
        let mut closed = false;
        while let Some(nl) = self.buf[consumed..].find('\n') {
            let line = &self.buf[consumed..consumed + nl];
            consumed += nl + 1;
            if code.fence.closes(line) {
                closed = true;
                break;
            }
            let rows = code.block.line(code.fence.content(line), width);
            if !code.started && self.emitted {
                self.stable.push(Line::default());
            }
            code.started = true;
            self.emitted = true;
            self.stable.extend(rows);
        }
        self.count_work(consumed);
        self.buf.drain(..consumed);
        if closed {
            self.list = None;
        } else {
            self.mode = Mode::Code(code);
        }
        closed
    }

    /// Block mode: re-parses the complete lines of the open part and renders the units that
    /// are done. Returns whether a fenced code block opened (code mode).
    fn advance_blocks(&mut self, all: bool) -> bool {
        let end = match self.buf.rfind('\n') {
            Some(i) => i + 1,
            None if all => self.buf.len(),
            None => return false,
        };
        let src = &self.buf[..end];
        if src.trim().is_empty() {
            self.buf.drain(..end);
            return false;
        }
        self.count_work(end);
        let Segments { units, refdefs } = segment(src, self.list);
        if units.is_empty() {
            return false; // only link definitions so far: wait for a unit
        }
        let fence = units.iter().position(|u| fence_of(src, u).is_some());
        // The source is cut right after the last stable unit, not at the start of the next:
        // what lies between (a link definition) may belong to the next block's paragraph.
        let after = |i: usize| line_end(src, units[i].end);
        let (done, cut) = match fence {
            // A fence interrupts anything: what precedes it is complete.
            Some(f) => (f, units[f].start),
            None if all => (units.len(), end),
            None => {
                let n = units.len();
                if stable_early(src, &units[n - 1]) {
                    (n, after(n - 1))
                } else if n > 1 {
                    (n - 1, after(n - 2))
                } else {
                    (0, 0)
                }
            }
        };
        let mut rendered = Vec::new();
        for (i, unit) in units.iter().enumerate().take(done) {
            let continues = self.continues(&units, i);
            let lines = self.render_unit(src, unit, &refdefs);
            rendered.push((lines, continues));
        }
        let open_code = fence.and_then(|f| fence_of(src, &units[f]));
        for (lines, continues) in rendered {
            self.emit_unit(lines, continues);
        }
        self.list = match (done.checked_sub(1).map(|i| &units[i]), units.get(done)) {
            (Some(prev), Some(next)) if next.continues(prev) => item_number(next),
            (None, _) => self.list,
            _ => None,
        };
        for def in refdefs.into_iter().take_while(|d| d.end <= cut) {
            self.refs.entry(def.label).or_insert((def.dest, def.title));
        }
        self.buf.drain(..cut);
        // The open rest is one paragraph: later plain lines need no parse (`push`).
        self.paragraph_until = match units.get(done..) {
            Some([open]) if open.kind == Kind::Paragraph && open_code.is_none() && !all => {
                Some(end - cut)
            }
            _ => None,
        };
        let Some((fence, info)) = open_code else {
            return false;
        };
        let line_end = self.buf.find('\n').map_or(self.buf.len(), |i| i + 1);
        self.buf.drain(..line_end);
        let block = CodeBlock::new(&info, self.theme);
        self.mode = Mode::Code(Box::new(OpenCode {
            fence,
            block,
            started: false,
        }));
        true
    }

    /// Whether unit `i` continues the list of the unit before it (then no blank line between).
    fn continues(&self, units: &[Unit], i: usize) -> bool {
        match i.checked_sub(1) {
            Some(prev) => units[i].continues(&units[prev]),
            None => self.list.is_some() && matches!(units[0].kind, Kind::Item { list: 0, .. }),
        }
    }

    fn render_unit(
        &self,
        src: &str,
        unit: &Unit,
        refdefs: &[super::segment::RefDef],
    ) -> Vec<Line<'static>> {
        let text = src.get(unit.start..unit.end).unwrap_or("");
        self.count_work(text.len());
        let ctx = Ctx {
            width: self.width(),
            theme: &self.theme,
            first_number: item_number(unit),
            refs: Refs {
                earlier: &self.refs,
                parse: refdefs,
                before: unit.start,
            },
        };
        writer::render(text, &ctx)
    }

    fn emit_unit(&mut self, lines: Vec<Line<'static>>, continues: bool) {
        if lines.is_empty() {
            return;
        }
        if self.emitted && !continues {
            self.stable.push(Line::default());
        }
        self.emitted = true;
        self.stable.extend(lines);
    }

    fn render_tail(&self) -> Vec<Line<'static>> {
        let mut out = Vec::new();
        match &self.mode {
            Mode::Code(code) => {
                let partial = self.buf.as_str();
                if partial.is_empty() || code.fence.may_close(partial) {
                    return out;
                }
                if !code.started && self.emitted {
                    out.push(Line::default());
                }
                self.count_work(partial.len());
                out.extend(code.block.peek(code.fence.content(partial), self.width()));
            }
            Mode::Blocks => {
                if self.buf.trim().is_empty() {
                    return out;
                }
                // Rendered as `finish` would see it: with the last line ended.
                let src = if self.buf.ends_with('\n') {
                    Cow::Borrowed(self.buf.as_str())
                } else {
                    Cow::Owned(format!("{}\n", self.buf))
                };
                self.count_work(src.len());
                let Segments { units, refdefs } = segment(&src, self.list);
                let mut emitted = self.emitted;
                for (i, unit) in units.iter().enumerate() {
                    let lines = self.render_unit(&src, unit, &refdefs);
                    if lines.is_empty() {
                        continue;
                    }
                    if emitted && !self.continues(&units, i) {
                        out.push(Line::default());
                    }
                    emitted = true;
                    out.extend(lines);
                }
            }
        }
        out
    }
}

fn item_number(unit: &Unit) -> Option<u64> {
    match unit.kind {
        Kind::Item { number, .. } => Some(number),
        _ => None,
    }
}

/// The opening fence of a top-level fenced code block unit.
fn fence_of(src: &str, unit: &Unit) -> Option<(Fence, String)> {
    if unit.kind != Kind::Fence {
        return None;
    }
    let rest = src.get(unit.start..)?;
    let line = rest.split('\n').next().unwrap_or(rest);
    Fence::open(line)
}

/// Whether the last unit of the complete lines is already done although no later unit has
/// started: a heading or a rule (one line, nothing can extend them), or a paragraph, quote or
/// table followed by a blank line (which ends them).
fn stable_early(src: &str, last: &Unit) -> bool {
    match last.kind {
        Kind::Heading | Kind::Rule => true,
        Kind::Paragraph | Kind::Quote | Kind::Table => {
            let rest = &src[line_end(src, last.end)..];
            rest.split_once('\n')
                .is_some_and(|(line, _)| line.trim().is_empty())
        }
        _ => false,
    }
}

/// The start of the line after the one `at` is in (`at` itself if it starts a line).
fn line_end(src: &str, at: usize) -> usize {
    let at = at.min(src.len());
    if at == 0 || src.as_bytes()[at - 1] == b'\n' {
        return at;
    }
    src.get(at..)
        .and_then(|rest| rest.find('\n'))
        .map_or(src.len(), |i| at + i + 1)
}
