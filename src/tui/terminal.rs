//! The terminal modes the interface needs — raw mode, bracketed paste, the kitty keyboard
//! protocol (so shift+enter is told apart from enter where the terminal supports it) — and
//! putting them back on every way out: a normal exit, a panic, SIGTERM, and around ctrl+z.

use crossterm::event::{
    DisableBracketedPaste, DisableFocusChange, EnableBracketedPaste, EnableFocusChange,
    KeyboardEnhancementFlags, PopKeyboardEnhancementFlags, PushKeyboardEnhancementFlags,
};
use crossterm::terminal::{disable_raw_mode, enable_raw_mode};
use std::io::Write;
use std::path::PathBuf;

pub struct TerminalModes {
    active: bool,
}

impl TerminalModes {
    pub fn enter() -> std::io::Result<TerminalModes> {
        enable_raw_mode()?;
        let mut out = std::io::stdout();
        // Terminals without the kitty protocol ignore the push.
        crossterm::execute!(
            out,
            EnableBracketedPaste,
            // Focus reports: a run that needs the user while the terminal is in the
            // background says so (`[tui] notify`).
            EnableFocusChange,
            PushKeyboardEnhancementFlags(KeyboardEnhancementFlags::DISAMBIGUATE_ESCAPE_CODES)
        )?;
        Ok(TerminalModes { active: true })
    }

    pub fn leave(&mut self) {
        if self.active {
            restore();
            self.active = false;
        }
    }
}

impl Drop for TerminalModes {
    fn drop(&mut self) {
        self.leave();
    }
}

/// Best effort: every step is tried even if an earlier one fails.
/// Whether the terminal rewraps its rows when its width changes. Most do (tmux, kitty,
/// VTE, iTerm2, WezTerm, Windows Terminal, Alacritty, Konsole…); xterm, the Linux console
/// and st cut them instead. `term` is `$TERM`, `xterm_version` whether `$XTERM_VERSION`
/// is set, `multiplexed` whether tmux (`$TMUX`) is the terminal the interface talks to.
pub fn reflows_on_resize(term: &str, xterm_version: bool, multiplexed: bool) -> bool {
    if multiplexed || term.starts_with("tmux") {
        return true;
    }
    let cuts = term == "linux" || term == "st" || term.starts_with("st-") || xterm_version;
    !cuts
}

fn restore() {
    let mut out = std::io::stdout();
    let _ = crossterm::execute!(
        out,
        PopKeyboardEnhancementFlags,
        DisableFocusChange,
        DisableBracketedPaste,
        crossterm::cursor::Show
    );
    let _ = disable_raw_mode();
    let _ = out.flush();
}

/// On a panic in the interface's own thread, give the terminal back and say what happened
/// in one line (details go to the log), instead of a backtrace on a raw-mode screen.
/// Panics elsewhere (a tool's task) are only logged: the engine turns them into results.
pub fn install_panic_hook(log_file: PathBuf) {
    std::panic::set_hook(Box::new(move |info| {
        let message = info
            .payload()
            .downcast_ref::<&str>()
            .map(|s| s.to_string())
            .or_else(|| info.payload().downcast_ref::<String>().cloned())
            .unwrap_or_else(|| "unknown error".to_string());
        let location = info
            .location()
            .map(|l| format!("{}:{}", l.file(), l.line()))
            .unwrap_or_default();
        tracing::error!(%message, %location, backtrace = %std::backtrace::Backtrace::force_capture(), "panic");
        if std::thread::current().name() == Some("main") {
            restore();
            eprintln!(
                "\r\nagent: internal error ({message}). The session is saved; details are in {}.",
                log_file.display()
            );
        }
    }));
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn xterm_the_console_and_st_cut_rows_others_rewrap_them() {
        assert!(reflows_on_resize("xterm-256color", false, false));
        assert!(reflows_on_resize("xterm-kitty", false, false));
        assert!(!reflows_on_resize("xterm-256color", true, false));
        assert!(!reflows_on_resize("linux", false, false));
        assert!(!reflows_on_resize("st-256color", false, false));
        // tmux rewraps, whatever runs it.
        assert!(reflows_on_resize("screen-256color", true, true));
        assert!(reflows_on_resize("tmux-256color", true, false));
    }
}
