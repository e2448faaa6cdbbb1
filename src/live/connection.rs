//! One client of a live session: the RPC protocol on its socket (each line carried out by
//! the RPC's own command mapping, `modes::rpc::commands`), plus `attach`, `detach` and
//! `list_clients` (docs/protocol.md §4.5). As in `--mode rpc`, a command that takes time is
//! finished before the client's next one is taken up, and its `abort` overtakes it. A
//! client that goes away stops nothing: what it sent is still carried out.

use super::hub::{self, CLIENT_QUEUE_LINES, Hub};
use crate::agent::commands::Control;
use crate::modes::rpc::Context;
use crate::modes::rpc::commands::{self, Answer, Started};
use crate::modes::rpc::reader::{Frame, LineReader, MAX_LINE_BYTES};
use crate::protocol::command::Command as EngineCommand;
use crate::protocol::outcome::{CommandError, Outcome};
use crate::protocol::rpc::{Command, Parsed, Response, parse_line};
use futures_util::future::BoxFuture;
use serde_json::{Value, json};
use std::collections::VecDeque;
use std::sync::Arc;
use tokio::io::{AsyncWriteExt, BufReader, BufWriter};
use tokio::net::UnixStream;
use tokio::net::unix::OwnedWriteHalf;
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

/// A line of the client's, waiting for its turn.
enum Pending {
    Refused(Response),
    /// `attach`, `detach`, `list_clients`.
    Live {
        id: Option<Value>,
        kind: String,
        since: Option<String>,
        last: Option<usize>,
    },
    Rpc {
        id: Option<Value>,
        kind: String,
        command: Command,
        /// An `approve`'s `decision` as sent (for `approval_resolved`).
        decision: Option<Value>,
    },
    /// `execute`: an engine command as such, answered with its `Outcome`.
    Execute {
        id: Option<Value>,
        command: EngineCommand,
    },
}

struct InFlight {
    response: BoxFuture<'static, Response>,
    cancel: CancellationToken,
    bash: bool,
}

/// Serve one client until it hangs up or the session's process ends (`closing`).
pub(super) async fn serve(
    stream: UnixStream,
    hub: Arc<Hub>,
    context: Arc<Context>,
    closing: CancellationToken,
) {
    let credentials = stream.peer_cred().ok();
    let (reading_half, write) = stream.into_split();
    let (outbox, lines) = mpsc::channel(CLIENT_QUEUE_LINES);
    let writer = crate::tasks::spawn(write_lines(write, lines));
    let Some(client_id) = hub.join(
        outbox.clone(),
        credentials.as_ref().and_then(|c| c.pid()),
        credentials.as_ref().map(|c| c.uid()),
    ) else {
        let _ = outbox
            .send(hub::line(
                &json!({"type": "live_end", "reason": "the session's process is exiting"}),
            ))
            .await;
        drop(outbox);
        let _ = writer.await;
        return;
    };
    let client = Client {
        id: client_id,
        hub: hub.clone(),
        context,
        outbox,
    };
    let (frames_tx, mut frames) = mpsc::unbounded_channel();
    let reading = crate::tasks::spawn(async move {
        let mut reader = LineReader::new(BufReader::new(reading_half), MAX_LINE_BYTES);
        while let Ok(Some(frame)) = reader.next().await {
            if frames_tx.send(frame).is_err() {
                return;
            }
        }
    });
    let mut waiting: VecDeque<Pending> = VecDeque::new();
    let mut slow: Option<InFlight> = None;
    let mut open = true;
    loop {
        while slow.is_none()
            && let Some(next) = waiting.pop_front()
        {
            slow = client.take_up(next).await;
        }
        if !open && slow.is_none() && waiting.is_empty() {
            break;
        }
        tokio::select! {
            () = closing.cancelled() => break,
            response = finished(&mut slow), if slow.is_some() => {
                slow = None;
                client.send(&response).await;
            }
            frame = frames.recv(), if open => match frame {
                None => open = false,
                Some(frame) => {
                    let pending = read(frame);
                    let overtaking = match (&pending, &slow) {
                        (Pending::Rpc { id, command: Command::Abort, .. }, Some(in_flight)) => {
                            client.abort();
                            in_flight.cancel.cancel();
                            Some(Response::new(id.clone(), "abort", Ok(None)))
                        }
                        (Pending::Execute { id, command: EngineCommand::Abort }, Some(in_flight)) => {
                            in_flight.cancel.cancel();
                            Some(client.abort_now(id.clone()))
                        }
                        (Pending::Rpc { id, command: Command::AbortBash, .. }, Some(in_flight))
                            if in_flight.bash =>
                        {
                            in_flight.cancel.cancel();
                            Some(Response::new(id.clone(), "abort_bash", Ok(None)))
                        }
                        _ => None,
                    };
                    match overtaking {
                        Some(response) => client.send(&response).await,
                        None => waiting.push_back(pending),
                    }
                }
            },
        }
    }
    reading.abort();
    hub.leave(client_id);
    drop(client);
    let _ = writer.await;
}

struct Client {
    id: u64,
    hub: Arc<Hub>,
    context: Arc<Context>,
    outbox: hub::Outbox,
}

impl Client {
    async fn send(&self, response: &Response) {
        // A client gone stops nothing: its answers are dropped.
        let _ = self.outbox.send(hub::line(response)).await;
    }

    fn abort(&self) {
        use futures_util::FutureExt;
        let aborting = self
            .context
            .agent
            .execute(EngineCommand::Abort, Control::new());
        let _ = aborting.now_or_never();
    }

    /// `execute` of `abort` while a command is in flight: carried out at once (it overtakes
    /// the command, as the RPC's `abort` does), answered with its outcome.
    fn abort_now(&self, id: Option<Value>) -> Response {
        use futures_util::FutureExt;
        let aborting = self
            .context
            .agent
            .execute(EngineCommand::Abort, Control::new());
        let answer = match aborting.now_or_never() {
            Some(result) => result
                .map(|outcome| serde_json::to_value(outcome).ok())
                .map_err(|e| e.to_string()),
            None => Ok(None),
        };
        Response::new(id, "execute", answer)
    }

    /// Carry out `pending`: answered now, or the command that takes time.
    async fn take_up(&self, pending: Pending) -> Option<InFlight> {
        match pending {
            Pending::Refused(response) => self.send(&response).await,
            Pending::Live {
                id,
                kind,
                since,
                last,
            } => {
                match kind.as_str() {
                    // Answered by the hub, in its place among the events.
                    "attach" => {
                        let replay = hub::Replay {
                            since: since.as_deref(),
                            last,
                        };
                        self.hub.attach(self.id, id, replay)
                    }
                    "detach" => {
                        self.hub.detach(self.id);
                        self.send(&Response::new(id, &kind, Ok(None))).await;
                    }
                    _ => {
                        let clients: Vec<Value> = self
                            .hub
                            .clients()
                            .into_iter()
                            .map(|(info, attached)| {
                                let mut value = serde_json::to_value(&info).unwrap_or_default();
                                value["attached"] = json!(attached);
                                value["you"] = json!(info.client_id == self.id);
                                value
                            })
                            .collect();
                        let data = json!({ "clients": clients });
                        self.send(&Response::new(id, &kind, Ok(Some(data)))).await;
                    }
                }
            }
            Pending::Execute { id, command } => return self.execute(id, command),
            Pending::Rpc {
                id,
                kind,
                command,
                decision,
            } => {
                if let Command::Approve {
                    tool_call_id,
                    agent_id,
                    ..
                } = &command
                {
                    let (tool_call_id, agent_id) = (tool_call_id.clone(), agent_id.clone());
                    let answer: Answer = self.hub.approve(
                        &tool_call_id,
                        agent_id.as_deref(),
                        decision.as_ref(),
                        self.id,
                        || match commands::start(&self.context, &kind, command) {
                            Started::Done(answer) => (answer.is_ok(), answer),
                            Started::Slow { .. } => (
                                false,
                                Err("internal error: an approval took time".to_string()),
                            ),
                        },
                    );
                    self.send(&Response::new(id, &kind, answer)).await;
                    return None;
                }
                match commands::start(&self.context, &kind, command) {
                    Started::Done(answer) => self.send(&Response::new(id, &kind, answer)).await,
                    Started::Slow {
                        result,
                        cancel,
                        bash,
                    } => {
                        return Some(InFlight {
                            response: Box::pin(
                                async move { Response::new(id, &kind, result.await) },
                            ),
                            cancel,
                            bash,
                        });
                    }
                }
            }
        }
        None
    }
}

impl Client {
    /// `execute`: an answer to an approval is given at once (see `Hub::approve`); any
    /// other command is in flight until its outcome comes.
    fn execute(&self, id: Option<Value>, command: EngineCommand) -> Option<InFlight> {
        use futures_util::FutureExt;
        let answer_of = |result: Result<Outcome, CommandError>| -> Answer {
            result
                .map(|outcome| serde_json::to_value(outcome).ok())
                .map_err(|e| e.to_string())
        };
        if let EngineCommand::Approve {
            tool_call_id,
            agent_id,
            decision,
        } = &command
        {
            let decision = serde_json::to_value(decision).ok();
            let (tool_call_id, agent_id) = (tool_call_id.clone(), agent_id.clone());
            let agent = self.context.agent.clone();
            let answer = self.hub.approve(
                &tool_call_id,
                agent_id.as_deref(),
                decision.as_ref(),
                self.id,
                move || {
                    let answer = match agent.execute(command, Control::new()).now_or_never() {
                        Some(result) => answer_of(result),
                        None => Err("internal error: an approval took time".to_string()),
                    };
                    (answer.is_ok(), answer)
                },
            );
            let response = Response::new(id, "execute", answer);
            return Some(InFlight {
                response: Box::pin(async move { response }),
                cancel: CancellationToken::new(),
                bash: false,
            });
        }
        let cancel = CancellationToken::new();
        let control = Control {
            cancel: cancel.clone(),
            progress: None,
        };
        let bash = matches!(command, EngineCommand::RunShell { .. });
        let agent = self.context.agent.clone();
        Some(InFlight {
            response: Box::pin(async move {
                Response::new(
                    id,
                    "execute",
                    answer_of(agent.execute(command, control).await),
                )
            }),
            cancel,
            bash,
        })
    }
}

async fn finished(slow: &mut Option<InFlight>) -> Response {
    match slow {
        Some(in_flight) => (&mut in_flight.response).await,
        None => std::future::pending().await,
    }
}

/// The client's line as what to do with it.
fn read(frame: Frame) -> Pending {
    let line = match frame {
        Frame::Line(line) => line,
        Frame::Invalid(why) => return Pending::Refused(Response::new(None, "parse", Err(why))),
    };
    if let Ok(Value::Object(object)) = serde_json::from_str::<Value>(&line) {
        let kind = object.get("type").and_then(Value::as_str).unwrap_or("");
        if kind == "execute" {
            let id = object.get("id").cloned();
            return match object.get("command").cloned().map(serde_json::from_value) {
                Some(Ok(command)) => Pending::Execute { id, command },
                Some(Err(e)) => Pending::Refused(Response::new(
                    id,
                    kind,
                    Err(format!("invalid `execute` command: {e}")),
                )),
                None => Pending::Refused(Response::new(
                    id,
                    kind,
                    Err("invalid `execute` command: missing field `command`".to_string()),
                )),
            };
        }
        if matches!(kind, "attach" | "detach" | "list_clients") {
            let id = object.get("id").cloned();
            let since = match object.get("since") {
                None | Some(Value::Null) => None,
                Some(Value::String(since)) => Some(since.clone()),
                Some(_) => {
                    let why = "invalid `attach` command: `since` is an entry id (a string)";
                    return Pending::Refused(Response::new(id, kind, Err(why.to_string())));
                }
            };
            let last = match object.get("last") {
                None | Some(Value::Null) => None,
                Some(last) => match last.as_u64().and_then(|n| usize::try_from(n).ok()) {
                    Some(last) => Some(last),
                    None => {
                        let why = "invalid `attach` command: `last` is a count of messages (a whole number, 0 or more)";
                        return Pending::Refused(Response::new(id, kind, Err(why.to_string())));
                    }
                },
            };
            return Pending::Live {
                id,
                kind: kind.to_string(),
                since,
                last,
            };
        }
        let decision = object.get("decision").cloned();
        return match parse_line(&line) {
            Ok(Parsed { id, kind, command }) => Pending::Rpc {
                id,
                kind,
                command,
                decision,
            },
            Err(response) => Pending::Refused(*response),
        };
    }
    match parse_line(&line) {
        Ok(Parsed { id, kind, command }) => Pending::Rpc {
            id,
            kind,
            command,
            decision: None,
        },
        Err(response) => Pending::Refused(*response),
    }
}

/// Write the client's lines as they come, flushing whenever none is waiting; done when
/// every sender is gone (the client left, or the process ends) or the socket breaks.
async fn write_lines(write: OwnedWriteHalf, mut lines: mpsc::Receiver<Arc<str>>) {
    let mut out = BufWriter::new(write);
    while let Some(line) = lines.recv().await {
        let mut next = Some(line);
        while let Some(line) = next {
            if out.write_all(line.as_bytes()).await.is_err() || out.write_all(b"\n").await.is_err()
            {
                return;
            }
            next = lines.try_recv().ok();
        }
        if out.flush().await.is_err() {
            return;
        }
    }
    let _ = out.shutdown().await;
}
