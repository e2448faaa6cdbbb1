//! Anthropic Messages (`POST {base}/v1/messages`, streaming): Claude models on
//! api.anthropic.com and the gateways that mirror its API.

mod decode;
mod request;

pub use decode::{AnthropicDecoder, describe_error};
pub use request::build_body;

use super::error::ProviderError;
use super::provider::ProviderSettings;
use super::request::ModelRequest;
use super::stream_event::StreamEvent;
use super::wire::{WireApi, WireDecoder};
use serde_json::Value;

/// The `anthropic` wire API (registered in `llm::wire`).
pub struct Anthropic;

impl WireApi for Anthropic {
    fn name(&self) -> &'static str {
        "anthropic"
    }

    fn endpoint(&self, base_url: &str) -> String {
        format!("{base_url}/v1/messages")
    }

    fn auth_header(&self, key: &str) -> (&'static str, String) {
        ("x-api-key", key.to_string())
    }

    fn extra_headers(&self) -> &'static [(&'static str, &'static str)] {
        &[("anthropic-version", "2023-06-01")]
    }

    fn build_body(
        &self,
        request: &ModelRequest<'_>,
        provider: &ProviderSettings,
    ) -> serde_json::Result<Vec<u8>> {
        build_body(request, &provider.name)
    }

    fn decoder(&self) -> Box<dyn WireDecoder> {
        Box::<AnthropicDecoder>::default()
    }

    fn native_web_search(&self) -> bool {
        true
    }
}

impl WireDecoder for AnthropicDecoder {
    fn decode(
        &mut self,
        event: &str,
        data: &str,
        out: &mut Vec<StreamEvent>,
    ) -> Result<(), ProviderError> {
        AnthropicDecoder::decode(self, event, data, out)
    }

    fn decode_whole(
        &mut self,
        body: Value,
        _text: &str,
        out: &mut Vec<StreamEvent>,
    ) -> Result<(), ProviderError> {
        AnthropicDecoder::decode_whole(self, body, out)
    }
}
