//! `bash`: runs a command with `bash -c` below a supervisor (`process`), stdin from
//! /dev/null, stdout and stderr merged into one pipe. A timeout or an abort kills the
//! command and everything it started — also processes that left its process group or
//! session — and the result says what was killed, what could not be, and what a command
//! that ended on its own left running. Output streams as throttled updates; the model gets
//! the tail, and when that is not all of it, the path of a file holding the full output
//! (in the session's own directory, `tools::spill`).
//! The tool returns when bash exits, even if a background process it started keeps the
//! pipe open.

mod output;
mod status;

use super::process::{self, Supervised};
use super::{OutputKind, Subject, Tool, ToolContext, ToolOutput, parse_args};
use crate::protocol::message::Content;
use crate::sandbox::diagnose::diagnose;
use futures_util::future::BoxFuture;
use output::Collector;
use serde::Deserialize;
use serde_json::{Value, json};
use status::Ending;
use std::ffi::OsStr;
use std::os::fd::OwnedFd;
use std::path::Path;
use std::time::Duration;
use tokio::io::AsyncReadExt;
use tokio::time::Instant;

pub struct BashTool;

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Args {
    command: String,
    /// Seconds.
    #[serde(default)]
    timeout: Option<f64>,
    /// Start it in the background and return at once (`tools::background`).
    #[serde(default)]
    background: bool,
}

/// How often a running command reports its output.
const UPDATE_INTERVAL: Duration = Duration::from_millis(100);
/// How long to keep reading after bash exits, for output still in the pipe.
const DRAIN_AFTER_EXIT: Duration = Duration::from_millis(200);

impl Tool for BashTool {
    fn name(&self) -> &'static str {
        "bash"
    }

    fn description(&self) -> &'static str {
        "Run a shell command with bash in the working directory. stdout and stderr are merged; \
         the last 2000 lines / 50 KB are returned, with the path of a file holding the full \
         output when it is longer. stdin is empty: do not run interactive programs. timeout is \
         in seconds. With background: true (servers, watchers, long builds) it returns at once \
         with a shell id and the first output; read more with bash_output, stop it with \
         kill_shell. Background shells end when the agent exits."
    }

    fn parameters(&self) -> Value {
        json!({
            "type": "object",
            "properties": {
                "command": {"type": "string", "description": "The command to run"},
                "timeout": {"type": "number", "exclusiveMinimum": 0, "description": "Timeout in seconds"},
                "background": {"type": "boolean", "description": "Run in the background and return at once with a shell id"}
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
            if args.background {
                return start_in_background(&args.command, &ctx).await;
            }
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

async fn run(command: &str, timeout: Duration, ctx: &ToolContext) -> std::io::Result<ToolOutput> {
    let (reader, writer) = std::io::pipe()?;
    let argv = [OsStr::new("bash"), OsStr::new("-c"), OsStr::new(command)];
    let policy = ctx.settings.sandbox.command_policy_async(&ctx.cwd).await;
    let sandbox = policy.as_ref();
    // Dropped before the command ends on its own (this future dropped: the agent quits
    // mid-command), it takes everything the command started with it.
    let mut running: Supervised = process::start_command(
        &ctx.settings.supervisor,
        &argv,
        sandbox,
        OwnedFd::from(writer),
        process::CommandEnv {
            cwd: &ctx.cwd,
            set: &[("PAGER", "cat"), ("GIT_PAGER", "cat")],
            hidden: &ctx.settings.hidden_env,
            session_net: Some(&ctx.session_net),
        },
    )
    .await?;
    let mut pipe = tokio::net::unix::pipe::Receiver::from_owned_fd(OwnedFd::from(reader))?;
    let mut output = Collector::new(ctx.spill.clone());
    let mut chunk = vec![0u8; 16 * 1024];
    let deadline = tokio::time::sleep(timeout);
    tokio::pin!(deadline);
    let mut exited = false;
    let mut pipe_open = true;
    let mut drain_until: Option<Instant> = None;
    let mut next_update = Instant::now() + UPDATE_INTERVAL;
    // Output read since the last update: shown once the interval has passed, even when the
    // command then goes quiet (a prompt, a long step after a first line).
    let mut unshown = false;

    let ending = loop {
        if exited && (!pipe_open || drain_until.is_some_and(|t| Instant::now() >= t)) {
            break Ending::Exited;
        }
        if unshown && Instant::now() >= next_update {
            next_update = Instant::now() + UPDATE_INTERVAL;
            unshown = false;
            (ctx.on_update)(output.update());
        }
        let drain_timer = tokio::time::sleep_until(drain_until.unwrap_or_else(Instant::now));
        tokio::select! {
            _ = ctx.cancel.cancelled() => break Ending::Aborted,
            _ = &mut deadline => break Ending::TimedOut(timeout),
            // `None`: the supervisor is gone; what it can still say comes at the end.
            _ = running.exited(), if !exited => {
                exited = true;
                drain_until = Some(Instant::now() + DRAIN_AFTER_EXIT);
            }
            read = pipe.read(&mut chunk), if pipe_open => match read {
                Ok(0) | Err(_) => pipe_open = false,
                Ok(n) => {
                    output.push(&chunk[..n]).await;
                    unshown = true;
                }
            },
            _ = tokio::time::sleep_until(next_update), if unshown => {}
            _ = drain_timer, if exited && pipe_open => {}
        }
    };

    let command_pid = running.pid;
    let egress_refusals = running.egress_refusals();
    let finished = match ending {
        // What it left running in the background (a server it started) is the user's.
        Ending::Exited => running.wait().await,
        Ending::TimedOut(_) | Ending::Aborted => running.kill().await,
    };
    let (mut text, truncated, spill_path) = output.finish().await;
    let status = status::status(ending, &finished, command_pid);
    // A connection the egress proxy refused is known, not guessed; otherwise what the
    // output shows, whatever the exit code (curl prints a refused page and exits 0, and a
    // command that shrugged off a refusal is told about it too).
    let refused = egress_refusals.map(|r| r.list()).unwrap_or_default();
    let blocked = crate::sandbox::egress::explain(&refused)
        .or_else(|| sandbox.and_then(|policy| diagnose(policy, &ctx.cwd, &text)));
    text.push_str("\n\n");
    text.push_str(&status.lines.join("\n"));
    if let Some(blocked) = &blocked {
        text.push_str(&format!(
            "\nBlocked by the sandbox: {}. {}",
            blocked.boundary, blocked.remedy
        ));
    }
    let planted = sandbox.and_then(crate::sandbox::diagnose::planted_repository);
    if let Some(planted) = &planted {
        text.push_str(&format!("\nNote: {planted}"));
    }
    let mut details = json!({
        "exitCode": status.exit_code,
        "fullOutputPath": spill_path.as_deref().map(Path::display).map(|p| p.to_string()),
        "truncated": truncated,
        "cancelled": matches!(ending, Ending::Aborted),
    });
    if let (Some(details), Value::Object(processes)) = (details.as_object_mut(), status.details) {
        details.extend(processes);
    }
    if let (Some(details), Some(blocked)) = (details.as_object_mut(), blocked) {
        details.insert(
            "sandbox".to_string(),
            json!({"blocked": blocked.boundary, "remedy": blocked.remedy}),
        );
    }
    Ok(ToolOutput {
        content: vec![Content::text(text)],
        details: Some(details),
        is_error: status.is_error,
    })
}

/// `background: true`: start the command as a background shell and report its id and the
/// output of its first moments.
async fn start_in_background(command: &str, ctx: &ToolContext) -> ToolOutput {
    let policy = ctx.settings.sandbox.command_policy_async(&ctx.cwd).await;
    let options = super::background::StartOptions {
        supervisor: &ctx.settings.supervisor,
        sandbox: policy.as_ref(),
        cwd: &ctx.cwd,
        hidden_env: &ctx.settings.hidden_env,
        session_net: Some(&ctx.session_net),
    };
    let id = match ctx.shells.start(command, options).await {
        Ok(id) => id,
        Err(e) => return ToolOutput::error(format!("Could not start the command: {e}")),
    };
    // Until it settles: a command that fails at once (a server that cannot bind) is
    // reported as ended, with its whole error, not as running halfway through it.
    tokio::select! {
        _ = ctx.cancel.cancelled() => {}
        _ = ctx.shells.wait_to_settle(
            &id,
            super::background::SETTLE_QUIET,
            super::background::FIRST_OUTPUT_WAIT,
        ) => {}
    }
    let Some(first) = ctx.shells.take_new_output(&id) else {
        return ToolOutput::error(format!("The background shell {id} is gone."));
    };
    let rendered = super::background::tools::render(&id, &first, None);
    let mut details = json!({"shellId": id, "background": true});
    if let (Some(details), Some(blocked)) = (details.as_object_mut(), &first.blocked) {
        details.insert(
            "sandbox".to_string(),
            json!({"blocked": blocked.boundary, "remedy": blocked.remedy}),
        );
    }
    match first.status {
        super::background::ShellStatus::Running => ToolOutput::text(format!(
            "Started in the background as {id}. Read its output with bash_output \
             {{\"id\": \"{id}\"}}, stop it with kill_shell.\n\n{rendered}"
        ))
        .with_details(details),
        ended => {
            let failed = !matches!(
                ended,
                super::background::ShellStatus::Exited(process::Exit::Code(0))
            );
            let how = match ended {
                super::background::ShellStatus::Exited(process::Exit::Code(code)) => {
                    format!("exited at once with code {code}")
                }
                other => format!("{} at once", other.describe()),
            };
            let mut output =
                ToolOutput::text(format!("{id} {how}: it is not running.\n\n{rendered}"))
                    .with_details(details);
            output.is_error = failed;
            output
        }
    }
}
