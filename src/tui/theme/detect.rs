//! Is the terminal light or dark? Asked once at start for `[tui] theme = "auto"`: the
//! background colour by OSC 11, with terminal-colorsaurus, which sends the DA1 query right
//! after it — a terminal that does not know OSC 11 answers DA1 first, so it costs one round
//! trip, and only a terminal that answers neither waits for the timeout. It must run before
//! the interface reads its input (crossterm would take the answer for keys), and it reads the
//! answer whole, so nothing of it reaches the composer. `COLORFGBG` (set by rxvt, Konsole…)
//! answers when the terminal does not.

use std::io::IsTerminal;
use std::time::Duration;

/// How long a terminal that answers neither OSC 11 nor DA1 can delay the start.
pub const TIMEOUT: Duration = Duration::from_millis(150);

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Appearance {
    Dark,
    Light,
}

/// The terminal's appearance, or `None` when it cannot be told (not a terminal, no answer).
pub fn terminal_appearance() -> Option<Appearance> {
    if !std::io::stdin().is_terminal() || !std::io::stdout().is_terminal() {
        return None;
    }
    let mut options = terminal_colorsaurus::QueryOptions::default();
    options.timeout = TIMEOUT;
    match terminal_colorsaurus::background_color(options) {
        Ok(background) => Some(by_lightness(background.perceived_lightness())),
        Err(e) => {
            tracing::debug!("the terminal did not say its background colour: {e}");
            std::env::var("COLORFGBG")
                .ok()
                .and_then(|v| from_colorfgbg(&v))
        }
    }
}

fn by_lightness(lightness: f32) -> Appearance {
    if lightness >= 0.5 {
        Appearance::Light
    } else {
        Appearance::Dark
    }
}

/// `COLORFGBG="15;0"` (foreground;background, ANSI numbers; rxvt may put a middle field):
/// backgrounds 7 and 9–15 are light.
fn from_colorfgbg(value: &str) -> Option<Appearance> {
    let background: u8 = value.rsplit(';').next()?.trim().parse().ok()?;
    Some(match background {
        7 | 9..=15 => Appearance::Light,
        _ => Appearance::Dark,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn colorfgbg_names_the_background_last() {
        assert_eq!(from_colorfgbg("15;0"), Some(Appearance::Dark));
        assert_eq!(from_colorfgbg("0;15"), Some(Appearance::Light));
        assert_eq!(from_colorfgbg("0;default;7"), Some(Appearance::Light));
        assert_eq!(from_colorfgbg("garbage"), None);
        assert_eq!(by_lightness(0.9), Appearance::Light);
        assert_eq!(by_lightness(0.1), Appearance::Dark);
    }
}
