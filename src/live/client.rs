//! A client of a live session (docs/protocol.md §4.5), for a front end that drives a
//! session another process runs: `connect` gives a `LiveClient` that sends engine commands
//! (`execute`, answered with the command's `Outcome` as JSON) or any RPC line (`request`),
//! and a `LiveEvents` stream of what the session says: the replay of `attach`, then every
//! event, then why it ended.

use serde_json::{Value, json};
use std::collections::HashMap;
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
use tokio::net::UnixStream;
use tokio::net::unix::OwnedWriteHalf;
use tokio::sync::{mpsc, oneshot};

#[derive(Debug, thiserror::Error)]
pub enum ClientError {
    #[error("cannot reach the live session at {path}: {source}")]
    Connect {
        path: String,
        source: std::io::Error,
    },
    #[error("the live session is gone")]
    Gone,
    /// The session answered with an error: its text.
    #[error("{0}")]
    Refused(String),
}

/// What the session tells a client, in order.
#[derive(Clone, Debug, PartialEq)]
pub enum LiveEvent {
    /// An event (docs/protocol.md §3) or a line of the live protocol's own
    /// (`approval_resolved`), as its JSON line.
    Event(Value),
    /// The session's process ended: why.
    Ended(String),
    /// The connection closed without a word (the process died).
    Closed,
}

type Waiting = Arc<Mutex<HashMap<String, oneshot::Sender<Value>>>>;

/// Sends lines to a live session and matches their answers.
pub struct LiveClient {
    writer: tokio::sync::Mutex<OwnedWriteHalf>,
    waiting: Waiting,
    next: AtomicU64,
}

/// The session's lines that are not answers.
pub struct LiveEvents {
    lines: mpsc::UnboundedReceiver<LiveEvent>,
}

impl LiveEvents {
    /// The next line; `Closed` comes last (after `Ended` when the process said why).
    pub async fn next(&mut self) -> Option<LiveEvent> {
        self.lines.recv().await
    }
}

impl LiveClient {
    /// Connect to the session served at `socket` (nothing is streamed before `attach`).
    pub async fn connect(socket: &Path) -> Result<(LiveClient, LiveEvents), ClientError> {
        let stream = UnixStream::connect(socket)
            .await
            .map_err(|source| ClientError::Connect {
                path: socket.display().to_string(),
                source,
            })?;
        let (read, write) = stream.into_split();
        let waiting: Waiting = Arc::default();
        let (events, lines) = mpsc::unbounded_channel();
        crate::tasks::spawn(read_lines(read, waiting.clone(), events));
        let client = LiveClient {
            writer: tokio::sync::Mutex::new(write),
            waiting,
            next: AtomicU64::new(1),
        };
        Ok((client, LiveEvents { lines }))
    }

    /// Send `line` (an RPC command, without `id`) and wait for its answer's `data`.
    pub async fn request(&self, mut line: Value) -> Result<Value, ClientError> {
        let id = format!("live-{}", self.next.fetch_add(1, Ordering::Relaxed));
        line["id"] = json!(id);
        let (tx, rx) = oneshot::channel();
        self.waiting
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .insert(id, tx);
        let mut bytes =
            serde_json::to_vec(&line).map_err(|e| ClientError::Refused(e.to_string()))?;
        bytes.push(b'\n');
        {
            let mut writer = self.writer.lock().await;
            writer
                .write_all(&bytes)
                .await
                .map_err(|_| ClientError::Gone)?;
        }
        let answer = rx.await.map_err(|_| ClientError::Gone)?;
        if answer["success"] == true {
            Ok(answer.get("data").cloned().unwrap_or(Value::Null))
        } else {
            Err(ClientError::Refused(
                answer["error"].as_str().unwrap_or("refused").to_string(),
            ))
        }
    }

    /// Carry out an engine command in the session: its `Outcome` as JSON.
    pub async fn execute(
        &self,
        command: &crate::protocol::command::Command,
    ) -> Result<Value, ClientError> {
        let command =
            serde_json::to_value(command).map_err(|e| ClientError::Refused(e.to_string()))?;
        self.request(json!({"type": "execute", "command": command}))
            .await
    }

    /// Start the stream: the answer's `data` holds the messages after entry `since` (all
    /// of them when `None` or unknown; only the last `last` of them when given); the turn
    /// so far and the live events follow on the event stream.
    pub async fn attach(
        &self,
        since: Option<&str>,
        last: Option<usize>,
    ) -> Result<Value, ClientError> {
        self.request(json!({"type": "attach", "since": since, "last": last}))
            .await
    }

    /// Stop the stream (the connection stays).
    pub async fn detach(&self) -> Result<Value, ClientError> {
        self.request(json!({"type": "detach"})).await
    }
}

async fn read_lines(
    read: tokio::net::unix::OwnedReadHalf,
    waiting: Waiting,
    events: mpsc::UnboundedSender<LiveEvent>,
) {
    let mut lines = BufReader::new(read).lines();
    while let Ok(Some(line)) = lines.next_line().await {
        let Ok(value) = serde_json::from_str::<Value>(&line) else {
            continue;
        };
        if value["type"] == "response"
            && let Some(id) = value["id"].as_str()
            && let Some(tx) = waiting.lock().unwrap_or_else(|p| p.into_inner()).remove(id)
        {
            let _ = tx.send(value);
            continue;
        }
        if value["type"] == "live_end" {
            let reason = value["reason"].as_str().unwrap_or("ended").to_string();
            let _ = events.send(LiveEvent::Ended(reason));
            break;
        }
        let _ = events.send(LiveEvent::Event(value));
    }
    // Whatever is still waiting for an answer gets `Gone`.
    waiting.lock().unwrap_or_else(|p| p.into_inner()).clear();
    let _ = events.send(LiveEvent::Closed);
}
