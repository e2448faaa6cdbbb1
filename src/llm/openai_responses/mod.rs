//! OpenAI Responses (`POST {base}/responses`, streaming): OpenAI's newer API, needed for
//! reasoning models' encrypted reasoning, and spoken by OpenRouter, LM Studio and others.

mod decode;
mod request;
pub mod signature;

pub use decode::ResponsesDecoder;
pub use request::build_body;
