//! The shared vocabulary of the whole program: conversation messages and the events the
//! engine emits (docs/protocol.md §2–3). Serde types only; every layer may import them and
//! they import nothing else of ours, so the layers above point one way.

pub mod event;
pub mod message;
