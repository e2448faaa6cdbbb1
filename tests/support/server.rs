//! A real HTTP/1.1 server on 127.0.0.1 that plays a script: reply N answers request N. It
//! records every request (path, headers, JSON body) so tests can assert what the agent sent,
//! and can misbehave on purpose: slow frames (down to a byte at a time), a stalled stream,
//! keep-alives forever, a connection dropped mid-stream or before a byte of the answer, no
//! response headers at all, any status with any headers and any body. Hand-written on a TcpListener because fault
//! injection needs control over every byte on the wire.

use serde_json::Value;
use std::collections::VecDeque;
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::watch;

#[derive(Clone, Debug)]
pub struct Recorded {
    pub method: String,
    pub path: String,
    pub headers: Vec<(String, String)>,
    pub body: Value,
    /// When the request was complete.
    pub received: std::time::Instant,
}

impl Recorded {
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(k, _)| k.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }
}

#[derive(Clone, Debug)]
pub enum End {
    /// Finish the response properly.
    Complete,
    /// Keep the connection open and send nothing more.
    Stall,
    /// Close the connection without finishing the chunked body.
    Drop,
    /// Send `frame` (a keep-alive comment, a ping, an empty event) every `every`, forever.
    KeepAlive { frame: String, every: Duration },
}

/// A point a scripted reply waits at until the test opens it.
#[derive(Clone, Debug)]
pub struct Gate(Arc<watch::Sender<bool>>);

impl Gate {
    pub fn new() -> Gate {
        Gate(Arc::new(watch::channel(false).0))
    }

    pub fn open(&self) {
        self.0.send_replace(true);
    }

    async fn passed(&self) {
        let mut open = self.0.subscribe();
        let _ = open.wait_for(|open| *open).await;
    }
}

#[derive(Clone, Debug)]
pub enum Reply {
    Sse {
        frames: Vec<String>,
        delay: Duration,
        end: End,
        /// Sent the headers, the body waits for this.
        gate: Option<Gate>,
        /// Before frame N, wait until this gate is open (a stream that stops mid-answer).
        pauses: Vec<(usize, Gate)>,
    },
    Status {
        status: u16,
        content_type: String,
        headers: Vec<(String, String)>,
        body: String,
    },
    /// Read the request and never answer, not even with headers.
    Silent,
    /// Read the request and close the connection without a byte: a connection error.
    Hangup,
}

impl Reply {
    /// A streaming 200 response; each frame is written as its own chunk.
    pub fn sse(frames: Vec<String>) -> Reply {
        Reply::Sse {
            frames,
            delay: Duration::ZERO,
            end: End::Complete,
            gate: None,
            pauses: Vec::new(),
        }
    }

    /// A whole recorded stream, sent in one piece.
    pub fn raw(text: &str) -> Reply {
        Reply::sse(vec![text.to_string()])
    }

    pub fn status(status: u16, body: &str) -> Reply {
        Reply::Status {
            status,
            content_type: "application/json".to_string(),
            headers: Vec::new(),
            body: body.to_string(),
        }
    }

    /// A whole body of any type, with its length (no streaming).
    pub fn body(status: u16, content_type: &str, body: &str) -> Reply {
        Reply::Status {
            status,
            content_type: content_type.to_string(),
            headers: Vec::new(),
            body: body.to_string(),
        }
    }

    pub fn with_header(mut self, name: &str, value: &str) -> Reply {
        if let Reply::Status { headers, .. } = &mut self {
            headers.push((name.to_string(), value.to_string()));
        }
        self
    }

    /// Wait `delay` before each frame.
    pub fn slowly(mut self, every: Duration) -> Reply {
        if let Reply::Sse { delay, .. } = &mut self {
            *delay = every;
        }
        self
    }

    /// Send the headers at once and the body only when `gate` is opened.
    pub fn after(mut self, opened: &Gate) -> Reply {
        if let Reply::Sse { gate, .. } = &mut self {
            *gate = Some(opened.clone());
        }
        self
    }

    /// Stop before frame `index` (0 is the first) until `opened` is opened; several pauses
    /// may be set.
    pub fn pause_before(mut self, index: usize, opened: &Gate) -> Reply {
        if let Reply::Sse { pauses, .. } = &mut self {
            pauses.push((index, opened.clone()));
        }
        self
    }

    pub fn then(mut self, ending: End) -> Reply {
        if let Reply::Sse { end, .. } = &mut self {
            *end = ending;
        }
        self
    }
}

struct Script {
    replies: VecDeque<Reply>,
    /// Replies for requests whose first user message contains the text (sub-agents,
    /// told apart by their prompt), each list in order.
    routes: Vec<(String, VecDeque<Reply>)>,
    requests: Vec<Recorded>,
    /// When each reply was completely written.
    replied: Vec<std::time::Instant>,
}

pub struct FakeServer {
    /// `http://127.0.0.1:PORT`
    pub origin: String,
    script: Arc<Mutex<Script>>,
    count: watch::Receiver<usize>,
    task: tokio::task::JoinHandle<()>,
}

impl Drop for FakeServer {
    fn drop(&mut self) {
        self.task.abort();
    }
}

impl FakeServer {
    pub async fn start(replies: Vec<Reply>) -> FakeServer {
        let listener = TcpListener::bind("127.0.0.1:0")
            .await
            .expect("bind 127.0.0.1");
        let origin = format!("http://{}", listener.local_addr().expect("local addr"));
        let script = Arc::new(Mutex::new(Script {
            replies: replies.into(),
            routes: Vec::new(),
            requests: Vec::new(),
            replied: Vec::new(),
        }));
        let (count_tx, count) = watch::channel(0);
        let count_tx = Arc::new(count_tx);
        let accept_script = script.clone();
        let task = tokio::spawn(async move {
            loop {
                let Ok((stream, _)) = listener.accept().await else {
                    return;
                };
                // Like real servers: no Nagle delay between the writes of a reply.
                let _ = stream.set_nodelay(true);
                tokio::spawn(serve(stream, accept_script.clone(), count_tx.clone()));
            }
        });
        FakeServer {
            origin,
            script,
            count,
            task,
        }
    }

    /// Base URL in the OpenAI SDK convention.
    pub fn v1(&self) -> String {
        format!("{}/v1", self.origin)
    }

    pub fn push(&self, reply: Reply) {
        self.script.lock().unwrap().replies.push_back(reply);
    }

    /// Answer requests whose first user message contains `needle` with `replies`, in
    /// order, instead of from the main script (once they are used up, the next route for
    /// the same text, or the main script, answers).
    pub fn route(&self, needle: &str, replies: Vec<Reply>) {
        self.script
            .lock()
            .unwrap()
            .routes
            .push((needle.to_string(), replies.into()));
    }

    pub fn requests(&self) -> Vec<Recorded> {
        self.script.lock().unwrap().requests.clone()
    }

    /// When each reply finished, in order.
    pub fn reply_times(&self) -> Vec<std::time::Instant> {
        self.script.lock().unwrap().replied.clone()
    }

    pub fn bodies(&self) -> Vec<Value> {
        self.requests().into_iter().map(|r| r.body).collect()
    }

    pub async fn wait_for_requests(&self, n: usize) {
        let mut count = self.count.clone();
        tokio::time::timeout(Duration::from_secs(120), count.wait_for(|c| *c >= n))
            .await
            .expect("timed out waiting for requests")
            .expect("server gone");
    }
}

async fn serve(
    mut stream: TcpStream,
    script: Arc<Mutex<Script>>,
    count: Arc<watch::Sender<usize>>,
) {
    let mut buffer = Vec::new();
    loop {
        let Some(request) = read_request(&mut stream, &mut buffer).await else {
            return;
        };
        let reply =
            {
                let mut script = script.lock().unwrap();
                let first_user = first_user_text(&request.body);
                script.requests.push(request);
                let n = script.requests.len();
                count.send_replace(n);
                let routed = script
                    .routes
                    .iter_mut()
                    .filter(|(needle, _)| first_user.contains(needle.as_str()))
                    .find_map(|(_, replies)| replies.pop_front());
                routed.or_else(|| script.replies.pop_front()).unwrap_or_else(|| {
                Reply::status(
                    500,
                    &format!("{{\"error\":{{\"message\":\"no scripted reply for request {n}\"}}}}"),
                )
            })
            };
        let reusable = write_reply(&mut stream, reply).await;
        script
            .lock()
            .unwrap()
            .replied
            .push(std::time::Instant::now());
        if !reusable {
            return;
        }
    }
}

/// The text of a request's first user message (Chat Completions, Responses or Anthropic
/// shape), or "".
fn first_user_text(body: &Value) -> String {
    let messages = body
        .get("messages")
        .or_else(|| body.get("input"))
        .and_then(Value::as_array);
    let Some(first) = messages
        .into_iter()
        .flatten()
        .find(|m| m.get("role").and_then(Value::as_str) == Some("user"))
    else {
        return String::new();
    };
    match &first["content"] {
        Value::String(text) => text.clone(),
        other => other.to_string(),
    }
}

async fn read_request(stream: &mut TcpStream, buffer: &mut Vec<u8>) -> Option<Recorded> {
    let head_end = loop {
        if let Some(pos) = buffer.windows(4).position(|w| w == b"\r\n\r\n") {
            break pos;
        }
        let mut chunk = [0u8; 8192];
        let n = stream.read(&mut chunk).await.ok()?;
        if n == 0 {
            return None;
        }
        buffer.extend_from_slice(&chunk[..n]);
    };
    let head = String::from_utf8_lossy(&buffer[..head_end]).to_string();
    let mut lines = head.split("\r\n");
    let mut request_line = lines.next()?.split(' ');
    let method = request_line.next()?.to_string();
    let path = request_line.next()?.to_string();
    let headers: Vec<(String, String)> = lines
        .filter_map(|line| line.split_once(':'))
        .map(|(k, v)| (k.trim().to_ascii_lowercase(), v.trim().to_string()))
        .collect();
    let length: usize = headers
        .iter()
        .find(|(k, _)| k == "content-length")
        .and_then(|(_, v)| v.parse().ok())
        .unwrap_or(0);
    let body_start = head_end + 4;
    while buffer.len() < body_start + length {
        let mut chunk = [0u8; 65536];
        let n = stream.read(&mut chunk).await.ok()?;
        if n == 0 {
            return None;
        }
        buffer.extend_from_slice(&chunk[..n]);
    }
    let body_bytes: Vec<u8> = buffer[body_start..body_start + length].to_vec();
    buffer.drain(..body_start + length);
    let body = serde_json::from_slice(&body_bytes).unwrap_or(Value::Null);
    Some(Recorded {
        method,
        path,
        headers,
        body,
        received: std::time::Instant::now(),
    })
}

/// Returns whether the connection can serve another request.
async fn write_reply(stream: &mut TcpStream, reply: Reply) -> bool {
    match reply {
        Reply::Silent => {
            tokio::time::sleep(Duration::from_secs(3600)).await;
            false
        }
        Reply::Hangup => {
            let _ = stream.shutdown().await;
            false
        }
        Reply::Status {
            status,
            content_type,
            headers,
            body,
        } => {
            let mut head = format!(
                "HTTP/1.1 {status} Scripted\r\ncontent-type: {content_type}\r\ncontent-length: {}\r\n",
                body.len()
            );
            for (name, value) in headers {
                head.push_str(&format!("{name}: {value}\r\n"));
            }
            head.push_str("\r\n");
            stream.write_all(head.as_bytes()).await.is_ok()
                && stream.write_all(body.as_bytes()).await.is_ok()
        }
        Reply::Sse {
            frames,
            delay,
            end,
            gate,
            pauses,
        } => {
            let head = "HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ncache-control: no-cache\r\ntransfer-encoding: chunked\r\n\r\n";
            if stream.write_all(head.as_bytes()).await.is_err() {
                return false;
            }
            let _ = stream.flush().await;
            if let Some(gate) = gate {
                gate.passed().await;
            }
            for (index, frame) in frames.into_iter().enumerate() {
                for (_, gate) in pauses.iter().filter(|(at, _)| *at == index) {
                    gate.passed().await;
                }
                if !delay.is_zero() {
                    tokio::time::sleep(delay).await;
                }
                if frame.is_empty() {
                    continue;
                }
                let chunk = format!("{:x}\r\n{frame}\r\n", frame.len());
                if stream.write_all(chunk.as_bytes()).await.is_err() {
                    return false;
                }
                let _ = stream.flush().await;
            }
            match end {
                End::Complete => stream.write_all(b"0\r\n\r\n").await.is_ok(),
                End::Stall => {
                    tokio::time::sleep(Duration::from_secs(3600)).await;
                    false
                }
                End::Drop => {
                    let _ = stream.shutdown().await;
                    false
                }
                End::KeepAlive { frame, every } => loop {
                    tokio::time::sleep(every).await;
                    let chunk = format!("{:x}\r\n{frame}\r\n", frame.len());
                    if stream.write_all(chunk.as_bytes()).await.is_err() {
                        return false;
                    }
                },
            }
        }
    }
}
