//! Running one hook command: `sh -c COMMAND` in its own process group, the event's JSON on
//! stdin, stdout and stderr collected (capped), and the whole group killed when its time is
//! up or the run is aborted.

use std::path::Path;
use std::process::Stdio;
use std::time::Duration;
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWriteExt};
use tokio_util::sync::CancellationToken;

/// What of a hook's stdout and stderr is kept; the rest is read and dropped.
pub const MAX_OUTPUT: usize = 256 * 1024;

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
    #[error("it did not finish within {0} s and was killed")]
    TimedOut(u64),
    #[error("the run was aborted")]
    Cancelled,
    #[error("{0}")]
    Io(std::io::Error),
}

pub async fn run(
    command: &str,
    cwd: &Path,
    env: &[(&str, &Path)],
    input: Vec<u8>,
    timeout: Duration,
    cancel: &CancellationToken,
) -> Result<Finished, HookRunError> {
    let mut process = tokio::process::Command::new("sh");
    process
        .arg("-c")
        .arg(command)
        .current_dir(cwd)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true)
        // Its own group: a timeout or abort kills everything it started, and the terminal's
        // Ctrl+C is the agent's to handle.
        .process_group(0);
    for (key, value) in env {
        process.env(key, value);
    }
    let mut child = process.spawn().map_err(HookRunError::Spawn)?;
    let group = child.id().and_then(|pid| i32::try_from(pid).ok());
    let stdin = child.stdin.take();
    let stdout = child.stdout.take();
    let stderr = child.stderr.take();
    let work = async {
        let write = async move {
            if let Some(mut stdin) = stdin {
                // A hook that does not read its input is no error.
                let _ = stdin.write_all(&input).await;
            }
        };
        let (_, out, err, status) = tokio::join!(
            write,
            read_capped(stdout),
            read_capped(stderr),
            child.wait()
        );
        let status = status.map_err(HookRunError::Io)?;
        let ((stdout, stdout_cut), (stderr, _)) = (out, err);
        Ok(Finished {
            code: status.code(),
            stdout,
            stdout_cut,
            stderr,
        })
    };
    let outcome = tokio::select! {
        finished = work => finished,
        () = tokio::time::sleep(timeout) => Err(HookRunError::TimedOut(timeout.as_secs())),
        () = cancel.cancelled() => Err(HookRunError::Cancelled),
    };
    if outcome.is_err()
        && let Some(group) = group
    {
        crate::tools::process::kill_group(group);
    }
    outcome
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
