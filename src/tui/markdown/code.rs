//! Code blocks: recognising the fence lines of a fenced block (so the stream can follow an open
//! block line by line), and turning each code line into rows: tabs expanded, highlighted, and
//! indented by a two-column gutter so code stands out from prose without adding characters that
//! would be copied along with it.
//!
//! Long lines are hard-wrapped, with a dim `↪` in the gutter of each continuation row, rather
//! than left to overflow: lines go into the terminal's scrollback, which cannot scroll
//! sideways, and ratatui truncates a line wider than the viewport, so overflow would silently
//! lose the end of the line. The mark tells a wrapped row from a real new line.

use std::borrow::Cow;

use ratatui::text::{Line, Span};

use super::highlight::{LineHighlighter, language};
use super::styled::{StyledText, trim_end};
use crate::tui::theme::Theme;
use unicode_width::UnicodeWidthChar;

const GUTTER: &str = "  ";
const CONTINUATION: &str = "↪ ";
const TAB_STOP: usize = 4;

/// The opening fence of a fenced code block: which character, how many, how far indented.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Fence {
    ch: char,
    len: usize,
    indent: usize,
}

impl Fence {
    /// Reads an opening fence line (without its newline): up to three spaces, at least three
    /// backticks or tildes, then the info string (which, for backticks, has no backtick).
    pub(crate) fn open(line: &str) -> Option<(Fence, String)> {
        let indent = line.len() - line.trim_start_matches(' ').len();
        if indent > 3 {
            return None;
        }
        let rest = &line[indent..];
        let ch = rest.chars().next().filter(|c| *c == '`' || *c == '~')?;
        let len = rest.len() - rest.trim_start_matches(ch).len();
        if len < 3 {
            return None;
        }
        let info = rest[len..].trim();
        if ch == '`' && info.contains('`') {
            return None;
        }
        Some((Fence { ch, len, indent }, info.to_string()))
    }

    /// Whether `line` closes the block: up to three spaces, at least as many fence characters
    /// as the opening, then nothing but spaces (CommonMark, as pulldown-cmark reads it).
    pub(crate) fn closes(&self, line: &str) -> bool {
        let indent = line.len() - line.trim_start_matches(' ').len();
        if indent > 3 {
            return false;
        }
        let rest = &line[indent..];
        let run = rest.len() - rest.trim_start_matches(self.ch).len();
        run >= self.len && rest[run..].trim_end_matches(' ').is_empty()
    }

    /// Whether a line still arriving could yet become the closing fence (it is then not shown).
    pub(crate) fn may_close(&self, partial: &str) -> bool {
        let rest = partial.trim_start_matches(' ');
        partial.len() - rest.len() <= 3 && rest.trim_end_matches(' ').chars().all(|c| c == self.ch)
    }

    /// The content of a code line: the opening fence's indentation is removed from it.
    pub(crate) fn content<'a>(&self, line: &'a str) -> &'a str {
        let spaces = line.len() - line.trim_start_matches(' ').len();
        &line[spaces.min(self.indent)..]
    }
}

/// Renders the lines of one code block, keeping the highlighting state between lines.
pub(crate) struct CodeBlock {
    highlighter: Option<LineHighlighter>,
    theme: Theme,
}

impl CodeBlock {
    /// Without colour (`NO_COLOR`) nothing is highlighted and syntect is never loaded.
    pub(crate) fn new(info: &str, theme: Theme) -> CodeBlock {
        let highlighter = theme
            .syntax()
            .and_then(|syntax| LineHighlighter::for_language(language(info), syntax));
        CodeBlock { highlighter, theme }
    }

    /// One complete source line (no newline) → one or more rows of at most `width` columns.
    pub(crate) fn line(&mut self, line: &str, width: usize) -> Vec<Line<'static>> {
        let line = expand_tabs(line);
        let base = self.theme.code_block();
        let text = match self.highlighter.as_mut().map(|h| h.line(&line, base)) {
            Some(Some(text)) => text,
            Some(None) => {
                // syntect failed on this line: the rest of the block is shown plain.
                self.highlighter = None;
                plain(&line, &self.theme)
            }
            None => plain(&line, &self.theme),
        };
        self.rows(&text, width)
    }

    /// Like `line` for a line still arriving, without advancing the highlighting state.
    pub(crate) fn peek(&self, line: &str, width: usize) -> Vec<Line<'static>> {
        let line = expand_tabs(line);
        let highlighted = self
            .highlighter
            .as_ref()
            .and_then(|h| h.peek(&line, self.theme.code_block()));
        let text = highlighted.unwrap_or_else(|| plain(&line, &self.theme));
        self.rows(&text, width)
    }

    fn rows(&self, text: &StyledText, width: usize) -> Vec<Line<'static>> {
        let avail = width.saturating_sub(GUTTER.len()).max(1);
        text.wrap_chars(avail)
            .into_iter()
            .enumerate()
            .map(|(i, range)| {
                let gutter = if i == 0 {
                    Span::raw(GUTTER)
                } else {
                    Span::styled(CONTINUATION, self.theme.dim())
                };
                let mut spans = vec![gutter];
                spans.extend(text.spans(range));
                trim_end(&mut spans);
                Line::from(spans)
            })
            .collect()
    }
}

fn plain(line: &str, theme: &Theme) -> StyledText {
    let mut text = StyledText::new();
    text.push(line, theme.code_block());
    text
}

/// Tabs to spaces up to the next multiple of four columns.
fn expand_tabs(line: &str) -> Cow<'_, str> {
    if !line.contains('\t') {
        return Cow::Borrowed(line);
    }
    let mut out = String::with_capacity(line.len() + 8);
    let mut col = 0;
    for c in line.chars() {
        if c == '\t' {
            let n = TAB_STOP - col % TAB_STOP;
            out.extend(std::iter::repeat_n(' ', n));
            col += n;
        } else {
            out.push(c);
            col += c.width().unwrap_or(0);
        }
    }
    Cow::Owned(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn text(lines: &[Line<'_>]) -> Vec<String> {
        lines.iter().map(|l| l.to_string()).collect()
    }

    #[test]
    fn fences_open_and_close_as_commonmark_says() {
        let (f, info) = Fence::open("```rust ignore").expect("a fence");
        assert_eq!(info, "rust ignore");
        assert!(f.closes("```"));
        assert!(f.closes("   ````  "));
        assert!(!f.closes("    ```"));
        assert!(!f.closes("``"));
        assert!(!f.closes("~~~"));
        assert!(!f.closes("``` x"));
        assert!(!f.closes("```\t"));
        let (f, _) = Fence::open("  ~~~~").expect("a fence");
        assert!(!f.closes("~~~"));
        assert!(f.closes("~~~~~"));
        assert_eq!(f.content("    x"), "  x");
        assert_eq!(f.content(" x"), "x");
        assert!(Fence::open("``").is_none());
        assert!(Fence::open("``` a`b").is_none());
        assert!(Fence::open("    ```").is_none());
        assert!(f.may_close(" ~~"));
        assert!(!f.may_close("~x"));
    }

    #[test]
    fn long_lines_wrap_with_a_continuation_mark_and_tabs_expand() {
        let mut block = CodeBlock::new("", Theme::plain());
        assert_eq!(text(&block.line("abcdefgh", 6)), ["  abcd", "↪ efgh"]);
        assert_eq!(text(&block.line("\tx", 20)), ["      x"]);
        assert_eq!(text(&block.line("ab\tx", 20)), ["  ab  x"]);
        assert_eq!(text(&block.line("", 20)), [""]);
        assert_eq!(text(&block.line("abc", 0)), ["  a", "↪ b", "↪ c"]);
    }
}
