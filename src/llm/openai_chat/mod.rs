//! OpenAI Chat Completions (`POST {base}/chat/completions`, streaming), the API most servers
//! speak: OpenAI itself, Ollama, vLLM, llama.cpp, LM Studio, OpenRouter, DeepSeek, Groq...

mod decode;
mod request;

pub use decode::ChatDecoder;
pub use request::{OutputLimit, build_body};

use super::error::ProviderError;
use super::provider::ProviderSettings;
use super::request::ModelRequest;
use super::stream_event::StreamEvent;
use super::wire::{WireApi, WireDecoder};
use serde_json::Value;

/// The `openai-chat` wire API (registered in `llm::wire`).
pub struct OpenaiChat;

impl WireApi for OpenaiChat {
    fn name(&self) -> &'static str {
        "openai-chat"
    }

    fn endpoint(&self, base_url: &str) -> String {
        format!("{base_url}/chat/completions")
    }

    fn build_body(
        &self,
        request: &ModelRequest<'_>,
        provider: &ProviderSettings,
    ) -> serde_json::Result<Vec<u8>> {
        build_body(request, OutputLimit::for_base_url(&provider.base_url))
    }

    fn decoder(&self) -> Box<dyn WireDecoder> {
        Box::<ChatDecoder>::default()
    }
}

impl WireDecoder for ChatDecoder {
    fn decode(
        &mut self,
        event: &str,
        data: &str,
        out: &mut Vec<StreamEvent>,
    ) -> Result<(), ProviderError> {
        ChatDecoder::decode(self, event, data, out)
    }

    fn decode_whole(
        &mut self,
        body: Value,
        _text: &str,
        out: &mut Vec<StreamEvent>,
    ) -> Result<(), ProviderError> {
        ChatDecoder::decode_whole(self, body, out)
    }
}
