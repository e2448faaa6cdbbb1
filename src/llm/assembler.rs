//! The assembler: folds `StreamEvent`s into the streaming `AssistantMessage` and reports each
//! change as an `AssistantMessageEvent`. Work per event is proportional to the event: text is
//! appended in place, tool-call arguments are kept as raw text and parsed once at the end
//! (or on demand, for a snapshot).

use super::partial_json::parse_partial;
use super::stream_event::{FinishReason, StreamEvent, WireUsage};
use crate::protocol::event::AssistantMessageEvent;
use crate::protocol::message::{AssistantContent, AssistantMessage, StopReason, ToolCall, Usage};
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
}

impl Assembler {
    pub fn new(provider: &str, model: &str) -> Self {
        Assembler {
            message: AssistantMessage::empty(provider, model),
            open: None,
            calls: Vec::new(),
            report: StreamReport::default(),
        }
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
            StreamEvent::BlockEnd => self.close_open(out),
            StreamEvent::Usage(usage) => self.report.usage = Some(usage),
            StreamEvent::Finish(reason) => self.report.finish = Some(reason),
            StreamEvent::Error(message) => self.report.error = Some(message),
            StreamEvent::Done => self.report.done = true,
        }
    }

    /// Close the message normally, applying the agent's stop-reason policy (docs/protocol.md §6).
    pub fn finish(
        mut self,
        out: &mut Vec<AssistantMessageEvent>,
    ) -> (AssistantMessage, StreamReport) {
        self.close_open(out);
        self.finalize_tool_calls();
        self.message.usage = self.report.usage.as_ref().map(to_usage).unwrap_or_default();
        let (stop, error) = if let Some(error) = &self.report.error {
            (StopReason::Error, Some(error.clone()))
        } else if let Some(refusal) = &self.report.refusal {
            (
                StopReason::Error,
                Some(format!("The model refused: {refusal}")),
            )
        } else if self.report.finish == Some(FinishReason::ContentFilter) {
            (
                StopReason::Error,
                Some("The provider's content filter stopped the response.".to_string()),
            )
        } else if self.message.has_tool_calls() {
            (StopReason::ToolUse, None)
        } else if self.report.finish == Some(FinishReason::Length) {
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
            None => return,
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
        total_tokens: input
            .saturating_add(wire.output)
            .saturating_add(wire.cache_read)
            .saturating_add(wire.cache_write),
        cost: Default::default(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use AssistantMessageEvent as E;

    fn call(key: usize, id: &str, name: &str, args: &str) -> StreamEvent {
        StreamEvent::ToolCall {
            key,
            id: Some(id.into()),
            name: Some(name.into()),
            arguments: args.into(),
        }
    }

    #[test]
    fn builds_blocks_and_events_in_order() {
        let mut asm = Assembler::new("p", "m");
        let mut out = Vec::new();
        asm.apply(StreamEvent::Thinking("hmm".into()), &mut out);
        asm.apply(StreamEvent::Text("Hel".into()), &mut out);
        asm.apply(StreamEvent::Text("".into()), &mut out);
        asm.apply(StreamEvent::Text("lo".into()), &mut out);
        asm.apply(call(0, "c1", "read", "{\"path\":"), &mut out);
        asm.apply(call(0, "", "", "\"a\"}"), &mut out);
        asm.apply(call(1, "c2", "bash", ""), &mut out);
        asm.apply(StreamEvent::Finish(FinishReason::Stop), &mut out);
        let snapshot = asm.snapshot();
        let (message, _) = asm.finish(&mut out);
        assert_eq!(
            out,
            vec![
                E::ThinkingStart { content_index: 0 },
                E::ThinkingDelta {
                    content_index: 0,
                    delta: "hmm".into()
                },
                E::ThinkingEnd { content_index: 0 },
                E::TextStart { content_index: 1 },
                E::TextDelta {
                    content_index: 1,
                    delta: "Hel".into()
                },
                E::TextDelta {
                    content_index: 1,
                    delta: "lo".into()
                },
                E::TextEnd { content_index: 1 },
                E::ToolCallStart { content_index: 2 },
                E::ToolCallDelta {
                    content_index: 2,
                    delta: "{\"path\":".into()
                },
                E::ToolCallDelta {
                    content_index: 2,
                    delta: "\"a\"}".into()
                },
                E::ToolCallEnd { content_index: 2 },
                E::ToolCallStart { content_index: 3 },
                E::ToolCallEnd { content_index: 3 },
            ]
        );
        assert_eq!(message.text(), "Hello");
        // A tool call overrides the provider's "stop".
        assert_eq!(message.stop_reason, StopReason::ToolUse);
        let calls: Vec<_> = message.tool_calls().collect();
        assert_eq!(calls[0].id, "c1");
        assert_eq!(calls[0].arguments, serde_json::json!({"path": "a"}));
        assert_eq!(calls[1].arguments, serde_json::json!({}));
        let AssistantContent::ToolCall(partial) = &snapshot.content[2] else {
            panic!("expected a tool call");
        };
        assert_eq!(partial.arguments, serde_json::json!({"path": "a"}));
    }

    #[test]
    fn truncated_arguments_are_flagged_not_guessed() {
        let mut asm = Assembler::new("p", "m");
        let mut out = Vec::new();
        asm.apply(call(0, "c1", "write", "{\"content\": \"abc"), &mut out);
        asm.apply(StreamEvent::Finish(FinishReason::Length), &mut out);
        let (message, report) = asm.finish(&mut out);
        let call = message.tool_calls().next().unwrap();
        assert_eq!(
            call.invalid_arguments.as_deref(),
            Some("{\"content\": \"abc")
        );
        assert_eq!(report.finish, Some(FinishReason::Length));
    }

    #[test]
    fn errors_and_refusals_become_error_stops() {
        let mut asm = Assembler::new("p", "m");
        let mut out = Vec::new();
        asm.apply(StreamEvent::Refusal("I can't".into()), &mut out);
        asm.apply(StreamEvent::Finish(FinishReason::Stop), &mut out);
        let (message, _) = asm.finish(&mut out);
        assert_eq!(message.stop_reason, StopReason::Error);
        assert!(message.error_message.unwrap().contains("I can't"));

        let mut asm = Assembler::new("p", "m");
        asm.apply(StreamEvent::Text("partial".into()), &mut out);
        asm.apply(
            StreamEvent::Usage(WireUsage {
                input: 100,
                output: 5,
                cache_read: 40,
                cache_write: 0,
                input_includes_cache: true,
            }),
            &mut out,
        );
        asm.apply(StreamEvent::Error("overloaded".into()), &mut out);
        let (message, _) = asm.finish(&mut out);
        assert_eq!(message.stop_reason, StopReason::Error);
        assert_eq!(message.error_message.as_deref(), Some("overloaded"));
        assert_eq!(message.text(), "partial");
        assert_eq!(message.usage.input, 60);
        assert_eq!(message.usage.total_tokens, 105);
    }

    #[test]
    fn block_ends_keep_signed_thinking_blocks_apart() {
        let mut asm = Assembler::new("p", "m");
        let mut out = Vec::new();
        for event in [
            StreamEvent::Thinking("first".into()),
            StreamEvent::ThinkingSignature("sig-".into()),
            StreamEvent::ThinkingSignature("1".into()),
            StreamEvent::BlockEnd,
            StreamEvent::Thinking("second".into()),
            StreamEvent::ThinkingSignature("sig-2".into()),
            StreamEvent::BlockEnd,
            // Reasoning with no visible text still keeps its signature.
            StreamEvent::ThinkingSignature("sig-3".into()),
            StreamEvent::BlockEnd,
            StreamEvent::BlockEnd,
        ] {
            asm.apply(event, &mut out);
        }
        let (message, _) = asm.finish(&mut out);
        let blocks: Vec<_> = message
            .content
            .iter()
            .map(|block| match block {
                AssistantContent::Thinking {
                    thinking,
                    signature,
                    ..
                } => (thinking.as_str(), signature.as_deref()),
                other => panic!("unexpected {other:?}"),
            })
            .collect();
        assert_eq!(
            blocks,
            vec![
                ("first", Some("sig-1")),
                ("second", Some("sig-2")),
                ("", Some("sig-3"))
            ]
        );
        let ends = out
            .iter()
            .filter(|e| matches!(e, E::ThinkingEnd { .. }))
            .count();
        assert_eq!(ends, 3, "each block ends once: {out:?}");
    }

    #[test]
    fn final_arguments_stream_what_the_deltas_missed() {
        let mut asm = Assembler::new("p", "m");
        let mut out = Vec::new();
        asm.apply(call(0, "c1", "read", ""), &mut out);
        asm.apply(
            StreamEvent::ToolCallArguments {
                key: 0,
                arguments: "{\"path\":\"a\"}".into(),
            },
            &mut out,
        );
        asm.apply(call(1, "c2", "read", "{\"pa"), &mut out);
        asm.apply(
            StreamEvent::ToolCallArguments {
                key: 1,
                arguments: "{\"path\":\"b\"}".into(),
            },
            &mut out,
        );
        let (message, _) = asm.finish(&mut out);
        let deltas: Vec<_> = out
            .iter()
            .filter_map(|e| match e {
                E::ToolCallDelta {
                    content_index,
                    delta,
                } => Some((*content_index, delta.as_str())),
                _ => None,
            })
            .collect();
        assert_eq!(
            deltas,
            vec![(0, "{\"path\":\"a\"}"), (1, "{\"pa"), (1, "th\":\"b\"}")]
        );
        let args: Vec<_> = message.tool_calls().map(|c| c.arguments.clone()).collect();
        assert_eq!(
            args,
            vec![
                serde_json::json!({"path": "a"}),
                serde_json::json!({"path": "b"})
            ]
        );
    }
}
