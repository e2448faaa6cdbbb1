//! Background shells: `bash {command, background: true}` starts a command below its own
//! supervisor (as `bash` does, same sandbox) and returns at once; the command's output is
//! collected here until the model reads it (`bash_output`) or stops it (`kill_shell`).
//! The registry belongs to the agent: dropping it kills every shell still running, and when
//! the agent's process ends the supervisors see their control pipes close and kill what
//! they watch — so no background command outlives the agent.
//!
//! A command that ended on its own is not told to "leave" what it started: its supervisor
//! keeps watching until the shell is killed or the agent goes, so grandchildren go too.

pub mod tools;

use super::process::{self, Exit, Supervised};
use crate::sandbox::Policy;
use std::collections::BTreeMap;
use std::ffi::OsStr;
use std::os::fd::OwnedFd;
use std::path::Path;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::{Duration, Instant, SystemTime};
use tokio::io::AsyncReadExt;
use tokio::sync::watch;
use tokio_util::sync::CancellationToken;

/// Output kept per shell; older output is dropped (and the reader told how much).
const KEPT_BYTES: usize = 4 * 1024 * 1024;
/// How long the start waits for first output (or the command's end) before returning.
pub const FIRST_OUTPUT_WAIT: Duration = Duration::from_millis(500);
/// How long to keep reading after the command exits, for output still in the pipe.
const DRAIN_AFTER_EXIT: Duration = Duration::from_millis(200);

/// Where a background shell is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ShellStatus {
    Running,
    Exited(Exit),
    /// `kill_shell`, `/ps`, or the registry dropped.
    Killed,
}

impl ShellStatus {
    pub fn describe(self) -> String {
        match self {
            ShellStatus::Running => "running".to_string(),
            ShellStatus::Exited(Exit::Code(code)) => format!("exited with code {code}"),
            ShellStatus::Exited(Exit::Signal(signal)) => format!("killed by signal {signal}"),
            ShellStatus::Killed => "killed".to_string(),
        }
    }
}

/// What the model has not read yet of a shell's output.
pub struct NewOutput {
    pub text: String,
    /// Bytes dropped (over the kept size) before the model could read them.
    pub dropped: usize,
    pub status: ShellStatus,
}

/// One shell as `/ps` lists it.
#[derive(Clone, Debug)]
pub struct ShellView {
    pub id: String,
    pub command: String,
    pub started: SystemTime,
    pub elapsed: Duration,
    pub status: ShellStatus,
    pub pid: i32,
}

#[derive(Default)]
struct Output {
    bytes: Vec<u8>,
    /// Bytes dropped from the front of `bytes` so far.
    dropped: usize,
    /// Absolute offset the model has read up to.
    seen: usize,
}

struct Shell {
    command: String,
    pid: i32,
    started: SystemTime,
    since: Instant,
    output: Mutex<Output>,
    status: watch::Sender<ShellStatus>,
    /// Set once the shell has finished its ending (killed, or the registry dropped).
    ended: watch::Sender<bool>,
    kill: CancellationToken,
}

/// The agent's background shells.
#[derive(Default)]
pub struct BackgroundShells {
    inner: Mutex<Inner>,
}

#[derive(Default)]
struct Inner {
    started: u64,
    shells: BTreeMap<u64, Arc<Shell>>,
}

fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}

/// What `start` needs besides the command.
pub struct StartOptions<'a> {
    pub supervisor: &'a Path,
    pub sandbox: Option<&'a Policy>,
    pub cwd: &'a Path,
    pub hidden_env: &'a [String],
}

impl BackgroundShells {
    /// Start `command` in the background; its id (`shell_N`).
    pub async fn start(&self, command: &str, options: StartOptions<'_>) -> std::io::Result<String> {
        let (reader, writer) = std::io::pipe()?;
        let argv = [OsStr::new("bash"), OsStr::new("-c"), OsStr::new(command)];
        let running: Supervised = process::start(
            options.supervisor,
            &argv,
            options.sandbox,
            OwnedFd::from(writer),
            |cmd| {
                cmd.current_dir(options.cwd)
                    .env("PAGER", "cat")
                    .env("GIT_PAGER", "cat");
                for secret in options.hidden_env {
                    cmd.env_remove(secret);
                }
            },
        )
        .await?;
        let pipe = tokio::net::unix::pipe::Receiver::from_owned_fd(OwnedFd::from(reader))?;
        let shell = Arc::new(Shell {
            command: command.to_string(),
            pid: running.pid,
            started: SystemTime::now(),
            since: Instant::now(),
            output: Mutex::new(Output::default()),
            status: watch::Sender::new(ShellStatus::Running),
            ended: watch::Sender::new(false),
            kill: CancellationToken::new(),
        });
        let number = {
            let mut inner = lock(&self.inner);
            inner.started += 1;
            let number = inner.started;
            inner.shells.insert(number, shell.clone());
            number
        };
        tokio::spawn(watch_shell(shell, running, pipe));
        Ok(format!("shell_{number}"))
    }

    fn get(&self, id: &str) -> Option<Arc<Shell>> {
        let number: u64 = id.strip_prefix("shell_")?.parse().ok()?;
        lock(&self.inner).shells.get(&number).cloned()
    }

    /// The ids of the shells, for an error naming them.
    pub fn ids(&self) -> Vec<String> {
        lock(&self.inner)
            .shells
            .keys()
            .map(|n| format!("shell_{n}"))
            .collect()
    }

    /// Wait until shell `id` has output or has ended, at most `wait`.
    pub async fn wait_for_output(&self, id: &str, wait: Duration) {
        let Some(shell) = self.get(id) else {
            return;
        };
        let mut status = shell.status.subscribe();
        let deadline = tokio::time::Instant::now() + wait;
        loop {
            if !lock(&shell.output).bytes.is_empty() || *status.borrow() != ShellStatus::Running {
                return;
            }
            // Output has no signal of its own: look again every few milliseconds.
            tokio::select! {
                _ = tokio::time::sleep_until(deadline) => return,
                _ = status.changed() => {}
                _ = tokio::time::sleep(Duration::from_millis(10)) => {}
            }
        }
    }

    /// The output of shell `id` the model has not read yet (marking it read); `None` for an
    /// unknown id.
    pub fn take_new_output(&self, id: &str) -> Option<NewOutput> {
        let shell = self.get(id)?;
        // The status first: output read after an exit is complete.
        let status = *shell.status.borrow();
        let mut output = lock(&shell.output);
        let start = output.seen.max(output.dropped);
        let dropped = start - output.seen;
        let from = start - output.dropped;
        let text = String::from_utf8_lossy(&output.bytes[from..]).into_owned();
        output.seen = output.dropped + output.bytes.len();
        Some(NewOutput {
            text,
            dropped,
            status,
        })
    }

    /// Kill shell `id` and everything it started; its status once it is gone (`None` for
    /// an unknown id). A shell that ended already is only cleaned up.
    pub async fn kill(&self, id: &str) -> Option<ShellStatus> {
        let shell = self.get(id)?;
        shell.kill.cancel();
        let mut ended = shell.ended.subscribe();
        let _ = ended.wait_for(|ended| *ended).await;
        let status = *shell.status.borrow();
        Some(status)
    }

    /// Every shell, oldest first.
    pub fn list(&self) -> Vec<ShellView> {
        lock(&self.inner)
            .shells
            .iter()
            .map(|(number, shell)| ShellView {
                id: format!("shell_{number}"),
                command: shell.command.clone(),
                started: shell.started,
                elapsed: shell.since.elapsed(),
                status: *shell.status.borrow(),
                pid: shell.pid,
            })
            .collect()
    }

    /// Kill every shell still running and wait until they are gone.
    pub async fn kill_all(&self) {
        let shells: Vec<Arc<Shell>> = lock(&self.inner).shells.values().cloned().collect();
        for shell in &shells {
            shell.kill.cancel();
        }
        for shell in shells {
            let mut ended = shell.ended.subscribe();
            let _ = ended.wait_for(|ended| *ended).await;
        }
    }
}

impl Drop for BackgroundShells {
    fn drop(&mut self) {
        for shell in lock(&self.inner).shells.values() {
            shell.kill.cancel();
        }
    }
}

/// Collect a shell's output and status until it is killed; then kill what is left. The pipe
/// is read to its end even after the command exits (what it left running may still write,
/// and must never block on a full pipe); the exit is published once the pipe is drained, or
/// `DRAIN_AFTER_EXIT` after the exit when something still holds it open, so output read
/// after the status says "exited" is complete.
async fn watch_shell(
    shell: Arc<Shell>,
    mut running: Supervised,
    mut pipe: tokio::net::unix::pipe::Receiver,
) {
    let mut chunk = vec![0u8; 16 * 1024];
    let mut exit: Option<Exit> = None;
    let mut published = false;
    let mut pipe_open = true;
    let mut drain_until: Option<tokio::time::Instant> = None;
    loop {
        if let Some(code) = exit
            && !published
            && (!pipe_open || drain_until.is_some_and(|t| tokio::time::Instant::now() >= t))
        {
            shell.status.send_replace(ShellStatus::Exited(code));
            published = true;
        }
        let drain_timer =
            tokio::time::sleep_until(drain_until.unwrap_or_else(tokio::time::Instant::now));
        tokio::select! {
            _ = shell.kill.cancelled() => break,
            ended = running.exited(), if exit.is_none() => {
                drain_until = Some(tokio::time::Instant::now() + DRAIN_AFTER_EXIT);
                // `None`: the supervisor is gone; the status it cannot give is unknown.
                exit = Some(ended.unwrap_or(Exit::Signal(0)));
            }
            read = pipe.read(&mut chunk), if pipe_open => match read {
                Ok(0) | Err(_) => pipe_open = false,
                Ok(n) => push(&shell, &chunk[..n]),
            },
            _ = drain_timer, if exit.is_some() && !published => {}
        }
    }
    drop(pipe);
    let finished = running.kill().await;
    match (exit, finished.exit) {
        (None, _) => {
            shell.status.send_replace(ShellStatus::Killed);
        }
        (Some(_), Some(code)) | (Some(code), None) => {
            shell.status.send_replace(ShellStatus::Exited(code));
        }
    }
    shell.ended.send_replace(true);
}

fn push(shell: &Shell, bytes: &[u8]) {
    let mut output = lock(&shell.output);
    output.bytes.extend_from_slice(bytes);
    if output.bytes.len() > KEPT_BYTES {
        let excess = output.bytes.len() - KEPT_BYTES;
        output.bytes.drain(..excess);
        output.dropped += excess;
    }
}
