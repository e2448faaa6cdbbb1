//! OpenAI Chat Completions (`POST {base}/chat/completions`, streaming), the API most servers
//! speak: OpenAI itself, Ollama, vLLM, llama.cpp, LM Studio, OpenRouter, DeepSeek, Groq...

mod decode;
mod request;

pub use decode::ChatDecoder;
pub use request::{OutputLimit, build_body};
