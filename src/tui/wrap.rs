//! Wrapping styled lines to the terminal width: word wrap on display width, a prefix for
//! the first row and an indent for the rest (so a cell's text hangs under its marker), and
//! very long words broken where they must be.

use super::width::{graphemes, str_width};
use ratatui::text::{Line, Span};

/// Wrap `line` to rows of at most `width` columns; the first row starts with `first`, the
/// others with `rest`.
pub fn wrap_line(
    line: &Line<'_>,
    width: u16,
    first: &[Span<'static>],
    rest: &[Span<'static>],
) -> Vec<Line<'static>> {
    let width = width.max(1) as usize;
    let prefix_width = |spans: &[Span<'_>]| spans.iter().map(|s| s.width()).sum::<usize>();
    let mut rows: Vec<Line<'static>> = Vec::new();
    let mut row: Vec<Span<'static>> = first.to_vec();
    let mut used = prefix_width(first);
    let mut row_has_text = false;
    let rest_width = prefix_width(rest);

    // Split every span into words (keeping the spaces attached) and place them.
    for span in &line.spans {
        let style = span.style;
        for word in split_words(&span.content) {
            let word_width = str_width(word);
            if used + word_width > width && row_has_text {
                rows.push(Line::from(std::mem::take(&mut row)).style(line.style));
                row = rest.to_vec();
                used = rest_width;
                row_has_text = false;
                let trimmed = word.trim_start();
                if trimmed.is_empty() {
                    continue;
                }
                place(
                    trimmed, style, width, &mut rows, &mut row, &mut used, rest, rest_width, line,
                );
            } else {
                place(
                    word, style, width, &mut rows, &mut row, &mut used, rest, rest_width, line,
                );
            }
            row_has_text = true;
        }
    }
    rows.push(Line::from(row).style(line.style));
    rows
}

/// Put `word` on the current row, breaking it (between grapheme clusters) across rows when it
/// is wider than a row.
#[allow(clippy::too_many_arguments)]
fn place(
    word: &str,
    style: ratatui::style::Style,
    width: usize,
    rows: &mut Vec<Line<'static>>,
    row: &mut Vec<Span<'static>>,
    used: &mut usize,
    rest: &[Span<'static>],
    rest_width: usize,
    line: &Line<'_>,
) {
    let mut piece = String::new();
    for (_, g, w) in graphemes(word) {
        if *used + w > width && *used > rest_width {
            if !piece.is_empty() {
                row.push(Span::styled(std::mem::take(&mut piece), style));
            }
            rows.push(Line::from(std::mem::take(row)).style(line.style));
            *row = rest.to_vec();
            *used = rest_width;
        }
        piece.push_str(g);
        *used += w;
    }
    if !piece.is_empty() {
        row.push(Span::styled(piece, style));
    }
}

/// Words with their trailing whitespace.
fn split_words(text: &str) -> Vec<&str> {
    let mut words = Vec::new();
    let mut start = 0;
    let mut in_space = false;
    for (i, c) in text.char_indices() {
        if c.is_whitespace() {
            in_space = true;
        } else if in_space {
            words.push(&text[start..i]);
            start = i;
            in_space = false;
        }
    }
    if start < text.len() {
        words.push(&text[start..]);
    }
    words
}

/// `text` made safe and visible for the terminal: tabs become spaces, `\r\n` a newline, and
/// every other control character its visible "control picture" (␛, ␍, ...) — an escape
/// sequence or a carriage return could otherwise hide part of what is shown.
pub fn visible(text: &str) -> std::borrow::Cow<'_, str> {
    if !text.chars().any(|c| c.is_control() && c != '\n') {
        return std::borrow::Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len());
    let mut chars = text.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '\n' => out.push('\n'),
            '\r' if chars.peek() == Some(&'\n') => {}
            '\t' => out.push_str("    "),
            '\u{0}'..='\u{1f}' => {
                out.push(char::from_u32(0x2400 + u32::from(c)).unwrap_or('\u{fffd}'))
            }
            '\u{7f}' => out.push('\u{2421}'),
            c if c.is_control() => out.push('\u{fffd}'),
            c => out.push(c),
        }
    }
    std::borrow::Cow::Owned(out)
}

/// Wrap plain text (which may contain newlines) with a style.
pub fn wrap_text(
    text: &str,
    style: ratatui::style::Style,
    width: u16,
    first: &[Span<'static>],
    rest: &[Span<'static>],
) -> Vec<Line<'static>> {
    let mut rows = Vec::new();
    for (i, source) in text.split('\n').enumerate() {
        let line = Line::from(Span::styled(
            source.trim_end_matches('\r').replace('\t', "    "),
            style,
        ));
        let prefix = if i == 0 { first } else { rest };
        rows.extend(wrap_line(&line, width, prefix, rest));
    }
    rows
}

#[cfg(test)]
mod tests {
    use super::*;

    fn texts(rows: &[Line<'_>]) -> Vec<String> {
        rows.iter()
            .map(|l| l.spans.iter().map(|s| s.content.as_ref()).collect())
            .collect()
    }

    #[test]
    fn wraps_words_with_a_hanging_indent() {
        let rows = wrap_text(
            "the quick brown fox jumps",
            Default::default(),
            12,
            &[Span::raw("> ")],
            &[Span::raw("  ")],
        );
        assert_eq!(texts(&rows), ["> the quick ", "  brown fox ", "  jumps"]);
        for row in &rows {
            assert!(row.width() <= 12);
        }
    }

    #[test]
    fn control_characters_are_made_visible() {
        assert_eq!(visible("plain\ntext"), "plain\ntext");
        assert_eq!(visible("a\tb\r\nc"), "a    b\nc");
        assert_eq!(visible("ok\rrm -rf ~ \u{1b}[8m"), "ok␍rm -rf ~ ␛[8m");
    }

    #[test]
    fn breaks_long_words_and_keeps_blank_lines() {
        let rows = wrap_text("abcdefghij\n\nx", Default::default(), 4, &[], &[]);
        assert_eq!(texts(&rows), ["abcd", "efgh", "ij", "", "x"]);
        let rows = wrap_text("日本語のテキスト", Default::default(), 5, &[], &[]);
        assert!(rows.iter().all(|r| r.width() <= 5), "{:?}", texts(&rows));
        assert_eq!(texts(&rows).concat(), "日本語のテキスト");
        // Width 0 or tiny never loops forever.
        assert!(!wrap_text("hello", Default::default(), 0, &[Span::raw(">> ")], &[]).is_empty());
    }
}
