//! Decodes Chat Completions stream chunks into `StreamEvent`s, including the quirks of the
//! servers that speak it (see ../shared/conformance/README.md): tool-call deltas without an
//! `index`, indices that start at 1, empty `id`/`name` in later deltas, arguments whole in one
//! chunk, usage in a final chunk without choices (or in `x_groq`), `event: error` frames and
//! error objects inside chunks. A whole (non-streamed) completion is read as one chunk whose
//! choice has a `message` where a chunk has a `delta`.

use crate::llm::error::{ProviderError, error_text, snippet};
use crate::llm::error_codes::{StreamError, Wire};
use crate::llm::stream_event::{FinishReason, StreamEvent, WireUsage};
use serde::Deserialize;
use serde_json::Value;

#[derive(Default)]
pub struct ChatDecoder {
    /// Calls seen so far, in order of first appearance: the wire index (if any) and id.
    calls: Vec<(Option<u64>, String)>,
}

#[derive(Deserialize)]
struct Chunk {
    #[serde(default)]
    choices: Vec<Choice>,
    #[serde(default)]
    usage: Option<ChunkUsage>,
    #[serde(default)]
    error: Option<Value>,
    #[serde(default)]
    x_groq: Option<XGroq>,
}

#[derive(Deserialize)]
struct XGroq {
    #[serde(default)]
    usage: Option<ChunkUsage>,
}

#[derive(Deserialize)]
struct Choice {
    #[serde(default)]
    index: u64,
    /// `message` in a whole completion.
    #[serde(default, alias = "message")]
    delta: Option<Delta>,
    #[serde(default)]
    finish_reason: Option<String>,
}

#[derive(Deserialize)]
struct Delta {
    #[serde(default)]
    content: Option<String>,
    #[serde(default)]
    reasoning_content: Option<String>,
    #[serde(default)]
    reasoning: Option<String>,
    #[serde(default)]
    refusal: Option<String>,
    #[serde(default)]
    tool_calls: Option<Vec<ToolCallDelta>>,
}

#[derive(Deserialize)]
struct ToolCallDelta {
    #[serde(default)]
    index: Option<u64>,
    #[serde(default)]
    id: Option<String>,
    #[serde(default)]
    function: Option<FunctionDelta>,
}

#[derive(Deserialize)]
struct FunctionDelta {
    #[serde(default)]
    name: Option<String>,
    #[serde(default)]
    arguments: Option<String>,
}

#[derive(Deserialize)]
struct ChunkUsage {
    #[serde(default)]
    prompt_tokens: u64,
    #[serde(default)]
    completion_tokens: u64,
    #[serde(default)]
    prompt_tokens_details: Option<PromptTokensDetails>,
    #[serde(default)]
    completion_tokens_details: Option<CompletionTokensDetails>,
}

#[derive(Deserialize)]
struct CompletionTokensDetails {
    #[serde(default)]
    reasoning_tokens: Option<u64>,
}

#[derive(Deserialize)]
struct PromptTokensDetails {
    #[serde(default)]
    cached_tokens: Option<u64>,
}

impl ChatDecoder {
    /// Decode one frame's data; blank frames and `[DONE]` were handled by the caller.
    pub fn decode(
        &mut self,
        event: &str,
        data: &str,
        out: &mut Vec<StreamEvent>,
    ) -> Result<(), ProviderError> {
        if event == "error" {
            out.push(StreamEvent::Error(StreamError::from_data(Wire::Chat, data)));
            return Ok(());
        }
        let chunk: Chunk = serde_json::from_str(data)
            .map_err(|e| ProviderError::Decode(format!("{e} in chunk {}", snippet(data))))?;
        self.decode_chunk(chunk, out);
        Ok(())
    }

    /// A whole completion (`chat.completion`), or an error object.
    pub fn decode_whole(
        &mut self,
        value: Value,
        out: &mut Vec<StreamEvent>,
    ) -> Result<(), ProviderError> {
        let mut chunk: Chunk = serde_json::from_value(value)
            .map_err(|e| ProviderError::Decode(format!("{e} in the JSON completion")))?;
        let failed = chunk.error.as_ref().is_some_and(|e| !e.is_null());
        if chunk.choices.is_empty() && !failed {
            out.push(StreamEvent::Error(StreamError::uncoded(
                "the provider answered with a JSON body without `choices`",
            )));
            return Ok(());
        }
        // A message's calls are whole, one per entry, and may carry no index or id.
        for choice in &mut chunk.choices {
            let calls = choice.delta.as_mut().and_then(|d| d.tool_calls.as_mut());
            for (position, call) in calls.into_iter().flatten().enumerate() {
                call.index = call.index.or(u64::try_from(position).ok());
            }
        }
        self.decode_chunk(chunk, out);
        if !failed {
            out.push(StreamEvent::Done);
        }
        Ok(())
    }

    fn decode_chunk(&mut self, chunk: Chunk, out: &mut Vec<StreamEvent>) {
        for choice in chunk.choices {
            // Only the first choice is the answer (n > 1 streams interleave the others).
            if choice.index != 0 {
                continue;
            }
            if let Some(delta) = choice.delta {
                self.decode_delta(delta, out);
            }
            if let Some(reason) = choice.finish_reason {
                out.push(StreamEvent::Finish(map_finish(&reason)));
            }
        }
        let usage = chunk.usage.or(chunk.x_groq.and_then(|x| x.usage));
        if let Some(usage) = usage {
            out.push(StreamEvent::Usage(WireUsage {
                input: usage.prompt_tokens,
                output: usage.completion_tokens,
                cache_read: usage
                    .prompt_tokens_details
                    .and_then(|d| d.cached_tokens)
                    .unwrap_or(0),
                cache_write: 0,
                reasoning: usage
                    .completion_tokens_details
                    .and_then(|d| d.reasoning_tokens)
                    .unwrap_or(0),
                input_includes_cache: true,
            }));
        }
        if let Some(error) = chunk.error.filter(|e| !e.is_null()) {
            let message = error_text(&error);
            out.push(StreamEvent::Error(StreamError::coded(
                Wire::Chat,
                &error,
                message,
            )));
        }
    }

    fn decode_delta(&mut self, delta: Delta, out: &mut Vec<StreamEvent>) {
        let reasoning = delta
            .reasoning_content
            .filter(|r| !r.is_empty())
            .or(delta.reasoning);
        if let Some(thinking) = reasoning.filter(|r| !r.is_empty()) {
            out.push(StreamEvent::Thinking(thinking));
        }
        if let Some(text) = delta.content.filter(|c| !c.is_empty()) {
            out.push(StreamEvent::Text(text));
        }
        if let Some(refusal) = delta.refusal.filter(|r| !r.is_empty()) {
            out.push(StreamEvent::Refusal(refusal));
        }
        for call in delta.tool_calls.unwrap_or_default() {
            let key = self.key_for(call.index, call.id.as_deref());
            let (name, arguments) = match call.function {
                Some(f) => (f.name, f.arguments.unwrap_or_default()),
                None => (None, String::new()),
            };
            out.push(StreamEvent::ToolCall {
                key,
                id: call.id,
                name,
                arguments,
            });
        }
    }

    /// Which call a delta belongs to. With an `index`, the index decides (whatever number
    /// it starts at); without one, a new non-empty id starts a call and anything else
    /// continues the last.
    fn key_for(&mut self, index: Option<u64>, id: Option<&str>) -> usize {
        let id = id.unwrap_or("");
        if let Some(index) = index {
            if let Some(key) = self.calls.iter().position(|(i, _)| *i == Some(index)) {
                return key;
            }
        } else if let Some((_, last_id)) = self.calls.last()
            && (id.is_empty() || id == last_id)
        {
            return self.calls.len() - 1;
        }
        self.calls.push((index, id.to_string()));
        self.calls.len() - 1
    }
}

fn map_finish(reason: &str) -> FinishReason {
    match reason {
        "stop" | "end_turn" | "eos" => FinishReason::Stop,
        "tool_calls" | "function_call" => FinishReason::ToolUse,
        "length" | "max_tokens" => FinishReason::Length,
        "content_filter" => FinishReason::ContentFilter,
        other => FinishReason::Other(other.to_string()),
    }
}
