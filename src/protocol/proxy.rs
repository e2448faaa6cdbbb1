//! What `agent proxy` and the `agent-proxy` provider say to each other (docs/protocol.md §8):
//! the `POST /v1/stream` request, and the events of its `text/event-stream` answer — each
//! exactly a `message_update`'s `assistantMessageEvent` (never the partial message), then
//! `done` with the final message or `error`.

use super::event::AssistantMessageEvent;
use super::message::{AssistantMessage, Message};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::sync::Arc;

/// `POST /v1/stream`.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct StreamRequest {
    /// A provider of the proxy's config; its default provider when absent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub provider: Option<String>,
    pub model: String,
    pub context: StreamContext,
    #[serde(default)]
    pub options: StreamOptions,
}

#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct StreamContext {
    #[serde(default)]
    pub system_prompt: String,
    pub messages: Vec<Arc<Message>>,
    #[serde(default)]
    pub tools: Vec<ProxyTool>,
}

/// A tool as the model sees it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ProxyTool {
    pub name: String,
    #[serde(default)]
    pub description: String,
    pub parameters: Value,
}

#[derive(Clone, Debug, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct StreamOptions {
    /// `off`, `minimal`, `low`, `medium`, `high`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub thinking: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_tokens: Option<u64>,
}

/// One `data:` line of the answer.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(untagged)]
pub enum StreamLine {
    Delta(AssistantMessageEvent),
    End(StreamEnd),
}

#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum StreamEnd {
    /// The response is complete: the final assistant message.
    Done { message: AssistantMessage },
    /// The upstream call failed; the fields let the client retry exactly as it would on a
    /// direct connection.
    Error(StreamError),
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct StreamError {
    /// What went wrong, as a direct connection would have said it (keys masked).
    pub message: String,
    /// `transient` (worth retrying), `once` (one more attempt), `never`.
    pub retry: String,
    /// The provider's HTTP status, when it answered with one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub status: Option<u16>,
    /// How long the provider asked to wait before trying again.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub retry_after_ms: Option<u64>,
    /// The request did not fit the model's context window.
    #[serde(default)]
    pub context_overflow: bool,
    /// The usage the provider reported before the failure (what the failed attempt cost).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub usage: Option<super::message::Usage>,
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn lines_are_deltas_or_ends() {
        let delta: StreamLine =
            serde_json::from_value(json!({"type": "text_delta", "contentIndex": 0, "delta": "hi"}))
                .unwrap();
        assert!(matches!(
            delta,
            StreamLine::Delta(AssistantMessageEvent::TextDelta { .. })
        ));
        let error: StreamLine = serde_json::from_value(
            json!({"type": "error", "message": "HTTP 503", "retry": "transient", "status": 503}),
        )
        .unwrap();
        let StreamLine::End(StreamEnd::Error(error)) = error else {
            panic!("{error:?}")
        };
        assert_eq!(error.status, Some(503));
        assert!(!error.context_overflow);
        let line = serde_json::to_string(&StreamLine::End(StreamEnd::Error(error))).unwrap();
        assert!(line.starts_with(r#"{"type":"error","#), "{line}");
    }
}
