//! Styled text as one flat string plus style runs, and the two ways of cutting it into rows of a
//! given width: word wrap for prose, character wrap for code. Widths are terminal columns
//! (`unicode-width`); a zero-width character (a combining mark, a joiner) always stays with the
//! character before it, and a character wider than the row is put alone on a row rather than
//! split or dropped. Control characters never reach the terminal: they are made visible.

use std::ops::Range;

use crate::tui::width;
use ratatui::style::Style;
use ratatui::text::Span;

/// Marks a forced line break (markdown hard break) inside the flat text. Sanitizing removes every
/// real newline from input text, so this character only ever comes from `hard_break`.
const BREAK: char = '\n';

/// Text made of runs of styles, kept flat so that wrapping can work on byte ranges.
#[derive(Clone, Debug, Default)]
pub(crate) struct StyledText {
    text: String,
    /// (start byte, style), sorted by start; each run lasts until the next one.
    runs: Vec<(usize, Style)>,
}

impl StyledText {
    pub(crate) fn new() -> StyledText {
        StyledText::default()
    }

    pub(crate) fn is_empty(&self) -> bool {
        self.text.is_empty()
    }

    pub(crate) fn as_str(&self) -> &str {
        &self.text
    }

    pub(crate) fn len(&self) -> usize {
        self.text.len()
    }

    /// Appends `s` (sanitized) in `style`.
    pub(crate) fn push(&mut self, s: &str, style: Style) {
        if s.is_empty() {
            return;
        }
        if self.runs.last().map(|r| r.1) != Some(style) {
            self.runs.push((self.text.len(), style));
        }
        sanitize_into(s, &mut self.text);
    }

    pub(crate) fn hard_break(&mut self) {
        self.text.push(BREAK);
    }

    pub(crate) fn append(&mut self, other: &StyledText) {
        for (i, (start, style)) in other.runs.iter().enumerate() {
            let end = other.runs.get(i + 1).map_or(other.text.len(), |r| r.0);
            if let Some(part) = other.text.get(*start..end) {
                if self.runs.last().map(|r| r.1) != Some(*style) {
                    self.runs.push((self.text.len(), *style));
                }
                self.text.push_str(part);
            }
        }
    }

    /// Terminal columns of the whole text (hard breaks count as nothing).
    pub(crate) fn width(&self) -> usize {
        str_width(&self.text)
    }

    /// The spans covering `range`, one per style run (owned).
    pub(crate) fn spans(&self, range: Range<usize>) -> Vec<Span<'static>> {
        let mut out = Vec::new();
        let first = self
            .runs
            .partition_point(|r| r.0 <= range.start)
            .saturating_sub(1);
        for (i, (start, style)) in self.runs.iter().enumerate().skip(first) {
            if *start >= range.end {
                break;
            }
            let end = self.runs.get(i + 1).map_or(self.text.len(), |r| r.0);
            let (s, e) = ((*start).max(range.start), end.min(range.end));
            if let Some(part) = self.text.get(s..e)
                && !part.is_empty()
            {
                out.push(Span::styled(part.to_string(), *style));
            }
        }
        out
    }

    pub(crate) fn all_spans(&self) -> Vec<Span<'static>> {
        self.spans(0..self.text.len())
    }

    /// Word wrap: rows break at spaces; spaces at a break are dropped; a word longer than a row
    /// is broken by characters. Hard breaks always end a row (an empty row if need be).
    pub(crate) fn wrap_words(&self, width: usize) -> Vec<Range<usize>> {
        let width = width.max(1);
        let mut rows = Vec::new();
        let mut row: Option<(usize, usize)> = None; // (start, end) of the current row
        let mut row_w = 0;
        let mut space_w = 0; // width of the spaces since the row's last word
        let mut pos = 0;
        let text = self.text.as_str();
        while pos < text.len() {
            let rest = &text[pos..];
            if rest.starts_with(BREAK) {
                let (s, e) = row.take().unwrap_or((pos, pos));
                rows.push(s..e);
                row_w = 0;
                space_w = 0;
                pos += BREAK.len_utf8();
                continue;
            }
            if rest.starts_with(' ') {
                let n = rest.len() - rest.trim_start_matches(' ').len();
                if row.is_some() {
                    space_w += n;
                }
                pos += n;
                continue;
            }
            let word_len = rest.find([' ', BREAK]).unwrap_or(rest.len());
            let word = pos..pos + word_len;
            let w = str_width(&text[word.clone()]);
            pos = word.end;
            if let Some((s, _)) = row
                && row_w + space_w + w <= width
            {
                row = Some((s, word.end));
                row_w += space_w + w;
                space_w = 0;
                continue;
            }
            if let Some((s, e)) = row.take() {
                rows.push(s..e);
            }
            space_w = 0;
            if w <= width {
                row = Some((word.start, word.end));
                row_w = w;
            } else {
                let mut pieces = char_rows(text, word, width);
                if let Some(last) = pieces.pop() {
                    row_w = str_width(&text[last.clone()]);
                    row = Some((last.start, last.end));
                }
                rows.extend(pieces);
            }
        }
        if let Some((s, e)) = row {
            rows.push(s..e);
        }
        rows
    }

    /// Character wrap (code): every column is kept, spaces included. Always at least one row.
    pub(crate) fn wrap_chars(&self, width: usize) -> Vec<Range<usize>> {
        let rows = char_rows(&self.text, 0..self.text.len(), width.max(1));
        if rows.is_empty() {
            std::iter::once(0..0).collect()
        } else {
            rows
        }
    }
}

/// Cuts `text[range]` into rows of at most `width` columns, between grapheme clusters (a
/// combining mark or a joined emoji stays whole).
fn char_rows(text: &str, range: Range<usize>, width: usize) -> Vec<Range<usize>> {
    let mut rows = Vec::new();
    let mut start = range.start;
    let mut row_w = 0;
    let Some(slice) = text.get(range.clone()) else {
        return rows;
    };
    for (i, _, cw) in width::graphemes(slice) {
        let at = range.start + i;
        if cw > 0 && row_w + cw > width && at > start {
            rows.push(start..at);
            start = at;
            row_w = 0;
        }
        row_w += cw;
    }
    if range.end > start {
        rows.push(start..range.end);
    }
    rows
}

pub(crate) fn str_width(s: &str) -> usize {
    width::str_width(s)
}

/// Makes text safe to print: tabs become spaces, newlines spaces, other control characters
/// their visible Unicode "control picture" (C0, DEL) or U+FFFD (C1). The terminal must never
/// receive an escape sequence from model output.
fn sanitize_into(s: &str, out: &mut String) {
    for c in s.chars() {
        match c {
            '\t' => out.push_str("    "),
            '\n' | '\r' => out.push(' '),
            '\u{0}'..='\u{1f}' => out.push(char::from_u32(0x2400 + c as u32).unwrap_or('\u{fffd}')),
            '\u{7f}' => out.push('\u{2421}'),
            '\u{80}'..='\u{9f}' => out.push('\u{fffd}'),
            _ => out.push(c),
        }
    }
}

/// Removes trailing spaces at the end of a line (and spans left empty by that).
pub(crate) fn trim_end(spans: &mut Vec<Span<'static>>) {
    while let Some(last) = spans.last_mut() {
        let trimmed = last.content.trim_end_matches(' ');
        if trimmed.is_empty() {
            spans.pop();
        } else {
            if trimmed.len() != last.content.len() {
                last.content = trimmed.to_string().into();
            }
            return;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rows(t: &StyledText, ranges: Vec<Range<usize>>) -> Vec<String> {
        ranges
            .into_iter()
            .map(|r| t.as_str()[r].to_string())
            .collect()
    }

    fn plain(s: &str) -> StyledText {
        let mut t = StyledText::new();
        t.push(s, Style::new());
        t
    }

    #[test]
    fn words_wrap_at_spaces_and_long_words_break() {
        let t = plain("the quick brown fox jumps");
        assert_eq!(
            rows(&t, t.wrap_words(10)),
            ["the quick", "brown fox", "jumps"]
        );
        let t = plain("ab abcdefghijkl cd");
        assert_eq!(rows(&t, t.wrap_words(5)), ["ab", "abcde", "fghij", "kl cd"]);
    }

    #[test]
    fn wide_characters_are_never_split() {
        let t = plain("日本語のテキスト");
        let r = rows(&t, t.wrap_words(5));
        assert_eq!(r, ["日本", "語の", "テキ", "スト"]);
        // A row narrower than one wide character still makes progress.
        assert_eq!(rows(&t, t.wrap_words(1)).len(), 8);
        // A combining accent stays with its letter.
        let t = plain("e\u{301}e\u{301}e\u{301}");
        assert_eq!(
            rows(&t, t.wrap_words(1)),
            ["e\u{301}", "e\u{301}", "e\u{301}"]
        );
    }

    #[test]
    fn hard_breaks_and_spaces() {
        let mut t = plain("one  two");
        t.hard_break();
        t.push("three", Style::new());
        assert_eq!(rows(&t, t.wrap_words(20)), ["one  two", "three"]);
        assert_eq!(rows(&t, t.wrap_words(0)).len(), 11);
    }

    #[test]
    fn spans_follow_style_runs() {
        let mut t = StyledText::new();
        t.push("ab", Style::new());
        t.push("cd", Style::new().bold());
        t.push("ef", Style::new());
        let spans = t.spans(1..5);
        let texts: Vec<_> = spans.iter().map(|s| s.content.to_string()).collect();
        assert_eq!(texts, ["b", "cd", "e"]);
        assert_eq!(spans[1].style, Style::new().bold());
    }

    #[test]
    fn control_characters_are_made_visible() {
        let t = plain("a\u{1b}[2Jb\u{7}\u{9b}\u{7f}\ta\nb\r");
        assert_eq!(t.as_str(), "a\u{241b}[2Jb\u{2407}\u{fffd}\u{2421}    a b ");
    }
}
