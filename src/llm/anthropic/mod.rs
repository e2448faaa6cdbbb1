//! Anthropic Messages (`POST {base}/v1/messages`, streaming): Claude models on
//! api.anthropic.com and the gateways that mirror its API.

mod decode;
mod request;

pub use decode::{AnthropicDecoder, describe_error};
pub use request::build_body;
