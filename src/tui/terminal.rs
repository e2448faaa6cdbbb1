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
            // Not `eprintln!`: with the terminal gone, it would panic inside this hook.
            let _ = writeln!(
                std::io::stderr(),
                "\r\nagent: internal error ({message}). The session is saved; details are in {}.",
                log_file.display()
            );
        }
    }));
}
