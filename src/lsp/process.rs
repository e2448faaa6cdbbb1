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
pub use crate::tools::process::server_child::StderrTail;
use crate::tools::process::server_child::{die_with_agent, read_stderr};
use std::path::Path;
use std::process::Stdio;
use std::time::Duration;
use tokio::process::{Child, ChildStdin, ChildStdout};

/// How long the killing of a server's tree may take.
const KILL_PATIENCE: Duration = Duration::from_secs(2);
/// The stderr lines kept to say why a server died.
const TAIL_LINES: usize = 8;

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
    let tail = StderrTail::new(TAIL_LINES);
    let reading = crate::tasks::spawn(read_stderr(
        spec.name.clone(),
        stderr,
        tail.clone(),
        |server, line| tracing::info!(target: "lsp", server, stderr = line),
    ));
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
            let _ = crate::tasks::spawn_blocking(move || {
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
