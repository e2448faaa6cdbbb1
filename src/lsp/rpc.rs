//! JSON-RPC 2.0 with a language server over its stdin and stdout, in the protocol's
//! `Content-Length` framing: requests with ids and time limits (a request given up on is
//! cancelled with `$/cancelRequest`), notifications both ways, and the server's own requests
//! answered by a handler.
//!
//! Written here rather than taken from `async-lsp`, the maintained client-side crate: it
//! allocates whatever `Content-Length` a server claims and reads header lines without a bound
//! (a broken server could take the agent's memory), its router ends the connection on any
//! notification it has no handler for (servers send their own, `pyright/…`, `$/typescript…`),
//! and it pins an older `lsp-types` than the one we use. What we need is small: the framing
//! below (a `tokio_util` codec with hard limits), ids, and a map of waiting requests.

use bytes::{Buf, BytesMut};
use futures_util::StreamExt;
use serde::Deserialize;
use serde_json::{Value, json};
use std::collections::HashMap;
use std::sync::atomic::{AtomicI64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;
use tokio::io::{AsyncRead, AsyncWrite, AsyncWriteExt};
use tokio::sync::{mpsc, oneshot};
use tokio_util::codec::{Decoder, FramedRead};
use tokio_util::sync::CancellationToken;

/// The largest message accepted from a server (a flood of 10,000 diagnostics is ~3 MB).
pub const MAX_MESSAGE: usize = 64 * 1024 * 1024;
/// The largest header block accepted.
const MAX_HEADER: usize = 8 * 1024;

/// JSON-RPC's "method not found".
pub const METHOD_NOT_FOUND: i64 = -32601;

#[derive(Debug, Clone, thiserror::Error, PartialEq)]
pub enum RpcError {
    #[error("the server is gone")]
    Closed,
    #[error("no answer within {} s", .0.as_secs_f32())]
    Timeout(Duration),
    #[error("the server answered with an error: {message} ({code})")]
    Response { code: i64, message: String },
    #[error("the server's answer does not fit: {0}")]
    Decode(String),
}

/// What a server sends that is not an answer to us.
pub trait Handler: Send + Sync + 'static {
    /// A notification (`textDocument/publishDiagnostics`, `$/progress`, …).
    fn notification(&self, method: &str, params: Value);
    /// A request of the server's own (`workspace/configuration`, …): its result, or an error
    /// code and message.
    fn request(&self, method: &str, params: Value) -> Result<Value, (i64, String)>;
}

/// The `Content-Length` framing: yields each message's body.
struct Framing;

#[derive(Debug, thiserror::Error)]
enum FrameError {
    #[error("{0}")]
    Io(#[from] std::io::Error),
    #[error("{0}")]
    Protocol(String),
}

impl Decoder for Framing {
    type Item = BytesMut;
    type Error = FrameError;

    fn decode(&mut self, buf: &mut BytesMut) -> Result<Option<BytesMut>, FrameError> {
        let Some(end) = buf.windows(4).position(|w| w == b"\r\n\r\n") else {
            if buf.len() > MAX_HEADER {
                return Err(FrameError::Protocol(
                    "a header longer than 8 KiB (is it writing something else to stdout?)"
                        .to_string(),
                ));
            }
            return Ok(None);
        };
        let header = String::from_utf8_lossy(&buf[..end]);
        let mut length = None;
        for line in header.split("\r\n") {
            let Some((name, value)) = line.split_once(':') else {
                return Err(FrameError::Protocol(format!(
                    "not a header line: {:?}",
                    crate::tools::truncate::clip(line, 200)
                )));
            };
            if name.trim().eq_ignore_ascii_case("content-length") {
                length = Some(value.trim().parse::<usize>().map_err(|_| {
                    FrameError::Protocol(format!("a Content-Length of {:?}", value.trim()))
                })?);
            }
        }
        let length = length.ok_or_else(|| FrameError::Protocol("no Content-Length".to_string()))?;
        if length > MAX_MESSAGE {
            return Err(FrameError::Protocol(format!(
                "a message of {length} bytes (at most {MAX_MESSAGE} are accepted)"
            )));
        }
        let total = end + 4 + length;
        if buf.len() < total {
            buf.reserve(total - buf.len());
            return Ok(None);
        }
        buf.advance(end + 4);
        Ok(Some(buf.split_to(length)))
    }
}

/// One message from the server, as far as routing needs it.
#[derive(Deserialize)]
struct Incoming {
    id: Option<Value>,
    method: Option<String>,
    #[serde(default)]
    params: Value,
    result: Option<Value>,
    error: Option<WireError>,
}

#[derive(Deserialize)]
struct WireError {
    code: i64,
    #[serde(default)]
    message: String,
}

type Waiting = Mutex<HashMap<i64, oneshot::Sender<Result<Value, RpcError>>>>;

/// A live connection. Dropping every handle does not end the server: its owner does.
pub struct Connection {
    outgoing: mpsc::UnboundedSender<Vec<u8>>,
    waiting: Arc<Waiting>,
    next_id: AtomicI64,
    /// Cancelled once the server's output ended (or was unreadable).
    closed: CancellationToken,
}

/// Why a connection ended.
pub type Ending = String;

impl Connection {
    /// Serve the connection: read from `input`, write to `output`, hand what is not an
    /// answer to `handler`. The task returned ends with the connection, saying why.
    pub fn start(
        input: impl AsyncRead + Send + Unpin + 'static,
        output: impl AsyncWrite + Send + Unpin + 'static,
        handler: Arc<dyn Handler>,
    ) -> (Arc<Connection>, tokio::task::JoinHandle<Ending>) {
        let (outgoing, mut queue) = mpsc::unbounded_channel::<Vec<u8>>();
        let connection = Arc::new(Connection {
            outgoing,
            waiting: Arc::default(),
            next_id: AtomicI64::new(1),
            closed: CancellationToken::new(),
        });
        let closed = connection.closed.clone();
        // The writer ends when the reader does (or the server stops reading its input).
        let writing = crate::tasks::spawn({
            let closed = closed.clone();
            async move {
                let mut output = output;
                loop {
                    let message = tokio::select! {
                        () = closed.cancelled() => break,
                        message = queue.recv() => message,
                    };
                    let Some(message) = message else { break };
                    if output.write_all(&message).await.is_err() || output.flush().await.is_err() {
                        break;
                    }
                }
            }
        });
        let reader = connection.clone();
        let task = crate::tasks::spawn(async move {
            let ending = reader.read(input, handler).await;
            reader.closed.cancel();
            let waiting: Vec<_> = reader
                .waiting
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .drain()
                .collect();
            for (_, sender) in waiting {
                let _ = sender.send(Err(RpcError::Closed));
            }
            writing.abort();
            ending
        });
        (connection, task)
    }

    async fn read(&self, input: impl AsyncRead + Unpin, handler: Arc<dyn Handler>) -> Ending {
        let mut frames = FramedRead::new(input, Framing);
        loop {
            let body = match frames.next().await {
                None => return "its output ended".to_string(),
                Some(Err(FrameError::Io(e))) => return format!("its output failed: {e}"),
                Some(Err(FrameError::Protocol(why))) => {
                    return format!("it broke the protocol: {why}");
                }
                Some(Ok(body)) => body,
            };
            let message: Incoming = match serde_json::from_slice(&body) {
                Ok(message) => message,
                Err(e) => {
                    tracing::warn!(target: "lsp", error = %e, "unreadable message from a language server");
                    continue;
                }
            };
            match (message.method, message.id) {
                (Some(method), Some(id)) => {
                    let answer = handler.request(&method, message.params);
                    self.answer(id, answer);
                }
                (Some(method), None) => handler.notification(&method, message.params),
                (None, Some(id)) => {
                    let Some(id) = id.as_i64() else { continue };
                    let sender = self
                        .waiting
                        .lock()
                        .unwrap_or_else(PoisonError::into_inner)
                        .remove(&id);
                    if let Some(sender) = sender {
                        let _ = sender.send(match message.error {
                            Some(error) => Err(RpcError::Response {
                                code: error.code,
                                message: error.message,
                            }),
                            None => Ok(message.result.unwrap_or(Value::Null)),
                        });
                    }
                }
                (None, None) => {}
            }
        }
    }

    /// Whether the server's output has ended.
    pub fn is_closed(&self) -> bool {
        self.closed.is_cancelled()
    }

    /// Completes when the server's output has ended.
    pub async fn until_closed(&self) {
        self.closed.cancelled().await;
    }

    fn send(&self, message: &Value) -> Result<(), RpcError> {
        let body = serde_json::to_vec(message).map_err(|e| RpcError::Decode(e.to_string()))?;
        let mut framed = format!("Content-Length: {}\r\n\r\n", body.len()).into_bytes();
        framed.extend_from_slice(&body);
        self.outgoing.send(framed).map_err(|_| RpcError::Closed)
    }

    fn answer(&self, id: Value, answer: Result<Value, (i64, String)>) {
        let message = match answer {
            Ok(result) => json!({"jsonrpc": "2.0", "id": id, "result": result}),
            Err((code, message)) => {
                json!({"jsonrpc": "2.0", "id": id, "error": {"code": code, "message": message}})
            }
        };
        let _ = self.send(&message);
    }

    pub fn notify(&self, method: &str, params: Value) -> Result<(), RpcError> {
        if self.is_closed() {
            return Err(RpcError::Closed);
        }
        self.send(&json!({"jsonrpc": "2.0", "method": method, "params": params}))
    }

    /// Send a request and wait for its answer, at most `limit`; one given up on is
    /// cancelled at the server.
    pub async fn request(
        &self,
        method: &str,
        params: Value,
        limit: Duration,
    ) -> Result<Value, RpcError> {
        if self.is_closed() {
            return Err(RpcError::Closed);
        }
        let id = self.next_id.fetch_add(1, Ordering::Relaxed);
        let (sender, receiver) = oneshot::channel();
        self.waiting
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .insert(id, sender);
        // Dropped unanswered (timed out, or the caller gave up): cancelled at the server.
        let guard = CancelOnDrop {
            connection: self,
            id,
        };
        self.send(&json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}))?;
        let answer = match tokio::time::timeout(limit, receiver).await {
            Err(_) => return Err(RpcError::Timeout(limit)),
            Ok(Err(_)) => Err(RpcError::Closed),
            Ok(Ok(answer)) => answer,
        };
        std::mem::forget(guard);
        answer
    }

    /// `request` with the protocol's types.
    pub async fn call<R: lsp_types::request::Request>(
        &self,
        params: R::Params,
        limit: Duration,
    ) -> Result<R::Result, RpcError> {
        let params = serde_json::to_value(params).map_err(|e| RpcError::Decode(e.to_string()))?;
        let value = self.request(R::METHOD, params, limit).await?;
        serde_json::from_value(value).map_err(|e| RpcError::Decode(e.to_string()))
    }

    /// `notify` with the protocol's types.
    pub fn tell<N: lsp_types::notification::Notification>(
        &self,
        params: N::Params,
    ) -> Result<(), RpcError> {
        let params = serde_json::to_value(params).map_err(|e| RpcError::Decode(e.to_string()))?;
        self.notify(N::METHOD, params)
    }
}

struct CancelOnDrop<'a> {
    connection: &'a Connection,
    id: i64,
}

impl Drop for CancelOnDrop<'_> {
    fn drop(&mut self) {
        let waiting = self
            .connection
            .waiting
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .remove(&self.id);
        if waiting.is_some() {
            let _ = self
                .connection
                .notify("$/cancelRequest", json!({"id": self.id}));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn decode_all(bytes: &[u8]) -> Result<Vec<String>, String> {
        let mut buf = BytesMut::from(bytes);
        let mut out = Vec::new();
        loop {
            match Framing.decode(&mut buf) {
                Ok(Some(body)) => out.push(String::from_utf8_lossy(&body).to_string()),
                Ok(None) => return Ok(out),
                Err(e) => return Err(e.to_string()),
            }
        }
    }

    #[test]
    fn frames_are_cut_by_their_length() {
        let two = b"Content-Length: 2\r\n\r\n{}Content-Type: x\r\ncontent-length:3\r\n\r\n[1]Con";
        assert_eq!(decode_all(two).unwrap(), ["{}", "[1]"]);
    }

    #[test]
    fn a_broken_frame_is_an_error_not_an_allocation() {
        let huge = format!("Content-Length: {}\r\n\r\n", MAX_MESSAGE + 1);
        assert!(decode_all(huge.as_bytes()).unwrap_err().contains("at most"));
        assert!(decode_all(&[b'x'; MAX_HEADER + 1]).is_err());
        assert!(decode_all(b"Content-Type: x\r\n\r\n{}").is_err());
        assert!(decode_all(b"Content-Length: -1\r\n\r\n").is_err());
    }
}
