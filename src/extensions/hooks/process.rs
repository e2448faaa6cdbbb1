//! Running one hook command: `sh -c COMMAND` below the same supervisor as the agent's
//! commands (`tools::process`), inside the command sandbox unless the hook opted out, with
//! the event's JSON on stdin and stdout and stderr collected (capped). Whatever the hook
//! started — in its process group or not (`setsid`) — is killed when the hook ends, when its
//! time is up, when the run is aborted, and when the agent goes away (killed included: the
//! supervisor sees its control pipe close).
//!
//! The supervisor gives the command /dev/null as stdin and one pipe for stdout and stderr;
//! a hook needs its own stdin and a stdout apart from stderr. The agent hands the supervisor
//! two more descriptors, 3 (the read end of the stdin pipe) and 4 (the write end of the
//! stdout pipe), which pass on to the command (they are not close-on-exec); a small `sh`
//! prologue moves them to 0 and 1 and closes them before the hook's command runs. The
//! supervisor keeps its own copies until it exits, so stdout ends when the supervisor has
//! finished — after the kill of everything the hook left behind.

use crate::sandbox::{Policy, Sandbox, Status};
use crate::tools::process::{self, Exit};
use std::ffi::OsStr;
use std::os::fd::{AsRawFd, OwnedFd};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWriteExt};
use tokio_util::sync::CancellationToken;

/// What of a hook's stdout and stderr is kept; the rest is read and dropped.
pub const MAX_OUTPUT: usize = 256 * 1024;

/// How long the output pipes may stay open after the hook's processes were killed (a
/// process that would not die holds them): the answer is what was read by then.
const DRAIN_AFTER_KILL: Duration = Duration::from_secs(5);

/// Moves descriptors 3 and 4 to stdin and stdout, closes them, and runs the hook's command
/// (`$1`) as `sh -c` would have. Should the descriptors be missing, it exits 125 — a failure
/// reported as such, never the 2 that would read as a block.
const PROLOGUE: &str = "command exec sh -c \"$1\" 0<&3 1>&4 3<&- 4>&- || exit 125";

/// Where hooks run: below the agent's command supervisor, inside its command sandbox, without
/// the providers' API keys in their environment — as the agent's commands run.
#[derive(Clone, Debug)]
pub struct Runner {
    pub supervisor: PathBuf,
    pub sandbox: Sandbox,
    pub hidden_env: Vec<String>,
}

impl Runner {
    pub fn of(settings: &crate::tools::ToolSettings) -> Runner {
        Runner {
            supervisor: settings.supervisor.clone(),
            sandbox: settings.sandbox.clone(),
            hidden_env: settings.hidden_env.clone(),
        }
    }

    /// The policy a hook runs under: `None` unsandboxed (the hook opted out, or the user
    /// turned the sandbox off); an error when the hook is to be sandboxed and this machine
    /// cannot — it is then not run at all, never unsandboxed behind the user's back.
    fn policy(&self, sandboxed: bool) -> Result<Option<Arc<Policy>>, HookRunError> {
        if !sandboxed {
            return Ok(None);
        }
        match (&self.sandbox.status, &self.sandbox.policy) {
            (Status::Off, _) => Ok(None),
            (Status::Enforced, Some(policy)) => Ok(Some(policy.clone())),
            (Status::Unavailable(reason), _) => {
                Err(HookRunError::SandboxUnavailable(reason.clone()))
            }
            (Status::Enforced, None) => Err(HookRunError::SandboxUnavailable(
                "the sandbox has no policy".to_string(),
            )),
        }
    }
}

/// A hook that ran to its end.
#[derive(Debug)]
pub struct Finished {
    /// `None` when a signal ended it.
    pub code: Option<i32>,
    pub stdout: String,
    /// The hook printed more on stdout than `MAX_OUTPUT`: `stdout` is its start.
    pub stdout_cut: bool,
    pub stderr: String,
}

#[derive(Debug, thiserror::Error)]
pub enum HookRunError {
    #[error("cannot start it: {0}")]
    Spawn(std::io::Error),
    #[error(
        "it is to run inside the command sandbox, which is unavailable here: {0}; \
         `sandbox = false` in its entry runs it unsandboxed"
    )]
    SandboxUnavailable(String),
    #[error("it did not finish within {0} s and was killed")]
    TimedOut(u64),
    #[error("the run was aborted")]
    Cancelled,
    #[error("its supervisor ended before it could tell how the hook ended")]
    Lost,
}

/// One hook run.
pub struct Run<'a> {
    pub command: &'a str,
    pub cwd: &'a Path,
    pub env: &'a [(&'a str, &'a Path)],
    pub input: Vec<u8>,
    pub timeout: Duration,
    /// Inside the command sandbox (when there is one).
    pub sandboxed: bool,
}

pub async fn run(
    hook: Run<'_>,
    runner: &Runner,
    cancel: &CancellationToken,
) -> Result<Finished, HookRunError> {
    let policy = runner.policy(hook.sandboxed)?;
    let (stdin_read, stdin_write) = std::io::pipe().map_err(HookRunError::Spawn)?;
    let (stdout_read, stdout_write) = std::io::pipe().map_err(HookRunError::Spawn)?;
    let (stderr_read, stderr_write) = std::io::pipe().map_err(HookRunError::Spawn)?;
    let (stdin_read, stdout_write) = (OwnedFd::from(stdin_read), OwnedFd::from(stdout_write));
    let argv = [
        OsStr::new("sh"),
        OsStr::new("-c"),
        OsStr::new(PROLOGUE),
        OsStr::new("agent-hook"),
        OsStr::new(hook.command),
    ];
    let (fd_in, fd_out) = (stdin_read.as_raw_fd(), stdout_write.as_raw_fd());
    let started = process::start(
        &runner.supervisor,
        &argv,
        policy.as_deref(),
        OwnedFd::from(stderr_write),
        |cmd| {
            cmd.current_dir(hook.cwd);
            for secret in &runner.hidden_env {
                cmd.env_remove(secret);
            }
            for (key, value) in hook.env {
                cmd.env(key, value);
            }
            // SAFETY: the closure runs between fork and exec and only makes
            // async-signal-safe system calls (fcntl, dup2, close) on descriptors this
            // function keeps open until the supervisor has started.
            unsafe {
                cmd.pre_exec(move || pass_on(fd_in, fd_out));
            }
        },
    )
    .await;
    // The supervisor (and the hook) hold their own copies now.
    drop((stdin_read, stdout_write));
    let mut running = started.map_err(HookRunError::Spawn)?;
    let input = hook.input;
    let writer = crate::tasks::spawn(async move {
        if let Ok(mut stdin) =
            tokio::net::unix::pipe::Sender::from_owned_fd(OwnedFd::from(stdin_write))
        {
            // A hook that does not read its input is no error.
            let _ = stdin.write_all(&input).await;
        }
    });
    let stdout = crate::tasks::spawn(read_capped(
        tokio::net::unix::pipe::Receiver::from_owned_fd(OwnedFd::from(stdout_read)).ok(),
    ));
    let stderr = crate::tasks::spawn(read_capped(
        tokio::net::unix::pipe::Receiver::from_owned_fd(OwnedFd::from(stderr_read)).ok(),
    ));
    let ending = tokio::select! {
        exit = running.exited() => exit.ok_or(HookRunError::Lost),
        () = tokio::time::sleep(hook.timeout) => Err(HookRunError::TimedOut(hook.timeout.as_secs())),
        () = cancel.cancelled() => Err(HookRunError::Cancelled),
    };
    // A hook is a check, not a way to start servers: what it left running goes with it.
    running.kill().await;
    writer.abort();
    let exit = ending?;
    let drained = tokio::time::timeout(DRAIN_AFTER_KILL, async {
        let out = stdout.await.unwrap_or_default();
        let err = stderr.await.unwrap_or_default();
        (out, err)
    })
    .await;
    let ((stdout, stdout_cut), (stderr, _)) = drained.unwrap_or_default();
    Ok(Finished {
        code: match exit {
            Exit::Code(code) => Some(code),
            Exit::Signal(_) => None,
        },
        stdout,
        stdout_cut,
        stderr,
    })
}

/// In the supervisor, between fork and exec: put the hook's stdin (`input`) at descriptor 3
/// and its stdout (`output`) at 4, both inherited across exec.
fn pass_on(input: i32, output: i32) -> std::io::Result<()> {
    let check = |result: i32| {
        if result < 0 {
            Err(std::io::Error::last_os_error())
        } else {
            Ok(result)
        }
    };
    // SAFETY: plain system calls on descriptors that are open in this process. The copies
    // go above 9 first, so that moving one to 3 or 4 never closes the other.
    unsafe {
        let input = check(libc::fcntl(input, libc::F_DUPFD, 10))?;
        let output = check(libc::fcntl(output, libc::F_DUPFD, 10))?;
        check(libc::dup2(input, 3))?;
        check(libc::dup2(output, 4))?;
        libc::close(input);
        libc::close(output);
    }
    Ok(())
}

/// A stream read to its end, its first `MAX_OUTPUT` bytes kept; whether there was more.
async fn read_capped(stream: Option<impl AsyncRead + Unpin>) -> (String, bool) {
    let Some(mut stream) = stream else {
        return (String::new(), false);
    };
    let mut kept = Vec::new();
    let mut cut = false;
    let mut buffer = [0u8; 8192];
    loop {
        match stream.read(&mut buffer).await {
            Ok(0) | Err(_) => break,
            Ok(n) => {
                let room = MAX_OUTPUT.saturating_sub(kept.len());
                cut |= n > room;
                kept.extend_from_slice(&buffer[..n.min(room)]);
            }
        }
    }
    (String::from_utf8_lossy(&kept).into_owned(), cut)
}
