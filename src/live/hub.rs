//! The live session's one subscriber to the engine: it folds every event into the journal
//! and writes it, serialized once, to every attached client's queue — both under one lock,
//! so an `attach` (answered under that lock) sees the events before it in its replay and
//! those after it live, never both, never neither. It also knows the clients, answers
//! `list_clients`, and tells them all when the session's process ends.

use super::journal::{Journal, Noted};
use crate::agent::Agent;
use crate::protocol::event::AgentEvent;
use serde::Serialize;
use serde_json::{Value, json};
use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, Mutex, MutexGuard};
use tokio::sync::mpsc;

/// The lines a client may fall behind by before it is dropped (a client that stops reading
/// must not make the session's process hold an ever-growing queue).
pub(super) const CLIENT_QUEUE_LINES: usize = 1 << 18;

/// Where a client's lines go (its socket's writer).
pub(super) type Outbox = mpsc::Sender<Arc<str>>;

/// What `list_clients` says about a client.
#[derive(Clone, Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub(super) struct ClientInfo {
    pub client_id: u64,
    /// The peer's process and user, when the socket tells.
    pub pid: Option<i32>,
    pub uid: Option<u32>,
    /// Unix milliseconds of the connection.
    pub connected_at: u64,
}

struct Client {
    info: ClientInfo,
    outbox: Outbox,
    attached: bool,
}

struct Inner {
    journal: Journal,
    clients: BTreeMap<u64, Client>,
    next_id: u64,
    session_id: String,
    /// Approval requests not answered yet: tool call id → sub-agent id.
    pending_approvals: HashMap<String, Option<String>>,
    /// Set once the session's process is ending: no more clients.
    closed: bool,
    /// The messages before the journal's first one that the engine did not read (the
    /// older part of a long resumed session, `session::cold`): read back for a replay
    /// that reaches into them.
    earlier: Option<crate::session::cold::ColdPart>,
}

pub(super) struct Hub {
    inner: Mutex<Inner>,
    agent: Arc<Agent>,
    /// Told the new session id when it changes (the socket is renamed after it).
    renames: mpsc::UnboundedSender<String>,
}

/// One line as clients get it: JSON, with every configured secret masked.
pub(super) fn line(value: &impl Serialize) -> Arc<str> {
    let bytes = serde_json::to_vec(value).unwrap_or_default();
    let bytes = crate::secrets::redact_bytes(bytes);
    Arc::from(String::from_utf8_lossy(&bytes).as_ref())
}

impl Hub {
    /// A hub over `agent` (a client handle), whose events `events` brings.
    pub(super) fn new(agent: Arc<Agent>, renames: mpsc::UnboundedSender<String>) -> Arc<Hub> {
        let (messages, earlier) = entries(&agent);
        let session_id = agent.snapshot().session.id;
        Arc::new(Hub {
            inner: Mutex::new(Inner {
                earlier,
                journal: Journal::new(messages),
                clients: BTreeMap::new(),
                next_id: 1,
                session_id,
                pending_approvals: HashMap::new(),
                closed: false,
            }),
            agent,
            renames,
        })
    }

    fn lock(&self) -> MutexGuard<'_, Inner> {
        self.inner
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// Fold in and fan out the engine's events until it has no more or the live session
    /// ends (`closing`: the hub's handle on the engine must go then, or the engine would
    /// outlive its owner — and keep its session file locked).
    pub(super) async fn pump(
        self: Arc<Self>,
        mut events: mpsc::UnboundedReceiver<AgentEvent>,
        closing: tokio_util::sync::CancellationToken,
    ) {
        loop {
            tokio::select! {
                () = closing.cancelled() => return,
                event = events.recv() => match event {
                    Some(event) => self.publish(&event),
                    None => return,
                },
            }
        }
    }

    fn publish(&self, event: &AgentEvent) {
        // A completed message of the context carries its session entry (for `since`).
        let entry = match event {
            AgentEvent::MessageEnd { message } => Some((message, self.agent.entry_of(message))),
            _ => None,
        };
        let line = match &entry {
            Some((_, Some(id))) => {
                let mut value = serde_json::to_value(event).unwrap_or(Value::Null);
                value["entryId"] = json!((!id.is_empty()).then_some(id));
                line(&value)
            }
            _ => line(event),
        };
        let mut inner = self.lock();
        let resolved = inner.resolutions(event);
        if let Noted::Reread = inner.journal.note(event, &line) {
            let (messages, earlier) = entries(&self.agent);
            inner.journal.reset(messages);
            inner.earlier = earlier;
        }
        if let Some((message, Some(id))) = entry {
            inner.journal.add((!id.is_empty()).then_some(id), message);
        }
        if let AgentEvent::SessionChanged { session, .. } = event
            && session.id != inner.session_id
        {
            inner.session_id = session.id.clone();
            let _ = self.renames.send(session.id.clone());
        }
        inner.broadcast(&line);
        for (tool_call_id, agent_id) in resolved {
            let resolved = line_of_resolution(&tool_call_id, agent_id.as_deref(), None, None);
            inner.journal.note_line(&resolved);
            inner.broadcast(&resolved);
        }
    }

    /// A client connected: its id, or `None` once the process is ending.
    pub(super) fn join(&self, outbox: Outbox, pid: Option<i32>, uid: Option<u32>) -> Option<u64> {
        let mut inner = self.lock();
        if inner.closed {
            return None;
        }
        let client_id = inner.next_id;
        inner.next_id += 1;
        let info = ClientInfo {
            client_id,
            pid,
            uid,
            connected_at: std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map_or(0, crate::time::millis),
        };
        inner.clients.insert(
            client_id,
            Client {
                info,
                outbox,
                attached: false,
            },
        );
        Some(client_id)
    }

    pub(super) fn leave(&self, client_id: u64) {
        self.lock().clients.remove(&client_id);
    }

    /// `attach`: queue the answer `id` with the replay (the messages after entry `since`,
    /// all of them when it is not given or not found; only the last `last` of those when
    /// given), then the turn so far; from then on the client gets every event.
    pub(super) fn attach(&self, client_id: u64, id: Option<Value>, replay: Replay<'_>) {
        let mut inner = self.lock();
        let held = inner.journal.messages();
        // Only a replay that goes back before what the engine holds reads the rest.
        let found_in_held = replay
            .since
            .is_some_and(|since| held.iter().any(|(e, _)| e.as_deref() == Some(since)));
        let reaches_back = !found_in_held && replay.last.is_none_or(|last| last > held.len());
        let combined = match &inner.earlier {
            Some(earlier) if reaches_back => Some(with_earlier(earlier, held)),
            _ => None,
        };
        let messages = combined.as_deref().unwrap_or(held);
        let start = replay
            .since
            .and_then(|since| {
                messages
                    .iter()
                    .position(|(entry, _)| entry.as_deref() == Some(since))
            })
            .map(|at| at + 1);
        let after = &messages[start.unwrap_or(0)..];
        // A client that shows a screen asks for the last messages only: replaying (and
        // parsing) a whole long session is what made attaching slow.
        let omitted = replay
            .last
            .map_or(0, |last| after.len().saturating_sub(last));
        // Serialized straight from the messages (no JSON tree in between): a long session
        // is replayed in one pass.
        let replayed: Vec<Replayed<'_>> = after[omitted..]
            .iter()
            .map(|(entry, message)| Replayed {
                message: message.as_ref(),
                entry_id: entry.as_deref(),
            })
            .collect();
        let answer = line(&AttachAnswer {
            kind: "response",
            id,
            command: "attach",
            success: true,
            data: AttachData {
                session_id: &inner.session_id,
                client_id,
                since: start.and(replay.since),
                omitted,
                messages: replayed,
                is_streaming: inner.journal.running(),
            },
        });
        let replay: Vec<Arc<str>> = std::iter::once(answer)
            .chain(inner.journal.replay_lines().cloned())
            .collect();
        let Some(client) = inner.clients.get_mut(&client_id) else {
            return;
        };
        client.attached = true;
        for line in replay {
            if client.outbox.try_send(line).is_err() {
                inner.clients.remove(&client_id);
                return;
            }
        }
    }

    /// `detach`: no more events for this client (it stays connected).
    pub(super) fn detach(&self, client_id: u64) {
        if let Some(client) = self.lock().clients.get_mut(&client_id) {
            client.attached = false;
        }
    }

    pub(super) fn clients(&self) -> Vec<(ClientInfo, bool)> {
        self.lock()
            .clients
            .values()
            .map(|c| (c.info.clone(), c.attached))
            .collect()
    }

    /// A client's `approve`, carried out by `answer` (which says whether it was taken) while
    /// no event goes out: when taken, every client is told the request is answered before
    /// they see what follows from it.
    pub(super) fn approve<T>(
        &self,
        tool_call_id: &str,
        agent_id: Option<&str>,
        decision: Option<&Value>,
        by: u64,
        answer: impl FnOnce() -> (bool, T),
    ) -> T {
        let mut inner = self.lock();
        let (taken, result) = answer();
        if taken {
            inner.pending_approvals.remove(tool_call_id);
            let line = line_of_resolution(tool_call_id, agent_id, decision, Some(by));
            inner.journal.note_line(&line);
            inner.broadcast(&line);
        }
        result
    }

    /// The process is ending: every client is told `reason` and no new one is taken.
    pub(super) fn close(&self, reason: &str) {
        let mut inner = self.lock();
        inner.closed = true;
        let line = line(&json!({"type": "live_end", "reason": reason}));
        for client in std::mem::take(&mut inner.clients).into_values() {
            let _ = client.outbox.try_send(line.clone());
        }
    }

    pub(super) fn is_closed(&self) -> bool {
        self.lock().closed
    }
}

impl Inner {
    /// Write `line` to every attached client; one whose queue is full is dropped.
    fn broadcast(&mut self, line: &Arc<str>) {
        self.clients.retain(|_, client| {
            !client.attached
                || match client.outbox.try_send(line.clone()) {
                    Ok(()) => true,
                    Err(_) => false,
                }
        });
    }

    /// The approval requests `event` opens or settles: those it answers (answered outside
    /// the live protocol, e.g. by the owner, or dropped with the run) are returned.
    fn resolutions(&mut self, event: &AgentEvent) -> Vec<(String, Option<String>)> {
        match event {
            AgentEvent::ToolApprovalRequest {
                tool_call_id,
                agent_id,
                ..
            } => {
                self.pending_approvals
                    .insert(tool_call_id.clone(), agent_id.clone());
                Vec::new()
            }
            AgentEvent::ToolExecutionStart { tool_call_id, .. }
            | AgentEvent::ToolExecutionEnd { tool_call_id, .. } => self
                .pending_approvals
                .remove_entry(tool_call_id)
                .into_iter()
                .collect(),
            AgentEvent::AgentEnd { .. } => self.pending_approvals.drain().collect(),
            _ => Vec::new(),
        }
    }
}

/// What an `attach` asks to be replayed.
#[derive(Clone, Copy, Debug, Default)]
pub(super) struct Replay<'a> {
    /// The messages after this entry (all when `None` or unknown).
    pub since: Option<&'a str>,
    /// Only the last this many of them.
    pub last: Option<usize>,
}

/// A replayed message: the message with its session entry.
#[derive(Serialize)]
struct Replayed<'a> {
    #[serde(flatten)]
    message: &'a crate::protocol::message::Message,
    #[serde(rename = "entryId")]
    entry_id: Option<&'a str>,
}

/// `attach`'s answer.
#[derive(Serialize)]
struct AttachAnswer<'a> {
    #[serde(rename = "type")]
    kind: &'static str,
    id: Option<Value>,
    command: &'static str,
    success: bool,
    data: AttachData<'a>,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct AttachData<'a> {
    session_id: &'a str,
    client_id: u64,
    since: Option<&'a str>,
    /// Messages after `since` left out of the replay (before those replayed) for `last`.
    omitted: usize,
    messages: Vec<Replayed<'a>>,
    is_streaming: bool,
}

/// The engine's context with the session entry of each message (`None`: not on disk):
/// the messages it holds, and the part before them it did not read, if any.
fn entries(
    agent: &Agent,
) -> (
    Vec<super::journal::Entry>,
    Option<crate::session::cold::ColdPart>,
) {
    let cold = agent.cold_part();
    let held = agent.held_entries();
    (
        held.into_iter()
            .map(|(id, message)| ((!id.is_empty()).then_some(id), message))
            .collect(),
        cold,
    )
}

/// The replay's messages when it reaches into the part not read (`Inner::earlier`): that
/// part read back, then the journal's.
fn with_earlier(
    earlier: &crate::session::cold::ColdPart,
    held: &[super::journal::Entry],
) -> Vec<super::journal::Entry> {
    let mut all: Vec<super::journal::Entry> = match earlier.load_all() {
        Ok(read) => read
            .into_iter()
            .map(|(id, message)| (Some(id), message))
            .collect(),
        Err(error) => {
            tracing::warn!(%error, "the earlier messages could not be read for a replay");
            Vec::new()
        }
    };
    all.extend(held.iter().cloned());
    all
}

fn line_of_resolution(
    tool_call_id: &str,
    agent_id: Option<&str>,
    decision: Option<&Value>,
    by: Option<u64>,
) -> Arc<str> {
    line(&json!({
        "type": "approval_resolved",
        "toolCallId": tool_call_id,
        "agentId": agent_id,
        "decision": decision,
        "clientId": by,
    }))
}
