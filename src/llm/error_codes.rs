//! What an error a provider (or a relay in front of it, such as LiteLLM) reports *inside* a
//! stream means for another attempt, judged by its structured code — each wire API puts it
//! in its own place — and not by the words of its message, which relays rewrite
//! (`litellm.InternalServerError: …`). Chat Completions: the error object's `code` (an HTTP
//! status, `"500"` or `500`, or a name such as `server_error`), then its `type`; Responses:
//! the `code` of `response.failed`'s error or of an `error` event; Anthropic: the error's
//! `type` (`api_error`, `overloaded_error`, …). Only an error with no code this module knows
//! is judged by its text, as before.

use super::error::{Retry, error_text, is_overflow_text, status_retry};
use serde_json::Value;

/// What a structured code says.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Verdict {
    Retry(Retry),
    /// The request did not fit the model's context window.
    ContextOverflow,
}

/// An error the provider reported inside an otherwise successful stream.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct StreamError {
    pub message: String,
    /// `None`: no code this agent knows; the text is judged instead.
    pub verdict: Option<Verdict>,
}

/// The wire APIs, for where each keeps its error code.
#[derive(Clone, Copy, Debug)]
pub enum Wire {
    Chat,
    Responses,
    Anthropic,
}

impl StreamError {
    /// An error without a code (a body that is not an error object, the agent's own words).
    pub fn uncoded(message: impl Into<String>) -> StreamError {
        StreamError {
            message: message.into(),
            verdict: None,
        }
    }

    /// An error object (`{"message", "code", "type", …}`) as `wire` sends it, with `message`
    /// as the text to show.
    pub fn coded(wire: Wire, error: &Value, message: String) -> StreamError {
        let field = |name: &str| error.get(name).filter(|v| !v.is_null());
        let verdict = match wire {
            Wire::Chat | Wire::Responses => field("code")
                .and_then(|code| judge(code, &message))
                .or_else(|| field("type").and_then(|kind| judge(kind, &message))),
            Wire::Anthropic => field("type").and_then(|kind| judge(kind, &message)),
        };
        StreamError { message, verdict }
    }

    /// The data of an `error` event: an error object, alone or under `error`, or any text.
    pub fn from_data(wire: Wire, data: &str) -> StreamError {
        match serde_json::from_str::<Value>(data) {
            Ok(value) => {
                let error = value
                    .get("error")
                    .filter(|e| e.is_object())
                    .unwrap_or(&value);
                StreamError::coded(wire, error, error_text(error))
            }
            Err(_) => StreamError::uncoded(super::error::snippet(data)),
        }
    }
}

/// A code: an HTTP status (as a number or a numeric string) is judged as that status would
/// be; a name by the table below; anything else is not known.
fn judge(code: &Value, message: &str) -> Option<Verdict> {
    let status = match code {
        Value::Number(n) => n.as_u64(),
        Value::String(text) => text.trim().parse::<u64>().ok(),
        _ => None,
    };
    if let Some(status) = status {
        let status = u16::try_from(status)
            .ok()
            .filter(|s| (100..600).contains(s))?;
        return Some(if status == 413 || is_overflow_text(message) {
            Verdict::ContextOverflow
        } else {
            Verdict::Retry(status_retry(status, message))
        });
    }
    let name = code.as_str()?.trim().to_ascii_lowercase();
    let verdict = match name.as_str() {
        "context_length_exceeded" | "request_too_large" | "exceed_context_size_error" => {
            Verdict::ContextOverflow
        }
        // The server failed, maybe for this request only: one more attempt.
        "server_error"
        | "api_error"
        | "internal_error"
        | "internal_server_error"
        | "internalservererror"
        | "apierror" => Verdict::Retry(Retry::Once),
        // Busy, limited or briefly away: it passes.
        "overloaded_error"
        | "overloaded"
        | "rate_limit_error"
        | "rate_limit_exceeded"
        | "ratelimiterror"
        | "timeout_error"
        | "timeout"
        | "service_unavailable"
        | "serviceunavailableerror"
        | "unavailable"
        | "vector_store_timeout" => Verdict::Retry(Retry::Transient),
        // The request itself is wrong, or the account cannot make it: again is the same.
        "invalid_request_error"
        | "authentication_error"
        | "permission_error"
        | "not_found_error"
        | "billing_error"
        | "insufficient_quota"
        | "invalid_prompt"
        | "invalid_api_key"
        | "model_not_found" => {
            if is_overflow_text(message) {
                Verdict::ContextOverflow
            } else {
                Verdict::Retry(Retry::Never)
            }
        }
        _ => return None,
    };
    Some(verdict)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn verdict(wire: Wire, error: Value) -> Option<Verdict> {
        let message = error_text(&error);
        StreamError::coded(wire, &error, message).verdict
    }

    #[test]
    fn codes_decide_whatever_the_text_says() {
        // LiteLLM's chat chunk: the status as a string code, a message in its own words.
        let litellm = json!({"message": "litellm.InternalServerError: boom", "type": "None",
            "param": "None", "code": "500"});
        assert_eq!(
            verdict(Wire::Chat, litellm),
            Some(Verdict::Retry(Retry::Once))
        );
        assert_eq!(
            verdict(Wire::Chat, json!({"message": "x", "code": 503})),
            Some(Verdict::Retry(Retry::Transient))
        );
        assert_eq!(
            verdict(
                Wire::Chat,
                json!({"message": "try again later", "code": "400"})
            ),
            Some(Verdict::Retry(Retry::Never))
        );
        assert_eq!(
            verdict(
                Wire::Responses,
                json!({"code": "server_error", "message": "Oops"})
            ),
            Some(Verdict::Retry(Retry::Once))
        );
        assert_eq!(
            verdict(
                Wire::Responses,
                json!({"code": "context_length_exceeded", "message": "too big"})
            ),
            Some(Verdict::ContextOverflow)
        );
        assert_eq!(
            verdict(
                Wire::Anthropic,
                json!({"type": "api_error", "message": "litellm.APIError"})
            ),
            Some(Verdict::Retry(Retry::Once))
        );
        assert_eq!(
            verdict(
                Wire::Anthropic,
                json!({"type": "overloaded_error", "message": "x"})
            ),
            Some(Verdict::Retry(Retry::Transient))
        );
        assert_eq!(
            verdict(
                Wire::Anthropic,
                json!({"type": "invalid_request_error", "message": "prompt is too long: 3 > 2"})
            ),
            Some(Verdict::ContextOverflow)
        );
        // Anthropic's `code` is no field of its errors.
        assert_eq!(
            verdict(Wire::Anthropic, json!({"code": "500", "message": "x"})),
            None
        );
        assert_eq!(verdict(Wire::Chat, json!({"message": "odd"})), None);
    }

    #[test]
    fn an_event_data_is_read_alone_or_under_error() {
        let nested = StreamError::from_data(
            Wire::Chat,
            r#"{"error":{"message":"upstream died","code":"502"}}"#,
        );
        assert_eq!(nested.message, "upstream died");
        assert_eq!(nested.verdict, Some(Verdict::Retry(Retry::Transient)));
        let flat = StreamError::from_data(
            Wire::Responses,
            r#"{"type":"error","code":"server_error","message":"m"}"#,
        );
        assert_eq!(flat.verdict, Some(Verdict::Retry(Retry::Once)));
        let text = StreamError::from_data(Wire::Chat, "not json");
        assert_eq!(text, StreamError::uncoded("not json"));
    }
}
