//! The shared vocabulary of the whole program: conversation messages, the events the engine
//! emits, and the RPC commands and responses (docs/protocol.md §2–4). Serde types only; every layer may import them and
//! they import nothing else of ours, so the layers above point one way.

pub mod event;
pub mod message;
pub mod proxy;
pub mod rpc;
pub mod todo;
