//! Decodes OpenAI Responses stream events into `StreamEvent`s. The event type is taken from
//! `data.type` (some servers send data-only frames), output items are correlated by
//! `output_index` (item ids may change from event to event), a function call's id is its
//! `call_id`, and the complete arguments of `.done` events are authoritative (some servers
//! send no deltas at all). Encrypted reasoning and its item id become the signature of its
//! thinking block (`signature.rs`) so it can be replayed to the same model. A
//! `web_search_call` item (the provider's own search) becomes `WebSearch` steps, its finished
//! item kept whole for replay; the `response.web_search_call.*` progress events add nothing.
//! `response.completed` / `.incomplete` / `.failed` and `error` end the stream. A server that
//! answers with a whole response object instead of a stream gets the same events from it.

use super::signature::encode as reasoning_signature;
use crate::llm::error::{ProviderError, error_text, snippet};
use crate::llm::error_codes::{StreamError, Wire};
use crate::llm::stream_event::{
    FinishReason, StreamEvent, WebSearchStep, WireUsage, push_nonempty,
};
use crate::protocol::message::{WebSearchResult, WebSearchStatus};
use serde::Deserialize;
use serde_json::Value;

#[derive(Default)]
pub struct ResponsesDecoder {
    /// Output indices of the function calls seen so far.
    calls: Vec<usize>,
}

#[derive(Deserialize)]
struct Event {
    #[serde(rename = "type", default)]
    kind: String,
    #[serde(default)]
    output_index: Option<usize>,
    #[serde(default)]
    item: Option<Value>,
    #[serde(default)]
    delta: Option<String>,
    #[serde(default)]
    arguments: Option<String>,
    #[serde(default)]
    response: Option<Response>,
}

#[derive(Clone, Deserialize)]
struct Item {
    #[serde(rename = "type", default)]
    kind: String,
    #[serde(default)]
    id: Option<String>,
    #[serde(default)]
    call_id: Option<String>,
    #[serde(default)]
    name: Option<String>,
    #[serde(default)]
    arguments: Option<String>,
    #[serde(default)]
    encrypted_content: Option<String>,
    /// Whole items (`.done` events and non-streamed responses) carry their content.
    #[serde(default)]
    summary: Vec<Part>,
    #[serde(default)]
    content: Vec<Part>,
}

/// A summary or content part of a whole item: `summary_text`, `reasoning_text`,
/// `output_text` or `refusal`.
#[derive(Clone, Deserialize)]
struct Part {
    #[serde(rename = "type", default)]
    kind: String,
    #[serde(default)]
    text: Option<String>,
    #[serde(default)]
    refusal: Option<String>,
}

/// A whole response object, as a server that does not stream sends it.
#[derive(Deserialize)]
struct WholeResponse {
    #[serde(default)]
    status: Option<String>,
    #[serde(default)]
    output: Option<Vec<Value>>,
    #[serde(flatten)]
    end: Response,
}

#[derive(Deserialize)]
struct Response {
    #[serde(default)]
    usage: Option<Usage>,
    #[serde(default)]
    error: Option<Value>,
    #[serde(default)]
    incomplete_details: Option<IncompleteDetails>,
}

#[derive(Deserialize)]
struct IncompleteDetails {
    #[serde(default)]
    reason: Option<String>,
}

#[derive(Deserialize)]
struct Usage {
    #[serde(default)]
    input_tokens: u64,
    #[serde(default)]
    output_tokens: u64,
    #[serde(default)]
    input_tokens_details: Option<InputTokensDetails>,
    #[serde(default)]
    output_tokens_details: Option<OutputTokensDetails>,
}

#[derive(Deserialize)]
struct OutputTokensDetails {
    #[serde(default)]
    reasoning_tokens: Option<u64>,
}

#[derive(Deserialize)]
struct InputTokensDetails {
    #[serde(default)]
    cached_tokens: Option<u64>,
}

impl ResponsesDecoder {
    /// Decode one frame's data; blank frames and `[DONE]` were handled by the caller.
    pub fn decode(
        &mut self,
        event: &str,
        data: &str,
        out: &mut Vec<StreamEvent>,
    ) -> Result<(), ProviderError> {
        let parsed: Event = match serde_json::from_str(data) {
            Ok(parsed) => parsed,
            Err(_) if event == "error" => {
                out.push(StreamEvent::Error(StreamError::from_data(
                    Wire::Responses,
                    data,
                )));
                return Ok(());
            }
            Err(e) => {
                return Err(ProviderError::Decode(format!(
                    "{e} in event {}",
                    snippet(data)
                )));
            }
        };
        let kind = match parsed.kind.as_str() {
            "" => event,
            kind => kind,
        };
        let index = parsed.output_index.unwrap_or(0);
        match kind {
            "response.output_item.added" => match parsed.item {
                Some(raw) if is_search(&raw) => {
                    out.push(StreamEvent::BlockEnd);
                    out.push(StreamEvent::OtherBlock("web_search_call".to_string()));
                    out.push(StreamEvent::WebSearch(search_step(raw, false)));
                }
                Some(raw) => self.item_added(index, typed(&raw)?, out),
                None => {}
            },
            "response.output_item.done" => match parsed.item {
                Some(raw) if is_search(&raw) => {
                    out.push(StreamEvent::WebSearch(search_step(raw, true)));
                    out.push(StreamEvent::BlockEnd);
                }
                Some(raw) => self.item_done(index, typed(&raw)?, out),
                None => {}
            },
            "response.output_text.delta" => push_nonempty(StreamEvent::Text, parsed.delta, out),
            "response.refusal.delta" => push_nonempty(StreamEvent::Refusal, parsed.delta, out),
            "response.reasoning_summary_text.delta" | "response.reasoning_text.delta" => {
                push_nonempty(StreamEvent::Thinking, parsed.delta, out)
            }
            "response.function_call_arguments.delta" => {
                if let Some(delta) = parsed.delta.filter(|d| !d.is_empty()) {
                    self.note_call(index);
                    out.push(StreamEvent::ToolCall {
                        key: index,
                        id: None,
                        name: None,
                        arguments: delta,
                    });
                }
            }
            "response.function_call_arguments.done" => {
                if let Some(arguments) = parsed.arguments {
                    self.note_call(index);
                    out.push(StreamEvent::ToolCallArguments {
                        key: index,
                        arguments,
                    });
                }
            }
            "response.completed" | "response.incomplete" => {
                let response = parsed.response;
                if let Some(usage) = response.as_ref().and_then(|r| r.usage.as_ref()) {
                    out.push(StreamEvent::Usage(wire_usage(usage)));
                }
                let reason = response
                    .and_then(|r| r.incomplete_details)
                    .and_then(|d| d.reason);
                out.push(StreamEvent::Finish(self.finish_reason(kind, reason)));
                out.push(StreamEvent::Done);
            }
            "response.failed" => {
                let response = parsed.response;
                if let Some(usage) = response.as_ref().and_then(|r| r.usage.as_ref()) {
                    out.push(StreamEvent::Usage(wire_usage(usage)));
                }
                let error = response.and_then(|r| r.error).filter(|e| !e.is_null());
                out.push(StreamEvent::Error(failure(error)));
            }
            "error" => out.push(StreamEvent::Error(StreamError::from_data(
                Wire::Responses,
                data,
            ))),
            // Lifecycle events (`response.created`, `.in_progress`, part and `.done` events
            // whose content already streamed) and event types newer than this decoder.
            _ => {}
        }
        Ok(())
    }

    fn item_added(&mut self, index: usize, item: Item, out: &mut Vec<StreamEvent>) {
        out.push(StreamEvent::BlockEnd);
        match item.kind.as_str() {
            "function_call" => {
                self.note_call(index);
                out.push(StreamEvent::ToolCall {
                    key: index,
                    id: item.call_id,
                    name: item.name,
                    arguments: String::new(),
                });
            }
            "message" | "reasoning" => {}
            other => out.push(StreamEvent::OtherBlock(other.to_string())),
        }
    }

    fn item_done(&mut self, index: usize, item: Item, out: &mut Vec<StreamEvent>) {
        match item.kind.as_str() {
            "function_call" => {
                self.note_call(index);
                // Fills in id and name if `.added` was missing; a no-op otherwise.
                out.push(StreamEvent::ToolCall {
                    key: index,
                    id: item.call_id,
                    name: item.name,
                    arguments: String::new(),
                });
                if let Some(arguments) = item.arguments {
                    out.push(StreamEvent::ToolCallArguments {
                        key: index,
                        arguments,
                    });
                }
            }
            "reasoning" => {
                if let Some(encrypted) = item.encrypted_content.filter(|e| !e.is_empty()) {
                    out.push(StreamEvent::ThinkingSignature(reasoning_signature(
                        item.id.as_deref(),
                        &encrypted,
                    )));
                }
            }
            _ => {}
        }
        out.push(StreamEvent::BlockEnd);
    }

    /// A whole response object: each output item as its stream would have carried it,
    /// then the terminal event its status calls for.
    pub fn decode_whole(
        &mut self,
        value: Value,
        out: &mut Vec<StreamEvent>,
    ) -> Result<(), ProviderError> {
        let whole: WholeResponse = serde_json::from_value(value)
            .map_err(|e| ProviderError::Decode(format!("{e} in the JSON response object")))?;
        let Some(output) = whole.output else {
            // Not a response object: an error object, or something else entirely.
            let error = whole.end.error.filter(|e| !e.is_null());
            out.push(StreamEvent::Error(match error {
                Some(error) => failure(Some(error)),
                None => StreamError::uncoded("a JSON body without `output`"),
            }));
            return Ok(());
        };
        for (index, raw) in output.into_iter().enumerate() {
            if is_search(&raw) {
                out.push(StreamEvent::BlockEnd);
                out.push(StreamEvent::OtherBlock("web_search_call".to_string()));
                out.push(StreamEvent::WebSearch(search_step(raw, true)));
                out.push(StreamEvent::BlockEnd);
                continue;
            }
            let item = typed(&raw)?;
            match item.kind.as_str() {
                "message" => {
                    out.push(StreamEvent::BlockEnd);
                    for part in &item.content {
                        match part.kind.as_str() {
                            "output_text" => {
                                push_nonempty(StreamEvent::Text, part.text.clone(), out)
                            }
                            "refusal" => {
                                push_nonempty(StreamEvent::Refusal, part.refusal.clone(), out)
                            }
                            _ => {}
                        }
                    }
                    out.push(StreamEvent::BlockEnd);
                }
                "reasoning" => {
                    out.push(StreamEvent::BlockEnd);
                    let text: Vec<&str> = item
                        .summary
                        .iter()
                        .chain(&item.content)
                        .filter_map(|part| part.text.as_deref())
                        .filter(|text| !text.is_empty())
                        .collect();
                    push_nonempty(StreamEvent::Thinking, Some(text.join("\n\n")), out);
                    self.item_done(index, item, out);
                }
                _ => {
                    self.item_added(index, item.clone(), out);
                    self.item_done(index, item, out);
                }
            }
        }
        let status = whole.status.unwrap_or_default();
        let end = whole.end;
        if status == "failed" || end.error.as_ref().is_some_and(|e| !e.is_null()) {
            if let Some(usage) = &end.usage {
                out.push(StreamEvent::Usage(wire_usage(usage)));
            }
            out.push(StreamEvent::Error(failure(
                end.error.filter(|e| !e.is_null()),
            )));
            return Ok(());
        }
        if let Some(usage) = &end.usage {
            out.push(StreamEvent::Usage(wire_usage(usage)));
        }
        let kind = match status.as_str() {
            "incomplete" => "response.incomplete",
            _ => "response.completed",
        };
        let reason = end.incomplete_details.and_then(|d| d.reason);
        out.push(StreamEvent::Finish(self.finish_reason(kind, reason)));
        out.push(StreamEvent::Done);
        Ok(())
    }

    fn note_call(&mut self, index: usize) {
        if !self.calls.contains(&index) {
            self.calls.push(index);
        }
    }

    fn finish_reason(&self, kind: &str, incomplete: Option<String>) -> FinishReason {
        match (kind, incomplete.as_deref()) {
            ("response.incomplete", Some("max_output_tokens")) => FinishReason::Length,
            ("response.incomplete", Some("content_filter")) => FinishReason::ContentFilter,
            ("response.incomplete", Some(other)) => FinishReason::Other(other.to_string()),
            _ if !self.calls.is_empty() => FinishReason::ToolUse,
            ("response.incomplete", None) => FinishReason::Other("incomplete".to_string()),
            _ => FinishReason::Stop,
        }
    }
}

fn is_search(item: &Value) -> bool {
    item.get("type").and_then(Value::as_str) == Some("web_search_call")
}

/// An item as the decoder reads it; one of another shape fails the stream, as an event
/// that does not parse does.
fn typed(raw: &Value) -> Result<Item, ProviderError> {
    Item::deserialize(raw).map_err(|e| {
        ProviderError::Decode(format!("{e} in output item {}", snippet(&raw.to_string())))
    })
}

/// A `web_search_call` item as a step: when `done`, its outcome, with the item kept whole
/// (a search is replayed as the item it was). The query is the action's (`search`), or the
/// page it opened or searched in (`open_page`, `find`).
fn search_step(item: Value, done: bool) -> WebSearchStep {
    let text = |value: Option<&Value>| value.and_then(Value::as_str).map(str::to_string);
    let action = item.get("action");
    let query = text(action.and_then(|a| a.get("query")))
        .or_else(|| text(action.and_then(|a| a.get("url"))));
    let status = match item.get("status").and_then(Value::as_str) {
        _ if !done => WebSearchStatus::InProgress,
        Some("failed" | "incomplete") => WebSearchStatus::Failed,
        _ => WebSearchStatus::Completed,
    };
    let results = done.then(|| {
        action
            .and_then(|a| a.get("sources"))
            .and_then(Value::as_array)
            .map(|sources| {
                sources
                    .iter()
                    .filter_map(|source| {
                        Some(WebSearchResult {
                            title: text(source.get("title")).unwrap_or_default(),
                            url: text(source.get("url"))?,
                        })
                    })
                    .collect()
            })
            .unwrap_or_default()
    });
    let error = (status == WebSearchStatus::Failed)
        .then(|| text(item.get("status")).unwrap_or_else(|| "failed".to_string()));
    WebSearchStep {
        id: text(item.get("id")).unwrap_or_default(),
        api: "openai-responses",
        query,
        status,
        results,
        error,
        block: done.then_some(item),
    }
}

/// Responses usage counts cached tokens inside `input_tokens`.
fn wire_usage(usage: &Usage) -> WireUsage {
    WireUsage {
        input: usage.input_tokens,
        output: usage.output_tokens,
        cache_read: usage
            .input_tokens_details
            .as_ref()
            .and_then(|d| d.cached_tokens)
            .unwrap_or(0),
        cache_write: 0,
        reasoning: usage
            .output_tokens_details
            .as_ref()
            .and_then(|d| d.reasoning_tokens)
            .unwrap_or(0),
        input_includes_cache: true,
    }
}

/// A response's failure: its error object (judged by its `code`), or none given.
fn failure(error: Option<Value>) -> StreamError {
    match error {
        Some(error) => {
            let message = error_text(&error);
            StreamError::coded(Wire::Responses, &error, message)
        }
        None => StreamError::uncoded("the provider reported that the response failed"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn decode_all(frames: &[&str]) -> Vec<StreamEvent> {
        let mut decoder = ResponsesDecoder::default();
        let mut out = Vec::new();
        for frame in frames {
            decoder.decode("message", frame, &mut out).unwrap();
        }
        out
    }

    #[test]
    fn incomplete_responses_stop_for_length() {
        let out = decode_all(&[
            r#"{"type":"response.output_text.delta","output_index":0,"delta":"Hi"}"#,
            r#"{"type":"response.incomplete","response":{"incomplete_details":{"reason":"max_output_tokens"},"usage":{"input_tokens":12,"output_tokens":3,"input_tokens_details":{"cached_tokens":8}}}}"#,
        ]);
        assert_eq!(
            out,
            vec![
                StreamEvent::Text("Hi".into()),
                StreamEvent::Usage(WireUsage {
                    input: 12,
                    output: 3,
                    cache_read: 8,
                    cache_write: 0,
                    reasoning: 0,
                    input_includes_cache: true
                }),
                StreamEvent::Finish(FinishReason::Length),
                StreamEvent::Done,
            ]
        );
    }

    #[test]
    fn encrypted_reasoning_becomes_a_signature() {
        let out = decode_all(&[
            r#"{"type":"response.output_item.added","output_index":0,"item":{"type":"reasoning","id":"rs_1","summary":[]}}"#,
            r#"{"type":"response.output_item.done","output_index":0,"item":{"type":"reasoning","id":"rs_1","summary":[],"encrypted_content":"gAAA"}}"#,
        ]);
        assert_eq!(
            out,
            vec![
                StreamEvent::BlockEnd,
                StreamEvent::ThinkingSignature(
                    r#"{"id":"rs_1","encrypted_content":"gAAA"}"#.into()
                ),
                StreamEvent::BlockEnd
            ]
        );
    }

    #[test]
    fn a_failed_response_reports_its_error() {
        let out = decode_all(&[
            r#"{"type":"response.failed","response":{"error":{"code":"server_error","message":"The server had an error"}}}"#,
        ]);
        assert_eq!(
            out,
            vec![StreamEvent::Error(StreamError {
                message: "The server had an error".into(),
                verdict: Some(crate::llm::error_codes::Verdict::Retry(
                    crate::llm::error::Retry::Once
                )),
            })]
        );
    }

    #[test]
    fn a_web_search_call_becomes_steps_with_the_item_kept() {
        let done = serde_json::json!({"type": "web_search_call", "id": "ws_1", "status": "completed",
            "action": {"type": "search", "query": "tokyo",
                       "sources": [{"type": "url", "url": "https://example.org/"}]}});
        let out = decode_all(&[
            r#"{"type":"response.output_item.added","output_index":0,"item":{"type":"web_search_call","id":"ws_1","status":"in_progress"}}"#,
            r#"{"type":"response.web_search_call.searching","output_index":0,"item_id":"ws_1"}"#,
            &serde_json::json!({"type": "response.output_item.done", "output_index": 0, "item": done}).to_string(),
        ]);
        let step = |status, results, block| {
            StreamEvent::WebSearch(WebSearchStep {
                id: "ws_1".into(),
                api: "openai-responses",
                query: (status != WebSearchStatus::InProgress).then(|| "tokyo".to_string()),
                status,
                results,
                error: None,
                block,
            })
        };
        assert_eq!(
            out,
            vec![
                StreamEvent::BlockEnd,
                StreamEvent::OtherBlock("web_search_call".into()),
                step(WebSearchStatus::InProgress, None, None),
                step(
                    WebSearchStatus::Completed,
                    Some(vec![WebSearchResult {
                        title: String::new(),
                        url: "https://example.org/".into()
                    }]),
                    Some(done.clone())
                ),
                StreamEvent::BlockEnd,
            ]
        );
    }
}
