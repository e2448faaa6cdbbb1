//! The MCP client: the servers of `[mcp_servers]` (stdio children and streamable-HTTP
//! endpoints, spoken to with the official `rmcp` SDK), started in parallel in the background
//! and never in the way of the prompt — the interface starts them once its first frame is
//! drawn, so they do not compete with it for the CPU — their tools offered to the model as
//! `mcp__<server>__<tool>` like our own. `McpManager` owns the servers; the engine sees it
//! only as a `ToolSource`, front ends read its `views` for `/mcp` and `get_state`.

pub mod config;
// A build without the `mcp` feature has the same `McpManager`, which starts no server and
// says so (`manager_off.rs`), and none of the client below.
#[cfg(feature = "mcp")]
mod connect;
#[cfg(feature = "mcp")]
mod content;
#[cfg(feature = "mcp")]
mod erased;
#[cfg(feature = "mcp")]
mod http;
#[cfg(feature = "mcp")]
mod http_client;
#[cfg_attr(not(feature = "mcp"), path = "manager_off.rs")]
mod manager;
pub mod names;
#[cfg(feature = "mcp")]
mod oversized;
#[cfg(feature = "mcp")]
mod progress;
#[cfg(feature = "mcp")]
pub mod server;
#[cfg(feature = "mcp")]
mod sse_events;
#[cfg(feature = "mcp")]
mod stdio;
#[cfg(feature = "mcp")]
mod tool;
#[cfg(feature = "mcp")]
mod transport;
pub mod view;
/// The old path of the view types, in a build without the client.
#[cfg(not(feature = "mcp"))]
pub mod server {
    pub use super::view::{ServerView, Status, ToolView};
}

pub use manager::McpManager;
#[cfg(feature = "mcp")]
pub use transport::SpawnEnv;
use view::ServerView;

/// The servers as `get_state.data.mcpServers`: `[{name, status, transport, tools: [names],
/// error?}]`.
pub fn views_json(views: &[ServerView]) -> serde_json::Value {
    views
        .iter()
        .map(|view| {
            let mut entry = serde_json::json!({
                "name": view.name,
                "status": view.status.as_str(),
                "transport": view.transport,
                "tools": view.tools.iter().map(|t| t.name.as_str()).collect::<Vec<_>>(),
            });
            if let (Some(error), Some(map)) = (&view.error, entry.as_object_mut()) {
                map.insert("error".to_string(), serde_json::Value::from(error.as_str()));
            }
            entry
        })
        .collect()
}
