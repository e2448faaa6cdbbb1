//! `POST /v1/stream`: call the real provider and relay its answer as `text/event-stream`, one
//! `data:` line per `assistantMessageEvent` (the delta only, never the partial message), then
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
    let (lines, receiver) = mpsc::unbounded_channel::<Bytes>();
    let cancel = CancellationToken::new();
    // Dropped with the response body, i.e. when the client is gone: the upstream call stops.
    let client_gone = cancel.clone().drop_guard();
    let id = server.next_request_id();
    crate::tasks::spawn(relay(upstream, lines, cancel, id, token, place));
    let frames = futures_util::stream::unfold(
        (receiver, client_gone),
        |(mut receiver, client_gone)| async move {
            let line = receiver.recv().await?;
            let lines = with_queued(line, &mut receiver);
            Some((
                Ok::<_, Infallible>(Frame::data(lines)),
                (receiver, client_gone),
            ))
        },
    );
    Response::builder()
        .header("content-type", "text/event-stream")
        .header("cache-control", "no-cache")
        .body(StreamBody::new(frames).boxed())
        .unwrap_or_else(|_| error_response(StatusCode::INTERNAL_SERVER_ERROR, "internal error"))
}

/// At most this much goes out as one write to the client.
const MAX_BATCH: usize = 256 * 1024;

/// `first` and the lines that have already queued up behind it, as one body frame: one
/// write for the proxy and one read for the client when the provider streams faster than
/// the client reads, and no wait for more when it does not.
fn with_queued(first: Bytes, receiver: &mut mpsc::UnboundedReceiver<Bytes>) -> Bytes {
    let mut batch: Option<bytes::BytesMut> = None;
    while batch.as_ref().map_or(first.len(), |b| b.len()) < MAX_BATCH {
        let Ok(more) = receiver.try_recv() else {
            break;
        };
        batch
            .get_or_insert_with(|| bytes::BytesMut::from(&first[..]))
            .extend_from_slice(&more);
    }
    batch.map_or(first, bytes::BytesMut::freeze)
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
    lines: mpsc::UnboundedSender<Bytes>,
    cancel: CancellationToken,
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
    let mut sent = Sent::default();
    let mut assembler = Assembler::new(&provider_name, &upstream.model.id);
    let result = {
        let mut deltas = Vec::new();
        let mut on_event = |event| {
            assembler.apply(event, &mut deltas);
            for delta in deltas.drain(..) {
                sent.line(&lines, &StreamLine::Delta(delta));
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
                sent.line(&lines, &StreamLine::Delta(delta));
            }
            upstream.model.price(&mut message.usage);
            sent.line(&lines, &StreamLine::End(StreamEnd::Done { message }));
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
            sent.line(
                &lines,
                &StreamLine::End(StreamEnd::Error(relayed(&error, usage))),
            );
            outcome
        }
    };
    tracing::info!(
        request = id,
        token,
        provider = %provider_name,
        model = %upstream.model.id,
        messages = upstream.request.context.messages.len(),
        events = sent.events,
        bytes = sent.bytes,
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

/// Counts what went to the client.
#[derive(Default)]
struct Sent {
    events: usize,
    bytes: usize,
}

impl Sent {
    fn line(&mut self, lines: &mpsc::UnboundedSender<Bytes>, line: &StreamLine) {
        let Ok(json) = serde_json::to_string(line) else {
            return;
        };
        let frame = format!("data: {json}\n\n");
        self.events += 1;
        self.bytes += frame.len();
        // A client that is gone cancels the call; nothing to do here.
        let _ = lines.send(Bytes::from(frame));
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn lines_queued_behind_the_first_go_out_with_it_and_nothing_waits() {
        let (lines, mut receiver) = mpsc::unbounded_channel::<Bytes>();
        for line in ["data: 2\n\n", "data: 3\n\n"] {
            lines.send(Bytes::from(line)).unwrap();
        }
        let batch = with_queued(Bytes::from("data: 1\n\n"), &mut receiver);
        assert_eq!(&batch[..], b"data: 1\n\ndata: 2\n\ndata: 3\n\n");
        let alone = with_queued(Bytes::from("data: 4\n\n"), &mut receiver);
        assert_eq!(&alone[..], b"data: 4\n\n");
        // A long queue goes out in frames of about MAX_BATCH.
        let big = Bytes::from(vec![b'x'; MAX_BATCH / 2]);
        for _ in 0..4 {
            lines.send(big.clone()).unwrap();
        }
        let first = with_queued(big.clone(), &mut receiver);
        assert_eq!(first.len(), MAX_BATCH);
        let rest = with_queued(receiver.try_recv().unwrap(), &mut receiver);
        assert_eq!(rest.len(), MAX_BATCH / 2 * 2);
    }
}
