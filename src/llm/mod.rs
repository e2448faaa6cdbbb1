//! Provider-neutral model streaming: the request the loop builds, the events decoders
//! produce, the assembler that turns them into a message, error classification, and the
//! HTTP client, the timeouts it enforces, and the history preparation every request gets.
//! Each wire API is one module behind the `WireApi` trait, registered in `wire.rs`.

pub mod agent_proxy;
pub mod anthropic;
pub mod assembler;
pub mod body;
pub mod catalog;
pub mod client;
pub mod decoder;
pub mod error;
pub mod error_codes;
pub mod model;
pub mod openai_chat;
pub mod openai_responses;
pub mod partial_json;
pub mod provider;
pub mod replay;
pub mod request;
pub mod sse;
pub mod stream_event;
pub mod timeouts;
pub mod transport;
pub mod wire;
pub mod wire_text;
