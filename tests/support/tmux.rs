//! A tmux server of a test's own running the interface: tmux rewraps its rows when its
//! width changes, as most terminals do (vt100 does not), and `capture-pane` reads its whole
//! history, so resize tests see what a user's scrollback would hold.

use super::env::Env;
use super::server::FakeServer;
use std::process::Command;
use std::time::{Duration, Instant};

/// A tmux server of the test's own (its socket in a temporary directory of its own), with
/// one session running the interface; killed, and its socket removed, when dropped.
pub struct Tmux {
    socket: std::path::PathBuf,
    _dir: tempfile::TempDir,
}

impl Tmux {
    /// `None` (after saying why) when tmux is not installed.
    pub fn start(
        env: &Env,
        server: &FakeServer,
        cols: u16,
        rows: u16,
        extra: &[&str],
    ) -> Option<Tmux> {
        if Command::new("tmux").arg("-V").output().is_err() {
            super::skip::skip("tmux is not installed");
            return None;
        }
        let dir = tempfile::tempdir().expect("a directory for the tmux socket");
        let tmux = Tmux {
            socket: dir.path().join("tmux"),
            _dir: dir,
        };
        let base = server.v1();
        let home = format!("AGENT_HOME={}", env.home.path().display());
        let ceiling = format!("GIT_CEILING_DIRECTORIES={}", std::env::temp_dir().display());
        let (cols, rows) = (cols.to_string(), rows.to_string());
        let mut args = vec![
            "-f",
            "/dev/null",
            "new-session",
            "-d",
            "-s",
            "t",
            "-x",
            &cols,
            "-y",
            &rows,
            "-c",
        ];
        let cwd = env.cwd.path().display().to_string();
        args.push(&cwd);
        args.extend([
            "env",
            "-u",
            "OPENAI_API_KEY",
            "-u",
            "OPENAI_BASE_URL",
            "-u",
            "ANTHROPIC_API_KEY",
            "-u",
            "ANTHROPIC_BASE_URL",
            "-u",
            "RUST_LOG",
            "-u",
            "TMUX",
            "NO_COLOR=1",
            // Keys reach a dialog at once (no grace for keys typed for the composer).
            "AGENT_APPROVAL_GRACE_MS=0",
            &home,
            &ceiling,
            env!("CARGO_BIN_EXE_agent"),
            "--base-url",
            &base,
            "--model",
            "test-model",
        ]);
        args.extend(extra);
        tmux.run(&args);
        // Sizes are the test's from now on, whatever a client would want.
        tmux.run(&["set-option", "-g", "window-size", "manual"]);
        Some(tmux)
    }

    pub fn run(&self, args: &[&str]) -> String {
        let out = Command::new("tmux")
            .arg("-S")
            .arg(&self.socket)
            .args(args)
            .env_remove("TMUX")
            .output()
            .expect("run tmux");
        assert!(
            out.status.success(),
            "tmux {args:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8_lossy(&out.stdout).into_owned()
    }

    /// Everything the pane holds, its history then its screen, wrapped rows joined.
    pub fn history(&self) -> String {
        self.run(&["capture-pane", "-p", "-J", "-S", "-", "-t", "t"])
    }

    /// The visible rows.
    pub fn screen(&self) -> String {
        self.run(&["capture-pane", "-p", "-t", "t"])
    }

    pub fn resize(&self, cols: u16) {
        self.run(&["resize-window", "-t", "t", "-x", &cols.to_string()]);
    }

    /// A new width and height.
    pub fn resize_to(&self, cols: u16, rows: u16) {
        self.run(&[
            "resize-window",
            "-t",
            "t",
            "-x",
            &cols.to_string(),
            "-y",
            &rows.to_string(),
        ]);
    }

    pub fn type_text(&self, text: &str) {
        self.run(&["send-keys", "-t", "t", "-l", text]);
    }

    pub fn key(&self, key: &str) {
        self.run(&["send-keys", "-t", "t", key]);
    }

    /// Wait (up to 120 s) until the visible rows satisfy `pred`; returns them.
    pub async fn wait_for(&self, what: &str, pred: impl Fn(&str) -> bool) -> String {
        let deadline = Instant::now() + Duration::from_secs(120);
        loop {
            let screen = self.screen();
            if pred(&screen) {
                return screen;
            }
            if Instant::now() > deadline {
                panic!(
                    "timed out waiting for {what}; the pane shows:\n{screen}\n--- history:\n{}",
                    self.history()
                );
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }

    /// Wait (up to 20 s) until every word of `words` is in the pane's history exactly once
    /// and the history has stayed the same for a second (ten times the interface's
    /// `SETTLE`); returns that history, and fails with the last one if that never happens.
    /// A single capture can come too early: the terminal's own reflow back to a width it had
    /// (100, 70, 50, 100) restores the rows exactly, so the screen looks done while a resize
    /// the interface read late is still to be printed again, and a capture taken while tmux
    /// is halfway through that output shows half of it.
    pub async fn wait_each_once(&self, words: &[String]) -> String {
        let deadline = Instant::now() + Duration::from_secs(20);
        let mut steady: Option<(Instant, String)> = None;
        loop {
            let history = self.history();
            let wrong = not_once(&history, words);
            if !wrong.is_empty() {
                steady = None;
            } else if let Some((since, seen)) = &steady
                && *seen == history
            {
                if since.elapsed() >= Duration::from_secs(1) {
                    return history;
                }
            } else {
                steady = Some((Instant::now(), history.clone()));
            }
            assert!(
                Instant::now() < deadline,
                "words not shown exactly once (word, times), or the history never settled: \
                 {wrong:?}\n--- history:\n{history}"
            );
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }
}

impl Drop for Tmux {
    fn drop(&mut self) {
        let _ = Command::new("tmux")
            .arg("-S")
            .arg(&self.socket)
            .arg("kill-server")
            .env_remove("TMUX")
            .output();
    }
}

/// `w000 w001 …`: words that are told apart when counted.
pub fn words(n: usize) -> Vec<String> {
    (0..n).map(|i| format!("w{i:03} ")).collect()
}

/// How many times each word occurs in `text`, for the words that do not occur exactly once.
pub fn not_once(text: &str, words: &[String]) -> Vec<(String, usize)> {
    let found: Vec<&str> = text.split_whitespace().collect();
    words
        .iter()
        .map(|w| {
            let w = w.trim();
            (w.to_string(), found.iter().filter(|f| **f == w).count())
        })
        .filter(|(_, n)| *n != 1)
        .collect()
}

/// No word of `words` is cut in `screen`: a row laid out by the app wraps at words, where a
/// terminal's own cut of wider rows leaves pieces (`w01`).
pub fn words_whole(screen: &str) -> bool {
    screen
        .split_whitespace()
        .filter(|t| t.starts_with('w') && t[1..].starts_with(|c: char| c.is_ascii_digit()))
        .all(|t| t.len() == 4)
}

/// The app has drawn its live area at `cols` columns: a row of the streamed text is wrapped
/// at a word (the terminal's own reflow cuts anywhere) and ends with `last`.
pub fn rewrapped(screen: &str, cols: usize, last: &str) -> bool {
    screen.lines().any(|row| {
        let row = row.trim_end();
        row.ends_with(last)
            && row.chars().count() <= cols
            && (row.starts_with("  w") || row.starts_with("● w"))
    })
}

/// The status row drawn at `cols` columns: right-aligned, it fills the row (the terminal's
/// own cut of a wider one leaves a shorter piece).
pub fn status_at(screen: &str, cols: usize) -> bool {
    screen.lines().any(|row| {
        let row = row.trim_end();
        let width = row.chars().count();
        row.contains("mode · test-model") && width <= cols && width + 12 > cols
    })
}
