//! `POST /v1/stream`: call the real provider and relay its answer as `text/event-stream`, one
//! `data:` line per `assistantMessageEvent` (the delta only, never the partial message; deltas
//! of one block that queued up go as one), then
//! `done` with the final message or `error` with what a direct connection would have
//! reported (so the client retries the same way). When the client goes away, the upstream
//! request is cancelled.

use super::auth::StreamPlace;
use super::{ProxyBody, Server, error_response};
use crate::llm::assembler::Assembler;
use crate::llm::client::Provider;
use crate::llm::error::{ProviderError, Retry};
use crate::llm::model::ModelInfo;
use crate::llm::request::{ModelRequest, ThinkingLevel, ToolSpec};
use crate::protocol::message::{StopReason, Usage};
use crate::protocol::proxy::{StreamEnd, StreamError, StreamLine, StreamRequest};
use bytes::Bytes;
use http_body_util::{BodyExt, StreamBody};
use hyper::body::Frame;
use hyper::{Response, StatusCode};
use std::convert::Infallible;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Instant;
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

/// A parsed, resolved request, ready to go upstream.
struct Upstream {
    provider: Arc<Provider>,
    model: ModelInfo,
    thinking: ThinkingLevel,
    request: StreamRequest,
    tools: Vec<ToolSpec>,
}

/// Answer a `/v1/stream` request whose body was read: an error response, or the stream.
pub(super) fn start(
    server: &Arc<Server>,
    token: usize,
    place: StreamPlace,
    body: &[u8],
) -> Response<ProxyBody> {
    let upstream = match resolve(server, body) {
        Ok(upstream) => upstream,
        Err(message) => return error_response(StatusCode::BAD_REQUEST, &message),
    };
    let (lines, receiver) = mpsc::unbounded_channel::<StreamLine>();
    let cancel = CancellationToken::new();
    // Dropped with the response body, i.e. when the client is gone: the upstream call stops.
    let client_gone = cancel.clone().drop_guard();
    let id = server.next_request_id();
    let sent = Arc::new(Sent::default());
    crate::tasks::spawn(relay(
        upstream,
        lines,
        cancel,
        Arc::clone(&sent),
        id,
        token,
        place,
    ));
    let body = Body {
        lines: Some(receiver),
        held: None,
        sent,
        _client_gone: client_gone,
    };
    let frames = futures_util::stream::unfold(body, |mut body| async move {
        let frame = body.next_frame().await?;
        Some((Ok::<_, Infallible>(Frame::data(frame)), body))
    });
    Response::builder()
        .header("content-type", "text/event-stream")
        .header("cache-control", "no-cache")
        .body(StreamBody::new(frames).boxed())
        .unwrap_or_else(|_| error_response(StatusCode::INTERNAL_SERVER_ERROR, "internal error"))
}

/// At most about this much goes out as one write to the client.
const MAX_BATCH: usize = 256 * 1024;

/// The response body's side of the relay: the lines the relay queued, written out.
struct Body {
    /// `None` once the last line (`done` or `error`) went out: the relay then knows that
    /// everything was written.
    lines: Option<mpsc::UnboundedReceiver<StreamLine>>,
    /// A line taken from the queue that did not fit into the last frame.
    held: Option<StreamLine>,
    sent: Arc<Sent>,
    _client_gone: tokio_util::sync::DropGuard,
}

impl Body {
    /// The next line and those that have already queued up behind it, as one body frame:
    /// one write for the proxy and one read for the client when the provider streams faster
    /// than the client reads, and no wait for more when it does not. Deltas of one block
    /// that queued up behind each other go as one delta: the client parses one line, not
    /// one per token.
    async fn next_frame(&mut self) -> Option<Bytes> {
        let receiver = self.lines.as_mut()?;
        let mut next = match self.held.take() {
            Some(line) => line,
            None => receiver.recv().await?,
        };
        let mut frame = Vec::new();
        loop {
            let mut line = next;
            let mut after = None;
            if let StreamLine::Delta(delta) = &mut line {
                while after.is_none() && delta.delta().map_or(0, str::len) < MAX_BATCH {
                    let Ok(queued) = receiver.try_recv() else {
                        break;
                    };
                    match queued {
                        StreamLine::Delta(ref more) if delta.absorb(more) => {}
                        other => after = Some(other),
                    }
                }
            }
            self.sent.write(&mut frame, &line);
            if matches!(line, StreamLine::End(_)) {
                // Nothing follows the end; dropping the queue tells the relay all is out.
                self.lines = None;
                break;
            }
            next = match after.or_else(|| receiver.try_recv().ok()) {
                Some(line) if frame.len() < MAX_BATCH => line,
                Some(line) => {
                    self.held = Some(line);
                    break;
                }
                None => break,
            };
        }
        Some(Bytes::from(frame))
    }
}

fn resolve(server: &Server, body: &[u8]) -> Result<Upstream, String> {
    let request: StreamRequest = serde_json::from_slice(body)
        .map_err(|e| format!("the request body is not a valid stream request: {e}"))?;
    let settings = &server.settings;
    let provider_name = request
        .provider
        .clone()
        .unwrap_or_else(|| settings.provider.name.clone());
    let (provider_settings, mut model) = settings.resolve_model(&provider_name, &request.model)?;
    if let Some(max) = request.options.max_tokens {
        model.max_output_tokens = max;
    }
    let thinking = match &request.options.thinking {
        None => ThinkingLevel::Off,
        Some(level) => {
            serde_json::from_value(serde_json::Value::String(level.clone())).map_err(|_| {
                format!("unknown thinking level `{level}` (off, minimal, low, medium, high)")
            })?
        }
    };
    let provider = server
        .provider(provider_settings)
        .map_err(|e| format!("provider `{provider_name}`: {e}"))?;
    let tools = request
        .context
        .tools
        .iter()
        .map(|tool| ToolSpec {
            name: tool.name.clone(),
            description: tool.description.clone(),
            parameters: tool.parameters.clone(),
        })
        .collect();
    Ok(Upstream {
        provider,
        model,
        thinking,
        request,
        tools,
    })
}

/// Run the upstream call, writing its lines to the client. Logs one line per request:
/// sizes and the outcome, never message contents or keys.
async fn relay(
    upstream: Upstream,
    lines: mpsc::UnboundedSender<StreamLine>,
    cancel: CancellationToken,
    sent: Arc<Sent>,
    id: u64,
    token: usize,
    _place: StreamPlace,
) {
    let started = Instant::now();
    let provider_name = upstream.provider.settings().name.clone();
    let request = ModelRequest {
        model: &upstream.model,
        system_prompt: &upstream.request.context.system_prompt,
        messages: &upstream.request.context.messages,
        tools: &upstream.tools,
        thinking: upstream.thinking,
        web_search: None,
        cache_key: None,
    };
    let mut assembler = Assembler::new(&provider_name, &upstream.model.id);
    let result = {
        let mut deltas = Vec::new();
        let mut on_event = |event| {
            assembler.apply(event, &mut deltas);
            for delta in deltas.drain(..) {
                send(&lines, StreamLine::Delta(delta));
            }
        };
        upstream
            .provider
            .stream(&request, &cancel, &mut on_event)
            .await
    };
    let outcome = match result {
        Ok(()) => {
            let mut deltas = Vec::new();
            let (mut message, _) = assembler.finish(&mut deltas);
            for delta in deltas {
                send(&lines, StreamLine::Delta(delta));
            }
            upstream.model.price(&mut message.usage);
            send(&lines, StreamLine::End(StreamEnd::Done { message }));
            "done".to_string()
        }
        Err(ProviderError::Aborted) => "client gone (upstream cancelled)".to_string(),
        Err(error) => {
            let outcome = format!("error: {error}");
            // The usage reported before the failure is passed on (the attempt cost it).
            let (partial, _) = assembler.fail(StopReason::Error, String::new(), &mut Vec::new());
            let mut usage = partial.usage;
            upstream.model.price(&mut usage);
            let usage = (usage != Usage::default()).then_some(usage);
            send(
                &lines,
                StreamLine::End(StreamEnd::Error(relayed(&error, usage))),
            );
            outcome
        }
    };
    // The counts are final once the body wrote the last line (or the client went away).
    lines.closed().await;
    tracing::info!(
        request = id,
        token,
        provider = %provider_name,
        model = %upstream.model.id,
        messages = upstream.request.context.messages.len(),
        events = sent.events.load(Ordering::Relaxed),
        bytes = sent.bytes.load(Ordering::Relaxed),
        duration_ms = crate::time::millis(started.elapsed()),
        %outcome,
        "proxy stream"
    );
}

/// What a direct connection would have known about the failure.
fn relayed(error: &ProviderError, usage: Option<Usage>) -> StreamError {
    StreamError {
        usage,
        message: error.to_string(),
        retry: match error.retry() {
            Retry::Transient => "transient",
            Retry::Once => "once",
            Retry::Never => "never",
        }
        .to_string(),
        status: match error {
            ProviderError::Http { status, .. } => Some(*status),
            _ => None,
        },
        retry_after_ms: error.retry_after().map(crate::time::millis),
        context_overflow: error.is_context_overflow(),
    }
}

/// Queue a line for the client. A client that is gone cancels the call; nothing to do here.
fn send(lines: &mpsc::UnboundedSender<StreamLine>, line: StreamLine) {
    let _ = lines.send(line);
}

/// Counts what went to the client (for the log line).
#[derive(Default)]
struct Sent {
    events: AtomicUsize,
    bytes: AtomicUsize,
}

impl Sent {
    /// Append `line` to `frame` as one `data:` event.
    fn write(&self, frame: &mut Vec<u8>, line: &StreamLine) {
        let start = frame.len();
        frame.extend_from_slice(b"data: ");
        if serde_json::to_writer(&mut *frame, line).is_err() {
            frame.truncate(start);
            return;
        }
        frame.extend_from_slice(b"\n\n");
        self.events.fetch_add(1, Ordering::Relaxed);
        self.bytes.fetch_add(frame.len() - start, Ordering::Relaxed);
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use crate::protocol::event::AssistantMessageEvent;

    fn text(index: usize, delta: &str) -> StreamLine {
        StreamLine::Delta(AssistantMessageEvent::TextDelta {
            content_index: index,
            delta: delta.to_string(),
        })
    }

    fn body() -> (mpsc::UnboundedSender<StreamLine>, Body) {
        let (lines, receiver) = mpsc::unbounded_channel();
        let body = Body {
            lines: Some(receiver),
            held: None,
            sent: Arc::new(Sent::default()),
            _client_gone: CancellationToken::new().drop_guard(),
        };
        (lines, body)
    }

    fn events(frame: &[u8]) -> Vec<serde_json::Value> {
        std::str::from_utf8(frame)
            .unwrap()
            .split_terminator("\n\n")
            .map(|event| serde_json::from_str(event.strip_prefix("data: ").unwrap()).unwrap())
            .collect()
    }

    #[tokio::test]
    async fn queued_deltas_of_one_block_go_as_one_line_and_nothing_waits() {
        let (lines, mut body) = body();
        for line in [text(0, "a"), text(0, "b"), text(0, "c"), text(1, "d")] {
            lines.send(line).unwrap();
        }
        lines
            .send(StreamLine::Delta(AssistantMessageEvent::TextEnd {
                content_index: 1,
            }))
            .unwrap();
        let frame = body.next_frame().await.unwrap();
        assert_eq!(
            events(&frame),
            vec![
                serde_json::json!({"type": "text_delta", "contentIndex": 0, "delta": "abc"}),
                serde_json::json!({"type": "text_delta", "contentIndex": 1, "delta": "d"}),
                serde_json::json!({"type": "text_end", "contentIndex": 1}),
            ]
        );
        // A delta that arrives alone goes alone, at once: nothing waits for more.
        lines.send(text(1, "e")).unwrap();
        let alone = body.next_frame().await.unwrap();
        assert_eq!(
            events(&alone),
            vec![serde_json::json!({"type": "text_delta", "contentIndex": 1, "delta": "e"})]
        );
        assert_eq!(body.sent.events.load(Ordering::Relaxed), 4);
        assert_eq!(
            body.sent.bytes.load(Ordering::Relaxed),
            frame.len() + alone.len()
        );
    }

    #[tokio::test]
    async fn the_last_line_ends_the_body_and_tells_the_relay() {
        let (lines, mut body) = body();
        lines.send(text(0, "a")).unwrap();
        lines
            .send(StreamLine::End(StreamEnd::Error(StreamError {
                message: "gone".into(),
                retry: "never".into(),
                status: None,
                retry_after_ms: None,
                context_overflow: false,
                usage: None,
            })))
            .unwrap();
        let frame = body.next_frame().await.unwrap();
        assert_eq!(events(&frame)[1]["type"], "error");
        // The queue is dropped with the end, so the relay's wait for it returns...
        tokio::time::timeout(std::time::Duration::from_secs(60), lines.closed())
            .await
            .unwrap();
        // ...and the body has nothing more.
        assert!(body.next_frame().await.is_none());
    }

    #[tokio::test]
    async fn a_long_queue_goes_out_in_frames_of_about_max_batch() {
        let (lines, mut body) = body();
        let big = "x".repeat(MAX_BATCH / 2);
        // Deltas of different blocks cannot be joined: four lines of half a batch each.
        for index in 0..4 {
            lines.send(text(index, &big)).unwrap();
        }
        let mut seen = Vec::new();
        for _ in 0..2 {
            let frame = body.next_frame().await.unwrap();
            assert!(frame.len() < MAX_BATCH * 3 / 2, "{}", frame.len());
            seen.extend(events(&frame));
        }
        let indexes: Vec<_> = seen.iter().map(|e| e["contentIndex"].clone()).collect();
        assert_eq!(indexes, [0, 1, 2, 3]);
        // One block's deltas are joined up to about a batch, then a new line starts.
        for _ in 0..4 {
            lines.send(text(9, &big)).unwrap();
        }
        let frame = body.next_frame().await.unwrap();
        let joined = events(&frame);
        assert_eq!(joined[0]["delta"].as_str().unwrap().len(), MAX_BATCH);
    }
}
