//! Command output with colours: a program's SGR sequences (`ESC[31m`) become styles, and
//! nothing else a program prints ever reaches the terminal — other escape sequences (cursor
//! moves, screen clears, titles, hyperlinks) and control characters are dropped, and a bare
//! carriage return (a progress bar redrawing its line) keeps only what was written last.
//!
//! `vte` (the parser alacritty uses) does the stripping, because it knows where every kind of
//! sequence ends; `ansi-to-tui` turns the SGR that is left into ratatui styles.

use ansi_to_tui::IntoText;
use ratatui::style::Style;
use ratatui::text::{Line, Span};
use vte::{Params, Parser, Perform};

/// `text` (a command's output, escapes and all) as styled lines; `base` is the style of
/// text no SGR sequence styled.
pub fn lines(text: &str, base: Style) -> Vec<Line<'static>> {
    if !text.contains(['\u{1b}', '\r', '\u{9b}'])
        && !text.contains(|c: char| c.is_control() && c != '\n' && c != '\t')
    {
        return text
            .split('\n')
            .map(|l| Line::from(Span::styled(l.replace('\t', "    "), base)))
            .collect();
    }
    let clean = sgr_only(text);
    let parsed = match clean.as_bytes().into_text() {
        Ok(parsed) => parsed,
        // Cannot happen for what `sgr_only` writes; show the text without styles then.
        Err(_) => {
            return strip(&clean)
                .split('\n')
                .map(|l| Line::from(Span::styled(l.to_string(), base)))
                .collect();
        }
    };
    parsed
        .lines
        .into_iter()
        .map(|line| {
            let spans: Vec<Span<'static>> = line
                .spans
                .into_iter()
                .map(|span| Span::styled(span.content.into_owned(), base.patch(span.style)))
                .collect();
            Line::from(spans)
        })
        .collect()
}

/// `text` without any escape sequence or control character (but newlines): what a command
/// printed, as plain text.
pub fn strip(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut keeper = Keeper {
        out: &mut out,
        line_start: 0,
        keep_sgr: false,
        pending_return: false,
    };
    Parser::new().advance(&mut keeper, text.as_bytes());
    out
}

/// The printable text, newlines, tabs (as spaces) and SGR sequences of `text`.
fn sgr_only(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut keeper = Keeper {
        out: &mut out,
        line_start: 0,
        keep_sgr: true,
        pending_return: false,
    };
    Parser::new().advance(&mut keeper, text.as_bytes());
    out
}

struct Keeper<'a> {
    out: &'a mut String,
    /// Where the current line starts in `out`.
    line_start: usize,
    keep_sgr: bool,
    /// A carriage return not (yet) followed by a newline: the next character starts the
    /// line over.
    pending_return: bool,
}

impl Keeper<'_> {
    fn start_over_if_returned(&mut self) {
        if self.pending_return {
            self.out.truncate(self.line_start);
            self.pending_return = false;
        }
    }
}

impl Perform for Keeper<'_> {
    fn print(&mut self, c: char) {
        self.start_over_if_returned();
        self.out.push(c);
    }

    fn execute(&mut self, byte: u8) {
        match byte {
            b'\n' => {
                self.pending_return = false;
                self.out.push('\n');
                self.line_start = self.out.len();
            }
            b'\r' => self.pending_return = true,
            b'\t' => {
                self.start_over_if_returned();
                self.out.push_str("    ");
            }
            _ => {}
        }
    }

    fn csi_dispatch(&mut self, params: &Params, intermediates: &[u8], ignore: bool, action: char) {
        if !self.keep_sgr || action != 'm' || ignore || !intermediates.is_empty() {
            return;
        }
        self.start_over_if_returned();
        let codes: Vec<String> = params
            .iter()
            .map(|sub| sub.iter().map(u16::to_string).collect::<Vec<_>>().join(";"))
            .collect();
        self.out.push_str("\u{1b}[");
        self.out.push_str(&codes.join(";"));
        self.out.push('m');
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use ratatui::style::{Color, Modifier};

    fn texts(lines: &[Line<'_>]) -> Vec<String> {
        lines.iter().map(|l| l.to_string()).collect()
    }

    #[test]
    fn colours_become_styles_and_nothing_raw_remains() {
        let lines = lines(
            "\u{1b}[31mRED\u{1b}[0m plain \u{1b}[1;32mbold green\u{1b}[m",
            Style::new(),
        );
        assert_eq!(texts(&lines), ["RED plain bold green"]);
        let spans = &lines[0].spans;
        assert_eq!(spans[0].content, "RED");
        assert_eq!(spans[0].style.fg, Some(Color::Red));
        let green = spans.iter().find(|s| s.content == "bold green").unwrap();
        assert_eq!(green.style.fg, Some(Color::Green));
        assert!(green.style.add_modifier.contains(Modifier::BOLD));
    }

    #[test]
    fn other_sequences_and_controls_are_dropped() {
        let text = "\u{1b}]0;title\u{7}\u{1b}[2J\u{1b}[Hstart\u{7}\u{1b}[?25l end\u{1b}]8;;http://x\u{1b}\\link\u{1b}]8;;\u{1b}\\";
        assert_eq!(texts(&lines(text, Style::new())), ["start endlink"]);
        assert_eq!(strip("a\u{1b}[31mb\u{1b}[0mc\td"), "abc    d");
    }

    #[test]
    fn a_carriage_return_redraws_the_line() {
        let text = "progress 10%\rprogress 50%\rprogress 100%\nnext\r\nline";
        assert_eq!(
            texts(&lines(text, Style::new())),
            ["progress 100%", "next", "line"]
        );
    }

    #[test]
    fn the_base_style_stays_under_the_colours() {
        let lines = lines("a \u{1b}[34mb", Style::new().add_modifier(Modifier::DIM));
        assert!(lines[0].spans[0].style.add_modifier.contains(Modifier::DIM));
        assert_eq!(lines[0].spans[1].style.fg, Some(Color::Blue));
    }
}
