//! The `agent-proxy` wire API: a model call through `agent proxy` (docs/protocol.md §8). The
//! request is the context as protocol messages; the answer is the proxy's event stream of
//! `assistantMessageEvent`s, turned back into the `StreamEvent`s that rebuild the same partial
//! message here, then `done` with the final message (authoritative: signatures, tool call ids
//! and usage arrive with it) or `error` with what a direct connection would have reported.

use super::error::{ProviderError, Retry, snippet};
use super::provider::ProviderSettings;
use super::request::{ModelRequest, ThinkingLevel};
use super::stream_event::{StreamEvent, WireUsage};
use super::wire::{WireApi, WireDecoder};
use crate::protocol::event::AssistantMessageEvent;
use crate::protocol::proxy::{
    ProxyTool, StreamContext, StreamEnd, StreamLine, StreamOptions, StreamRequest,
};
use serde_json::Value;
use std::time::Duration;

/// The `agent-proxy` wire API (registered in `llm::wire`).
pub struct AgentProxy;

impl WireApi for AgentProxy {
    fn name(&self) -> &'static str {
        "agent-proxy"
    }

    fn endpoint(&self, base_url: &str) -> String {
        format!("{base_url}/v1/stream")
    }

    fn build_body(
        &self,
        request: &ModelRequest<'_>,
        _provider: &ProviderSettings,
    ) -> serde_json::Result<Vec<u8>> {
        build_body(request)
    }

    fn decoder(&self) -> Box<dyn WireDecoder> {
        Box::<ProxyDecoder>::default()
    }
}

/// The `POST /v1/stream` body. The proxy prepares the history for its own provider's API.
pub fn build_body(request: &ModelRequest<'_>) -> serde_json::Result<Vec<u8>> {
    let body = StreamRequest {
        provider: None,
        model: request.model.id.clone(),
        context: StreamContext {
            system_prompt: request.system_prompt.to_string(),
            messages: request.messages.to_vec(),
            tools: request
                .tools
                .iter()
                .map(|tool| ProxyTool {
                    name: tool.name.clone(),
                    description: tool.description.clone(),
                    parameters: tool.parameters.clone(),
                })
                .collect(),
        },
        options: StreamOptions {
            thinking: (request.thinking != ThinkingLevel::Off)
                .then(|| request.thinking.as_str().to_string()),
            max_tokens: Some(request.model.max_output_tokens),
        },
    };
    serde_json::to_vec(&body)
}

#[derive(Default)]
pub struct ProxyDecoder {
    /// A thinking block announced but with no text yet (a block of only a signature, or
    /// redacted, has none).
    thinking_pending: bool,
}

impl WireDecoder for ProxyDecoder {
    fn decode(
        &mut self,
        _event: &str,
        data: &str,
        out: &mut Vec<StreamEvent>,
    ) -> Result<(), ProviderError> {
        let line: StreamLine = serde_json::from_str(data).map_err(|e| {
            ProviderError::Decode(format!("{e} in the proxy event {}", snippet(data)))
        })?;
        match line {
            StreamLine::Delta(delta) => self.delta(delta, out),
            StreamLine::End(StreamEnd::Done { message }) => {
                out.push(StreamEvent::Final(Box::new(message)));
                out.push(StreamEvent::Done);
            }
            StreamLine::End(StreamEnd::Error(error)) => {
                // What the failed attempt cost, as a direct connection would have counted.
                if let Some(usage) = &error.usage {
                    out.push(StreamEvent::Usage(WireUsage {
                        input: usage.input,
                        output: usage.output,
                        cache_read: usage.cache_read,
                        cache_write: usage.cache_write,
                        reasoning: usage.reasoning,
                        input_includes_cache: false,
                    }));
                }
                return Err(ProviderError::Relayed {
                    message: error.message,
                    retry: match error.retry.as_str() {
                        "transient" => Retry::Transient,
                        "once" => Retry::Once,
                        _ => Retry::Never,
                    },
                    retry_after: error.retry_after_ms.map(Duration::from_millis),
                    context_overflow: error.context_overflow,
                });
            }
        }
        Ok(())
    }

    fn decode_whole(
        &mut self,
        _body: Value,
        text: &str,
        _out: &mut Vec<StreamEvent>,
    ) -> Result<(), ProviderError> {
        Err(ProviderError::Decode(format!(
            "the proxy answered with a JSON body instead of an event stream: {}",
            snippet(text)
        )))
    }
}

impl ProxyDecoder {
    /// The event that makes the local assembler emit this delta again.
    fn delta(&mut self, delta: AssistantMessageEvent, out: &mut Vec<StreamEvent>) {
        match delta {
            // A text block starts with its first text.
            AssistantMessageEvent::TextStart { .. } => {}
            AssistantMessageEvent::TextDelta { delta, .. } => out.push(StreamEvent::Text(delta)),
            AssistantMessageEvent::ThinkingStart { .. } => self.thinking_pending = true,
            AssistantMessageEvent::ThinkingDelta { delta, .. } => {
                self.thinking_pending = false;
                out.push(StreamEvent::Thinking(delta));
            }
            AssistantMessageEvent::ThinkingEnd { .. } => {
                if std::mem::take(&mut self.thinking_pending) {
                    // A block without text: its signature comes with the final message.
                    out.push(StreamEvent::ThinkingSignature(String::new()));
                }
                out.push(StreamEvent::BlockEnd);
            }
            AssistantMessageEvent::ToolCallStart { content_index } => {
                out.push(StreamEvent::ToolCall {
                    key: content_index,
                    id: None,
                    name: None,
                    arguments: String::new(),
                })
            }
            AssistantMessageEvent::ToolCallDelta {
                content_index,
                delta,
            } => out.push(StreamEvent::ToolCall {
                key: content_index,
                id: None,
                name: None,
                arguments: delta,
            }),
            AssistantMessageEvent::TextEnd { .. } | AssistantMessageEvent::ToolCallEnd { .. } => {
                out.push(StreamEvent::BlockEnd)
            }
        }
    }
}
