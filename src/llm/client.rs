//! The HTTP side of every provider: sends one streaming request, turns the response into
//! `StreamEvent`s through the wire API's decoder, and maps every failure (status codes,
//! dropped connections, stalls, in-stream errors) to a `ProviderError`. Cancellation reaches
//! the connection: dropping the response closes it.

use super::error::{ProviderError, error_message};
use super::provider::{Api, ProviderSettings};
use super::request::ModelRequest;
use super::stream_event::StreamEvent;
use super::{anthropic, openai_chat, openai_responses};
use eventsource_stream::{EventStreamError, Eventsource};
use futures_util::StreamExt;
use reqwest::header::{HeaderMap, HeaderName, HeaderValue};
use std::sync::Once;
use std::time::{Duration, SystemTime};
use tokio_util::sync::CancellationToken;

const CONNECT_TIMEOUT: Duration = Duration::from_secs(30);
const MAX_ERROR_BODY: usize = 64 * 1024;

pub struct Provider {
    http: reqwest::Client,
    settings: ProviderSettings,
    idle_timeout: Duration,
}

/// One decoder per wire API, chosen by the provider's `api`.
enum Decoder {
    Chat(openai_chat::ChatDecoder),
    Anthropic(anthropic::AnthropicDecoder),
    Responses(openai_responses::ResponsesDecoder),
}

impl Decoder {
    fn decode(
        &mut self,
        event: &str,
        data: &str,
        out: &mut Vec<StreamEvent>,
    ) -> Result<(), ProviderError> {
        // Framing every wire API shares: keep-alive frames carry no data, and OpenAI-style
        // servers (and proxies in front of others) end with a literal `[DONE]`.
        let data = data.trim();
        if data.is_empty() {
            return Ok(());
        }
        if data == "[DONE]" {
            out.push(StreamEvent::Done);
            return Ok(());
        }
        match self {
            Decoder::Chat(decoder) => decoder.decode(event, data, out),
            Decoder::Anthropic(decoder) => decoder.decode(event, data, out),
            Decoder::Responses(decoder) => decoder.decode(event, data, out),
        }
    }
}

/// rustls needs its crypto provider chosen once per process, before the first client.
pub fn install_crypto_provider() {
    static ONCE: Once = Once::new();
    ONCE.call_once(|| {
        // Fails only if another provider was installed first, which is just as good.
        let _ = rustls::crypto::ring::default_provider().install_default();
    });
}

impl Provider {
    pub fn new(settings: ProviderSettings, idle_timeout: Duration) -> Result<Self, ProviderError> {
        install_crypto_provider();
        let http = reqwest::Client::builder()
            .connect_timeout(CONNECT_TIMEOUT)
            .build()
            .map_err(|e| ProviderError::Network(error_chain(&e)))?;
        Ok(Provider {
            http,
            settings,
            idle_timeout,
        })
    }

    pub fn settings(&self) -> &ProviderSettings {
        &self.settings
    }

    fn endpoint(&self) -> String {
        let base = self.settings.base_url.trim_end_matches('/');
        match self.settings.api {
            Api::OpenaiChat => format!("{base}/chat/completions"),
            Api::OpenaiResponses => format!("{base}/responses"),
            Api::Anthropic => format!("{base}/v1/messages"),
        }
    }

    /// Stream one model response, handing each decoded event to `on_event` in order.
    /// Returns once the provider's terminal event arrived; an error inside the stream, a
    /// connection that ends early or goes silent, or `cancel` end it with an error.
    pub async fn stream(
        &self,
        request: &ModelRequest<'_>,
        cancel: &CancellationToken,
        on_event: &mut (dyn FnMut(StreamEvent) + Send),
    ) -> Result<(), ProviderError> {
        let key = tokio::select! {
            _ = cancel.cancelled() => return Err(ProviderError::Aborted),
            key = self.settings.resolve_key() => key?,
        };
        let name = &self.settings.name;
        let (body, mut decoder) = match self.settings.api {
            Api::OpenaiChat => (
                openai_chat::build_body(request),
                Decoder::Chat(openai_chat::ChatDecoder::default()),
            ),
            Api::Anthropic => (
                anthropic::build_body(request, name),
                Decoder::Anthropic(anthropic::AnthropicDecoder::default()),
            ),
            Api::OpenaiResponses => (
                openai_responses::build_body(request, name),
                Decoder::Responses(openai_responses::ResponsesDecoder::default()),
            ),
        };
        let body =
            body.map_err(|e| ProviderError::Decode(format!("could not encode the request: {e}")))?;
        let url = self.endpoint();
        tracing::debug!(%url, model = %request.model.id, bytes = body.len(), "model request");
        let builder = self
            .http
            .post(&url)
            .headers(self.headers(key.as_deref())?)
            .body(body);
        let response = tokio::select! {
            _ = cancel.cancelled() => return Err(ProviderError::Aborted),
            response = builder.send() => response.map_err(|e| send_error(&url, &e))?,
        };
        if !response.status().is_success() {
            return Err(self.status_error(response, cancel).await);
        }
        let events = super::sse::split_events(response.bytes_stream()).eventsource();
        tokio::pin!(events);
        let mut decoded = Vec::new();
        let mut finished = false;
        let idle = tokio::time::sleep(self.idle_timeout);
        tokio::pin!(idle);
        loop {
            let next = tokio::select! {
                biased;
                _ = cancel.cancelled() => return Err(ProviderError::Aborted),
                _ = &mut idle => return Err(ProviderError::Idle(self.idle_timeout.as_secs())),
                next = events.next() => next,
            };
            let event = match next {
                None => break,
                Some(Ok(event)) => event,
                Some(Err(EventStreamError::Transport(e))) => {
                    return Err(ProviderError::Network(error_chain(&e)));
                }
                Some(Err(e)) => return Err(ProviderError::Decode(e.to_string())),
            };
            idle.as_mut()
                .reset(tokio::time::Instant::now() + self.idle_timeout);
            decoder.decode(&event.event, &event.data, &mut decoded)?;
            for item in decoded.drain(..) {
                match item {
                    StreamEvent::Error(message) => return Err(ProviderError::Stream(message)),
                    StreamEvent::Done => {
                        on_event(StreamEvent::Done);
                        return Ok(());
                    }
                    StreamEvent::Finish(_) => {
                        finished = true;
                        on_event(item);
                    }
                    other => on_event(other),
                }
            }
        }
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

    fn headers(&self, key: Option<&str>) -> Result<HeaderMap, ProviderError> {
        let mut headers = HeaderMap::new();
        headers.insert("content-type", HeaderValue::from_static("application/json"));
        headers.insert("accept", HeaderValue::from_static("text/event-stream"));
        let bad_header = |name: &str| {
            ProviderError::Decode(format!(
                "the `{name}` header of provider `{}` is not a valid HTTP header",
                self.settings.name
            ))
        };
        if let Some(key) = key {
            let (name, value) = match self.settings.api {
                Api::Anthropic => ("x-api-key", key.to_string()),
                _ => ("authorization", format!("Bearer {key}")),
            };
            let mut value = HeaderValue::from_str(&value).map_err(|_| bad_header("API key"))?;
            value.set_sensitive(true);
            headers.insert(name, value);
        }
        if self.settings.api == Api::Anthropic {
            headers.insert("anthropic-version", HeaderValue::from_static("2023-06-01"));
        }
        for (name, value) in &self.settings.headers {
            let header_name =
                HeaderName::from_bytes(name.as_bytes()).map_err(|_| bad_header(name))?;
            let mut header_value = HeaderValue::from_str(value).map_err(|_| bad_header(name))?;
            header_value.set_sensitive(true);
            headers.insert(header_name, header_value);
        }
        Ok(headers)
    }

    async fn status_error(
        &self,
        response: reqwest::Response,
        cancel: &CancellationToken,
    ) -> ProviderError {
        let status = response.status().as_u16();
        let retry_after = retry_after(response.headers());
        let mut body = Vec::new();
        let mut chunks = response.bytes_stream();
        loop {
            let chunk = tokio::select! {
                _ = cancel.cancelled() => return ProviderError::Aborted,
                chunk = chunks.next() => chunk,
            };
            match chunk {
                Some(Ok(bytes)) if body.len() < MAX_ERROR_BODY => body.extend_from_slice(&bytes),
                Some(Ok(_)) | None | Some(Err(_)) => break,
            }
        }
        let message = error_message(&String::from_utf8_lossy(&body));
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

/// `retry-after-ms`, or `retry-after` as seconds or an HTTP date.
fn retry_after(headers: &HeaderMap) -> Option<Duration> {
    let text = |name: &str| {
        headers
            .get(name)
            .and_then(|v| v.to_str().ok())
            .map(str::trim)
    };
    if let Some(ms) = text("retry-after-ms").and_then(|v| v.parse::<f64>().ok()) {
        return Duration::try_from_secs_f64(ms / 1000.0).ok();
    }
    let value = text("retry-after")?;
    if let Ok(seconds) = value.parse::<f64>() {
        return Duration::try_from_secs_f64(seconds).ok();
    }
    let when = httpdate::parse_http_date(value).ok()?;
    Some(
        when.duration_since(SystemTime::now())
            .unwrap_or(Duration::ZERO),
    )
}

fn send_error(url: &str, error: &reqwest::Error) -> ProviderError {
    if error.is_connect() {
        ProviderError::Connect {
            url: url.to_string(),
            detail: root_cause(error),
        }
    } else {
        ProviderError::Network(error_chain(error))
    }
}

/// An error and its sources on one line (reqwest's own message omits the cause).
pub fn error_chain(error: &dyn std::error::Error) -> String {
    let mut text = error.to_string();
    let mut source = error.source();
    while let Some(cause) = source {
        let cause_text = cause.to_string();
        if !text.contains(&cause_text) {
            text.push_str(": ");
            text.push_str(&cause_text);
        }
        source = cause.source();
    }
    text
}

fn root_cause(error: &dyn std::error::Error) -> String {
    let mut cause: &dyn std::error::Error = error;
    while let Some(next) = cause.source() {
        cause = next;
    }
    cause.to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn headers(pairs: &[(&'static str, &str)]) -> HeaderMap {
        let mut map = HeaderMap::new();
        for (name, value) in pairs {
            map.insert(*name, HeaderValue::from_str(value).unwrap());
        }
        map
    }

    #[test]
    fn retry_after_reads_seconds_milliseconds_and_dates() {
        assert_eq!(
            retry_after(&headers(&[("retry-after", "7")])),
            Some(Duration::from_secs(7))
        );
        assert_eq!(
            retry_after(&headers(&[("retry-after", "7"), ("retry-after-ms", "250")])),
            Some(Duration::from_millis(250))
        );
        let in_a_minute = httpdate::fmt_http_date(SystemTime::now() + Duration::from_secs(60));
        let delay = retry_after(&headers(&[("retry-after", &in_a_minute)])).unwrap();
        assert!(delay > Duration::from_secs(50) && delay <= Duration::from_secs(60));
        let past = httpdate::fmt_http_date(SystemTime::now() - Duration::from_secs(60));
        assert_eq!(
            retry_after(&headers(&[("retry-after", &past)])),
            Some(Duration::ZERO)
        );
        assert_eq!(retry_after(&headers(&[("retry-after", "soon")])), None);
    }
}
