//! A provider endpoint, asked for one model response at a time: builds the request body for
//! its wire API, sends it, reads the answer (an event stream, or a whole JSON completion from
//! a server that does not stream) into `StreamEvent`s, and maps every failure (status codes,
//! bodies that are not an answer, dropped connections, silence) to a `ProviderError`.
//! Cancellation reaches the connection: dropping the response closes it.

use super::body::{self, BodyKind, ByteBody};
use super::decoder::{Decoder, is_content};
use super::error::{ProviderError, error_message};
use super::provider::ProviderSettings;
use super::replay;
use super::request::ModelRequest;
use super::stream_event::StreamEvent;
use super::timeouts::{Timeouts, Watchdog};
use super::transport::{self, Transport};
use super::wire::WireApi;
use bytes::Bytes;
use eventsource_stream::{EventStreamError, Eventsource};
use futures_util::StreamExt;
use futures_util::future::BoxFuture;
use tokio_util::sync::CancellationToken;

pub use super::transport::install_crypto_provider;

/// The most of an error page or a misdirected body that is read, to describe it.
const MAX_ERROR_BODY: usize = 64 * 1024;
/// The most of a whole (non-streamed) JSON completion that is read.
const MAX_WHOLE_BODY: usize = 64 * 1024 * 1024;

pub struct Provider {
    transport: Transport,
    settings: ProviderSettings,
    timeouts: Timeouts,
}

impl Provider {
    /// Nothing is loaded or connected until the first request.
    pub fn new(settings: ProviderSettings, timeouts: Timeouts) -> Result<Self, ProviderError> {
        Ok(Provider {
            transport: Transport::new(&settings.base_url, &timeouts),
            settings,
            timeouts,
        })
    }

    pub fn settings(&self) -> &ProviderSettings {
        &self.settings
    }

    fn wire(&self) -> &'static dyn WireApi {
        self.settings.api.wire()
    }

    fn endpoint(&self) -> String {
        self.wire()
            .endpoint(self.settings.base_url.trim_end_matches('/'))
    }

    fn body(&self, request: &ModelRequest<'_>) -> Result<Vec<u8>, ProviderError> {
        // Every wire API gets a history it accepts, whatever a cut-off or aborted message
        // left in it.
        let messages = replay::prepare(request.messages);
        let request = ModelRequest {
            messages: &messages,
            ..*request
        };
        self.wire()
            .build_body(&request, &self.settings)
            .map_err(|e| ProviderError::Decode(format!("could not encode the request: {e}")))
    }

    /// An error the provider reported in the stream, with no code the shared table knows,
    /// as the wire API judges it (`WireApi::classify`).
    fn classified(&self, error: ProviderError) -> ProviderError {
        match error {
            ProviderError::Stream(mut error) if error.verdict.is_none() => {
                error.verdict = self.wire().classify(&error);
                ProviderError::Stream(error)
            }
            other => other,
        }
    }

    /// Stream one model response, handing each decoded event to `on_event` in order.
    /// Returns once the provider's terminal event arrived; an error inside the stream, a
    /// connection that ends early or goes silent, or `cancel` end it with an error — with
    /// every configured API key masked in its text.
    pub async fn stream(
        &self,
        request: &ModelRequest<'_>,
        cancel: &CancellationToken,
        on_event: &mut (dyn FnMut(StreamEvent) + Send),
    ) -> Result<(), ProviderError> {
        let result = match self.stream_unmasked(request, cancel, on_event).await {
            // A token `agent login` stored was refused: renew it (once across agents) and
            // ask again, or say to sign in again — never a bare 401.
            Err(error @ ProviderError::Http { status: 401, .. })
                if self.settings_use_stored_key() =>
            {
                match self.renew_stored_key().await {
                    Ok(true) => self.stream_unmasked(request, cancel, on_event).await,
                    // Nothing stored was sent: the 401 as it came.
                    Ok(false) => Err(error),
                    Err(e) => Err(e),
                }
            }
            result => result,
        };
        result.map_err(|error| self.classified(error).redacted())
    }

    /// Whether requests use what `agent login` stored (no flag, command or variable key).
    fn settings_use_stored_key(&self) -> bool {
        let settings = &self.settings;
        let given = settings.api_key.as_deref().is_some_and(|k| !k.is_empty());
        if settings.named_account().is_some() {
            return !given;
        }
        !given
            && settings.api_key_command.is_none()
            && settings
                .api_key_env
                .as_deref()
                .and_then(crate::secrets::env_key)
                .is_none_or(|key| key.trim().is_empty())
    }

    /// After a 401: renew the stored key that was sent (`true`: ask again), `false` when
    /// nothing stored was sent, or the error that says to sign in again.
    async fn renew_stored_key(&self) -> Result<bool, ProviderError> {
        let name = &self.settings.name;
        let account = self.settings.account.as_deref();
        let sign_in = |e: crate::auth::AuthError| ProviderError::SignIn(e.to_string());
        let Some(sent) = crate::auth::requests::provider_key(name, account)
            .await
            .map_err(sign_in)?
        else {
            return Ok(false);
        };
        match crate::auth::requests::after_rejection(name, account, &sent).await {
            Ok(renewed) => Ok(renewed.is_some()),
            Err(e) => Err(sign_in(e)),
        }
    }

    /// Boxed: it is awaited from several places, and an optimised build would otherwise
    /// copy this future's code into each codegen unit that awaits it (issue 32). One
    /// allocation per request, not per streamed delta.
    fn stream_unmasked<'a>(
        &'a self,
        request: &'a ModelRequest<'_>,
        cancel: &'a CancellationToken,
        on_event: &'a mut (dyn FnMut(StreamEvent) + Send),
    ) -> BoxFuture<'a, Result<(), ProviderError>> {
        Box::pin(self.stream_unmasked_unboxed(request, cancel, on_event))
    }

    async fn stream_unmasked_unboxed(
        &self,
        request: &ModelRequest<'_>,
        cancel: &CancellationToken,
        on_event: &mut (dyn FnMut(StreamEvent) + Send),
    ) -> Result<(), ProviderError> {
        let key = tokio::select! {
            _ = cancel.cancelled() => return Err(ProviderError::Aborted),
            key = self.settings.resolve_key() => key?,
        };
        // No configured key leaves in a request body, whatever part of the conversation
        // holds one (a prompt, a file, a context file): every request passes here.
        let body = crate::secrets::redact_bytes(self.body(request)?);
        let url = self.endpoint();
        tracing::debug!(%url, model = %request.model.id, bytes = body.len(), "model request");
        let headers = transport::headers(&self.settings, key.as_deref())?;
        let response = self
            .transport
            .send(&url, headers, body, self.timeouts.response, cancel)
            .await?;
        let status = response.status();
        let retry_after = transport::retry_after(response.headers());
        let content_type = response
            .headers()
            .get(reqwest::header::CONTENT_TYPE)
            .and_then(|v| v.to_str().ok())
            .unwrap_or("")
            .to_string();
        let mut watchdog = Watchdog::new(&self.timeouts);
        let mut body = ByteBody::new(response, watchdog.clock());
        if !status.is_success() {
            let bytes = read_body(&mut body, &mut watchdog, cancel, MAX_ERROR_BODY).await?;
            return Err(self.status_error(status.as_u16(), retry_after, &content_type, &bytes));
        }
        let mut decoder = Decoder::new(self.settings.api);
        let kind = match body::kind_of(&content_type) {
            BodyKind::Unknown => sniff(&mut body, &mut watchdog, cancel).await?,
            // Some proxies label the event stream they pass on as JSON.
            BodyKind::Json => match sniff(&mut body, &mut watchdog, cancel).await? {
                BodyKind::EventStream => BodyKind::EventStream,
                _ => BodyKind::Json,
            },
            kind => kind,
        };
        match kind {
            BodyKind::EventStream => {
                read_events(body, &mut decoder, &mut watchdog, cancel, on_event).await
            }
            BodyKind::Json => {
                let bytes = read_body(&mut body, &mut watchdog, cancel, MAX_WHOLE_BODY).await?;
                tracing::debug!(
                    bytes = bytes.len(),
                    "the provider answered with a whole JSON body"
                );
                let mut decoded = Vec::new();
                decoder.decode_whole(&bytes, &mut decoded)?;
                // A whole body is complete by definition: its calls are whole.
                let mut progress = Progress {
                    whole: true,
                    ..Progress::default()
                };
                if !deliver(&mut decoded, &mut progress, on_event)? && !progress.finished {
                    return Err(ProviderError::Truncated);
                }
                Ok(())
            }
            BodyKind::Markup | BodyKind::Other | BodyKind::Unknown => {
                let bytes = read_body(&mut body, &mut watchdog, cancel, MAX_ERROR_BODY).await?;
                Err(ProviderError::UnexpectedBody(body::describe(
                    &content_type,
                    &bytes,
                )))
            }
        }
    }

    fn status_error(
        &self,
        status: u16,
        retry_after: Option<std::time::Duration>,
        content_type: &str,
        body: &[u8],
    ) -> ProviderError {
        let text = String::from_utf8_lossy(body);
        let kind = match body::kind_of(content_type) {
            BodyKind::Unknown => body::sniff(body, true).unwrap_or(BodyKind::Other),
            kind => kind,
        };
        let message = match kind {
            // An HTML error page from a proxy or gateway says what it is.
            BodyKind::Markup => body::describe(content_type, body),
            _ => error_message(&text),
        };
        let hint = match status {
            401 | 403 => Some(self.settings.auth_hint()),
            404 => Some(format!(
                "check the model id and the base URL {}",
                self.settings.base_url
            )),
            _ => None,
        };
        ProviderError::Http {
            status,
            message,
            retry_after,
            hint,
        }
    }
}

/// Read the start of an unlabelled body, enough to tell what it is, and put it back.
async fn sniff(
    body: &mut ByteBody,
    watchdog: &mut Watchdog,
    cancel: &CancellationToken,
) -> Result<BodyKind, ProviderError> {
    let mut seen = Vec::new();
    loop {
        let complete = match watchdog.guard(cancel, body.next()).await? {
            Some(Ok(chunk)) => {
                seen.extend_from_slice(&chunk);
                false
            }
            Some(Err(e)) => return Err(ProviderError::Network(transport::error_chain(&e))),
            None => true,
        };
        if let Some(kind) = body::sniff(&seen, complete) {
            body.put_back(Bytes::from(seen));
            return Ok(kind);
        }
    }
}

/// A whole body, up to `limit` bytes (the rest is not read).
async fn read_body(
    body: &mut ByteBody,
    watchdog: &mut Watchdog,
    cancel: &CancellationToken,
    limit: usize,
) -> Result<Vec<u8>, ProviderError> {
    let mut bytes = Vec::new();
    while bytes.len() < limit {
        match watchdog.guard(cancel, body.next()).await? {
            Some(Ok(chunk)) => {
                // Bytes of a whole body are all content: a trickle is a live answer.
                watchdog.content();
                bytes.extend_from_slice(&chunk);
            }
            Some(Err(e)) => return Err(ProviderError::Network(transport::error_chain(&e))),
            None => break,
        }
    }
    bytes.truncate(limit);
    Ok(bytes)
}

/// Read an event stream to its end.
async fn read_events(
    body: ByteBody,
    decoder: &mut Decoder,
    watchdog: &mut Watchdog,
    cancel: &CancellationToken,
    on_event: &mut (dyn FnMut(StreamEvent) + Send),
) -> Result<(), ProviderError> {
    let events = super::sse::split_events(body).eventsource();
    tokio::pin!(events);
    let mut decoded = Vec::new();
    let mut progress = Progress::default();
    loop {
        let event = match watchdog.guard(cancel, events.next()).await? {
            None => break,
            Some(Ok(event)) => event,
            Some(Err(EventStreamError::Transport(e))) => {
                return Err(ProviderError::Network(transport::error_chain(&e)));
            }
            Some(Err(e)) => return Err(ProviderError::Decode(e.to_string())),
        };
        if let Err(error) = decoder.decode(&event.event, &event.data, &mut decoded) {
            // What came with the error (the usage `agent proxy` relays with a failure)
            // still counts.
            decoded.drain(..).for_each(&mut *on_event);
            return Err(error);
        }
        if decoded.iter().any(is_content) {
            watchdog.content();
        }
        if deliver(&mut decoded, &mut progress, on_event)? {
            return Ok(());
        }
    }
    let finished = progress.finished;
    tracing::debug!(elapsed = ?watchdog.elapsed(), finished, "the response stream ended");
    // The terminal marker never came. After the finish reason (Chat's `finish_reason`,
    // Anthropic's `message_delta`; Responses sends it only with its terminal event) the
    // whole answer has arrived, and some servers close without `[DONE]`; before it, the
    // response was cut short.
    if finished {
        Ok(())
    } else {
        Err(ProviderError::Truncated)
    }
}

/// How far a response has come.
#[derive(Default)]
struct Progress {
    /// The finish reason came: the answer is whole.
    finished: bool,
    /// A tool call started.
    calls: bool,
    /// The events are a whole (non-streamed) body's.
    whole: bool,
}

/// Hand decoded events on. `Ok(true)` once the terminal event went out; an error the
/// provider reported ends the response. A terminal marker (`[DONE]`, which a relay sends
/// when its upstream went away too) before the finish reason while a tool call is open
/// is no end: that call's arguments never completed, and the response was cut short
/// (`Truncated`), as a stream that just stops is.
fn deliver(
    decoded: &mut Vec<StreamEvent>,
    progress: &mut Progress,
    on_event: &mut (dyn FnMut(StreamEvent) + Send),
) -> Result<bool, ProviderError> {
    for item in decoded.drain(..) {
        match item {
            StreamEvent::Error(error) => return Err(ProviderError::Stream(error)),
            StreamEvent::Done if progress.calls && !progress.finished && !progress.whole => {
                tracing::debug!("the stream ended inside a tool call, before its finish reason");
                return Err(ProviderError::Truncated);
            }
            StreamEvent::Done => {
                on_event(StreamEvent::Done);
                return Ok(true);
            }
            // The finish reason, or `agent proxy`'s whole final message.
            StreamEvent::Finish(_) | StreamEvent::Final(_) => {
                progress.finished = true;
                on_event(item);
            }
            StreamEvent::ToolCall { .. } | StreamEvent::ToolCallArguments { .. } => {
                progress.calls = true;
                on_event(item);
            }
            other => on_event(other),
        }
    }
    Ok(false)
}
