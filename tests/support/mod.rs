//! Shared helpers for the integration tests: a scripted model server on 127.0.0.1
//! (`server`), builders for provider SSE streams (`chat`, `anthropic`, `responses`), and an
//! `Agent` wired to the server (`harness`). Not every test binary uses every helper.
#![allow(dead_code)]
// Test helpers fail loudly by design.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

pub mod acp;
pub mod anthropic;
pub mod auth_server;
pub mod chat;
pub mod commands;
pub mod corpus;
pub mod delegation;
pub mod env;
pub mod faults;
pub mod fixtures;
pub mod gate;
pub mod harness;
pub mod hooks;
pub mod litellm;
pub mod live;
pub mod mcp_fixture;
pub mod npm;
pub mod process;
pub mod proxy;
pub mod pty;
pub mod registry;
pub mod responses;
pub mod sandbox;
pub mod server;
pub mod skip;
pub mod tmux;
