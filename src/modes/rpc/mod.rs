//! `--mode rpc`: commands as JSON lines on stdin; responses and events as JSON lines on
//! stdout (docs/protocol.md §4). A bad line gets an error response and the process keeps
//! running.
//!
//! Commands take effect in the order they arrive: one that takes time (`compact`,
//! `new_session`, `set_model`, `cycle_model`, `bash`, `export_html`, `rewind`,
//! `undo_rewind`, `fork`, `clone`, `get_fork_messages`, `get_tree`, `switch_branch`,
//! `set_thinking_level`, `cycle_thinking_level`, `set_session_name`) is finished — events
//! keep flowing — before the next one is taken up. Lines are read all the while, so `abort`
//! (and SIGINT/SIGTERM) is never stuck behind a slow command: it overtakes the commands
//! waiting, stops the one in progress and the run at once, and acts again at its own place
//! in the order, so that everything sent before it is stopped. `abort_bash` overtakes a
//! `bash` in progress the same way. At end of input, pending approvals are denied, what was
//! sent is finished, and the process exits.

mod actions;
mod answers;
pub(crate) mod commands;
mod queries;
pub(crate) mod reader;
mod time_travel;

use crate::agent::Agent;
use crate::agent::commands::Control;
use crate::config::Settings;
use crate::mcp::McpManager;
use crate::modes::output::JsonLines;
use crate::modes::signals::Interrupts;
use crate::protocol::command::Command as EngineCommand;
use crate::protocol::event::AgentEvent;
use crate::protocol::rpc::{Command, Parsed, Response, parse_line};
use commands::Started;
use futures_util::future::BoxFuture;
use reader::{Frame, LineReader, MAX_LINE_BYTES};
use serde_json::Value;
use std::collections::VecDeque;
use std::sync::Arc;
use tokio::io::BufReader;
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

enum Input {
    Frame(Frame),
    End,
}

/// What the command handlers share (a live session's clients too: `crate::live`).
pub(crate) struct Context {
    pub(crate) agent: Arc<Agent>,
    /// The MCP servers, for `get_state`.
    pub(crate) mcp: Arc<McpManager>,
    /// For `get_commands`, the language servers, and where `export_html` writes.
    pub(crate) settings: Settings,
}

/// A line read from stdin, waiting for its turn.
enum Pending {
    /// A line that is not a command: its refusal keeps its place among the answers.
    Refused(Response),
    Command {
        id: Option<Value>,
        kind: String,
        command: Command,
    },
    /// An `abort` that overtook the commands waiting: it acts again here, so the commands
    /// sent before it are stopped too (its answer was given when it was read).
    AbortAgain,
}

/// The command in progress that takes time.
struct InFlight {
    response: BoxFuture<'static, Response>,
    /// Stops it (what that means is up to the command).
    cancel: CancellationToken,
    /// A `bash` command, which `abort_bash` stops.
    bash: bool,
}

pub async fn run(agent: Agent, settings: Settings, mcp: Arc<McpManager>) -> u8 {
    let agent = Arc::new(agent);
    let mut events = agent.subscribe();
    agent.session_start(agent.session_source()).await;
    let (input_tx, mut input) = mpsc::unbounded_channel();
    crate::tasks::spawn(read_stdin(input_tx));
    let context = Arc::new(Context {
        agent: agent.clone(),
        mcp,
        settings,
    });
    let mut out = JsonLines::default();
    let mut interrupts = Interrupts::new();
    let mut input_open = true;
    let mut waiting: VecDeque<Pending> = VecDeque::new();
    let mut slow: Option<InFlight> = None;
    loop {
        // Take up the waiting commands in order, until one takes time.
        while slow.is_none()
            && let Some(next) = waiting.pop_front()
        {
            match next {
                Pending::Refused(response) => respond(&response, &mut events, &mut out),
                Pending::AbortAgain => abort(&agent),
                Pending::Command { id, kind, command } => {
                    match commands::start(&context, &kind, command) {
                        Started::Done(result) => {
                            respond(&Response::new(id, &kind, result), &mut events, &mut out);
                        }
                        Started::Slow {
                            result,
                            cancel,
                            bash,
                        } => {
                            slow = Some(InFlight {
                                response: Box::pin(async move {
                                    Response::new(id, &kind, result.await)
                                }),
                                cancel,
                                bash,
                            });
                        }
                    }
                }
            }
        }
        drain(&mut events, &mut out);
        if out.flush().is_err() {
            // Nobody reads any more: stop, letting the run end properly (tools' processes
            // killed, results written) unless a signal says not to wait.
            agent.abort();
            if let Some(in_flight) = slow.take() {
                in_flight.cancel.cancel();
            }
            tokio::select! {
                () = agent.wait_for_idle() => {}
                _ = interrupts.next() => {}
            }
            return 1;
        }
        if !input_open && slow.is_none() && waiting.is_empty() && !agent.is_running() {
            agent.wait_for_idle().await;
            agent.session_end("exit").await;
            drain(&mut events, &mut out);
            let _ = out.flush();
            return 0;
        }
        tokio::select! {
            biased;
            code = interrupts.next() => {
                // Stop everything without waiting for the command in progress: dropping
                // it stops it (a compaction still leaves the agent idle).
                agent.abort();
                if let Some(in_flight) = slow.take() {
                    in_flight.cancel.cancel();
                }
                // A second signal exits at once.
                tokio::select! {
                    () = agent.wait_for_idle() => {}
                    _ = interrupts.next() => {}
                }
                drain(&mut events, &mut out);
                let _ = out.flush();
                return code;
            }
            response = finished(&mut slow), if slow.is_some() => {
                slow = None;
                respond(&response, &mut events, &mut out);
            }
            frame = input.recv(), if input_open => match frame {
                Some(Input::Frame(frame)) => {
                    let pending = read(frame);
                    match (&pending, &slow) {
                        (Pending::Command { id, command: Command::Abort, .. }, Some(in_flight)) => {
                            abort(&agent);
                            in_flight.cancel.cancel();
                            let response = Response::new(id.clone(), "abort", Ok(None));
                            respond(&response, &mut events, &mut out);
                            if !waiting.is_empty() {
                                waiting.push_back(Pending::AbortAgain);
                            }
                        }
                        (Pending::Command { id, command: Command::AbortBash, .. }, Some(in_flight))
                            if in_flight.bash =>
                        {
                            in_flight.cancel.cancel();
                            let response = Response::new(id.clone(), "abort_bash", Ok(None));
                            respond(&response, &mut events, &mut out);
                        }
                        _ => waiting.push_back(pending),
                    }
                }
                Some(Input::End) | None => {
                    input_open = false;
                    // Nobody can answer approvals any more; let the current run finish.
                    agent.set_can_ask(false);
                }
            },
            event = events.recv() => match event {
                Some(event) => out.push(&event),
                None => return 1,
            },
        }
    }
}

/// The engine's `Abort`, from a line that overtook the commands waiting.
fn abort(agent: &Agent) {
    use futures_util::FutureExt;
    let aborting = agent.execute(EngineCommand::Abort, Control::new());
    // `Abort` takes effect when it is called; nothing is left to wait for.
    let _ = aborting.now_or_never();
}

/// The answer of the command in progress, when it has one.
async fn finished(slow: &mut Option<InFlight>) -> Response {
    match slow {
        Some(in_flight) => (&mut in_flight.response).await,
        None => std::future::pending().await,
    }
}

/// Write an answer after the events that came before it.
fn respond(
    response: &Response,
    events: &mut mpsc::UnboundedReceiver<AgentEvent>,
    out: &mut JsonLines,
) {
    drain(events, out);
    out.push(response);
}

fn drain(events: &mut mpsc::UnboundedReceiver<AgentEvent>, out: &mut JsonLines) {
    while let Ok(event) = events.try_recv() {
        out.push(&event);
    }
}

async fn read_stdin(tx: mpsc::UnboundedSender<Input>) {
    let mut reader = LineReader::new(BufReader::new(tokio::io::stdin()), MAX_LINE_BYTES);
    while let Ok(Some(frame)) = reader.next().await {
        if tx.send(Input::Frame(frame)).is_err() {
            return;
        }
    }
    let _ = tx.send(Input::End);
}

/// One input line as a command, or its refusal. Every line gets exactly one answer: blank,
/// over-long and non-UTF-8 lines get a `parse` error too, so the count of answers always
/// matches the count of lines.
fn read(frame: Frame) -> Pending {
    let line = match frame {
        Frame::Line(line) => line,
        Frame::Invalid(why) => return Pending::Refused(Response::new(None, "parse", Err(why))),
    };
    match parse_line(&line) {
        Ok(Parsed { id, kind, command }) => Pending::Command { id, kind, command },
        Err(response) => Pending::Refused(*response),
    }
}
