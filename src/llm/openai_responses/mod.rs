//! OpenAI Responses (`POST {base}/responses`, streaming): OpenAI's newer API, needed for
//! reasoning models' encrypted reasoning, and spoken by OpenRouter, LM Studio and others.

mod decode;
mod request;
pub mod signature;

pub use decode::ResponsesDecoder;
pub use request::build_body;

use super::error::ProviderError;
use super::provider::ProviderSettings;
use super::request::ModelRequest;
use super::stream_event::StreamEvent;
use super::wire::{WireApi, WireDecoder};
use serde_json::Value;

/// The `openai-responses` wire API (registered in `llm::wire`).
pub struct OpenaiResponses;

impl WireApi for OpenaiResponses {
    fn name(&self) -> &'static str {
        "openai-responses"
    }

    fn endpoint(&self, base_url: &str) -> String {
        format!("{base_url}/responses")
    }

    fn build_body(
        &self,
        request: &ModelRequest<'_>,
        provider: &ProviderSettings,
    ) -> serde_json::Result<Vec<u8>> {
        build_body(request, &provider.name)
    }

    fn decoder(&self) -> Box<dyn WireDecoder> {
        Box::<ResponsesDecoder>::default()
    }

    fn native_web_search(&self) -> bool {
        true
    }
}

impl WireDecoder for ResponsesDecoder {
    fn decode(
        &mut self,
        event: &str,
        data: &str,
        out: &mut Vec<StreamEvent>,
    ) -> Result<(), ProviderError> {
        ResponsesDecoder::decode(self, event, data, out)
    }

    fn decode_whole(
        &mut self,
        body: Value,
        _text: &str,
        out: &mut Vec<StreamEvent>,
    ) -> Result<(), ProviderError> {
        ResponsesDecoder::decode_whole(self, body, out)
    }
}
