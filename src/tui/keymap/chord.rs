//! A key chord as the user writes it in `[keys]` ("ctrl+r", "shift+enter", "alt+up", "esc",
//! "G", "f2") and as crossterm reports it, normalised so that both meet: shift+tab arrives as
//! BackTab, an upper-case letter as the letter with shift, ctrl+_ as ctrl+7 (byte 0x1f).
//!
//! Written by hand: the one crate that parses key names for crossterm (crokey) spells chords
//! with `-` ("ctrl-r") and brings a proc-macro crate; the grammar here is a dozen lines.

use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
use std::fmt;

/// The modifiers a chord can name.
const NAMED: KeyModifiers = KeyModifiers::CONTROL
    .union(KeyModifiers::ALT)
    .union(KeyModifiers::SHIFT)
    .union(KeyModifiers::SUPER);

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct KeyChord {
    code: KeyCode,
    mods: KeyModifiers,
}

/// Why a chord's text is not a chord.
#[derive(Debug, PartialEq, Eq, thiserror::Error)]
pub enum ChordError {
    #[error("an empty chord")]
    Empty,
    #[error("`{0}` is not a modifier (ctrl, alt, shift, super)")]
    Modifier(String),
    #[error(
        "`{0}` is not a key (a character, enter, esc, tab, backspace, delete, insert, home, end, pageup, pagedown, up, down, left, right, space, f1–f24)"
    )]
    Key(String),
}

impl KeyChord {
    pub fn new(code: KeyCode, mods: KeyModifiers) -> KeyChord {
        Self::normalised(code, mods & NAMED)
    }

    /// The chord a key event is.
    pub fn of(key: &KeyEvent) -> KeyChord {
        Self::new(key.code, key.modifiers)
    }

    /// Parse "ctrl+shift+z", "G", "alt+enter", "ctrl++" (ctrl and plus).
    pub fn parse(text: &str) -> Result<KeyChord, ChordError> {
        let text = text.trim();
        if text.is_empty() {
            return Err(ChordError::Empty);
        }
        // A trailing `+` after a `+` is the plus key itself ("ctrl++", or "+" alone).
        let (mods_text, key_text) = match text.strip_suffix("++") {
            Some(rest) => (Some(rest), "+"),
            None if text == "+" => (None, "+"),
            None => match text.rsplit_once('+') {
                Some((mods, key)) => (Some(mods), key),
                None => (None, text),
            },
        };
        let mut mods = KeyModifiers::NONE;
        for word in mods_text.into_iter().flat_map(|m| m.split('+')) {
            mods |= match word.trim().to_ascii_lowercase().as_str() {
                "ctrl" | "control" => KeyModifiers::CONTROL,
                "alt" | "option" | "meta" => KeyModifiers::ALT,
                "shift" => KeyModifiers::SHIFT,
                "super" | "cmd" | "command" | "win" => KeyModifiers::SUPER,
                _ => return Err(ChordError::Modifier(word.trim().to_string())),
            };
        }
        Ok(Self::new(key_code(key_text.trim())?, mods))
    }

    /// The event the handlers of today's keys recognise for this chord (the inverse of
    /// `of`, up to what terminals send).
    pub fn event(self) -> KeyEvent {
        let shift_only = self.mods == KeyModifiers::SHIFT;
        let code = match self.code {
            KeyCode::Tab if self.mods.contains(KeyModifiers::SHIFT) => KeyCode::BackTab,
            KeyCode::Char(c) if shift_only && c.is_ascii_lowercase() => {
                KeyCode::Char(c.to_ascii_uppercase())
            }
            code => code,
        };
        KeyEvent::new(code, self.mods)
    }

    /// A character typed as text where text is typed (no ctrl, alt or super).
    pub fn is_text(self) -> bool {
        matches!(self.code, KeyCode::Char(_)) && (self.mods - KeyModifiers::SHIFT).is_empty()
    }

    /// A chord only a terminal that reports modifiers on enter sends (the kitty keyboard
    /// protocol's disambiguation): others send plain enter.
    pub fn needs_reporting_terminal(self) -> bool {
        self.code == KeyCode::Enter && !self.mods.is_empty()
    }

    fn normalised(code: KeyCode, mut mods: KeyModifiers) -> KeyChord {
        let code = match code {
            KeyCode::BackTab => {
                mods |= KeyModifiers::SHIFT;
                KeyCode::Tab
            }
            KeyCode::Char(c) if c.is_ascii_uppercase() => {
                mods |= KeyModifiers::SHIFT;
                KeyCode::Char(c.to_ascii_lowercase())
            }
            // ctrl+_ is byte 0x1f, which crossterm reads as ctrl+7.
            KeyCode::Char('7') if mods == KeyModifiers::CONTROL => KeyCode::Char('_'),
            // Shift is part of the character itself ('?', '_', '+'), except for space.
            KeyCode::Char(c) if !c.is_ascii_alphabetic() && c != ' ' => {
                mods -= KeyModifiers::SHIFT;
                KeyCode::Char(c)
            }
            code => code,
        };
        KeyChord { code, mods }
    }
}

fn key_code(text: &str) -> Result<KeyCode, ChordError> {
    let mut chars = text.chars();
    if let (Some(c), None) = (chars.next(), chars.next()) {
        return Ok(KeyCode::Char(c));
    }
    let lower = text.to_ascii_lowercase();
    Ok(match lower.as_str() {
        "enter" | "return" => KeyCode::Enter,
        "esc" | "escape" => KeyCode::Esc,
        "tab" => KeyCode::Tab,
        "backtab" => KeyCode::BackTab,
        "backspace" => KeyCode::Backspace,
        "delete" | "del" => KeyCode::Delete,
        "insert" | "ins" => KeyCode::Insert,
        "home" => KeyCode::Home,
        "end" => KeyCode::End,
        "pageup" | "pgup" => KeyCode::PageUp,
        "pagedown" | "pgdn" => KeyCode::PageDown,
        "up" => KeyCode::Up,
        "down" => KeyCode::Down,
        "left" => KeyCode::Left,
        "right" => KeyCode::Right,
        "space" => KeyCode::Char(' '),
        "plus" => KeyCode::Char('+'),
        _ => match lower.strip_prefix('f').and_then(|n| n.parse::<u8>().ok()) {
            Some(n @ 1..=24) => KeyCode::F(n),
            _ => return Err(ChordError::Key(text.to_string())),
        },
    })
}

/// The chord as `[keys]` spells it: parsing the text gives the chord back.
impl fmt::Display for KeyChord {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let shift_letter = matches!(self.code, KeyCode::Char(c) if c.is_ascii_lowercase())
            && self.mods == KeyModifiers::SHIFT;
        for (modifier, name) in [
            (KeyModifiers::CONTROL, "ctrl+"),
            (KeyModifiers::ALT, "alt+"),
            (KeyModifiers::SHIFT, "shift+"),
            (KeyModifiers::SUPER, "super+"),
        ] {
            if self.mods.contains(modifier) && !(shift_letter && modifier == KeyModifiers::SHIFT) {
                f.write_str(name)?;
            }
        }
        match self.code {
            KeyCode::Char(' ') => f.write_str("space"),
            KeyCode::Char(c) if shift_letter => write!(f, "{}", c.to_ascii_uppercase()),
            KeyCode::Char(c) => write!(f, "{c}"),
            KeyCode::F(n) => write!(f, "f{n}"),
            KeyCode::Enter => f.write_str("enter"),
            KeyCode::Esc => f.write_str("esc"),
            KeyCode::Tab => f.write_str("tab"),
            KeyCode::Backspace => f.write_str("backspace"),
            KeyCode::Delete => f.write_str("delete"),
            KeyCode::Insert => f.write_str("insert"),
            KeyCode::Home => f.write_str("home"),
            KeyCode::End => f.write_str("end"),
            KeyCode::PageUp => f.write_str("pageup"),
            KeyCode::PageDown => f.write_str("pagedown"),
            KeyCode::Up => f.write_str("up"),
            KeyCode::Down => f.write_str("down"),
            KeyCode::Left => f.write_str("left"),
            KeyCode::Right => f.write_str("right"),
            other => write!(f, "{other:?}"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn chord(text: &str) -> KeyChord {
        KeyChord::parse(text).unwrap()
    }

    #[test]
    fn parses_modifiers_names_and_characters() {
        assert_eq!(
            chord("ctrl+r"),
            KeyChord::new(KeyCode::Char('r'), KeyModifiers::CONTROL)
        );
        assert_eq!(
            chord("Shift+Enter"),
            KeyChord::new(KeyCode::Enter, KeyModifiers::SHIFT)
        );
        assert_eq!(
            chord("alt+up"),
            KeyChord::new(KeyCode::Up, KeyModifiers::ALT)
        );
        assert_eq!(
            chord("esc"),
            KeyChord::new(KeyCode::Esc, KeyModifiers::NONE)
        );
        assert_eq!(
            chord("f2"),
            KeyChord::new(KeyCode::F(2), KeyModifiers::NONE)
        );
        assert_eq!(
            chord("ctrl++"),
            KeyChord::new(KeyCode::Char('+'), KeyModifiers::CONTROL)
        );
        assert_eq!(
            chord("+"),
            KeyChord::new(KeyCode::Char('+'), KeyModifiers::NONE)
        );
        assert_eq!(chord("G"), chord("shift+g"));
        assert_eq!(chord("shift+tab"), chord("backtab"));
        assert_eq!(chord("ctrl+shift+z"), chord("shift+ctrl+Z"));
    }

    #[test]
    fn refuses_what_is_not_a_chord() {
        assert_eq!(KeyChord::parse(" "), Err(ChordError::Empty));
        assert_eq!(
            KeyChord::parse("hyper+x"),
            Err(ChordError::Modifier("hyper".into()))
        );
        assert_eq!(
            KeyChord::parse("ctrl+enterr"),
            Err(ChordError::Key("enterr".into()))
        );
        assert_eq!(KeyChord::parse("f25"), Err(ChordError::Key("f25".into())));
        assert!(KeyChord::parse("ctrl+").is_err());
    }

    #[test]
    fn display_parses_back_to_the_same_chord() {
        for text in [
            "ctrl+r",
            "shift+enter",
            "alt+up",
            "esc",
            "G",
            "shift+tab",
            "ctrl+shift+z",
            "ctrl+_",
            "space",
            "f12",
            "pagedown",
            "/",
            "ctrl++",
        ] {
            let parsed = chord(text);
            assert_eq!(parsed.to_string(), text);
            assert_eq!(chord(&parsed.to_string()), parsed);
        }
    }

    #[test]
    fn events_as_terminals_send_them_meet_the_written_chord() {
        let event = |code, mods| KeyChord::of(&KeyEvent::new(code, mods));
        assert_eq!(
            event(KeyCode::BackTab, KeyModifiers::SHIFT),
            chord("shift+tab")
        );
        assert_eq!(event(KeyCode::Char('G'), KeyModifiers::SHIFT), chord("G"));
        assert_eq!(event(KeyCode::Char('G'), KeyModifiers::NONE), chord("G"));
        assert_eq!(
            event(KeyCode::Char('7'), KeyModifiers::CONTROL),
            chord("ctrl+_")
        );
        assert_eq!(event(KeyCode::Char('?'), KeyModifiers::SHIFT), chord("?"));
        // and back: the handlers of today's keys see what a terminal sends.
        assert_eq!(chord("shift+tab").event().code, KeyCode::BackTab);
        assert_eq!(chord("G").event().code, KeyCode::Char('G'));
        assert_eq!(
            chord("ctrl+r").event(),
            KeyEvent::new(KeyCode::Char('r'), KeyModifiers::CONTROL)
        );
    }

    #[test]
    fn text_chords_are_characters_without_ctrl_or_alt() {
        assert!(chord("x").is_text());
        assert!(chord("G").is_text());
        assert!(chord("space").is_text());
        assert!(!chord("ctrl+x").is_text());
        assert!(!chord("enter").is_text());
        assert!(chord("shift+enter").needs_reporting_terminal());
        assert!(!chord("enter").needs_reporting_terminal());
    }
}
