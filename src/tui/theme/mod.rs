//! Colours and text styles of the interface, in one place: each method is a role, and the
//! theme's palette (dark, light, high-contrast or the user's own, `palette.rs`) gives the
//! role its colour. With `NO_COLOR` set, every style keeps its emphasis (bold, dim, italic)
//! but loses its colour, whatever the palette.

pub mod detect;
pub mod palette;
pub mod registry;

use palette::Palette;
use ratatui::style::{Color, Modifier, Style};
use std::path::Path;

/// Copy, so `let theme = self.theme;` stays cheap: switching themes swaps the palette pointer.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Theme {
    /// Whether anything is coloured (`NO_COLOR` unset).
    pub color: bool,
    palette: &'static Palette,
}

impl Default for Theme {
    fn default() -> Self {
        Theme::from_env()
    }
}

/// `[tui] theme`: `auto` (or unset) asks the terminal whether it is light or dark.
pub const AUTO: &str = "auto";

/// The theme the interface starts with and what was wrong on the way (an unknown name, a
/// broken theme file), to show once as warnings.
pub struct Chosen {
    pub theme: Theme,
    pub problems: Vec<String>,
}

/// The theme `[tui] theme` names (`choice`), among the built-in ones and the theme files in
/// `themes_dir`. `auto` asks the terminal (`detect`), unless nothing is coloured anyway.
pub fn choose(choice: Option<&str>, themes_dir: &Path) -> Chosen {
    let plain = Theme::from_env();
    let themes = registry::install(themes_dir);
    let mut problems = themes.problems.clone();
    let name = choice.unwrap_or(AUTO);
    let palette = if name == AUTO {
        let appearance = plain.color.then(detect::terminal_appearance).flatten();
        match appearance {
            Some(detect::Appearance::Light) => &palette::LIGHT,
            _ => &palette::DARK,
        }
    } else {
        match themes.get(name) {
            Some(palette) => palette,
            None => {
                problems.push(format!(
                    "[tui] theme = \"{name}\": no such theme (there are {}); using dark",
                    themes.names().join(", ")
                ));
                &palette::DARK
            }
        }
    };
    Chosen {
        theme: plain.with_palette(palette),
        problems,
    }
}

impl Theme {
    /// The dark palette; colour unless `NO_COLOR` is set to a non-empty value (no-color.org).
    pub fn from_env() -> Theme {
        Theme {
            color: std::env::var_os("NO_COLOR").is_none_or(|v| v.is_empty()),
            palette: &palette::DARK,
        }
    }

    pub const fn plain() -> Theme {
        Theme {
            color: false,
            palette: &palette::DARK,
        }
    }

    /// The dark palette in colour, whatever the environment says.
    pub const fn colored() -> Theme {
        Theme {
            color: true,
            palette: &palette::DARK,
        }
    }

    /// This theme with another palette (`NO_COLOR` still wins).
    pub const fn with_palette(self, palette: &'static Palette) -> Theme {
        Theme {
            color: self.color,
            palette,
        }
    }

    pub fn palette(&self) -> &'static Palette {
        self.palette
    }

    /// The syntect theme of code blocks; `None` when nothing is coloured.
    pub fn syntax(&self) -> Option<&'static str> {
        self.color.then_some(self.palette.syntax.as_ref())
    }

    fn fg(&self, color: Color) -> Style {
        if self.color {
            Style::new().fg(color)
        } else {
            Style::new()
        }
    }

    pub fn text(&self) -> Style {
        Style::new()
    }
    /// Secondary text: the palette's muted colour, or the terminal's dim attribute.
    pub fn dim(&self) -> Style {
        match self.palette.muted {
            Some(muted) if self.color => Style::new().fg(muted),
            _ => Style::new().add_modifier(Modifier::DIM),
        }
    }
    pub fn bold(&self) -> Style {
        Style::new().add_modifier(Modifier::BOLD)
    }
    pub fn italic(&self) -> Style {
        Style::new().add_modifier(Modifier::ITALIC)
    }
    /// The agent's own marks: bullets, the prompt sign, the spinner.
    pub fn accent(&self) -> Style {
        self.fg(self.palette.accent)
    }
    /// What the user typed, when shown back.
    pub fn user(&self) -> Style {
        self.fg(self.palette.user).add_modifier(Modifier::BOLD)
    }
    pub fn error(&self) -> Style {
        self.fg(self.palette.error)
    }
    pub fn warning(&self) -> Style {
        self.fg(self.palette.warning)
    }
    pub fn success(&self) -> Style {
        self.fg(self.palette.success)
    }
    pub fn thinking(&self) -> Style {
        self.dim().add_modifier(Modifier::ITALIC)
    }
    /// Markdown.
    pub fn heading(&self, level: usize) -> Style {
        let style = self.bold();
        match level {
            1 => style
                .add_modifier(Modifier::UNDERLINED)
                .patch(self.fg(self.palette.heading)),
            2 => style.patch(self.fg(self.palette.heading)),
            _ => style,
        }
    }
    pub fn strikethrough(&self) -> Style {
        Style::new().add_modifier(Modifier::CROSSED_OUT)
    }
    pub fn inline_code(&self) -> Style {
        self.fg(self.palette.inline_code)
    }
    pub fn code_block(&self) -> Style {
        Style::new()
    }
    pub fn link(&self) -> Style {
        self.fg(self.palette.link)
            .add_modifier(Modifier::UNDERLINED)
    }
    pub fn quote(&self) -> Style {
        self.dim().add_modifier(Modifier::ITALIC)
    }
    pub fn list_marker(&self) -> Style {
        self.fg(self.palette.list_marker)
    }
    pub fn rule(&self) -> Style {
        self.dim()
    }
    /// Diffs.
    pub fn diff_added(&self) -> Style {
        self.fg(self.palette.diff_added)
    }
    pub fn diff_removed(&self) -> Style {
        self.fg(self.palette.diff_removed)
    }
    pub fn diff_hunk(&self) -> Style {
        self.fg(self.palette.diff_hunk).add_modifier(Modifier::DIM)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn roles_take_the_palettes_colours_and_no_color_takes_every_colour_away() {
        let dark = Theme::colored();
        let light = dark.with_palette(&palette::LIGHT);
        let high = dark.with_palette(&palette::HIGH_CONTRAST);
        assert_eq!(dark.accent().fg, Some(Color::Cyan));
        assert_eq!(light.accent().fg, Some(palette::LIGHT.accent));
        assert_ne!(light.accent().fg, dark.accent().fg);
        assert_eq!(high.dim().fg, palette::HIGH_CONTRAST.muted);
        assert_eq!(light.syntax(), Some("InspiredGitHub"));
        for palette in palette::BUILTIN {
            let plain = Theme::plain().with_palette(palette);
            for style in [
                plain.accent(),
                plain.user(),
                plain.error(),
                plain.warning(),
                plain.success(),
                plain.heading(1),
                plain.inline_code(),
                plain.link(),
                plain.list_marker(),
                plain.diff_added(),
                plain.diff_removed(),
                plain.diff_hunk(),
                plain.dim(),
                plain.thinking(),
            ] {
                assert_eq!((style.fg, style.bg), (None, None), "{}", palette.name);
            }
            assert_eq!(plain.syntax(), None);
        }
    }

    #[test]
    fn a_named_theme_is_chosen_without_asking_the_terminal_and_an_unknown_one_is_reported() {
        let dir = Path::new("/nonexistent/agent/themes");
        let chosen = choose(Some("light"), dir);
        assert_eq!(chosen.theme.palette().name, "light");
        assert!(chosen.problems.is_empty());
        let unknown = choose(Some("solarized"), dir);
        assert_eq!(unknown.theme.palette().name, "dark");
        assert!(
            unknown.problems[0].contains("solarized"),
            "{:?}",
            unknown.problems
        );
        assert!(unknown.problems[0].contains("high-contrast"));
    }
}
