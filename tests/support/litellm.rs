//! What a LiteLLM proxy in front of a provider sends when the provider fails, in each wire
//! API it serves: its own wording (`litellm.APIConnectionError: …`) with the structured
//! code of the API (a Chat chunk `{"error": {…, "code": "500"}}`, a Responses
//! `response.failed` with `code: server_error`, an Anthropic `event: error` with
//! `api_error`), and the upstream's `Retry-After` under its own header name.

use super::{anthropic, chat, responses};
use serde_json::json;

/// LiteLLM's words for an upstream it could not reach: no "server error", no "try again".
pub const CONNECTION_ERROR: &str =
    "litellm.APIConnectionError: OpenAIException - Connection error.";

/// The header LiteLLM forwards the provider's `Retry-After` in.
pub const RETRY_AFTER: &str = "llm_provider-retry-after";

/// A Chat Completions error chunk as LiteLLM streams it: the upstream status as a string
/// `code`.
pub fn chat_error(code: &str, message: &str) -> String {
    chat::frame(
        json!({"error": {"message": message, "type": "None", "param": "None",
        "code": code}}),
    )
}

/// A Chat answer that starts with `partial` and then fails upstream with `code`.
pub fn chat_failing(partial: &str, code: &str, message: &str) -> Vec<String> {
    let mut frames = chat::text_deltas(&[partial]);
    // Keep the opening chunk and the text; the rest never came.
    frames.truncate(2);
    frames.push(chat_error(code, message));
    frames
}

/// A Responses answer that starts with `partial` and then fails with `code`.
pub fn responses_failing(partial: &str, code: &str, message: &str) -> Vec<String> {
    responses::Stream::new().text(partial).failed(code, message)
}

/// An Anthropic answer that starts with `partial` and then fails with error type `kind`.
pub fn anthropic_failing(partial: &str, kind: &str, message: &str) -> Vec<String> {
    anthropic::Stream::new().text(partial).fail(kind, message)
}

/// LiteLLM's answer to a rate-limited request: 429 with the upstream's message (over several
/// lines, as some providers write it) and its `Retry-After` under LiteLLM's header name.
pub fn rate_limited(message: &str, retry_after_secs: u64) -> super::server::Reply {
    let body = json!({"error": {"message": message, "type": "None", "param": "None",
        "code": "429"}});
    super::server::Reply::status(429, &body.to_string())
        .with_header(RETRY_AFTER, &retry_after_secs.to_string())
}

/// A Chat answer whose tool call is cut off by `[DONE]` (what LiteLLM ends a stream with
/// when its upstream went away): the call's id and name, then `partial` of its arguments,
/// no finish reason.
pub fn chat_call_cut_by_done(id: &str, name: &str, partial: &str) -> Vec<String> {
    let chunk = |delta: serde_json::Value| {
        chat::frame(
            json!({"id": "chatcmpl-litellm", "object": "chat.completion.chunk",
            "created": 1, "model": "test-model",
            "choices": [{"index": 0, "delta": delta, "finish_reason": null}]}),
        )
    };
    vec![
        chunk(json!({"role": "assistant", "content": null})),
        chunk(
            json!({"tool_calls": [{"index": 0, "id": id, "type": "function",
            "function": {"name": name, "arguments": partial}}]}),
        ),
        "data: [DONE]\n\n".to_string(),
    ]
}
