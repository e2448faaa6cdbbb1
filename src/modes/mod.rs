//! The headless front ends: `-p` (print), `--mode json`, `--mode rpc` and `--mode acp` (an
//! Agent Client Protocol server for editors). What they share beyond start-up (which is
//! `crate::startup`'s): how the prompt of `-p` is read, how signals and output lines are
//! handled.

/// A line on stderr for the user. Unlike `eprintln!`, a stderr that is gone (the terminal
/// hung up) is no panic: the line is dropped and the run still ends as it should. It is one
/// line whatever it quotes (a provider's message over several lines): see `one_line`.
macro_rules! say {
    ($($arg:tt)*) => {{
        use std::io::Write as _;
        let line = format!($($arg)*);
        let _ = writeln!(std::io::stderr().lock(), "{}", $crate::modes::one_line(&line));
    }};
}

/// `text` on one line: each line break (and the blanks around it) becomes one space, so a
/// message quoted from a provider cannot split what a script reads as one line on stderr
/// (the events keep the text as it came).
pub fn one_line(text: &str) -> std::borrow::Cow<'_, str> {
    let is_break = |c: char| {
        matches!(
            c,
            '\n' | '\r' | '\u{0B}' | '\u{0C}' | '\u{85}' | '\u{2028}' | '\u{2029}'
        )
    };
    if !text.contains(is_break) {
        return std::borrow::Cow::Borrowed(text);
    }
    let pieces: Vec<&str> = text
        .split(is_break)
        .map(str::trim)
        .filter(|piece| !piece.is_empty())
        .collect();
    std::borrow::Cow::Owned(pieces.join(" "))
}

#[cfg(feature = "acp")]
pub mod acp;
mod headless;
pub mod json;
mod output;
pub mod print;
pub mod rpc;
mod signals;

use crate::cli::Cli;
use crate::config::Settings;
use std::io::{IsTerminal, Read};

/// The prompt of `-p` / `--mode json`: the PROMPT words, or stdin for `-` or when stdin is
/// piped and no PROMPT was given. `Err` is a usage error.
pub fn read_prompt(cli: &Cli) -> Result<String, String> {
    let from_args = cli.prompt.join(" ");
    let use_stdin =
        from_args == "-" || (from_args.trim().is_empty() && !std::io::stdin().is_terminal());
    let prompt = if use_stdin {
        let mut text = String::new();
        std::io::stdin()
            .read_to_string(&mut text)
            .map_err(|e| format!("cannot read the prompt from stdin: {e}"))?;
        text
    } else {
        from_args
    };
    if prompt.trim().is_empty() {
        return Err("no prompt: give one as an argument, or pipe it on stdin".to_string());
    }
    Ok(prompt)
}

/// Check a `-p` / `--mode json` prompt before anything is opened: one that starts with
/// `/name` must name a custom command or skill whose model can be used. `Err`: why (an
/// unknown name lists the known ones) — nothing is sent to the model then. The engine's
/// `Prompt` expands it again when it is sent, with the command's model for that run.
pub fn check_headless_prompt(settings: &Settings, prompt: &str) -> Result<(), String> {
    let models = crate::startup::models::SettingsModels::new(settings.clone());
    crate::agent::commands::input::expand(
        prompt,
        &settings.extensions,
        Some(&models),
        &settings.provider.name,
    )
    .map(drop)
    .map_err(|e| e.to_string())
}

#[cfg(test)]
mod tests {
    #[test]
    fn a_message_over_several_lines_is_folded_into_one() {
        assert_eq!(super::one_line("plain"), "plain");
        assert_eq!(
            super::one_line("agent: error: upstream said:\n  line two\r\n\nline three\n"),
            "agent: error: upstream said: line two line three"
        );
    }
}
