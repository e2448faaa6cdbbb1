//! The decoder of one response: the framing every wire API shares (keep-alive frames,
//! `[DONE]`, a whole JSON body parsed), around the decoder of the provider's API (its
//! `WireApi::decoder`). SSE frames as they stream, or a whole JSON completion from a server
//! that answered a streaming request without streaming; both produce the same `StreamEvent`s.

use super::error::{ProviderError, snippet};
use super::provider::Api;
use super::stream_event::StreamEvent;
use super::wire::WireDecoder;

pub struct Decoder {
    api: Box<dyn WireDecoder>,
}

impl Decoder {
    pub fn new(api: Api) -> Self {
        Decoder {
            api: api.wire().decoder(),
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
        self.api.decode(event, data, out)
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
        self.api.decode_whole(value, text, out)
    }
}

/// Whether an event is content: something the answer is made of, or its end. Usage
/// counts and block boundaries alone are not (a server can repeat them while stuck).
pub fn is_content(event: &StreamEvent) -> bool {
    !matches!(event, StreamEvent::Usage(_) | StreamEvent::BlockEnd)
}
