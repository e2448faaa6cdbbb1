//! One decoder per wire API, chosen by the provider's `api`: SSE frames as they stream, or
//! a whole JSON completion from a server that answered a streaming request without
//! streaming. Both produce the same `StreamEvent`s.

use super::error::{ProviderError, snippet};
use super::provider::Api;
use super::stream_event::StreamEvent;
use super::{agent_proxy, anthropic, openai_chat, openai_responses};

pub enum Decoder {
    Chat(openai_chat::ChatDecoder),
    Anthropic(anthropic::AnthropicDecoder),
    Responses(openai_responses::ResponsesDecoder),
    Proxy(agent_proxy::ProxyDecoder),
}

impl Decoder {
    pub fn new(api: Api) -> Self {
        match api {
            Api::OpenaiChat => Decoder::Chat(Default::default()),
            Api::Anthropic => Decoder::Anthropic(Default::default()),
            Api::OpenaiResponses => Decoder::Responses(Default::default()),
            Api::AgentProxy => Decoder::Proxy(Default::default()),
        }
    }

    /// One SSE frame.
    pub fn decode(
        &mut self,
        event: &str,
        data: &str,
        out: &mut Vec<StreamEvent>,
    ) -> Result<(), ProviderError> {
        // Framing every wire API shares: keep-alive frames carry no data, and OpenAI-style
        // servers (and proxies in front of others) end with a literal `[DONE]`.
        let data = data.trim();
        if data.is_empty() {
            return Ok(());
        }
        if data == "[DONE]" {
            out.push(StreamEvent::Done);
            return Ok(());
        }
        match self {
            Decoder::Chat(decoder) => decoder.decode(event, data, out),
            Decoder::Anthropic(decoder) => decoder.decode(event, data, out),
            Decoder::Responses(decoder) => decoder.decode(event, data, out),
            Decoder::Proxy(decoder) => decoder.decode(event, data, out),
        }
    }

    /// A whole response body: the API's non-streaming completion object (or an error
    /// object), as the events its stream would have carried, ending with `Done`.
    pub fn decode_whole(
        &mut self,
        body: &[u8],
        out: &mut Vec<StreamEvent>,
    ) -> Result<(), ProviderError> {
        let text = std::str::from_utf8(body)
            .map_err(|e| ProviderError::Decode(format!("the JSON body is not UTF-8 ({e})")))?;
        let value: serde_json::Value = serde_json::from_str(text).map_err(|e| {
            ProviderError::Decode(format!("{e} in the JSON body {}", snippet(text)))
        })?;
        match self {
            Decoder::Chat(decoder) => decoder.decode_whole(value, out),
            Decoder::Anthropic(decoder) => decoder.decode_whole(value, out),
            Decoder::Responses(decoder) => decoder.decode_whole(value, out),
            Decoder::Proxy(_) => Err(ProviderError::Decode(format!(
                "the proxy answered with a JSON body instead of an event stream: {}",
                snippet(text)
            ))),
        }
    }
}

/// Whether an event is content: something the answer is made of, or its end. Usage
/// counts and block boundaries alone are not (a server can repeat them while stuck).
pub fn is_content(event: &StreamEvent) -> bool {
    !matches!(event, StreamEvent::Usage(_) | StreamEvent::BlockEnd)
}
