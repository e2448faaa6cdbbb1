//! Decodes Anthropic Messages stream events into `StreamEvent`s: content blocks (text,
//! thinking with signatures, redacted thinking, client tool use) keyed by their block index,
//! block boundaries, the stop reason and usage of `message_delta` (whose values win over
//! `message_start`'s), `message_stop`, and mid-stream `error` events. Server tool blocks
//! (`server_tool_use`, `web_search_tool_result`...) are reported by type; the web search's
//! also become `WebSearch` steps carrying the blocks as they came (the call's input streamed
//! in), which the next request sends back. Other blocks' deltas are ignored; `citations_delta`
//! and `ping` carry nothing for the agent. A whole (non-streamed) message is read as the
//! events its stream would have carried.

use crate::llm::error::{ProviderError, error_text, snippet};
use crate::llm::error_codes::{StreamError, Wire};
use crate::llm::stream_event::{
    FinishReason, StreamEvent, WebSearchStep, WireUsage, push_nonempty,
};
use crate::protocol::message::{WebSearchResult, WebSearchStatus};
use serde::Deserialize;
use serde_json::Value;

#[derive(Default)]
pub struct AnthropicDecoder {
    /// The kind of every block started so far, by block index.
    blocks: Vec<(usize, BlockKind)>,
    usage: WireUsage,
}

enum BlockKind {
    Text,
    Thinking,
    ToolUse {
        /// Whether any non-empty `input_json_delta` arrived.
        streamed: bool,
        /// The `input` of `content_block_start`, used when nothing streamed.
        start_input: Option<Value>,
    },
    /// A `web_search` server tool call: the block as it started, and its input as it
    /// streams.
    WebSearch {
        block: Value,
        input: String,
    },
    /// Redacted thinking, other server tools and anything newer: no deltas for the agent.
    Ignored,
}

/// The wire API's name in `WebSearchStep::api`.
const API: &str = "anthropic";

#[derive(Deserialize)]
struct Event {
    #[serde(rename = "type")]
    kind: String,
    #[serde(default)]
    index: Option<usize>,
    #[serde(default)]
    message: Option<MessageStart>,
    #[serde(default)]
    content_block: Option<Value>,
    #[serde(default)]
    delta: Option<Delta>,
    #[serde(default)]
    usage: Option<Usage>,
    #[serde(default)]
    error: Option<Value>,
}

/// A whole message (`"type": "message"`), or an error object (`"type": "error"`).
#[derive(Deserialize)]
struct WholeMessage {
    #[serde(rename = "type", default)]
    kind: String,
    #[serde(default)]
    content: Option<Vec<Value>>,
    #[serde(default)]
    stop_reason: Option<String>,
    #[serde(default)]
    usage: Option<Usage>,
    #[serde(default)]
    error: Option<Value>,
}

#[derive(Deserialize)]
struct MessageStart {
    #[serde(default)]
    usage: Option<Usage>,
}

#[derive(Deserialize)]
struct Block {
    #[serde(rename = "type")]
    kind: String,
    #[serde(default)]
    text: Option<String>,
    #[serde(default)]
    thinking: Option<String>,
    #[serde(default)]
    signature: Option<String>,
    #[serde(default)]
    data: Option<String>,
    #[serde(default)]
    id: Option<String>,
    #[serde(default)]
    name: Option<String>,
    #[serde(default)]
    input: Option<Value>,
}

/// A `content_block_delta`'s delta or a `message_delta`'s delta (only `stop_reason`).
#[derive(Deserialize)]
struct Delta {
    #[serde(rename = "type", default)]
    kind: String,
    #[serde(default)]
    text: Option<String>,
    #[serde(default)]
    thinking: Option<String>,
    #[serde(default)]
    signature: Option<String>,
    #[serde(default)]
    partial_json: Option<String>,
    #[serde(default)]
    stop_reason: Option<String>,
}

#[derive(Deserialize)]
struct Usage {
    #[serde(default)]
    input_tokens: Option<u64>,
    #[serde(default)]
    output_tokens: Option<u64>,
    #[serde(default)]
    cache_read_input_tokens: Option<u64>,
    #[serde(default)]
    cache_creation_input_tokens: Option<u64>,
}

impl AnthropicDecoder {
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
                    Wire::Anthropic,
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
        match parsed.kind.as_str() {
            "message_start" => {
                if let Some(usage) = parsed.message.and_then(|m| m.usage) {
                    self.merge_usage(usage, out);
                }
            }
            "content_block_start" => {
                if let (Some(index), Some(block)) = (parsed.index, parsed.content_block) {
                    self.start_block(index, block, out)?;
                }
            }
            "content_block_delta" => {
                if let (Some(index), Some(delta)) = (parsed.index, parsed.delta) {
                    self.block_delta(index, delta, out);
                }
            }
            "content_block_stop" => {
                if let Some(index) = parsed.index {
                    self.stop_block(index, out);
                }
            }
            "message_delta" => {
                if let Some(reason) = parsed.delta.and_then(|d| d.stop_reason) {
                    out.push(StreamEvent::Finish(map_stop_reason(&reason)));
                }
                if let Some(usage) = parsed.usage {
                    self.merge_usage(usage, out);
                }
            }
            "message_stop" => out.push(StreamEvent::Done),
            "error" => {
                let error = parsed.error.unwrap_or(Value::Null);
                out.push(StreamEvent::Error(stream_error(&error)));
            }
            // `ping`, and event types newer than this decoder.
            _ => {}
        }
        Ok(())
    }

    /// A whole message: its blocks each started and stopped, then its stop reason.
    pub fn decode_whole(
        &mut self,
        value: Value,
        out: &mut Vec<StreamEvent>,
    ) -> Result<(), ProviderError> {
        let whole: WholeMessage = serde_json::from_value(value)
            .map_err(|e| ProviderError::Decode(format!("{e} in the JSON message")))?;
        if let Some(error) = whole.error.filter(|e| !e.is_null()) {
            out.push(StreamEvent::Error(stream_error(&error)));
            return Ok(());
        }
        let Some(content) = whole.content.filter(|_| whole.kind != "error") else {
            out.push(StreamEvent::Error(StreamError::uncoded(
                "the provider answered with a JSON body without `content`",
            )));
            return Ok(());
        };
        if let Some(usage) = whole.usage {
            self.merge_usage(usage, out);
        }
        for (index, block) in content.into_iter().enumerate() {
            self.start_block(index, block, out)?;
            self.stop_block(index, out);
        }
        if let Some(reason) = whole.stop_reason {
            out.push(StreamEvent::Finish(map_stop_reason(&reason)));
        }
        out.push(StreamEvent::Done);
        Ok(())
    }

    /// A block that is not an object of the known shape fails the stream, as an event that
    /// does not parse does.
    fn start_block(
        &mut self,
        index: usize,
        raw: Value,
        out: &mut Vec<StreamEvent>,
    ) -> Result<(), ProviderError> {
        out.push(StreamEvent::BlockEnd);
        let kind = match raw.get("type").and_then(Value::as_str) {
            Some("server_tool_use")
                if raw.get("name").and_then(Value::as_str) == Some("web_search") =>
            {
                out.push(StreamEvent::OtherBlock("server_tool_use".to_string()));
                BlockKind::WebSearch {
                    block: raw,
                    input: String::new(),
                }
            }
            Some("web_search_tool_result") => {
                out.push(StreamEvent::OtherBlock(
                    "web_search_tool_result".to_string(),
                ));
                out.push(StreamEvent::WebSearch(search_result(raw)));
                BlockKind::Ignored
            }
            _ => self.start_plain_block(index, raw, out)?,
        };
        match self.blocks.iter_mut().find(|(i, _)| *i == index) {
            Some(slot) => slot.1 = kind,
            None => self.blocks.push((index, kind)),
        }
        Ok(())
    }

    fn start_plain_block(
        &mut self,
        index: usize,
        raw: Value,
        out: &mut Vec<StreamEvent>,
    ) -> Result<BlockKind, ProviderError> {
        let block = Block::deserialize(&raw).map_err(|e| {
            ProviderError::Decode(format!(
                "{e} in content block {}",
                snippet(&raw.to_string())
            ))
        })?;
        Ok(match block.kind.as_str() {
            "text" => {
                push_nonempty(StreamEvent::Text, block.text, out);
                BlockKind::Text
            }
            "thinking" => {
                push_nonempty(StreamEvent::Thinking, block.thinking, out);
                push_nonempty(StreamEvent::ThinkingSignature, block.signature, out);
                BlockKind::Thinking
            }
            "redacted_thinking" => {
                out.push(StreamEvent::RedactedThinking(
                    block.data.unwrap_or_default(),
                ));
                BlockKind::Ignored
            }
            "tool_use" => {
                out.push(StreamEvent::ToolCall {
                    key: index,
                    id: block.id,
                    name: block.name,
                    arguments: String::new(),
                });
                BlockKind::ToolUse {
                    streamed: false,
                    start_input: block.input,
                }
            }
            other => {
                out.push(StreamEvent::OtherBlock(other.to_string()));
                BlockKind::Ignored
            }
        })
    }

    fn block_delta(&mut self, index: usize, delta: Delta, out: &mut Vec<StreamEvent>) {
        let Some((_, kind)) = self.blocks.iter_mut().find(|(i, _)| *i == index) else {
            return;
        };
        match (kind, delta.kind.as_str()) {
            (BlockKind::Text, "text_delta") => push_nonempty(StreamEvent::Text, delta.text, out),
            (BlockKind::Thinking, "thinking_delta") => {
                push_nonempty(StreamEvent::Thinking, delta.thinking, out)
            }
            (BlockKind::Thinking, "signature_delta") => {
                push_nonempty(StreamEvent::ThinkingSignature, delta.signature, out)
            }
            (BlockKind::ToolUse { streamed, .. }, "input_json_delta") => {
                let partial = delta.partial_json.unwrap_or_default();
                if !partial.is_empty() {
                    *streamed = true;
                    out.push(StreamEvent::ToolCall {
                        key: index,
                        id: None,
                        name: None,
                        arguments: partial,
                    });
                }
            }
            (BlockKind::WebSearch { input, .. }, "input_json_delta") => {
                input.push_str(delta.partial_json.as_deref().unwrap_or_default());
            }
            // `citations_delta`, deltas of ignored blocks, and delta types newer than this.
            _ => {}
        }
    }

    fn stop_block(&mut self, index: usize, out: &mut Vec<StreamEvent>) {
        let slot = self.blocks.iter_mut().find(|(i, _)| *i == index);
        if let Some((_, kind @ BlockKind::WebSearch { .. })) = slot
            && let BlockKind::WebSearch { block, input } =
                std::mem::replace(kind, BlockKind::Ignored)
        {
            out.push(StreamEvent::WebSearch(search_call(block, &input)));
        }
        if let Some((
            _,
            BlockKind::ToolUse {
                streamed: false,
                start_input,
            },
        )) = self.blocks.iter_mut().find(|(i, _)| *i == index)
            && let Some(input) = start_input.take().filter(has_fields)
        {
            out.push(StreamEvent::ToolCallArguments {
                key: index,
                arguments: input.to_string(),
            });
        }
        out.push(StreamEvent::BlockEnd);
    }

    /// Fold a usage object into the running totals: a field present later replaces the
    /// earlier value (`message_delta` carries the final counts).
    fn merge_usage(&mut self, usage: Usage, out: &mut Vec<StreamEvent>) {
        let merged = &mut self.usage;
        merged.input = usage.input_tokens.unwrap_or(merged.input);
        merged.output = usage.output_tokens.unwrap_or(merged.output);
        merged.cache_read = usage.cache_read_input_tokens.unwrap_or(merged.cache_read);
        merged.cache_write = usage
            .cache_creation_input_tokens
            .unwrap_or(merged.cache_write);
        merged.input_includes_cache = false;
        out.push(StreamEvent::Usage(merged.clone()));
    }
}

/// The call of a web search, its streamed input put into the block (the block's own
/// `input` stays when nothing streamed).
fn search_call(mut block: Value, input: &str) -> WebSearchStep {
    if !input.trim().is_empty() {
        let parsed = serde_json::from_str::<Value>(input)
            .ok()
            .filter(Value::is_object);
        // Input that is not an object (cut off) cannot be sent back: `{}` stands for it.
        block["input"] = parsed.unwrap_or_else(|| Value::Object(Default::default()));
    }
    let text = |key: &str| block.get(key).and_then(Value::as_str).map(str::to_string);
    WebSearchStep {
        id: text("id").unwrap_or_default(),
        api: API,
        query: block
            .get("input")
            .and_then(|input| input.get("query"))
            .and_then(Value::as_str)
            .map(str::to_string),
        status: WebSearchStatus::InProgress,
        results: None,
        error: None,
        block: Some(block),
    }
}

/// A `web_search_tool_result` block: the pages found, or the error object.
fn search_result(block: Value) -> WebSearchStep {
    let id = block
        .get("tool_use_id")
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_string();
    let content = block.get("content");
    let (status, results, error) = match content.and_then(Value::as_array) {
        Some(pages) => (
            WebSearchStatus::Completed,
            pages
                .iter()
                .filter(|page| {
                    page.get("type").and_then(Value::as_str) == Some("web_search_result")
                })
                .map(|page| {
                    let field = |key: &str| {
                        page.get(key)
                            .and_then(Value::as_str)
                            .unwrap_or_default()
                            .to_string()
                    };
                    WebSearchResult {
                        title: field("title"),
                        url: field("url"),
                    }
                })
                .collect(),
            None,
        ),
        None => (
            WebSearchStatus::Failed,
            Vec::new(),
            Some(
                content
                    .and_then(|c| c.get("error_code"))
                    .and_then(Value::as_str)
                    .unwrap_or("unknown error")
                    .to_string(),
            ),
        ),
    };
    WebSearchStep {
        id,
        api: API,
        query: None,
        status,
        results: Some(results),
        error,
        block: Some(block),
    }
}

fn has_fields(input: &Value) -> bool {
    input.as_object().is_some_and(|fields| !fields.is_empty())
}

fn map_stop_reason(reason: &str) -> FinishReason {
    match reason {
        "end_turn" | "stop_sequence" => FinishReason::Stop,
        "pause_turn" => FinishReason::Pause,
        "tool_use" => FinishReason::ToolUse,
        "max_tokens" | "model_context_window_exceeded" => FinishReason::Length,
        "refusal" => FinishReason::ContentFilter,
        other => FinishReason::Other(other.to_string()),
    }
}

/// `Overloaded (overloaded_error)`: the message, and the error type, which is what tells a
/// transient failure from a permanent one.
/// An error object as a stream error, judged by its `type`.
fn stream_error(error: &Value) -> StreamError {
    StreamError::coded(Wire::Anthropic, error, describe_error(error))
}

pub fn describe_error(error: &Value) -> String {
    let message = error_text(error);
    match error.get("type").and_then(Value::as_str) {
        Some(kind) if !message.contains(kind) => format!("{message} ({kind})"),
        _ => message,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn decode_all(frames: &[&str]) -> Vec<StreamEvent> {
        let mut decoder = AnthropicDecoder::default();
        let mut out = Vec::new();
        for frame in frames {
            decoder.decode("", frame, &mut out).unwrap();
        }
        out
    }

    #[test]
    fn two_thinking_blocks_stay_apart() {
        let out = decode_all(&[
            r#"{"type":"content_block_start","index":0,"content_block":{"type":"thinking","thinking":"","signature":""}}"#,
            r#"{"type":"content_block_delta","index":0,"delta":{"type":"thinking_delta","thinking":"a"}}"#,
            r#"{"type":"content_block_delta","index":0,"delta":{"type":"signature_delta","signature":"s1"}}"#,
            r#"{"type":"content_block_stop","index":0}"#,
            r#"{"type":"content_block_start","index":1,"content_block":{"type":"thinking","thinking":"","signature":""}}"#,
            r#"{"type":"content_block_delta","index":1,"delta":{"type":"thinking_delta","thinking":"b"}}"#,
            r#"{"type":"content_block_delta","index":1,"delta":{"type":"signature_delta","signature":"s2"}}"#,
            r#"{"type":"content_block_stop","index":1}"#,
        ]);
        use StreamEvent::*;
        assert_eq!(
            out,
            vec![
                BlockEnd,
                Thinking("a".into()),
                ThinkingSignature("s1".into()),
                BlockEnd,
                BlockEnd,
                Thinking("b".into()),
                ThinkingSignature("s2".into()),
                BlockEnd,
            ]
        );
    }

    #[test]
    fn a_web_search_is_not_a_client_call() {
        let out = decode_all(&[
            r#"{"type":"content_block_start","index":0,"content_block":{"type":"server_tool_use","id":"srv","name":"web_search","input":{}}}"#,
            r#"{"type":"content_block_delta","index":0,"delta":{"type":"input_json_delta","partial_json":"{\"query\":"}}"#,
            r#"{"type":"content_block_delta","index":0,"delta":{"type":"input_json_delta","partial_json":"\"rust\"}"}}"#,
            r#"{"type":"content_block_stop","index":0}"#,
            r#"{"type":"content_block_start","index":1,"content_block":{"type":"web_search_tool_result","tool_use_id":"srv","content":{"type":"web_search_tool_result_error","error_code":"max_uses_exceeded"}}}"#,
            r#"{"type":"content_block_stop","index":1}"#,
        ]);
        let call = WebSearchStep {
            id: "srv".into(),
            api: "anthropic",
            query: Some("rust".into()),
            status: WebSearchStatus::InProgress,
            results: None,
            error: None,
            block: Some(
                serde_json::json!({"type": "server_tool_use", "id": "srv", "name": "web_search", "input": {"query": "rust"}}),
            ),
        };
        let failed = WebSearchStep {
            id: "srv".into(),
            api: "anthropic",
            query: None,
            status: WebSearchStatus::Failed,
            results: Some(vec![]),
            error: Some("max_uses_exceeded".into()),
            block: Some(
                serde_json::json!({"type": "web_search_tool_result", "tool_use_id": "srv",
                "content": {"type": "web_search_tool_result_error", "error_code": "max_uses_exceeded"}}),
            ),
        };
        assert_eq!(
            out,
            vec![
                StreamEvent::BlockEnd,
                StreamEvent::OtherBlock("server_tool_use".into()),
                StreamEvent::WebSearch(call),
                StreamEvent::BlockEnd,
                StreamEvent::BlockEnd,
                StreamEvent::OtherBlock("web_search_tool_result".into()),
                StreamEvent::WebSearch(failed),
                StreamEvent::BlockEnd,
            ]
        );
    }

    #[test]
    fn whole_input_at_block_start_becomes_the_arguments() {
        let out = decode_all(&[
            r#"{"type":"content_block_start","index":2,"content_block":{"type":"tool_use","id":"t","name":"read","input":{"path":"a"}}}"#,
            r#"{"type":"content_block_stop","index":2}"#,
        ]);
        assert!(out.contains(&StreamEvent::ToolCallArguments {
            key: 2,
            arguments: r#"{"path":"a"}"#.into()
        }));
    }

    #[test]
    fn errors_name_their_type_and_usage_merges() {
        let out = decode_all(&[
            r#"{"type":"message_start","message":{"usage":{"input_tokens":43,"output_tokens":1,"cache_read_input_tokens":7}}}"#,
            r#"{"type":"message_delta","delta":{"stop_reason":"end_turn"},"usage":{"input_tokens":61,"output_tokens":9}}"#,
            r#"{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}"#,
        ]);
        assert_eq!(
            out.last(),
            Some(&StreamEvent::Error(StreamError {
                message: "Overloaded (overloaded_error)".into(),
                verdict: Some(crate::llm::error_codes::Verdict::Retry(
                    crate::llm::error::Retry::Transient
                )),
            }))
        );
        assert!(out.contains(&StreamEvent::Usage(WireUsage {
            input: 61,
            output: 9,
            cache_read: 7,
            cache_write: 0,
            reasoning: 0,
            input_includes_cache: false,
        })));
    }
}
