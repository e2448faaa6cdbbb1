//! A palette: the colour of every role the interface paints (the agent's marks, errors,
//! headings, diffs…) and the syntect theme its code blocks use. The built-in palettes are
//! statics here; a user theme is a TOML file (`$AGENT_HOME/themes/NAME.toml`) that starts from
//! one of them (`extends`, dark unless said) and sets any of the roles.

use ratatui::style::Color;
use serde::Deserialize;
use std::borrow::Cow;
use std::path::Path;

/// The colours of the interface's roles. Text without a role keeps the terminal's own
/// foreground, so every palette stays readable on the background it was made for.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Palette {
    pub name: Cow<'static, str>,
    /// The agent's own marks: bullets, the prompt sign, the spinner.
    pub accent: Color,
    /// What the user typed, when shown back.
    pub user: Color,
    pub error: Color,
    pub warning: Color,
    pub success: Color,
    /// Markdown headings of the first two levels.
    pub heading: Color,
    pub inline_code: Color,
    pub link: Color,
    pub list_marker: Color,
    pub diff_added: Color,
    pub diff_removed: Color,
    pub diff_hunk: Color,
    /// Secondary text (hints, the status line, thinking): a colour, or `None` for the
    /// terminal's dim attribute.
    pub muted: Option<Color>,
    /// The syntect theme of code blocks (one of [`SYNTAX_THEMES`]).
    pub syntax: Cow<'static, str>,
}

/// The syntect themes built in (syntect's defaults): the names `syntax` may take.
pub const SYNTAX_THEMES: &[&str] = &[
    "base16-ocean.dark",
    "base16-eighties.dark",
    "base16-mocha.dark",
    "base16-ocean.light",
    "InspiredGitHub",
    "Solarized (dark)",
    "Solarized (light)",
];

/// Today's colours: the 16 ANSI colours, which the terminal's own scheme adjusts.
pub static DARK: Palette = Palette {
    name: Cow::Borrowed("dark"),
    accent: Color::Cyan,
    user: Color::Cyan,
    error: Color::Red,
    warning: Color::Yellow,
    success: Color::Green,
    heading: Color::Magenta,
    inline_code: Color::Yellow,
    link: Color::Blue,
    list_marker: Color::Cyan,
    diff_added: Color::Green,
    diff_removed: Color::Red,
    diff_hunk: Color::Cyan,
    muted: None,
    syntax: Cow::Borrowed("base16-ocean.dark"),
};

/// Darker hues for a light background (fixed 256-colour entries: a light scheme's ANSI
/// yellow and cyan are often unreadable on white).
pub static LIGHT: Palette = Palette {
    name: Cow::Borrowed("light"),
    accent: Color::Indexed(25),
    user: Color::Indexed(25),
    error: Color::Indexed(124),
    warning: Color::Indexed(130),
    success: Color::Indexed(28),
    heading: Color::Indexed(90),
    inline_code: Color::Indexed(94),
    link: Color::Indexed(26),
    list_marker: Color::Indexed(25),
    diff_added: Color::Indexed(28),
    diff_removed: Color::Indexed(124),
    diff_hunk: Color::Indexed(30),
    muted: None,
    syntax: Cow::Borrowed("InspiredGitHub"),
};

/// The bright ANSI colours, and secondary text in grey rather than dimmed.
pub static HIGH_CONTRAST: Palette = Palette {
    name: Cow::Borrowed("high-contrast"),
    accent: Color::LightCyan,
    user: Color::LightCyan,
    error: Color::LightRed,
    warning: Color::LightYellow,
    success: Color::LightGreen,
    heading: Color::LightMagenta,
    inline_code: Color::LightYellow,
    link: Color::LightBlue,
    list_marker: Color::LightCyan,
    diff_added: Color::LightGreen,
    diff_removed: Color::LightRed,
    diff_hunk: Color::LightCyan,
    muted: Some(Color::Gray),
    syntax: Cow::Borrowed("base16-eighties.dark"),
};

pub static BUILTIN: [&Palette; 3] = [&DARK, &LIGHT, &HIGH_CONTRAST];

pub fn builtin(name: &str) -> Option<&'static Palette> {
    BUILTIN.iter().copied().find(|p| p.name == name)
}

/// A user theme file as written: every role optional.
#[derive(Deserialize)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
struct ThemeFile {
    extends: Option<String>,
    accent: Option<FileColor>,
    user: Option<FileColor>,
    error: Option<FileColor>,
    warning: Option<FileColor>,
    success: Option<FileColor>,
    heading: Option<FileColor>,
    inline_code: Option<FileColor>,
    link: Option<FileColor>,
    list_marker: Option<FileColor>,
    diff_added: Option<FileColor>,
    diff_removed: Option<FileColor>,
    diff_hunk: Option<FileColor>,
    muted: Option<FileColor>,
    syntax: Option<String>,
}

/// A colour as a theme file writes it: `"cyan"`, `"light-red"`, `"#1e90ff"`, `"208"` or 208.
struct FileColor(Color);

impl<'de> Deserialize<'de> for FileColor {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        #[derive(Deserialize)]
        #[serde(untagged)]
        enum Written {
            Index(i64),
            Text(String),
        }
        let bad = || {
            serde::de::Error::custom(
                "not a colour: use a name (\"cyan\", \"light-red\"), \"#rrggbb\" or a number 0-255",
            )
        };
        match Written::deserialize(deserializer)? {
            Written::Index(n) => u8::try_from(n)
                .map(|n| FileColor(Color::Indexed(n)))
                .map_err(|_| bad()),
            Written::Text(text) => text
                .trim()
                .parse::<Color>()
                .map(FileColor)
                .map_err(|_| bad()),
        }
    }
}

/// Why a theme file could not be used, with the file and the line.
#[derive(Debug, thiserror::Error)]
#[error("theme {path}: {message}")]
pub struct ThemeError {
    pub path: String,
    pub message: String,
}

/// The palette `text` (the file at `path`, named `name`) describes.
pub fn parse(name: &str, text: &str, path: &Path) -> Result<Palette, ThemeError> {
    let error = |message: String| ThemeError {
        path: path.display().to_string(),
        message,
    };
    let file: ThemeFile = toml::from_str(text).map_err(|e| {
        let message = e.message().trim_end_matches('\n').replace('\n', " ");
        error(match e.span() {
            Some(span) => {
                let line = text[..span.start.min(text.len())].matches('\n').count() + 1;
                format!("line {line}: {message}")
            }
            None => message,
        })
    })?;
    let base = match file.extends.as_deref() {
        None => &DARK,
        Some(name) => builtin(name).ok_or_else(|| {
            error(format!(
                "extends = \"{name}\": not a built-in theme (dark, light, high-contrast)"
            ))
        })?,
    };
    if let Some(syntax) = &file.syntax
        && !SYNTAX_THEMES.contains(&syntax.as_str())
    {
        return Err(error(format!(
            "syntax = \"{syntax}\": not a known code theme ({})",
            SYNTAX_THEMES.join(", ")
        )));
    }
    let pick = |set: Option<FileColor>, base: Color| set.map_or(base, |c| c.0);
    Ok(Palette {
        name: Cow::Owned(name.to_string()),
        accent: pick(file.accent, base.accent),
        user: pick(file.user, base.user),
        error: pick(file.error, base.error),
        warning: pick(file.warning, base.warning),
        success: pick(file.success, base.success),
        heading: pick(file.heading, base.heading),
        inline_code: pick(file.inline_code, base.inline_code),
        link: pick(file.link, base.link),
        list_marker: pick(file.list_marker, base.list_marker),
        diff_added: pick(file.diff_added, base.diff_added),
        diff_removed: pick(file.diff_removed, base.diff_removed),
        diff_hunk: pick(file.diff_hunk, base.diff_hunk),
        muted: file.muted.map(|c| c.0).or(base.muted),
        syntax: file.syntax.map_or_else(|| base.syntax.clone(), Cow::Owned),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parsed(text: &str) -> Result<Palette, ThemeError> {
        parse("mine", text, Path::new("/home/u/.agent/themes/mine.toml"))
    }

    #[test]
    fn a_theme_file_sets_some_roles_and_takes_the_rest_from_what_it_extends() {
        let palette = parsed(
            "extends = \"light\"\naccent = \"#ff8800\"\nerror = 196\nlink = \"light-blue\"\nsuccess = \"22\"\nsyntax = \"Solarized (light)\"\n",
        )
        .expect("parses");
        assert_eq!(palette.name, "mine");
        assert_eq!(palette.accent, Color::Rgb(0xff, 0x88, 0x00));
        assert_eq!(palette.error, Color::Indexed(196));
        assert_eq!(palette.link, Color::LightBlue);
        assert_eq!(palette.success, Color::Indexed(22));
        assert_eq!(palette.syntax, "Solarized (light)");
        assert_eq!(palette.warning, LIGHT.warning);
        assert_eq!(palette.heading, LIGHT.heading);
    }

    #[test]
    fn a_theme_file_without_extends_starts_from_dark() {
        let palette = parsed("heading = \"green\"\n").expect("parses");
        assert_eq!(palette.heading, Color::Green);
        assert_eq!(palette.accent, DARK.accent);
        assert_eq!(palette.syntax, DARK.syntax);
        assert_eq!(
            parsed("").expect("an empty file is dark").accent,
            DARK.accent
        );
    }

    #[test]
    fn mistakes_name_the_file_and_the_line() {
        let unknown = parsed("accent = \"cyan\"\naccnet = \"red\"\n")
            .expect_err("an unknown role")
            .to_string();
        assert!(unknown.contains("mine.toml"), "{unknown}");
        assert!(unknown.contains("line 2"), "{unknown}");
        assert!(unknown.contains("accnet"), "{unknown}");

        let colour = parsed("\n\nerror = \"reddish\"\n")
            .expect_err("a bad colour")
            .to_string();
        assert!(colour.contains("line 3"), "{colour}");
        assert!(colour.contains("not a colour"), "{colour}");

        for bad in [
            "error = 256",
            "error = -1",
            "error = \"#12345\"",
            "error = true",
        ] {
            assert!(parsed(bad).is_err(), "{bad} is not a colour");
        }
        let base = parsed("extends = \"solarized\"").expect_err("not a built-in");
        assert!(base.to_string().contains("extends"), "{base}");
        let syntax = parsed("syntax = \"Monokai\"").expect_err("not a code theme");
        assert!(syntax.to_string().contains("InspiredGitHub"), "{syntax}");
    }

    #[test]
    fn every_builtin_names_a_known_code_theme() {
        for palette in BUILTIN {
            assert!(SYNTAX_THEMES.contains(&palette.syntax.as_ref()));
            assert_eq!(builtin(&palette.name), Some(palette));
        }
    }
}
