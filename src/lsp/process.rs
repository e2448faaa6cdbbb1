//! A language server's process: started in its own process group in the root it serves,
//! its stdin and stdout the protocol's pipes, its stderr read line by line into the log
//! (the last lines kept, to say why it died), and nothing of it left behind when it ends.
//!
//! Not started through the command supervisor (`tools::process::start`): that gives a command
//! `/dev/null` as its stdin and one pipe for both stdout and stderr, while a server needs its
//! stdin and stdout as the protocol's two pipes, for as long as the agent runs. So the server
//! is a direct child, with the supervisor's guarantees kept the other way round:
//! - its own process group, killed whole on stop and on drop (`kill_on_drop` only kills the
//!   leader);
//! - `PR_SET_PDEATHSIG`, so it dies with the agent however the agent dies (the signal is tied
//!   to the thread that forked: servers are started on the runtime's worker threads, which
//!   live as long as the agent);
//! - on stop, everything below it — also what left its process group — is stopped and killed
//!   with the supervisor's own tree walk (`tools::process::tree::kill_subtree`).

use crate::config::lsp::ServerSpec;
use std::collections::VecDeque;
use std::path::Path;
use std::process::Stdio;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;
use tokio::io::AsyncReadExt;
use tokio::process::{Child, ChildStdin, ChildStdout};

/// How long the killing of a server's tree may take.
const KILL_PATIENCE: Duration = Duration::from_secs(2);
const TAIL_LINES: usize = 8;
const MAX_LINE: usize = 2000;

/// The last lines a server wrote to stderr.
#[derive(Clone, Default)]
pub struct StderrTail(Arc<Mutex<VecDeque<String>>>);

impl StderrTail {
    fn push(&self, line: String) {
        let mut lines = self.0.lock().unwrap_or_else(PoisonError::into_inner);
        if lines.len() == TAIL_LINES {
            lines.pop_front();
        }
        lines.push_back(line);
    }

    /// The last lines, joined; `None` when there were none.
    pub fn last(&self) -> Option<String> {
        let lines = self.0.lock().unwrap_or_else(PoisonError::into_inner);
        let start = lines.len().saturating_sub(3);
        let text: Vec<&str> = lines.iter().skip(start).map(String::as_str).collect();
        (!text.is_empty()).then(|| text.join(" | "))
    }
}

/// A running server. Dropping it kills its process group.
pub struct Process {
    child: Child,
    /// Reads its stderr until it ends.
    reading: Option<tokio::task::JoinHandle<()>>,
    /// Its process id, also its process group's.
    pub pid: i32,
    pub stderr: StderrTail,
}

/// Start `spec`'s program in `root`, without the variables in `hidden_env` (the providers'
/// keys) unless its `env` sets them.
pub fn spawn(
    spec: &ServerSpec,
    root: &Path,
    hidden_env: &[String],
) -> Result<(Process, ChildStdin, ChildStdout), String> {
    let program = spec
        .program
        .clone()
        .ok_or_else(|| format!("`{}` is not installed (not found on PATH)", spec.command))?;
    let mut command = tokio::process::Command::new(&program);
    command
        .args(&spec.args)
        .current_dir(root)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .process_group(0)
        .kill_on_drop(true);
    for hidden in hidden_env {
        if !spec.env.contains_key(hidden) {
            command.env_remove(hidden);
        }
    }
    command.envs(&spec.env);
    die_with_agent(&mut command);
    let mut child = command
        .spawn()
        .map_err(|e| format!("cannot run `{}`: {e}", program.display()))?;
    let pid = child
        .id()
        .and_then(|pid| i32::try_from(pid).ok())
        .unwrap_or(0);
    let (Some(stdin), Some(stdout), Some(stderr)) =
        (child.stdin.take(), child.stdout.take(), child.stderr.take())
    else {
        return Err("the server has no pipes".to_string());
    };
    let tail = StderrTail::default();
    let reading = tokio::spawn(read_stderr(spec.name.clone(), stderr, tail.clone()));
    Ok((
        Process {
            child,
            reading: Some(reading),
            pid,
            stderr: tail,
        },
        stdin,
        stdout,
    ))
}

impl Process {
    /// Kill the server and everything below it, and reap it.
    pub async fn kill(mut self) {
        let pid = self.pid;
        if pid > 1 {
            // Stopping the tree first keeps a forking child from escaping the kill.
            let _ = tokio::task::spawn_blocking(move || {
                crate::tools::process::tree::kill_subtree(pid, KILL_PATIENCE)
            })
            .await;
            crate::tools::process::kill_group(pid);
        }
        let _ = self.child.start_kill();
        let _ = tokio::time::timeout(KILL_PATIENCE, self.child.wait()).await;
    }

    /// Wait (at most `patience`) until its stderr has been read to the end, so that its
    /// last words are in the tail.
    pub async fn stderr_read(&mut self, patience: Duration) {
        if let Some(reading) = self.reading.take() {
            let _ = tokio::time::timeout(patience, reading).await;
        }
    }

    /// How it ended, once it has (waiting at most `patience`); `None` while it runs.
    pub async fn exit_status(&mut self, patience: Duration) -> Option<std::process::ExitStatus> {
        tokio::time::timeout(patience, self.child.wait())
            .await
            .ok()?
            .ok()
    }
}

impl Drop for Process {
    fn drop(&mut self) {
        if self.pid > 1 {
            crate::tools::process::kill_group(self.pid);
        }
    }
}

/// The child gets SIGKILL when the agent dies, however it dies.
fn die_with_agent(command: &mut tokio::process::Command) {
    let agent = i32::try_from(std::process::id()).unwrap_or(0);
    // SAFETY: the closure runs between fork and exec and makes only async-signal-safe
    // system calls (prctl, getppid): no allocation, no lock.
    unsafe {
        command.pre_exec(move || {
            if libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL) != 0 {
                return Err(std::io::Error::last_os_error());
            }
            // The agent died before the call above: its parent is another process now.
            if libc::getppid() != agent {
                return Err(std::io::Error::from_raw_os_error(libc::ESRCH));
            }
            Ok(())
        });
    }
}

/// Every line of a server's stderr to the log, the last ones to `tail` (a line longer than
/// `MAX_LINE` is cut into pieces). Reading it at all matters: a chatty server would block on
/// a full pipe.
async fn read_stderr(server: String, mut stderr: tokio::process::ChildStderr, tail: StderrTail) {
    let mut buffer = Vec::new();
    let mut chunk = [0u8; 4096];
    loop {
        let read = match stderr.read(&mut chunk).await {
            Ok(0) | Err(_) => break,
            Ok(n) => n,
        };
        buffer.extend_from_slice(&chunk[..read]);
        while let Some(end) = buffer.iter().position(|b| *b == b'\n') {
            let line: Vec<u8> = buffer.drain(..=end).collect();
            log_line(&server, &line, &tail);
        }
        if buffer.len() > MAX_LINE {
            log_line(&server, &std::mem::take(&mut buffer), &tail);
        }
    }
    if !buffer.is_empty() {
        log_line(&server, &buffer, &tail);
    }
}

fn log_line(server: &str, bytes: &[u8], tail: &StderrTail) {
    let text = String::from_utf8_lossy(bytes);
    let line = crate::tools::truncate::clip(text.trim_end(), MAX_LINE);
    if line.is_empty() {
        return;
    }
    tracing::info!(target: "lsp", server, stderr = line);
    tail.push(line.to_string());
}
