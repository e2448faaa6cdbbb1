//! Provider-neutral model streaming: the request the loop builds, the events decoders
//! produce, the assembler that turns them into a message, error classification, and the
//! HTTP client with one decoder per wire API.

pub mod anthropic;
pub mod assembler;
pub mod catalog;
pub mod client;
pub mod error;
pub mod model;
pub mod openai_chat;
pub mod openai_responses;
pub mod partial_json;
pub mod provider;
pub mod request;
pub mod sse;
pub mod stream_event;
