//! Signing in and keeping credentials (docs/auth.md): the credential store (the OS keyring,
//! else a 0600 `auth.json`, one lock for every change), OAuth 2 flows generic over the
//! authorization server (PKCE with a loopback redirect, device code, refresh), the vendors'
//! flows built on them (ChatGPT accounts, GitHub Copilot), renewal of tokens once across
//! agents, MCP servers' OAuth (rmcp's, with tokens kept here), and the `agent login`,
//! `logout` and `auth status` commands. Nothing here writes a secret anywhere but the
//! store: every secret is registered with `crate::secrets` to be masked.

pub mod chatgpt;
pub mod command;
pub mod copilot;
pub mod credential;
pub mod error;
mod file_store;
pub mod http;
pub mod interactive;
// Without the `keyring` feature there is no OS keyring: `keyring_off.rs` says so, and
// credentials go to auth.json.
#[cfg_attr(not(feature = "keyring"), path = "keyring_off.rs")]
mod keyring_store;
pub mod loopback;
#[cfg(feature = "mcp")]
pub mod mcp;
pub mod oauth;
pub mod refresh;
pub mod requests;
pub mod store;

pub use error::AuthError;
