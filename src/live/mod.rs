//! Live sessions (docs/protocol.md §4.5): every running `agent` serves its session on a
//! unix socket only its user can open, speaking the RPC protocol plus `attach`, `detach`,
//! `list_clients` and `execute`, so that other terminals (and later the interface and a
//! browser) can watch and drive the same run. `server` owns the socket, `hub` the fan-out
//! of the engine's events and `journal` what an attaching client is replayed;
//! `connection` serves one client; `client` is the library a front end attaches with;
//! `remote` drives a live session as if its engine were here (the interface of `agent
//! attach`), `link` is a front end's handle on either engine; `commands` holds `agent sessions` and `agent attach`; `serve` is `agent serve`, the
//! HTTP host of sessions.

pub mod client;
pub mod commands;
mod connection;
mod hub;
mod journal;
pub mod link;
pub mod remote;
pub mod serve;
pub mod server;

pub use server::{LiveServer, serve, socket_path};
