//! `--mode rpc`: commands as JSON lines on stdin; responses and events as JSON lines on
//! stdout (docs/protocol.md §4). A bad line gets an error response and the process keeps
//! running. Commands take effect in the order they arrive: one that takes time (`compact`,
//! `new_session`, `set_model`) is finished — events keep flowing — before the next line is
//! read. At end of input, pending approvals are denied, the current run finishes, and the
//! process exits.

mod commands;
mod reader;

use crate::agent::Agent;
use crate::config::Settings;
use crate::modes::SessionInfo;
use crate::modes::output::JsonLines;
use crate::modes::signals::Interrupts;
use crate::protocol::event::AgentEvent;
use crate::protocol::rpc::{Command, Parsed, Response, parse_line};
use futures_util::future::BoxFuture;
use reader::{Frame, LineReader, MAX_LINE_BYTES};
use std::sync::{Arc, Mutex};
use tokio::io::BufReader;
use tokio::sync::mpsc;

enum Input {
    Frame(Frame),
    End,
}

/// What the command handlers share.
struct Context {
    agent: Arc<Agent>,
    session: Mutex<SessionInfo>,
    settings: Settings,
    responses: mpsc::UnboundedSender<Response>,
}

pub async fn run(agent: Agent, session: SessionInfo, settings: Settings) -> u8 {
    let agent = Arc::new(agent);
    let mut events = agent.subscribe();
    let (input_tx, mut input) = mpsc::unbounded_channel();
    tokio::spawn(read_stdin(input_tx));
    let (responses_tx, mut responses) = mpsc::unbounded_channel();
    let context = Arc::new(Context {
        agent: agent.clone(),
        session: Mutex::new(session),
        settings,
        responses: responses_tx,
    });
    let mut out = JsonLines::default();
    let mut interrupts = Interrupts::new();
    let mut input_open = true;
    let mut pending_commands = 0usize;
    loop {
        tokio::select! {
            biased;
            code = interrupts.next() => {
                agent.abort();
                agent.wait_for_idle().await;
                drain(&mut events, &mut out);
                let _ = out.flush();
                return code;
            }
            response = responses.recv() => {
                if let Some(response) = response {
                    pending_commands = pending_commands.saturating_sub(1);
                    out.push(&response);
                }
            }
            line = input.recv(), if input_open => match line {
                Some(Input::Frame(frame)) => {
                    pending_commands += 1;
                    // Commands take effect in the order they were sent: one that takes time
                    // is finished (events still flowing) before the next line is read.
                    if let Some(command) = handle_frame(&context, frame) {
                        tokio::pin!(command);
                        loop {
                            tokio::select! {
                                response = &mut command => {
                                    let _ = context.responses.send(response);
                                    break;
                                }
                                event = events.recv() => match event {
                                    Some(event) => {
                                        out.push(&event);
                                        drain(&mut events, &mut out);
                                        if out.flush().is_err() {
                                            agent.abort();
                                            return 1;
                                        }
                                    }
                                    None => return 1,
                                },
                            }
                        }
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
        drain(&mut events, &mut out);
        while let Ok(response) = responses.try_recv() {
            pending_commands = pending_commands.saturating_sub(1);
            out.push(&response);
        }
        if out.flush().is_err() {
            agent.abort();
            return 1;
        }
        if !input_open && pending_commands == 0 && !agent.is_running() {
            agent.wait_for_idle().await;
            drain(&mut events, &mut out);
            let _ = out.flush();
            return 0;
        }
    }
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

/// Answer one input line (every line gets exactly one response; blank, over-long and
/// non-UTF-8 lines get a parse error too, so the count of answers always matches the count
/// of lines). A command that takes time comes back as a future to run to its end.
fn handle_frame(context: &Arc<Context>, frame: Frame) -> Option<BoxFuture<'static, Response>> {
    let respond = |response| {
        let _ = context.responses.send(response);
        None
    };
    let line = match frame {
        Frame::Line(line) => line,
        Frame::Invalid(why) => return respond(Response::new(None, "parse", Err(why))),
    };
    let Parsed { id, kind, command } = match parse_line(&line) {
        Ok(parsed) => parsed,
        Err(response) => return respond(*response),
    };
    match command {
        Command::Compact { .. } | Command::NewSession | Command::SetModel { .. } => {
            let context = context.clone();
            Some(Box::pin(async move {
                let result = commands::execute_slow(&context, command).await;
                Response::new(id, &kind, result)
            }))
        }
        command => respond(Response::new(
            id,
            &kind,
            commands::execute(context, command),
        )),
    }
}
