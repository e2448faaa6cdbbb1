//! The shared vocabulary of the whole program: conversation messages, the events the engine
//! emits, the commands it executes and what they answer, and the RPC wire commands and
//! responses (docs/protocol.md §2–4). Serde types only; every layer may import them and
//! they import nothing else of ours, so the layers above point one way.

pub mod command;
pub mod event;
pub mod message;
pub mod outcome;
pub mod proxy;
pub mod question;
pub mod rpc;
pub mod rpc_engine;
pub mod todo;
pub mod usage;
