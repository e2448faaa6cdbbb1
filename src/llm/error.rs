//! `ProviderError`: everything that can go wrong talking to a model, classified once here so
//! the loop can decide between retrying, compacting and failing with a clear message.

use super::error_codes::{StreamError, Verdict};
use super::timeouts::describe;
use serde_json::Value;
use std::time::Duration;

#[derive(Clone, Debug, thiserror::Error)]
pub enum ProviderError {
    /// The server answered with a non-success status.
    #[error("{}", http_message(*.status, message, hint.as_deref()))]
    Http {
        status: u16,
        message: String,
        retry_after: Option<Duration>,
        /// What the user can do about it (which env var holds the key, which flag sets the URL).
        hint: Option<String>,
    },
    #[error("could not connect to {url}: {detail}")]
    Connect { url: String, detail: String },
    #[error("the connection to the provider failed: {0}")]
    Network(String),
    #[error("the provider did not answer within {} (response_timeout_secs)", describe(*.0))]
    NoResponse(Duration),
    #[error("the provider sent nothing for {} (stream_idle_timeout_secs)", describe(*.0))]
    Idle(Duration),
    #[error(
        "the provider sent only keep-alives, no content, for {} (stream_content_timeout_secs)",
        describe(*.0)
    )]
    NoContent(Duration),
    #[error("the response stream ended before the response was complete")]
    Truncated,
    /// The provider reported an error inside an otherwise successful stream.
    #[error("{}", .0.message)]
    Stream(StreamError),
    #[error("no API key for provider `{provider}`: set {how}")]
    MissingKey { provider: String, how: String },
    /// The credential `agent login` stored cannot be used (expired or revoked and not
    /// renewable, or the store failed): the text says what to run.
    #[error("{0}")]
    SignIn(String),
    #[error("the api_key_command of provider `{provider}` failed: {detail}")]
    KeyCommand { provider: String, detail: String },
    #[error("the provider sent a response that could not be read: {0}")]
    Decode(String),
    /// A successful status with a body that is neither an event stream nor a completion.
    #[error("the provider answered with {0} instead of a model response")]
    UnexpectedBody(String),
    /// The HTTP client could not be set up (e.g. no root certificates to verify `https`).
    #[error("could not set up the connection to the provider: {0}")]
    Setup(String),
    #[error("the request was aborted")]
    Aborted,
    /// An error `agent proxy` relayed: its text, and what its provider's error meant for
    /// retrying.
    #[error("{message}")]
    Relayed {
        message: String,
        retry: Retry,
        retry_after: Option<Duration>,
        context_overflow: bool,
    },
}

fn http_message(status: u16, message: &str, hint: Option<&str>) -> String {
    let mut text = format!("HTTP {status}");
    if let Some(reason) = reqwest::StatusCode::from_u16(status)
        .ok()
        .and_then(|s| s.canonical_reason())
    {
        text.push(' ');
        text.push_str(reason);
    }
    if !message.is_empty() {
        text.push_str(": ");
        text.push_str(message);
    }
    if let Some(hint) = hint {
        text.push_str(" (");
        text.push_str(hint);
        text.push(')');
    }
    text
}

/// Whether another attempt at the same request could succeed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Retry {
    /// It would fail the same way: a bad request, a bad key, a deterministic error.
    Never,
    /// Maybe a fluke, maybe deterministic (an internal server error): one more attempt.
    Once,
    /// It can change with time: connection failures, rate limits, overload, gateways.
    Transient,
}

impl ProviderError {
    /// The same error with every configured API key in its text masked (`secrets`): a
    /// server may echo the key in an error body, a URL or a message.
    pub fn redacted(self) -> ProviderError {
        let mask = |text: String| match crate::secrets::redact(&text) {
            std::borrow::Cow::Borrowed(_) => text,
            std::borrow::Cow::Owned(masked) => masked,
        };
        match self {
            ProviderError::Http {
                status,
                message,
                retry_after,
                hint,
            } => ProviderError::Http {
                status,
                message: mask(message),
                retry_after,
                hint: hint.map(mask),
            },
            ProviderError::Connect { url, detail } => ProviderError::Connect {
                url: mask(url),
                detail: mask(detail),
            },
            ProviderError::Network(text) => ProviderError::Network(mask(text)),
            ProviderError::Stream(error) => ProviderError::Stream(StreamError {
                message: mask(error.message),
                ..error
            }),
            ProviderError::KeyCommand { provider, detail } => ProviderError::KeyCommand {
                provider,
                detail: mask(detail),
            },
            ProviderError::SignIn(text) => ProviderError::SignIn(mask(text)),
            ProviderError::Decode(text) => ProviderError::Decode(mask(text)),
            ProviderError::UnexpectedBody(text) => ProviderError::UnexpectedBody(mask(text)),
            ProviderError::Setup(text) => ProviderError::Setup(mask(text)),
            ProviderError::Relayed {
                message,
                retry,
                retry_after,
                context_overflow,
            } => ProviderError::Relayed {
                message: mask(message),
                retry,
                retry_after,
                context_overflow,
            },
            // Nothing from outside in these.
            error @ (ProviderError::NoResponse(_)
            | ProviderError::Idle(_)
            | ProviderError::NoContent(_)
            | ProviderError::Truncated
            | ProviderError::MissingKey { .. }
            | ProviderError::Aborted) => error,
        }
    }

    /// What another attempt could achieve.
    pub fn retry(&self) -> Retry {
        if self.is_context_overflow() {
            return Retry::Never;
        }
        match self {
            ProviderError::Http {
                status, message, ..
            } => status_retry(*status, message),
            ProviderError::Connect { .. }
            | ProviderError::Network(_)
            | ProviderError::NoResponse(_)
            | ProviderError::Idle(_)
            | ProviderError::NoContent(_)
            | ProviderError::Truncated => Retry::Transient,
            ProviderError::Stream(StreamError {
                verdict: Some(Verdict::Retry(retry)),
                ..
            }) => *retry,
            ProviderError::Stream(StreamError {
                message,
                verdict: None,
            }) if is_transient_text(message) => Retry::Transient,
            ProviderError::Stream(StreamError {
                message,
                verdict: None,
            }) if is_server_fault_text(message) => Retry::Once,
            ProviderError::Relayed { retry, .. } => *retry,
            _ => Retry::Never,
        }
    }

    /// The request did not fit the model's context window.
    pub fn is_context_overflow(&self) -> bool {
        match self {
            ProviderError::Http {
                message, status, ..
            } => *status == 413 || is_overflow_text(message),
            ProviderError::Stream(StreamError { message, verdict }) => match verdict {
                Some(Verdict::ContextOverflow) => true,
                Some(Verdict::Retry(_)) => false,
                None => is_overflow_text(message),
            },
            ProviderError::Relayed {
                context_overflow, ..
            } => *context_overflow,
            _ => false,
        }
    }

    pub fn retry_after(&self) -> Option<Duration> {
        match self {
            ProviderError::Http {
                retry_after: Some(delay),
                ..
            } => Some(*delay),
            ProviderError::Relayed { retry_after, .. } => *retry_after,
            ProviderError::Http { message, .. }
            | ProviderError::Stream(StreamError { message, .. }) => try_again_in(message),
            _ => None,
        }
    }
}

/// What another attempt after HTTP `status` could achieve (an in-stream error whose code
/// is a status is judged the same way).
pub(super) fn status_retry(status: u16, message: &str) -> Retry {
    match status {
        408 | 429 | 502 | 503 | 504 | 529 => Retry::Transient,
        // Cloudflare's "the origin failed" family.
        520..=524 => Retry::Transient,
        500 if is_transient_text(message) => Retry::Transient,
        500 => Retry::Once,
        _ => Retry::Never,
    }
}

/// Errors that say the service is busy or briefly unreachable.
fn is_transient_text(message: &str) -> bool {
    let lower = message.to_ascii_lowercase();
    [
        "overloaded",
        "rate limit",
        "rate_limit",
        "try again",
        "temporarily",
        "timeout",
        "timed out",
        "unavailable",
    ]
    .iter()
    .any(|needle| lower.contains(needle))
}

/// Errors that blame the server without saying whether it will pass.
fn is_server_fault_text(message: &str) -> bool {
    let lower = message.to_ascii_lowercase();
    [
        "server error",
        "server_error",
        "server had an error", // OpenAI: "The server had an error processing your request"
        "retry your request",  // OpenAI: "... You can retry your request"
        "internal error",
        "internal_error",
    ]
    .iter()
    .any(|needle| lower.contains(needle))
}

/// Context-overflow messages of the providers and local servers users run.
pub(super) fn is_overflow_text(message: &str) -> bool {
    let lower = message.to_ascii_lowercase();
    [
        "context_length_exceeded",            // OpenAI code
        "maximum context length",             // OpenAI, vLLM, OpenRouter
        "context length",                     // vLLM, Ollama ("exceeds the context length")
        "prompt is too long",                 // Anthropic
        "input is too long",                  // Anthropic, Bedrock
        "exceeds the context window",         // OpenAI Responses
        "context window",                     // generic
        "too many tokens",                    // generic
        "exceed_context_size",                // llama.cpp error type
        "exceeds the available context size", // llama.cpp
        "context size has been exceeded",     // LM Studio
        "reduce the length of the messages",  // OpenAI chat
        "token limit",                        // generic
    ]
    .iter()
    .any(|needle| lower.contains(needle))
}

/// "Please try again in 1.5s" / "try again in 20ms" in rate-limit messages.
fn try_again_in(message: &str) -> Option<Duration> {
    let lower = message.to_ascii_lowercase();
    let start = lower.find("try again in")? + "try again in".len();
    let rest = lower[start..].trim_start();
    let number_len = rest
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(rest.len());
    let value: f64 = rest[..number_len].parse().ok()?;
    let unit = rest[number_len..].trim_start();
    let seconds = if unit.starts_with("ms") {
        value / 1000.0
    } else if unit.starts_with('m') && !unit.starts_with("ms") && unit.starts_with("min") {
        value * 60.0
    } else {
        value
    };
    Duration::try_from_secs_f64(seconds).ok()
}

/// The message of an error payload: `{"error": {"message": ...}}`, `{"error": "..."}`,
/// `{"message": ...}`, or the raw text.
pub fn error_message(data: &str) -> String {
    match serde_json::from_str::<Value>(data) {
        Ok(value) => error_text(value.get("error").unwrap_or(&value)),
        Err(_) => snippet(data),
    }
}

pub fn error_text(error: &Value) -> String {
    if let Some(text) = error.as_str() {
        return text.to_string();
    }
    for key in ["message", "detail", "error"] {
        match error.get(key) {
            Some(Value::String(text)) => return text.clone(),
            Some(nested @ Value::Object(_)) => return error_text(nested),
            _ => {}
        }
    }
    snippet(&error.to_string())
}

/// At most 300 characters of `text` on one line, for error messages.
pub fn snippet(text: &str) -> String {
    let one_line: String = text.split_whitespace().collect::<Vec<_>>().join(" ");
    match one_line.char_indices().nth(300) {
        Some((cut, _)) => format!("{}…", &one_line[..cut]),
        None => one_line,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn http(status: u16, message: &str) -> ProviderError {
        ProviderError::Http {
            status,
            message: message.into(),
            retry_after: None,
            hint: None,
        }
    }

    #[test]
    fn classifies_statuses() {
        for status in [408, 429, 502, 503, 504, 529, 522] {
            assert_eq!(http(status, "").retry(), Retry::Transient, "{status}");
        }
        assert_eq!(http(500, "Internal server error").retry(), Retry::Once);
        assert_eq!(
            http(500, "Failed to parse tool call arguments as JSON").retry(),
            Retry::Once
        );
        assert_eq!(http(500, "model overloaded").retry(), Retry::Transient);
        for status in [400, 401, 403, 404, 409, 422, 501] {
            assert_eq!(http(status, "").retry(), Retry::Never, "{status}");
        }
        assert_eq!(ProviderError::Truncated.retry(), Retry::Transient);
        assert_eq!(
            ProviderError::NoResponse(Duration::from_secs(1)).retry(),
            Retry::Transient
        );
        assert_eq!(
            ProviderError::Stream(StreamError::uncoded("Overloaded (overloaded_error)")).retry(),
            Retry::Transient
        );
        assert_eq!(
            ProviderError::Stream(StreamError::uncoded(
                "The server had an error processing your request."
            ))
            .retry(),
            Retry::Once
        );
        assert_eq!(
            ProviderError::Stream(StreamError::uncoded("You exceeded your current quota")).retry(),
            Retry::Never
        );
        assert_eq!(
            ProviderError::UnexpectedBody("an HTML page".into()).retry(),
            Retry::Never
        );
    }

    #[test]
    fn recognises_context_overflow() {
        let err = http(400, "This model's maximum context length is 128000 tokens.");
        assert!(err.is_context_overflow());
        assert_eq!(err.retry(), Retry::Never);
        assert!(
            http(400, "prompt is too long: 210000 tokens > 200000 maximum").is_context_overflow()
        );
        assert!(!http(400, "invalid schema").is_context_overflow());
    }

    #[test]
    fn reads_try_again_hints() {
        let err = http(
            429,
            "Rate limit reached. Please try again in 1.5s. Visit ...",
        );
        assert_eq!(err.retry_after(), Some(Duration::from_millis(1500)));
        let err = http(429, "Please try again in 20ms.");
        assert_eq!(err.retry_after(), Some(Duration::from_millis(20)));
    }

    #[test]
    fn http_errors_read_well() {
        let err = ProviderError::Http {
            status: 401,
            message: "Incorrect API key provided".into(),
            retry_after: None,
            hint: Some("check OPENAI_API_KEY".into()),
        };
        assert_eq!(
            err.to_string(),
            "HTTP 401 Unauthorized: Incorrect API key provided (check OPENAI_API_KEY)"
        );
    }

    #[test]
    fn redaction_masks_keys_in_every_text_from_outside() {
        crate::secrets::register("sk-error-test-secret-77");
        let masked = ProviderError::Stream(StreamError::uncoded("bad key sk-error-test-secret-77"))
            .redacted();
        assert_eq!(masked.to_string(), "bad key [REDACTED]");
        let masked = ProviderError::Connect {
            url: "http://h/?key=sk-error-test-secret-77".into(),
            detail: "refused".into(),
        }
        .redacted();
        assert!(!masked.to_string().contains("sk-error-test-secret-77"));
    }
}
