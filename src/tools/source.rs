//! Tools that come and go while the agent runs — today the tools of MCP servers, which start
//! in the background and may change their lists. The engine knows them only through this
//! trait: it waits (bounded) for sources still starting when a run begins, and rebuilds the
//! tools it offers whenever the generation changes, before the next model request.

use super::Tool;
use futures_util::future::BoxFuture;
use std::sync::Arc;
use tokio_util::sync::CancellationToken;

pub trait ToolSource: Send + Sync {
    /// A number that changes whenever `tools` would answer differently.
    fn generation(&self) -> u64;

    /// The tools offered now, in a stable order.
    fn tools(&self) -> Vec<Arc<dyn Tool>>;

    /// Wait for the tools that are still on their way, each no longer than its own startup
    /// limit (or until `cancel`). Returns what the user should be told — each thing once
    /// over the life of the source (a server that did not start in time, one that failed).
    fn settle<'a>(&'a self, cancel: &'a CancellationToken) -> BoxFuture<'a, Vec<String>>;

    /// Wait (bounded, or until `cancel`) until changes the source has announced are in
    /// `tools` — a server said its list changed and the new list is on its way. Called before
    /// each model request.
    fn catch_up<'a>(&'a self, cancel: &'a CancellationToken) -> BoxFuture<'a, ()>;

    /// Offer only the tools of these parts of the source (MCP servers, by name; `None`: all
    /// of them), starting any not started yet (a profile's `mcp_servers`). What is left out
    /// stops being offered from the next model request on.
    fn select(&self, _names: Option<&[String]>) {}
}

/// How every MCP tool's name begins (`mcp__server__tool`), so permission rules can name MCP
/// tools before their servers have started.
pub const MCP_TOOL_PREFIX: &str = "mcp__";
