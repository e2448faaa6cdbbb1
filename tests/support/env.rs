//! A test's own AGENT_HOME and working directory (both temporary), and the real binary
//! pointed at a loopback model server — headless or in a pseudo-terminal.

use super::process::command;
use super::pty::{Terminal, Tui};
use super::server::FakeServer;
use std::path::PathBuf;
use tempfile::TempDir;

pub struct Env {
    pub home: TempDir,
    pub cwd: TempDir,
}

pub fn env() -> Env {
    Env {
        home: tempfile::tempdir().unwrap(),
        cwd: tempfile::tempdir().unwrap(),
    }
}

impl Env {
    /// `agent --base-url SERVER --model test-model ARGS...`, headless.
    pub fn agent(&self, server: &FakeServer, args: &[&str]) -> tokio::process::Command {
        let mut cmd = command(self.home.path(), self.cwd.path());
        cmd.args(["--base-url", &server.v1(), "--model", "test-model"])
            .args(args);
        cmd
    }

    /// The same, in a pseudo-terminal: the interactive interface.
    pub fn start(&self, server: &FakeServer, extra: &[&str]) -> Tui {
        self.start_with(server, extra, &[])
    }

    /// The interface with extra environment variables (e.g. `AGENT_APPROVAL_GRACE_MS`).
    pub fn start_with(&self, server: &FakeServer, extra: &[&str], vars: &[(&str, &str)]) -> Tui {
        self.start_in(server, extra, vars, Terminal::default())
    }

    /// The same in a terminal that answers queries as `terminal` says (or through a wrapper).
    pub fn start_in(
        &self,
        server: &FakeServer,
        extra: &[&str],
        vars: &[(&str, &str)],
        terminal: Terminal,
    ) -> Tui {
        let base = server.v1();
        let mut args = vec!["--base-url", base.as_str(), "--model", "test-model"];
        args.extend_from_slice(extra);
        Tui::spawn_with_terminal(
            &args,
            self.home.path(),
            self.cwd.path(),
            super::pty::ROWS,
            super::pty::COLS,
            vars,
            terminal,
        )
    }

    /// Every session file under the home, sorted.
    pub fn session_files(&self) -> Vec<PathBuf> {
        let mut files = Vec::new();
        if let Ok(dirs) = std::fs::read_dir(self.home.path().join("sessions")) {
            for dir in dirs.flatten() {
                for file in std::fs::read_dir(dir.path()).unwrap().flatten() {
                    // Beside each session file may be a directory of tool outputs.
                    if file.path().extension().is_some_and(|e| e == "jsonl") {
                        files.push(file.path());
                    }
                }
            }
        }
        files.sort();
        files
    }

    pub fn only_session(&self) -> PathBuf {
        let files = self.session_files();
        assert_eq!(files.len(), 1, "{files:?}");
        files[0].clone()
    }
}
