//! The HTTP client of streamable-HTTP servers: our reqwest client, with the answers to our
//! POSTs read here, bounded, instead of by rmcp's reqwest client. rmcp rejects a JSON body or
//! an SSE event over the size of one MCP message (16 MiB) with an error that ends the whole
//! connection: the call fails as if the server had gone away, nothing of the answer is kept
//! and the server is restarted. Here an answer over the limit is read to its end without
//! being kept whole and passed on as `Oversized` makes it: a tool result keeps its first
//! 8 MiB of text and says how big it was, any other answer becomes an error naming the
//! limit. The server's own event stream (`GET`, which also carries the rest of an answer's
//! stream when it is resumed) is bounded the same way. Written by hand because rmcp's client
//! reads the body inside the methods that also send the request; ending a session is rmcp's.

use super::oversized::{LINE_LIMIT, Oversized, size};
use super::sse_events::EventFilter;
use bytes::Bytes;
use futures_util::{StreamExt, TryStreamExt};
use reqwest::header::{ACCEPT, CONTENT_TYPE, HeaderMap, HeaderName, HeaderValue};
use rmcp::model::{ClientJsonRpcMessage, JsonRpcMessage, ServerJsonRpcMessage};
use rmcp::transport::common::client_side_sse::BoxedSseResponse;
use rmcp::transport::common::http_header::{
    EVENT_STREAM_MIME_TYPE, HEADER_LAST_EVENT_ID, HEADER_SESSION_ID, JSON_MIME_TYPE,
};
use rmcp::transport::streamable_http_client::{
    AuthRequiredError, HttpStatusError, InsufficientScopeError, StreamableHttpClient,
    StreamableHttpError, StreamableHttpPostResponse, StreamableHttpResponseLimits,
};
use std::borrow::Cow;
use std::collections::HashMap;
use std::sync::Arc;

type HttpError = StreamableHttpError<reqwest::Error>;

/// How much of a failed request's body is quoted in its error.
const ERROR_BODY_QUOTE: usize = 64 * 1024;

/// Our reqwest client, reading answers bounded (see the module comment).
#[derive(Clone)]
pub struct BoundedHttp {
    client: reqwest::Client,
    server: Arc<str>,
}

impl BoundedHttp {
    pub fn new(client: reqwest::Client, server: &str) -> BoundedHttp {
        BoundedHttp {
            client,
            server: server.into(),
        }
    }

    async fn post(
        &self,
        uri: Arc<str>,
        message: ClientJsonRpcMessage,
        session_id: Option<Arc<str>>,
        auth_token: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
    ) -> Result<StreamableHttpPostResponse, HttpError> {
        let with_session = session_id.is_some();
        let request = self.client.post(uri.as_ref());
        let response = with_headers(request, session_id, auth_token, custom_headers)?
            .json(&message)
            .send()
            .await
            .map_err(StreamableHttpError::Client)?;
        let status = response.status();
        if let Some(error) = auth_error(status, response.headers()) {
            return Err(error);
        }
        if matches!(
            status,
            reqwest::StatusCode::ACCEPTED | reqwest::StatusCode::NO_CONTENT
        ) {
            return Ok(StreamableHttpPostResponse::Accepted);
        }
        if status == reqwest::StatusCode::NOT_FOUND && with_session {
            return Err(StreamableHttpError::SessionExpired);
        }
        let content_type = response
            .headers()
            .get(CONTENT_TYPE)
            .map(|value| String::from_utf8_lossy(value.as_bytes()).into_owned());
        let is = |mime: &str| {
            content_type
                .as_deref()
                .is_some_and(|value| is_media_type(value, mime))
        };
        let (is_json, is_sse) = (is(JSON_MIME_TYPE), is(EVENT_STREAM_MIME_TYPE));
        let answers_nothing = !matches!(message, JsonRpcMessage::Request(_));
        let session_id = response
            .headers()
            .get(HEADER_SESSION_ID)
            .and_then(|value| value.to_str().ok())
            .map(str::to_string);
        if !status.is_success() {
            return failed(status, response, is_json, session_id).await;
        }
        if is_sse {
            let answers = match &message {
                JsonRpcMessage::Request(request) => serde_json::to_value(&request.id).ok(),
                _ => None,
            };
            let events = bounded_events(EventFilter::new(&self.server, answers), response);
            return Ok(StreamableHttpPostResponse::Sse(events, session_id));
        }
        if answers_nothing && (!is_json || response.content_length() == Some(0)) {
            return Ok(StreamableHttpPostResponse::Accepted);
        }
        if !is_json {
            return Err(StreamableHttpError::UnexpectedContentType(content_type));
        }
        match read_json(&self.server, response).await? {
            Some(answer) => Ok(StreamableHttpPostResponse::Json(answer, session_id)),
            None if answers_nothing => Ok(StreamableHttpPostResponse::Accepted),
            None => Err(StreamableHttpError::UnexpectedServerResponse(
                Cow::Borrowed("the server's answer is not a JSON-RPC message"),
            )),
        }
    }
}

/// The headers every request carries (as rmcp sets them).
fn with_headers(
    mut request: reqwest::RequestBuilder,
    session_id: Option<Arc<str>>,
    auth_token: Option<String>,
    custom_headers: HashMap<HeaderName, HeaderValue>,
) -> Result<reqwest::RequestBuilder, HttpError> {
    request = request.header(
        ACCEPT,
        format!("{EVENT_STREAM_MIME_TYPE}, {JSON_MIME_TYPE}"),
    );
    if let Some(token) = auth_token {
        request = request.bearer_auth(token);
    }
    for (name, value) in custom_headers {
        // As rmcp: the headers the transport sets itself are not the user's to set.
        if name == ACCEPT
            || name.as_str().eq_ignore_ascii_case(HEADER_SESSION_ID)
            || name.as_str().eq_ignore_ascii_case(HEADER_LAST_EVENT_ID)
        {
            return Err(StreamableHttpError::ReservedHeaderConflict(
                name.to_string(),
            ));
        }
        request = request.header(name, value);
    }
    if let Some(session_id) = session_id {
        request = request.header(HEADER_SESSION_ID, session_id.as_ref());
    }
    Ok(request)
}

/// The server's event stream (`GET`): the standalone one, or the rest of an answer's stream
/// resumed after `last_event_id`. Its events are bounded as an answer's are.
async fn event_stream(
    http: &BoundedHttp,
    uri: Arc<str>,
    session_id: Option<Arc<str>>,
    last_event_id: Option<String>,
    auth_token: Option<String>,
    custom_headers: HashMap<HeaderName, HeaderValue>,
) -> Result<BoxedSseResponse, HttpError> {
    let mut request = with_headers(
        http.client.get(uri.as_ref()),
        session_id,
        auth_token,
        custom_headers,
    )?;
    if let Some(last_event_id) = last_event_id {
        request = request.header(HEADER_LAST_EVENT_ID, last_event_id);
    }
    let response = request.send().await.map_err(StreamableHttpError::Client)?;
    let status = response.status();
    if status == reqwest::StatusCode::METHOD_NOT_ALLOWED {
        return Err(StreamableHttpError::ServerDoesNotSupportSse);
    }
    if let Some(error) = auth_error(status, response.headers()) {
        return Err(error);
    }
    if status == reqwest::StatusCode::TOO_MANY_REQUESTS || status.is_server_error() {
        let retry_after = response
            .headers()
            .get(reqwest::header::RETRY_AFTER)
            .and_then(|value| value.to_str().ok())
            .map(str::to_string);
        return Err(StreamableHttpError::HttpStatus(HttpStatusError::new(
            status.as_u16(),
            retry_after,
        )));
    }
    let response = response
        .error_for_status()
        .map_err(StreamableHttpError::Client)?;
    let content_type = response
        .headers()
        .get(CONTENT_TYPE)
        .map(|value| String::from_utf8_lossy(value.as_bytes()).into_owned());
    if !content_type.as_deref().is_some_and(|value| {
        is_media_type(value, EVENT_STREAM_MIME_TYPE) || is_media_type(value, JSON_MIME_TYPE)
    }) {
        return Err(StreamableHttpError::UnexpectedContentType(content_type));
    }
    Ok(bounded_events(
        EventFilter::new(&http.server, None),
        response,
    ))
}

/// Whether a `Content-Type` value is `mime` (parameters aside, case aside).
fn is_media_type(value: &str, mime: &str) -> bool {
    value
        .split(';')
        .next()
        .is_some_and(|essence| essence.trim().eq_ignore_ascii_case(mime))
}

/// A 401 or 403 with a challenge, as rmcp reports it.
fn auth_error(status: reqwest::StatusCode, headers: &HeaderMap) -> Option<HttpError> {
    let challenge = headers.get(reqwest::header::WWW_AUTHENTICATE)?;
    let challenge = String::from_utf8_lossy(challenge.as_bytes()).into_owned();
    match status {
        reqwest::StatusCode::UNAUTHORIZED => Some(StreamableHttpError::AuthRequired(
            AuthRequiredError::new(challenge),
        )),
        reqwest::StatusCode::FORBIDDEN => Some(StreamableHttpError::InsufficientScope(
            InsufficientScopeError::new(challenge, None),
        )),
        _ => None,
    }
}

/// What a request the server refused gets: its JSON-RPC error as the answer when the body is
/// one (as rmcp does), otherwise an error with the status (for a 429 or 5xx, as rmcp reports
/// it, with `Retry-After`) or the start of the body.
async fn failed(
    status: reqwest::StatusCode,
    response: reqwest::Response,
    is_json: bool,
    session_id: Option<String>,
) -> Result<StreamableHttpPostResponse, HttpError> {
    let retry_after = response
        .headers()
        .get(reqwest::header::RETRY_AFTER)
        .and_then(|value| value.to_str().ok())
        .map(str::to_string);
    let mut body = Vec::new();
    let mut chunks = response.bytes_stream();
    while body.len() < ERROR_BODY_QUOTE {
        match chunks.next().await {
            Some(Ok(chunk)) => body.extend_from_slice(&chunk),
            _ => break,
        }
    }
    if is_json
        && status != reqwest::StatusCode::TOO_MANY_REQUESTS
        && let Ok(error @ JsonRpcMessage::Error(_)) =
            serde_json::from_slice::<ServerJsonRpcMessage>(&body)
    {
        return Ok(StreamableHttpPostResponse::Json(error, session_id));
    }
    if status == reqwest::StatusCode::TOO_MANY_REQUESTS || status.is_server_error() {
        return Err(StreamableHttpError::HttpStatus(HttpStatusError::new(
            status.as_u16(),
            retry_after,
        )));
    }
    body.truncate(ERROR_BODY_QUOTE);
    Err(StreamableHttpError::UnexpectedServerResponse(Cow::Owned(
        format!("HTTP {status}: {}", String::from_utf8_lossy(&body)),
    )))
}

/// Read a JSON answer: whole up to the limit, past it as `Oversized` makes it. `None` when
/// it is no JSON-RPC message (or an oversized one that answers nothing).
async fn read_json(
    server: &str,
    response: reqwest::Response,
) -> Result<Option<ServerJsonRpcMessage>, HttpError> {
    let mut chunks = response.bytes_stream();
    let mut body = Vec::new();
    let mut oversized: Option<Oversized> = None;
    while let Some(chunk) = chunks
        .try_next()
        .await
        .map_err(StreamableHttpError::Client)?
    {
        match &mut oversized {
            Some(long) => long.feed(&chunk),
            None if body.len() + chunk.len() > LINE_LIMIT => {
                let mut long = Oversized::start(&body);
                long.feed(&chunk);
                oversized = Some(long);
                body = Vec::new();
            }
            None => body.extend_from_slice(&chunk),
        }
    }
    if let Some(long) = oversized {
        tracing::warn!(target: "mcp", server, limit = LINE_LIMIT, "a message over the size limit was cut");
        let Some(cut) = long.finish() else {
            return Err(StreamableHttpError::UnexpectedServerResponse(Cow::Owned(
                format!(
                    "the server's answer was more than the {} one MCP message may hold",
                    size(u64::try_from(LINE_LIMIT).unwrap_or(u64::MAX))
                ),
            )));
        };
        body = cut;
    }
    Ok(serde_json::from_slice(&body).ok())
}

/// The events of an SSE answer, each bounded by `EventFilter`.
fn bounded_events(filter: EventFilter, response: reqwest::Response) -> BoxedSseResponse {
    struct State {
        chunks: futures_util::stream::BoxStream<'static, reqwest::Result<Bytes>>,
        filter: EventFilter,
        ready: std::collections::VecDeque<Bytes>,
        ended: bool,
    }
    let state = State {
        chunks: response.bytes_stream().boxed(),
        filter,
        ready: std::collections::VecDeque::new(),
        ended: false,
    };
    let bytes = futures_util::stream::unfold(state, |mut state| async move {
        loop {
            if let Some(piece) = state.ready.pop_front() {
                return Some((Ok(piece), state));
            }
            if state.ended {
                return None;
            }
            let mut out = Vec::new();
            match state.chunks.next().await {
                Some(Ok(chunk)) => state.filter.feed(&chunk, &mut out),
                Some(Err(error)) => {
                    state.ended = true;
                    return Some((Err(error), state));
                }
                None => {
                    state.ended = true;
                    state.filter.finish(&mut out);
                }
            }
            state.ready.extend(out);
        }
    });
    sse_stream::SseStream::from_bytes_stream(bytes).boxed()
}

impl StreamableHttpClient for BoundedHttp {
    type Error = reqwest::Error;

    async fn post_message(
        &self,
        uri: Arc<str>,
        message: ClientJsonRpcMessage,
        session_id: Option<Arc<str>>,
        auth_header: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
    ) -> Result<StreamableHttpPostResponse, HttpError> {
        self.post(uri, message, session_id, auth_header, custom_headers)
            .await
    }

    async fn post_message_with_max_sse_event_size(
        &self,
        uri: Arc<str>,
        message: ClientJsonRpcMessage,
        session_id: Option<Arc<str>>,
        auth_header: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
        _max_sse_event_size: usize,
    ) -> Result<StreamableHttpPostResponse, HttpError> {
        self.post(uri, message, session_id, auth_header, custom_headers)
            .await
    }

    /// The limits are rmcp's defaults (our transport sets none), which `LINE_LIMIT` is.
    async fn post_message_with_response_limits(
        &self,
        uri: Arc<str>,
        message: ClientJsonRpcMessage,
        session_id: Option<Arc<str>>,
        auth_header: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
        _limits: StreamableHttpResponseLimits,
    ) -> Result<StreamableHttpPostResponse, HttpError> {
        self.post(uri, message, session_id, auth_header, custom_headers)
            .await
    }

    async fn delete_session(
        &self,
        uri: Arc<str>,
        session_id: Arc<str>,
        auth_header: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
    ) -> Result<(), HttpError> {
        self.client
            .delete_session(uri, session_id, auth_header, custom_headers)
            .await
    }

    async fn get_stream(
        &self,
        uri: Arc<str>,
        session_id: Option<Arc<str>>,
        last_event_id: Option<String>,
        auth_header: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
    ) -> Result<BoxedSseResponse, HttpError> {
        event_stream(
            self,
            uri,
            session_id,
            last_event_id,
            auth_header,
            custom_headers,
        )
        .await
    }

    async fn get_stream_with_max_sse_event_size(
        &self,
        uri: Arc<str>,
        session_id: Option<Arc<str>>,
        last_event_id: Option<String>,
        auth_header: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
        _max_sse_event_size: usize,
    ) -> Result<BoxedSseResponse, HttpError> {
        event_stream(
            self,
            uri,
            session_id,
            last_event_id,
            auth_header,
            custom_headers,
        )
        .await
    }
}
