//! The assembler: folds `StreamEvent`s into the streaming `AssistantMessage` and reports each
//! change as an `AssistantMessageEvent`. Work per event is proportional to the event: text is
//! appended in place, tool-call arguments are kept as raw text and parsed once at the end
//! (or on demand, for a snapshot). Provider web search steps fill one `webSearch` block per
//! search; the searches that got their outcome are handed out once (`finished_searches`).

use super::partial_json::parse_partial;
use super::stream_event::{FinishReason, StreamEvent, WebSearchStep, WireUsage};
use crate::protocol::event::AssistantMessageEvent;
use crate::protocol::message::{
    AssistantContent, AssistantMessage, StopReason, ToolCall, Usage, WebSearch, WebSearchStatus,
};
use serde_json::{Map, Value};

/// What the stream said beyond the message itself: the provider's own finish reason and
/// usage, refusal text, unhandled block types. The conformance tests check these.
#[derive(Clone, Debug, Default)]
pub struct StreamReport {
    pub finish: Option<FinishReason>,
    pub usage: Option<WireUsage>,
    pub refusal: Option<String>,
    pub error: Option<String>,
    pub other_blocks: Vec<String>,
    pub done: bool,
}

struct CallSlot {
    key: usize,
    content_index: usize,
    raw_arguments: String,
}

pub struct Assembler {
    message: AssistantMessage,
    open: Option<usize>,
    calls: Vec<CallSlot>,
    report: StreamReport,
    /// The final message as the proxy sent it, if it did.
    final_message: Option<AssistantMessage>,
    /// Content indices of web searches whose outcome arrived and was not handed out yet.
    finished_searches: Vec<usize>,
}

impl Assembler {
    pub fn new(provider: &str, model: &str) -> Self {
        Assembler {
            message: AssistantMessage::empty(provider, model),
            open: None,
            calls: Vec::new(),
            report: StreamReport::default(),
            final_message: None,
            finished_searches: Vec::new(),
        }
    }

    /// The web searches whose outcome arrived since the last call (for the `web_search`
    /// event).
    pub fn finished_searches(&mut self) -> Vec<WebSearch> {
        let content = &self.message.content;
        self.finished_searches
            .drain(..)
            .filter_map(|index| match content.get(index) {
                Some(AssistantContent::WebSearch(search)) => Some(WebSearch {
                    provider_blocks: Vec::new(),
                    ..search.clone()
                }),
                _ => None,
            })
            .collect()
    }

    /// The message as it stands; tool-call arguments are filled in only by `finish`.
    pub fn message(&self) -> &AssistantMessage {
        &self.message
    }

    pub fn report(&self) -> &StreamReport {
        &self.report
    }

    /// A copy of the partial message with each tool call's arguments parsed as far as they
    /// have streamed. Costs O(message); meant for a renderer, once per frame at most.
    pub fn snapshot(&self) -> AssistantMessage {
        let mut message = self.message.clone();
        for call in &self.calls {
            if let Some(AssistantContent::ToolCall(tool_call)) =
                message.content.get_mut(call.content_index)
            {
                tool_call.arguments =
                    parse_partial(&call.raw_arguments).unwrap_or_else(|| Value::Object(Map::new()));
            }
        }
        message
    }

    pub fn apply(&mut self, event: StreamEvent, out: &mut Vec<AssistantMessageEvent>) {
        match event {
            StreamEvent::Text(delta) => self.append_text(delta, out),
            StreamEvent::Thinking(delta) => self.append_thinking(delta, out),
            StreamEvent::ThinkingSignature(part) => self.append_signature(part, out),
            StreamEvent::RedactedThinking(data) => {
                let index = self.start_block(
                    AssistantContent::Thinking {
                        thinking: String::new(),
                        signature: Some(data),
                        redacted: true,
                    },
                    out,
                );
                out.push(AssistantMessageEvent::ThinkingStart {
                    content_index: index,
                });
                self.close_open(out);
            }
            StreamEvent::ToolCall {
                key,
                id,
                name,
                arguments,
            } => self.apply_tool_call(key, id, name, arguments, out),
            StreamEvent::ToolCallArguments { key, arguments } => {
                self.replace_arguments(key, arguments, out)
            }
            StreamEvent::Refusal(text) => {
                self.report
                    .refusal
                    .get_or_insert_with(String::new)
                    .push_str(&text);
            }
            StreamEvent::OtherBlock(kind) => self.report.other_blocks.push(kind),
            StreamEvent::WebSearch(step) => self.apply_search(step, out),
            StreamEvent::BlockEnd => self.close_open(out),
            StreamEvent::Usage(usage) => self.report.usage = Some(usage),
            StreamEvent::Finish(reason) => self.report.finish = Some(reason),
            StreamEvent::Error(error) => self.report.error = Some(error.message),
            StreamEvent::Final(message) => self.final_message = Some(*message),
            StreamEvent::Done => self.report.done = true,
        }
    }

    /// Close the message normally, applying the agent's stop-reason policy (docs/protocol.md §6):
    /// an error or the content filter is `error`; a call cut off by the output limit makes
    /// it `length`; other calls make it `toolUse`; a refusal is a normal stop.
    pub fn finish(
        mut self,
        out: &mut Vec<AssistantMessageEvent>,
    ) -> (AssistantMessage, StreamReport) {
        self.close_open(out);
        if let Some(message) = self.final_message.take() {
            return (message, self.report);
        }
        self.finalize_tool_calls();
        self.message.usage = self.report.usage.as_ref().map(to_usage).unwrap_or_default();
        // A refusal is the model's answer, not a failure: kept apart from the text, so it
        // is shown as what it is.
        self.message.refusal = self.report.refusal.clone();
        let cut_off = self.report.finish == Some(FinishReason::Length);
        let (stop, error) = if let Some(error) = &self.report.error {
            (StopReason::Error, Some(error.clone()))
        } else if self.report.finish == Some(FinishReason::ContentFilter) {
            (
                StopReason::Error,
                Some("The provider's content filter stopped the response.".to_string()),
            )
        } else if cut_off
            && self
                .message
                .tool_calls()
                .any(|call| call.invalid_arguments.is_some())
        {
            // The limit cut a call's arguments short: the answer is incomplete, and that
            // call is answered with an error, never run.
            (StopReason::Length, None)
        } else if self.message.has_tool_calls() {
            (StopReason::ToolUse, None)
        } else if cut_off {
            (StopReason::Length, None)
        } else {
            (StopReason::Stop, None)
        };
        self.message.stop_reason = stop;
        self.message.error_message = error;
        (self.message, self.report)
    }

    /// Close the message because the request failed or was aborted. Whatever streamed so far
    /// is kept (it is what the user saw).
    pub fn fail(
        mut self,
        stop: StopReason,
        error_message: String,
        out: &mut Vec<AssistantMessageEvent>,
    ) -> (AssistantMessage, StreamReport) {
        self.close_open(out);
        self.finalize_tool_calls();
        self.message.usage = self.report.usage.as_ref().map(to_usage).unwrap_or_default();
        self.message.stop_reason = stop;
        self.message.error_message = Some(error_message);
        (self.message, self.report)
    }

    fn append_text(&mut self, delta: String, out: &mut Vec<AssistantMessageEvent>) {
        if delta.is_empty() {
            return;
        }
        let index = match self.open_block_mut() {
            Some(AssistantContent::Text { text }) => {
                text.push_str(&delta);
                self.open.unwrap_or_default()
            }
            _ => {
                let index = self.start_block(
                    AssistantContent::Text {
                        text: delta.clone(),
                    },
                    out,
                );
                out.push(AssistantMessageEvent::TextStart {
                    content_index: index,
                });
                index
            }
        };
        out.push(AssistantMessageEvent::TextDelta {
            content_index: index,
            delta,
        });
    }

    fn append_thinking(&mut self, delta: String, out: &mut Vec<AssistantMessageEvent>) {
        if delta.is_empty() {
            return;
        }
        let index = match self.open_block_mut() {
            Some(AssistantContent::Thinking {
                thinking,
                redacted: false,
                ..
            }) => {
                thinking.push_str(&delta);
                self.open.unwrap_or_default()
            }
            _ => {
                let index = self.start_block(
                    AssistantContent::Thinking {
                        thinking: delta.clone(),
                        signature: None,
                        redacted: false,
                    },
                    out,
                );
                out.push(AssistantMessageEvent::ThinkingStart {
                    content_index: index,
                });
                index
            }
        };
        out.push(AssistantMessageEvent::ThinkingDelta {
            content_index: index,
            delta,
        });
    }

    fn append_signature(&mut self, part: String, out: &mut Vec<AssistantMessageEvent>) {
        if part.is_empty() {
            return;
        }
        if let Some(AssistantContent::Thinking {
            signature,
            redacted: false,
            ..
        }) = self.open_block_mut()
        {
            signature.get_or_insert_with(String::new).push_str(&part);
            return;
        }
        // Thinking with no visible text still has to be replayed with its signature.
        let index = self.start_block(
            AssistantContent::Thinking {
                thinking: String::new(),
                signature: Some(part),
                redacted: false,
            },
            out,
        );
        out.push(AssistantMessageEvent::ThinkingStart {
            content_index: index,
        });
    }

    /// The authoritative argument text of a call. When it extends what streamed (the usual
    /// case, or nothing streamed at all), the rest goes out as a delta, so a client that
    /// concatenates deltas still ends with the full arguments.
    fn replace_arguments(
        &mut self,
        key: usize,
        arguments: String,
        out: &mut Vec<AssistantMessageEvent>,
    ) {
        let open = self.open;
        let Some(slot) = self.calls.iter_mut().find(|slot| slot.key == key) else {
            return;
        };
        if let Some(rest) = arguments.strip_prefix(slot.raw_arguments.as_str())
            && !rest.is_empty()
            && open == Some(slot.content_index)
        {
            out.push(AssistantMessageEvent::ToolCallDelta {
                content_index: slot.content_index,
                delta: rest.to_string(),
            });
        }
        slot.raw_arguments = arguments;
    }

    fn apply_tool_call(
        &mut self,
        key: usize,
        id: Option<String>,
        name: Option<String>,
        arguments: String,
        out: &mut Vec<AssistantMessageEvent>,
    ) {
        let existing = self.calls.iter().position(|slot| slot.key == key);
        let slot_index = match existing {
            Some(slot_index) => {
                let content_index = self.calls[slot_index].content_index;
                if let Some(AssistantContent::ToolCall(call)) =
                    self.message.content.get_mut(content_index)
                {
                    fill_if_empty(&mut call.id, id);
                    fill_if_empty(&mut call.name, name);
                }
                slot_index
            }
            None => {
                let call = ToolCall {
                    id: id.unwrap_or_default(),
                    name: name.unwrap_or_default(),
                    arguments: Value::Object(Map::new()),
                    invalid_arguments: None,
                };
                let content_index = self.start_block(AssistantContent::ToolCall(call), out);
                out.push(AssistantMessageEvent::ToolCallStart { content_index });
                self.calls.push(CallSlot {
                    key,
                    content_index,
                    raw_arguments: String::new(),
                });
                self.calls.len() - 1
            }
        };
        if !arguments.is_empty() {
            let slot = &mut self.calls[slot_index];
            slot.raw_arguments.push_str(&arguments);
            // A call whose block another block closed (servers that interleave parallel
            // calls) still collects its arguments, but announces no delta after its end.
            if self.open == Some(slot.content_index) {
                out.push(AssistantMessageEvent::ToolCallDelta {
                    content_index: slot.content_index,
                    delta: arguments,
                });
            }
        }
    }

    /// A step of a provider web search: the first step of an id starts its block (closed
    /// at once: searches have no deltas), later ones fill it in.
    fn apply_search(&mut self, step: WebSearchStep, out: &mut Vec<AssistantMessageEvent>) {
        let existing = self.message.content.iter().position(|block| {
            matches!(block, AssistantContent::WebSearch(search) if !step.id.is_empty() && search.id == step.id)
        });
        let index = match existing {
            Some(index) => index,
            None => {
                self.close_open(out);
                self.message
                    .content
                    .push(AssistantContent::WebSearch(WebSearch {
                        id: step.id,
                        query: String::new(),
                        status: WebSearchStatus::InProgress,
                        results: Vec::new(),
                        error: None,
                        api: step.api.to_string(),
                        provider_blocks: Vec::new(),
                    }));
                self.message.content.len() - 1
            }
        };
        let Some(AssistantContent::WebSearch(search)) = self.message.content.get_mut(index) else {
            return;
        };
        if let Some(query) = step.query.filter(|q| !q.is_empty()) {
            search.query = query;
        }
        search.status = step.status;
        if let Some(results) = step.results {
            search.results = results;
        }
        if step.error.is_some() {
            search.error = step.error;
        }
        search.provider_blocks.extend(step.block);
        if step.status != WebSearchStatus::InProgress && !self.finished_searches.contains(&index) {
            self.finished_searches.push(index);
        }
    }

    fn open_block_mut(&mut self) -> Option<&mut AssistantContent> {
        self.open
            .and_then(|index| self.message.content.get_mut(index))
    }

    /// Close the open block and append `block` as the new open one; returns its index.
    fn start_block(
        &mut self,
        block: AssistantContent,
        out: &mut Vec<AssistantMessageEvent>,
    ) -> usize {
        self.close_open(out);
        self.message.content.push(block);
        let index = self.message.content.len() - 1;
        self.open = Some(index);
        index
    }

    fn close_open(&mut self, out: &mut Vec<AssistantMessageEvent>) {
        let Some(index) = self.open.take() else {
            return;
        };
        let event = match self.message.content.get(index) {
            Some(AssistantContent::Text { .. }) => AssistantMessageEvent::TextEnd {
                content_index: index,
            },
            Some(AssistantContent::Thinking { .. }) => AssistantMessageEvent::ThinkingEnd {
                content_index: index,
            },
            Some(AssistantContent::ToolCall(_)) => AssistantMessageEvent::ToolCallEnd {
                content_index: index,
            },
            // Never open (searches have no deltas).
            Some(AssistantContent::WebSearch(_)) | None => return,
        };
        out.push(event);
    }

    /// Parse every call's accumulated arguments and give id-less calls an id.
    fn finalize_tool_calls(&mut self) {
        for (n, slot) in self.calls.iter_mut().enumerate() {
            let Some(AssistantContent::ToolCall(call)) =
                self.message.content.get_mut(slot.content_index)
            else {
                continue;
            };
            let raw = std::mem::take(&mut slot.raw_arguments);
            if raw.trim().is_empty() {
                call.arguments = Value::Object(Map::new());
            } else {
                match serde_json::from_str::<Value>(&raw) {
                    Ok(value) => call.arguments = value,
                    Err(_) => call.invalid_arguments = Some(raw),
                }
            }
            if call.id.is_empty() {
                call.id = format!("call_{}_{n}", self.message.timestamp);
            }
        }
    }
}

fn fill_if_empty(field: &mut String, value: Option<String>) {
    if field.is_empty()
        && let Some(value) = value
        && !value.is_empty()
    {
        *field = value;
    }
}

fn to_usage(wire: &WireUsage) -> Usage {
    let input = if wire.input_includes_cache {
        wire.input
            .saturating_sub(wire.cache_read)
            .saturating_sub(wire.cache_write)
    } else {
        wire.input
    };
    Usage {
        input,
        output: wire.output,
        cache_read: wire.cache_read,
        cache_write: wire.cache_write,
        reasoning: wire.reasoning,
        total_tokens: input
            .saturating_add(wire.output)
            .saturating_add(wire.cache_read)
            .saturating_add(wire.cache_write),
        cost: Default::default(),
    }
}

#[cfg(test)]
#[path = "assembler_tests.rs"]
mod tests;
