//! `[tui]`: settings of the interactive interface only. `notify`: how it tells you that a
//! run ended or a call waits for your approval while its terminal is not focused — the
//! terminal's bell, or a desktop notification by escape sequence (OSC 9, which iTerm2,
//! WezTerm, Ghostty, kitty and Windows Terminal show; OSC 777, which VTE terminals such as
//! GNOME Terminal, foot and urxvt show). The `notify` command (docs/protocol.md §4.7) is
//! separate and works in every front end. `editor_mode`: the composer's keys (vim or not).
//! `theme` and `status_line`: the colours, and a command of the user's that writes the
//! status line.

use serde::Deserialize;

#[derive(Clone, Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TuiTable {
    pub notify: Option<TuiNotify>,
    /// `theme`: "auto" (light or dark as the terminal's background), "dark", "light",
    /// "high-contrast" or a theme file's name (`$AGENT_HOME/themes/NAME.toml`).
    pub theme: Option<String>,
    /// `status_line`: a command (run with `sh -c`) that gets the session's state as JSON on
    /// its stdin and prints the status line to show (docs/protocol.md §5.6).
    pub status_line: Option<String>,
    pub editor_mode: Option<EditorMode>,
}

/// `[tui] editor_mode`: the composer's keys — `default` (readline's editing keys; `emacs`
/// is the same) or `vim` (normal, insert and visual modes; `/vim` toggles for a session).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum EditorMode {
    #[default]
    #[serde(alias = "emacs")]
    Default,
    Vim,
}

/// How the interface gets your attention.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum TuiNotify {
    /// A desktop notification where the terminal is known to show one (OSC 9 or 777), the
    /// bell elsewhere.
    #[default]
    Auto,
    Bell,
    Osc9,
    Osc777,
    Off,
}

impl TuiNotify {
    /// What `auto` means in the terminal the environment describes (`var` reads it):
    /// `Osc9`, `Osc777` or `Bell`; any other choice as it is.
    pub fn resolve(self, var: impl Fn(&str) -> Option<String>) -> TuiNotify {
        if self != TuiNotify::Auto {
            return self;
        }
        let program = var("TERM_PROGRAM").unwrap_or_default().to_lowercase();
        let term = var("TERM").unwrap_or_default();
        let osc9 = ["iterm.app", "wezterm", "ghostty"].contains(&program.as_str())
            || term.contains("kitty")
            || term.contains("ghostty")
            || var("WT_SESSION").is_some();
        let osc777 = var("VTE_VERSION").is_some()
            || term.starts_with("foot")
            || term.starts_with("rxvt-unicode");
        if osc9 {
            TuiNotify::Osc9
        } else if osc777 {
            TuiNotify::Osc777
        } else {
            TuiNotify::Bell
        }
    }
}

/// `text` (a config file) with `[tui] theme = "NAME"` (`/theme`), its comments and layout
/// kept; an error if the text is not TOML or `tui` is not a table.
pub fn set_theme(text: &str, name: &str) -> Result<String, String> {
    use toml_edit::{DocumentMut, Item, Table, value};
    let mut doc = text
        .parse::<DocumentMut>()
        .map_err(|e| format!("it is not valid TOML: {}", e.message()))?;
    let tui = doc
        .entry("tui")
        .or_insert_with(|| Item::Table(Table::new()))
        .as_table_like_mut()
        .ok_or_else(|| "`tui` is not a table".to_string())?;
    tui.insert("theme", value(name));
    Ok(doc.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn set_theme_keeps_the_rest_of_the_file() {
        let text = "# mine\nmodel = \"x\"\n\n[tui]\n# quiet\nnotify = \"off\"\n";
        let edited = set_theme(text, "light").unwrap();
        assert!(edited.starts_with("# mine\nmodel = \"x\"\n"), "{edited}");
        assert!(
            edited.contains("# quiet\nnotify = \"off\"\ntheme = \"light\"\n"),
            "{edited}"
        );
        let again = set_theme(&edited, "dark").unwrap();
        assert_eq!(again.matches("theme =").count(), 1, "{again}");
        let fresh = set_theme("model = \"x\"\n", "high-contrast").unwrap();
        assert!(
            fresh.ends_with("[tui]\ntheme = \"high-contrast\"\n"),
            "{fresh}"
        );
        assert!(set_theme("tui = 3\n", "dark").is_err());
    }

    fn env(pairs: &'static [(&'static str, &'static str)]) -> impl Fn(&str) -> Option<String> {
        move |name| {
            pairs
                .iter()
                .find(|(n, _)| *n == name)
                .map(|(_, v)| v.to_string())
        }
    }

    #[test]
    fn auto_picks_what_the_terminal_shows() {
        let auto = TuiNotify::Auto;
        assert_eq!(
            auto.resolve(env(&[("TERM_PROGRAM", "WezTerm")])),
            TuiNotify::Osc9
        );
        assert_eq!(
            auto.resolve(env(&[("TERM", "xterm-kitty")])),
            TuiNotify::Osc9
        );
        assert_eq!(
            auto.resolve(env(&[("VTE_VERSION", "7600")])),
            TuiNotify::Osc777
        );
        assert_eq!(
            auto.resolve(env(&[("TERM", "xterm-256color")])),
            TuiNotify::Bell
        );
        assert_eq!(
            TuiNotify::Off.resolve(env(&[("TERM_PROGRAM", "WezTerm")])),
            TuiNotify::Off
        );
    }
}
