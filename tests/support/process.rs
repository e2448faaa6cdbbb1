//! The real `agent` binary as a child process, in a temporary AGENT_HOME and working
//! directory, with no provider keys from the environment leaking in, and blind to whatever
//! is above the temp directory (`GIT_CEILING_DIRECTORIES`: a repository there — a `$TMPDIR`
//! inside a checkout, a home kept in git — is not the test's project).

use serde_json::Value;
use std::path::Path;
use std::process::Stdio;
use std::time::Duration;
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader, Lines};
use tokio::process::{Child, ChildStdin, ChildStdout, Command};

pub fn command(home: &Path, cwd: &Path) -> Command {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_agent"));
    cmd.current_dir(cwd)
        .env("AGENT_HOME", home)
        .env("GIT_CEILING_DIRECTORIES", std::env::temp_dir())
        .env_remove("OPENAI_API_KEY")
        .env_remove("OPENAI_BASE_URL")
        .env_remove("ANTHROPIC_API_KEY")
        .env_remove("ANTHROPIC_BASE_URL")
        .env_remove("RUST_LOG")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true);
    cmd
}

pub struct Output {
    pub code: i32,
    pub stdout: String,
    pub stderr: String,
}

/// Run to completion (at most 120 s: a bound on a hang).
pub async fn run(mut cmd: Command) -> Output {
    let child = cmd.spawn().expect("spawn agent");
    let output = tokio::time::timeout(Duration::from_secs(120), child.wait_with_output())
        .await
        .expect("agent did not finish within 120 s")
        .expect("wait for agent");
    Output {
        code: output.status.code().unwrap_or(-1),
        stdout: String::from_utf8_lossy(&output.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&output.stderr).into_owned(),
    }
}

/// An agent in `--mode rpc`, spoken to line by line.
pub struct Rpc {
    pub child: Child,
    stdin: Option<ChildStdin>,
    lines: Lines<BufReader<ChildStdout>>,
}

impl Rpc {
    pub fn spawn(mut cmd: Command) -> Rpc {
        cmd.stdin(Stdio::piped());
        let mut child = cmd.spawn().expect("spawn agent");
        let stdin = child.stdin.take();
        let stdout = child.stdout.take().expect("stdout");
        Rpc {
            child,
            stdin,
            lines: BufReader::new(stdout).lines(),
        }
    }

    pub async fn send_raw(&mut self, line: &str) {
        self.send_bytes(line.as_bytes()).await;
    }

    /// Any bytes as one line (a newline is added).
    pub async fn send_bytes(&mut self, line: &[u8]) {
        let stdin = self.stdin.as_mut().expect("stdin open");
        stdin.write_all(line).await.unwrap();
        stdin.write_all(b"\n").await.unwrap();
        stdin.flush().await.unwrap();
    }

    pub async fn send(&mut self, command: Value) {
        self.send_raw(&command.to_string()).await;
    }

    pub fn close_stdin(&mut self) {
        self.stdin = None;
    }

    pub async fn next(&mut self) -> Value {
        let line = tokio::time::timeout(Duration::from_secs(120), self.lines.next_line())
            .await
            .expect("timed out waiting for a line")
            .expect("read stdout")
            .expect("stdout closed");
        serde_json::from_str(&line).unwrap_or_else(|e| panic!("not JSON ({e}): {line}"))
    }

    /// Lines up to and including the first matching `pred`.
    pub async fn until(&mut self, pred: impl Fn(&Value) -> bool) -> Vec<Value> {
        let mut seen = Vec::new();
        loop {
            let line = self.next().await;
            let done = pred(&line);
            seen.push(line);
            if done {
                return seen;
            }
        }
    }

    pub async fn response(&mut self, id: &str) -> Value {
        self.until(|l| l["type"] == "response" && l["id"] == id)
            .await
            .pop()
            .unwrap()
    }

    pub async fn exit_code(mut self) -> i32 {
        self.stdin = None;
        let status = tokio::time::timeout(Duration::from_secs(120), self.child.wait())
            .await
            .expect("agent did not exit")
            .unwrap();
        status.code().unwrap_or(-1)
    }
}
