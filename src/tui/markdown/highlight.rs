//! Syntax highlighting of code blocks with syntect, one line at a time. The syntax and theme sets
//! are loaded on first use (a `OnceLock`), so start-up never pays for them; a code block with no
//! language, an unknown one, or `NO_COLOR` never loads them at all. The parse state is carried
//! from line to line, so highlighting a streamed block costs only its new lines.

use std::sync::OnceLock;

use ratatui::style::{Color, Modifier, Style};
use syntect::highlighting::{
    FontStyle, HighlightIterator, HighlightState, Highlighter, Theme as SynTheme, ThemeSet,
};
use syntect::parsing::{ParseState, ScopeStack, SyntaxSet};

use super::styled::StyledText;

/// The code theme when the palette names none syntect has. The palette's theme (dark or
/// light, `tui::theme`) colours code: only its foreground colours are used (never
/// backgrounds), and its default foreground is left to the terminal.
const FALLBACK_THEME: &str = "base16-ocean.dark";

struct Sets {
    syntaxes: SyntaxSet,
    /// syntect's bundled themes (seven small ones), by name.
    themes: std::collections::BTreeMap<String, SynTheme>,
}

/// Loads the syntax and theme sets now rather than at the first highlighted code block (for a
/// caller that wants to pay for it off the UI thread). Idempotent.
pub fn preload() {
    let _ = sets();
}

fn sets() -> &'static Sets {
    static SETS: OnceLock<Sets> = OnceLock::new();
    SETS.get_or_init(|| Sets {
        syntaxes: SyntaxSet::load_defaults_newlines(),
        themes: ThemeSet::load_defaults().themes,
    })
}

/// The first word of a fence's info string: "rust,ignore" and "python {.class}" name rust and
/// python.
pub(crate) fn language(info: &str) -> &str {
    let info = info.trim();
    let end = info
        .find(|c: char| c.is_whitespace() || c == ',' || c == '{')
        .unwrap_or(info.len());
    &info[..end]
}

/// Highlighting state of one code block.
pub(crate) struct LineHighlighter {
    parse: ParseState,
    state: HighlightState,
    highlighter: Highlighter<'static>,
    palette: Palette,
}

#[derive(Clone, Copy)]
struct Palette {
    syntaxes: &'static SyntaxSet,
    default_fg: Option<syntect::highlighting::Color>,
}

impl LineHighlighter {
    /// `None` for an empty or unknown language: such blocks render plain. `theme` names the
    /// syntect theme (the palette's).
    pub(crate) fn for_language(lang: &str, theme: &str) -> Option<LineHighlighter> {
        if lang.is_empty() {
            return None;
        }
        let sets = sets();
        let theme = sets
            .themes
            .get(theme)
            .or_else(|| sets.themes.get(FALLBACK_THEME))?;
        let syntax = sets.syntaxes.find_syntax_by_token(lang)?;
        let highlighter = Highlighter::new(theme);
        let state = HighlightState::new(&highlighter, ScopeStack::new());
        Some(LineHighlighter {
            parse: ParseState::new(syntax),
            state,
            highlighter,
            palette: Palette {
                syntaxes: &sets.syntaxes,
                default_fg: theme.settings.foreground,
            },
        })
    }

    /// Highlights one source line (without its newline) and advances the state. `None` if
    /// syntect reports an error; the caller then shows the rest of the block plain.
    pub(crate) fn line(&mut self, line: &str, base: Style) -> Option<StyledText> {
        highlight(
            &mut self.parse,
            &mut self.state,
            &self.highlighter,
            self.palette,
            line,
            base,
        )
    }

    /// Highlights a line that is still arriving, without advancing the state.
    pub(crate) fn peek(&self, line: &str, base: Style) -> Option<StyledText> {
        let mut parse = self.parse.clone();
        let mut state = self.state.clone();
        highlight(
            &mut parse,
            &mut state,
            &self.highlighter,
            self.palette,
            line,
            base,
        )
    }
}

impl Palette {
    fn style(&self, s: syntect::highlighting::Style, base: Style) -> Style {
        let mut style = base;
        if Some(s.foreground) != self.default_fg {
            style = style.fg(Color::Rgb(s.foreground.r, s.foreground.g, s.foreground.b));
        }
        if s.font_style.contains(FontStyle::BOLD) {
            style = style.add_modifier(Modifier::BOLD);
        }
        if s.font_style.contains(FontStyle::ITALIC) {
            style = style.add_modifier(Modifier::ITALIC);
        }
        style
    }
}

fn highlight(
    parse: &mut ParseState,
    state: &mut HighlightState,
    highlighter: &Highlighter<'static>,
    palette: Palette,
    line: &str,
    base: Style,
) -> Option<StyledText> {
    // The "newlines" syntaxes expect every line to end with '\n'.
    let with_nl = format!("{line}\n");
    let ops = parse.parse_line(&with_nl, palette.syntaxes).ok()?;
    let mut out = StyledText::new();
    for (style, piece) in HighlightIterator::new(state, &ops, &with_nl, highlighter) {
        let piece = piece.strip_suffix('\n').unwrap_or(piece);
        out.push(piece, palette.style(style, base));
    }
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn language_is_the_first_word_of_the_info_string() {
        assert_eq!(language("rust"), "rust");
        assert_eq!(language(" rust,ignore"), "rust");
        assert_eq!(language("python {.numberLines}"), "python");
        assert_eq!(language(""), "");
    }

    #[test]
    fn known_languages_get_colours_and_unknown_ones_none() {
        let mut h = LineHighlighter::for_language("rust", FALLBACK_THEME).expect("rust is bundled");
        let text = h
            .line("fn main() { let x = 1; }", Style::new())
            .expect("highlights");
        assert_eq!(text.as_str(), "fn main() { let x = 1; }");
        assert!(
            text.all_spans()
                .iter()
                .any(|s| matches!(s.style.fg, Some(Color::Rgb(..))))
        );
        assert!(LineHighlighter::for_language("no-such-language-xyz", FALLBACK_THEME).is_none());
        assert!(LineHighlighter::for_language("", FALLBACK_THEME).is_none());
    }

    #[test]
    fn code_follows_the_palettes_theme() {
        let colours = |theme: &str| {
            let mut h = LineHighlighter::for_language("rust", theme).expect("rust is bundled");
            let text = h
                .line("fn main() { let x = 1; }", Style::new())
                .expect("highlights");
            text.all_spans()
                .iter()
                .map(|s| s.style.fg)
                .collect::<Vec<_>>()
        };
        let dark = crate::tui::theme::palette::DARK.syntax.as_ref();
        let light = crate::tui::theme::palette::LIGHT.syntax.as_ref();
        assert_ne!(colours(dark), colours(light));
        for name in crate::tui::theme::palette::SYNTAX_THEMES {
            assert!(sets().themes.contains_key(*name), "{name} is bundled");
        }
    }

    #[test]
    fn state_carries_across_lines() {
        // Inside a block comment opened on the previous line, the text is a comment.
        let mut h = LineHighlighter::for_language("c", FALLBACK_THEME).expect("c is bundled");
        let _ = h.line("/* start", Style::new());
        let peeked = h.peek("int x;", Style::new()).expect("highlights");
        let next = h.line("int x;", Style::new()).expect("highlights");
        assert_eq!(peeked.all_spans(), next.all_spans());
        let mut fresh = LineHighlighter::for_language("c", FALLBACK_THEME).expect("c is bundled");
        let alone = fresh.line("int x;", Style::new()).expect("highlights");
        assert_ne!(alone.all_spans(), next.all_spans());
    }

    /// syntect compiles each grammar's regexes lazily and panics if one fails to compile (they
    /// are "pre-tested" with Oniguruma, and we build with fancy-regex). Run a varied snippet
    /// through grammars so such a failure would show here, not in a user's session.
    fn highlight_snippet_in(names: &[&str]) {
        let snippet = [
            "#!/bin/sh",
            "<!DOCTYPE html><html a=\"b\">",
            "/* block",
            "comment */",
            "// line",
            "# hash comment",
            "fn main() { let x = \"str\\n\"; }",
            "def f(a, *b, **c):",
            "  return [1, 2.5e3, 0x1F, 'c', r\"raw\"]",
            "SELECT * FROM t WHERE a = 'x';",
            "@decorator",
            "class A<T> extends B implements C {}",
            "$var = ${x:-y} `cmd`",
            "key: value",
            "[section]",
            "\\begin{doc} $x^2$",
            "%% %{ }% <% %>",
            "\"\"\"",
            "heredoc <<EOF",
            "EOF",
            "end",
            "}",
            ")",
            "]",
        ];
        for name in names {
            let mut h =
                LineHighlighter::for_language(name, FALLBACK_THEME).expect("a bundled grammar");
            for line in snippet {
                let _ = h.line(line, Style::new());
            }
        }
    }

    #[test]
    fn languages_models_write_most_highlight_without_panicking() {
        highlight_snippet_in(&["rust", "python", "js", "sh", "json", "yaml", "diff", "go"]);
    }

    #[test]
    fn every_bundled_grammar_highlights_without_panicking() {
        let sets = sets();
        let names: Vec<String> = sets
            .syntaxes
            .syntaxes()
            .iter()
            .filter_map(|s| s.file_extensions.first().cloned())
            .collect();
        let names: Vec<&str> = names.iter().map(String::as_str).collect();
        highlight_snippet_in(&names);
    }
}
