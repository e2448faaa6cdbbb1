//! Colours and text styles of the interface, in one place. With `NO_COLOR` set, every style
//! keeps its emphasis (bold, dim, italic) but loses its colour.

use ratatui::style::{Color, Modifier, Style};

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Theme {
    pub color: bool,
}

impl Default for Theme {
    fn default() -> Self {
        Theme::from_env()
    }
}

impl Theme {
    /// Colour unless `NO_COLOR` is set to a non-empty value (no-color.org).
    pub fn from_env() -> Theme {
        Theme {
            color: std::env::var_os("NO_COLOR").is_none_or(|v| v.is_empty()),
        }
    }

    pub const fn plain() -> Theme {
        Theme { color: false }
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
    pub fn dim(&self) -> Style {
        Style::new().add_modifier(Modifier::DIM)
    }
    pub fn bold(&self) -> Style {
        Style::new().add_modifier(Modifier::BOLD)
    }
    pub fn italic(&self) -> Style {
        Style::new().add_modifier(Modifier::ITALIC)
    }
    /// The agent's own marks: bullets, the prompt sign, the spinner.
    pub fn accent(&self) -> Style {
        self.fg(Color::Cyan)
    }
    /// What the user typed, when shown back.
    pub fn user(&self) -> Style {
        self.fg(Color::Cyan).add_modifier(Modifier::BOLD)
    }
    pub fn error(&self) -> Style {
        self.fg(Color::Red)
    }
    pub fn warning(&self) -> Style {
        self.fg(Color::Yellow)
    }
    pub fn success(&self) -> Style {
        self.fg(Color::Green)
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
                .patch(self.fg(Color::Magenta)),
            2 => style.patch(self.fg(Color::Magenta)),
            _ => style,
        }
    }
    pub fn strikethrough(&self) -> Style {
        Style::new().add_modifier(Modifier::CROSSED_OUT)
    }
    pub fn inline_code(&self) -> Style {
        self.fg(Color::Yellow)
    }
    pub fn code_block(&self) -> Style {
        Style::new()
    }
    pub fn link(&self) -> Style {
        self.fg(Color::Blue).add_modifier(Modifier::UNDERLINED)
    }
    pub fn quote(&self) -> Style {
        self.dim().add_modifier(Modifier::ITALIC)
    }
    pub fn list_marker(&self) -> Style {
        self.fg(Color::Cyan)
    }
    pub fn rule(&self) -> Style {
        self.dim()
    }
    /// Diffs.
    pub fn diff_added(&self) -> Style {
        self.fg(Color::Green)
    }
    pub fn diff_removed(&self) -> Style {
        self.fg(Color::Red)
    }
    pub fn diff_hunk(&self) -> Style {
        self.fg(Color::Cyan).add_modifier(Modifier::DIM)
    }
}
