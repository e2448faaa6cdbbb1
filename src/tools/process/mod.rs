//! Running a command so that nothing it starts outlives what the agent means it to: each
//! command runs below its own supervisor process (`supervisor`), which finds every process
//! below it in `/proc` (`tree`) — whatever process group or session they moved to — kills
//! them all on request or when the agent goes away, and reports what it did (`report`), so
//! the model is told the truth about what was killed and what was left running.
//!
//! A cgroup would group the processes too, but needs a writable (delegated) cgroup v2
//! hierarchy, which many machines (containers, cgroup v1 hosts) do not give; the subreaper
//! sees the same tree everywhere Linux runs, so it is the one mechanism used.

pub mod report;
pub mod supervisor;
pub mod tree;

use crate::sandbox::Policy;
use report::{Line, Outcome};
use std::ffi::OsStr;
use std::os::fd::OwnedFd;
use std::path::Path;
use std::process::Stdio;
use std::time::Duration;
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader, Lines};
use tokio::process::{Child, ChildStdin, ChildStdout};

/// The program that supervises commands unless configured otherwise: this very binary.
pub const DEFAULT_SUPERVISOR: &str = "/proc/self/exe";

/// How long a supervisor may take to report after a kill before it is given up on.
const REPORT_WAIT: Duration = Duration::from_secs(5);

/// How the command's main process ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Exit {
    Code(i32),
    Signal(i32),
}

/// A command running below its supervisor. Dropping it kills the command and everything
/// it started (the supervisor sees its input end).
pub struct Supervised {
    child: Child,
    control: Option<ChildStdin>,
    report: Lines<BufReader<ChildStdout>>,
    /// The command's process id (also its process group id).
    pub pid: i32,
    exit: Option<Exit>,
    /// With `[sandbox] allow_hosts`: the command's egress proxy, served until this is dropped.
    egress: Option<crate::sandbox::egress::Session>,
}

/// Start `argv` below the supervisor program `supervisor`, with stdout and stderr into
/// `output`, inside the sandbox `sandbox` when one is given. `configure` sets the working
/// directory and environment (the supervisor's, which the command inherits).
pub async fn start(
    supervisor: &Path,
    argv: &[&OsStr],
    sandbox: Option<&Policy>,
    output: OwnedFd,
    configure: impl FnOnce(&mut tokio::process::Command),
) -> std::io::Result<Supervised> {
    let mut command = tokio::process::Command::new(supervisor);
    command.arg(supervisor::FLAG);
    let mut egress = egress_channel(sandbox)?;
    if let Some(policy) = sandbox {
        let policy = serde_json::to_string(policy).map_err(std::io::Error::other)?;
        command.arg(supervisor::SANDBOX_FLAG).arg(policy);
        #[cfg(target_os = "linux")]
        if let Some(fd) = egress.as_ref().and_then(|c| c.supervisor_fd()) {
            command.arg(supervisor::EGRESS_FLAG).arg(fd.to_string());
            // SAFETY: `keep_in_child` makes one fcntl call, allowed between fork and exec.
            unsafe {
                command.pre_exec(move || crate::sandbox::egress::Channel::keep_in_child(fd));
            }
        }
    }
    command
        .args(argv)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::from(output))
        // Signals for the terminal's foreground group (Ctrl+C in `-p`) are the agent's
        // to handle, not the supervisor's.
        .process_group(0);
    configure(&mut command);
    let mut child = command
        .spawn()
        .map_err(|e| std::io::Error::new(e.kind(), format!("cannot start a supervisor: {e}")))?;
    // The command holds the parent's copy of the output pipe until dropped.
    drop(command);
    #[cfg(target_os = "linux")]
    if let Some(channel) = &mut egress {
        channel.close_supervisor_end();
    }
    let (Some(control), Some(stdout)) = (child.stdin.take(), child.stdout.take()) else {
        return Err(std::io::Error::other("the supervisor has no pipes"));
    };
    let mut report = BufReader::new(stdout).lines();
    match read_line(&mut report).await {
        Some(Line::Started { pid }) => {
            let mut running = Supervised {
                child,
                control: Some(control),
                report,
                pid,
                exit: None,
                egress: None,
            };
            #[cfg(target_os = "linux")]
            if let (Some(channel), Some(policy)) = (egress.take(), sandbox) {
                // On failure, dropping `running` kills the command.
                running.egress = Some(channel.serve(&policy.allow_hosts).map_err(|e| {
                    std::io::Error::other(format!(
                        "the egress proxy for [sandbox] allow_hosts could not start: {e}"
                    ))
                })?);
            }
            Ok(running)
        }
        Some(Line::Failed { message }) => {
            let _ = child.wait().await;
            Err(std::io::Error::other(message))
        }
        _ => {
            let status = child.wait().await;
            Err(std::io::Error::other(format!(
                "the supervisor stopped before starting the command ({})",
                status.map_or_else(|e| e.to_string(), |s| s.to_string())
            )))
        }
    }
}

/// With `[sandbox] allow_hosts`: the socket pair over which the command's proxy listener
/// comes back (`crate::sandbox::egress`). Elsewhere than Linux commands keep no network.
#[cfg(target_os = "linux")]
fn egress_channel(
    sandbox: Option<&Policy>,
) -> std::io::Result<Option<crate::sandbox::egress::Channel>> {
    match sandbox {
        Some(policy) if policy.egress_bridge() => Ok(Some(crate::sandbox::egress::Channel::new()?)),
        _ => Ok(None),
    }
}

#[cfg(not(target_os = "linux"))]
fn egress_channel(_sandbox: Option<&Policy>) -> std::io::Result<Option<()>> {
    Ok(None)
}

async fn read_line(report: &mut Lines<BufReader<ChildStdout>>) -> Option<Line> {
    loop {
        let line = report.next_line().await.ok()??;
        if let Ok(parsed) = serde_json::from_str(&line) {
            return Some(parsed);
        }
        tracing::warn!(%line, "unreadable supervisor report line");
    }
}

impl Supervised {
    /// With `[sandbox] allow_hosts`: the connections the proxy refused the command, also
    /// after it ended.
    pub fn egress_refusals(&self) -> Option<crate::sandbox::egress::Refusals> {
        self.egress.as_ref().map(|session| session.refusals())
    }

    /// Wait until the command's main process ends. Cancel-safe (for `select!`).
    pub async fn exited(&mut self) -> Option<Exit> {
        if let Some(exit) = self.exit {
            return Some(exit);
        }
        loop {
            match read_line(&mut self.report).await? {
                Line::Exited { code, signal } => {
                    let exit = match (code, signal) {
                        (Some(code), _) => Exit::Code(code),
                        (None, Some(signal)) => Exit::Signal(signal),
                        (None, None) => Exit::Signal(0),
                    };
                    self.exit = Some(exit);
                    return Some(exit);
                }
                Line::Done(_) => return None,
                _ => {}
            }
        }
    }

    /// Kill the command and everything it started; what became of them.
    pub async fn kill(mut self) -> Finished {
        self.say(supervisor::KILL).await;
        self.finish().await
    }

    /// After the command ended on its own (`exited` said so): leave what it left running,
    /// and say what that is.
    pub async fn wait(mut self) -> Finished {
        self.say(supervisor::LEAVE).await;
        self.finish().await
    }

    async fn say(&mut self, word: u8) {
        if let Some(mut control) = self.control.take() {
            // Should the write fail, the supervisor is gone or sees the pipe end: a kill.
            let _ = control.write_all(&[word]).await;
        }
    }

    async fn finish(mut self) -> Finished {
        let outcome = tokio::time::timeout(REPORT_WAIT, async {
            loop {
                match read_line(&mut self.report).await {
                    Some(Line::Exited { code, signal }) => {
                        self.exit = Some(match (code, signal) {
                            (Some(code), _) => Exit::Code(code),
                            (_, signal) => Exit::Signal(signal.unwrap_or(0)),
                        });
                    }
                    Some(Line::Done(outcome)) => return Some(outcome),
                    Some(_) => {}
                    None => return None,
                }
            }
        })
        .await
        .ok()
        .flatten();
        if outcome.is_none() {
            // The supervisor died or hangs: at least the command's own group goes.
            kill_group(self.pid);
            let _ = self.child.start_kill();
        }
        let _ = self.child.wait().await;
        Finished {
            exit: self.exit,
            outcome,
        }
    }
}

/// What became of a command and its processes.
#[derive(Debug)]
pub struct Finished {
    /// How its main process ended, if the supervisor said.
    pub exit: Option<Exit>,
    /// `None` when the supervisor gave no account (it died): only the command's process
    /// group could be killed then.
    pub outcome: Option<Outcome>,
}

/// SIGKILL a whole process group.
pub fn kill_group(group: i32) {
    // SAFETY: killpg has no memory-safety preconditions; a stale group id fails with ESRCH.
    unsafe {
        libc::killpg(group, libc::SIGKILL);
    }
}
