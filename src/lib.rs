//! `agent`: an interactive terminal coding agent. The library holds the engine (`agent`),
//! model providers (`llm`), tools, configuration and the front ends (`modes`); `entry`
//! parses the command line and picks a front end (`main.rs` only calls it).

pub mod agent;
pub mod auth;
pub mod checkpoint;
pub mod cli;
pub mod config;
pub mod config_command;
pub mod context_files;
pub mod entry;
pub mod extensions;
pub mod features;
pub mod file_size_limit;
pub mod housekeeping;
pub mod live;
pub mod llm;
pub mod logging;
// A build without the `lsp` feature has the same `Lsp`, which starts no server (`lsp/off.rs`).
#[cfg_attr(not(feature = "lsp"), path = "lsp/off.rs")]
pub mod lsp;
pub mod mcp;
pub mod mcp_command;
pub mod modes;
pub mod prompt;
pub mod protocol;
pub mod proxy;
pub mod repository;
pub mod sandbox;
pub mod secrets;
pub mod session;
pub mod sessions_command;
pub mod startup;
pub mod tasks;
pub mod time;
pub mod tools;
pub mod tui;
