//! `bash`: runs a command with `bash -c` in its own process group (so a timeout or abort
//! kills everything it started), stdin from /dev/null, stdout and stderr merged into one
//! pipe. Output streams as throttled updates; the model gets the tail, and when that is not
//! all of it, the path of a file holding the full output. The tool returns when bash exits,
//! even if a background process it started keeps the pipe open.

use super::truncate::{MAX_BYTES, MAX_LINES, tail};
use super::{OutputKind, Subject, Tool, ToolContext, ToolOutput, parse_args};
use crate::protocol::event::ToolResultPayload;
use crate::protocol::message::Content;
use futures_util::future::BoxFuture;
use serde::Deserialize;
use serde_json::{Value, json};
use std::os::fd::OwnedFd;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::Duration;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::time::Instant;

pub struct BashTool;

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Args {
    command: String,
    /// Seconds.
    #[serde(default)]
    timeout: Option<f64>,
}

/// How often a running command reports its output.
const UPDATE_INTERVAL: Duration = Duration::from_millis(100);
/// How long to keep reading after bash exits, for output still in the pipe.
const DRAIN_AFTER_EXIT: Duration = Duration::from_millis(200);
/// The in-memory tail kept while a command runs.
const TAIL_BYTES: usize = 2 * MAX_BYTES;
/// Lines shown in live updates.
const UPDATE_LINES: usize = 50;

impl Tool for BashTool {
    fn name(&self) -> &'static str {
        "bash"
    }

    fn description(&self) -> &'static str {
        "Run a shell command with bash in the working directory. stdout and stderr are merged; \
         the last 2000 lines / 50 KB are returned, with the path of a file holding the full \
         output when it is longer. stdin is empty: do not run interactive programs. timeout is \
         in seconds."
    }

    fn parameters(&self) -> Value {
        json!({
            "type": "object",
            "properties": {
                "command": {"type": "string", "description": "The command to run"},
                "timeout": {"type": "number", "exclusiveMinimum": 0, "description": "Timeout in seconds"}
            },
            "required": ["command"],
            "additionalProperties": false
        })
    }

    fn read_only(&self) -> bool {
        false
    }

    fn subject(&self) -> Subject {
        Subject::Command("command")
    }

    fn output_kind(&self) -> OutputKind {
        OutputKind::CommandOutput
    }

    fn execute(&self, args: Value, ctx: ToolContext) -> BoxFuture<'static, ToolOutput> {
        Box::pin(async move {
            let args: Args = match parse_args("bash", args) {
                Ok(args) => args,
                Err(output) => return output,
            };
            let timeout = args
                .timeout
                .filter(|t| t.is_finite() && *t > 0.0)
                .and_then(|t| Duration::try_from_secs_f64(t).ok())
                .unwrap_or(ctx.settings.bash_timeout);
            match run(&args.command, timeout, &ctx).await {
                Ok(output) => output,
                Err(e) => ToolOutput::error(format!("Could not run the command: {e}")),
            }
        })
    }
}

enum Ending {
    Exited(std::process::ExitStatus),
    TimedOut,
    Aborted,
}

async fn run(command: &str, timeout: Duration, ctx: &ToolContext) -> std::io::Result<ToolOutput> {
    let (reader, writer) = std::io::pipe()?;
    let mut cmd = tokio::process::Command::new("bash");
    cmd.arg("-c")
        .arg(command)
        .current_dir(&ctx.cwd)
        .env("PAGER", "cat")
        .env("GIT_PAGER", "cat")
        .stdin(Stdio::null())
        .stdout(Stdio::from(writer.try_clone()?))
        .stderr(Stdio::from(writer))
        .process_group(0)
        .kill_on_drop(true);
    for secret in &ctx.settings.hidden_env {
        cmd.env_remove(secret);
    }
    let mut child = cmd.spawn()?;
    // The command holds the parent's copies of the pipe's write end until dropped; without
    // this the pipe would never report end of file.
    drop(cmd);
    // Until the command has exited on its own, everything it started dies with it — also
    // when this future is dropped (the agent quits mid-command).
    let mut group = GroupGuard(child.id().map(|pid| pid as i32));
    let mut pipe = tokio::net::unix::pipe::Receiver::from_owned_fd(OwnedFd::from(reader))?;
    let mut output = Collector::default();
    let mut chunk = vec![0u8; 16 * 1024];
    let deadline = tokio::time::sleep(timeout);
    tokio::pin!(deadline);
    let mut exit: Option<std::process::ExitStatus> = None;
    let mut pipe_open = true;
    let mut drain_until: Option<Instant> = None;
    let mut next_update = Instant::now() + UPDATE_INTERVAL;

    let ending = loop {
        if let Some(status) = exit
            && (!pipe_open || drain_until.is_some_and(|t| Instant::now() >= t))
        {
            break Ending::Exited(status);
        }
        let drain_timer = tokio::time::sleep_until(drain_until.unwrap_or_else(Instant::now));
        tokio::select! {
            _ = ctx.cancel.cancelled() => break Ending::Aborted,
            _ = &mut deadline => break Ending::TimedOut,
            status = child.wait(), if exit.is_none() => {
                exit = Some(status?);
                drain_until = Some(Instant::now() + DRAIN_AFTER_EXIT);
            }
            read = pipe.read(&mut chunk), if pipe_open => match read {
                Ok(0) | Err(_) => pipe_open = false,
                Ok(n) => {
                    output.push(&chunk[..n]).await;
                    if Instant::now() >= next_update {
                        next_update = Instant::now() + UPDATE_INTERVAL;
                        (ctx.on_update)(output.update());
                    }
                }
            },
            _ = drain_timer, if exit.is_some() && pipe_open => {}
        }
    };

    if matches!(ending, Ending::Exited(_)) {
        // What it left running in the background (a server it started) is the user's.
        group.0 = None;
    } else {
        group.kill();
        let _ = child.wait().await;
    }
    Ok(output.finish(ending, timeout).await)
}

/// Kills a command's process group when dropped, unless disarmed.
struct GroupGuard(Option<i32>);

impl GroupGuard {
    fn kill(&mut self) {
        if let Some(group) = self.0.take() {
            kill_group(group);
        }
    }
}

impl Drop for GroupGuard {
    fn drop(&mut self) {
        self.kill();
    }
}

/// SIGKILL the whole process group, so grandchildren die with the command.
pub fn kill_group(group: i32) {
    // SAFETY: killpg has no memory-safety preconditions; a stale group id fails with ESRCH.
    unsafe {
        libc::killpg(group, libc::SIGKILL);
    }
}

/// Keeps the last `TAIL_BYTES` of output in memory and, once output outgrows what the model
/// will be shown (in bytes or in lines), all of it in a file.
#[derive(Default)]
struct Collector {
    tail: Vec<u8>,
    total_bytes: usize,
    total_lines: usize,
    spill: Option<(tokio::fs::File, PathBuf)>,
    spill_failed: bool,
}

impl Collector {
    async fn push(&mut self, bytes: &[u8]) {
        self.total_bytes += bytes.len();
        self.total_lines += bytes.iter().filter(|b| **b == b'\n').count();
        let too_long = self.total_bytes > MAX_BYTES || self.total_lines > MAX_LINES;
        if self.spill.is_none() && !self.spill_failed && too_long {
            self.start_spill().await;
        }
        if let Some((file, _)) = &mut self.spill
            && file.write_all(bytes).await.is_err()
        {
            self.spill = None;
            self.spill_failed = true;
        }
        self.tail.extend_from_slice(bytes);
        if self.tail.len() > 2 * TAIL_BYTES {
            let excess = self.tail.len() - TAIL_BYTES;
            self.tail.drain(..excess);
        }
    }

    /// Start the full-output file with what is already in memory (all of it, so far).
    async fn start_spill(&mut self) {
        let created = tempfile::Builder::new()
            .prefix("agent-bash-")
            .suffix(".log")
            .tempfile()
            .and_then(|file| file.keep().map_err(|e| e.error));
        let Ok((file, path)) = created else {
            self.spill_failed = true;
            return;
        };
        let mut file = tokio::fs::File::from_std(file);
        if file.write_all(&self.tail).await.is_err() {
            self.spill_failed = true;
            return;
        }
        self.spill = Some((file, path));
    }

    fn text(&self) -> String {
        let mut text = String::from_utf8_lossy(&self.tail).into_owned();
        if self.total_bytes > self.tail.len() {
            // The kept bytes may start mid-line; drop the partial first line.
            if let Some(newline) = text.find('\n') {
                text.drain(..=newline);
            }
        }
        text
    }

    fn update(&self) -> ToolResultPayload {
        let shown = tail(&self.text(), UPDATE_LINES, 8 * 1024);
        ToolResultPayload {
            content: vec![Content::text(shown.text)],
            details: None,
        }
    }

    async fn finish(mut self, ending: Ending, timeout: Duration) -> ToolOutput {
        let spill_path = match self.spill.take() {
            Some((mut file, path)) => {
                let _ = file.flush().await;
                Some(path)
            }
            None => None,
        };
        let text = self.text();
        let shown = tail(&text, MAX_LINES, MAX_BYTES);
        let output = shown.text.trim_end_matches('\n');
        let mut result = if output.is_empty() {
            "(no output)".to_string()
        } else {
            output.to_string()
        };
        let truncated = shown.truncated || self.total_bytes > self.tail.len();
        if truncated {
            result.push_str(&truncation_notice(
                shown.kept_lines,
                self.total_bytes,
                spill_path.as_deref(),
            ));
        }
        let (status_line, is_error, exit_code) = match ending {
            Ending::Exited(status) => match status.code() {
                Some(0) => ("[exit code 0]".to_string(), false, Some(0)),
                Some(code) => (format!("[exit code {code}]"), true, Some(code)),
                None => {
                    use std::os::unix::process::ExitStatusExt;
                    let signal = status.signal().unwrap_or(0);
                    (format!("[killed by signal {signal}]"), true, None)
                }
            },
            Ending::TimedOut => (
                format!(
                    "[timed out after {} s; the command and everything it started were killed]",
                    timeout.as_secs_f64()
                ),
                true,
                None,
            ),
            Ending::Aborted => (
                "[aborted by the user; the command and everything it started were killed]"
                    .to_string(),
                true,
                None,
            ),
        };
        result.push_str("\n\n");
        result.push_str(&status_line);
        let details = json!({
            "exitCode": exit_code,
            "fullOutputPath": spill_path.as_deref().map(Path::display).map(|p| p.to_string()),
            "truncated": truncated,
            "cancelled": matches!(ending, Ending::Aborted),
        });
        ToolOutput {
            content: vec![Content::text(result)],
            details: Some(details),
            is_error,
        }
    }
}

fn truncation_notice(kept_lines: usize, total_bytes: usize, spill: Option<&Path>) -> String {
    let mut notice = format!(
        "\n\n[Output truncated: showing the last {kept_lines} lines of {total_bytes} bytes."
    );
    match spill {
        Some(path) => notice.push_str(&format!(" Full output: {}]", path.display())),
        None => notice.push(']'),
    }
    notice
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;
    use tokio_util::sync::CancellationToken;

    #[tokio::test]
    async fn dropping_a_running_command_kills_everything_it_started() {
        let dir = tempfile::tempdir().unwrap();
        let ctx = ToolContext {
            cwd: dir.path().to_path_buf(),
            cancel: CancellationToken::new(),
            on_update: Arc::new(|_| {}),
            settings: Arc::new(super::super::ToolSettings::default()),
            hidden: None,
            files: Default::default(),
        };
        let pid_file = dir.path().join("child.pid");
        let running = BashTool.execute(
            json!({"command": "sleep 30 & echo $! > child.pid; wait"}),
            ctx,
        );
        // Let it start, then drop it mid-command.
        let _ = tokio::time::timeout(Duration::from_millis(500), running).await;
        let pid: i32 = std::fs::read_to_string(&pid_file)
            .unwrap()
            .trim()
            .parse()
            .unwrap();
        let mut alive = true;
        for _ in 0..50 {
            let state = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
            alive = state
                .rsplit_once(')')
                .is_some_and(|(_, rest)| !rest.trim_start().starts_with('Z'));
            if !alive {
                break;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        assert!(!alive, "the background child survived");
    }
}
