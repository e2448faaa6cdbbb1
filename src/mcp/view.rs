//! What front ends show of the MCP servers (`/mcp`, `get_state`): each server's status, its
//! tools and why it failed. Plain data, in every build (with or without the `mcp` feature).

use serde::Serialize;

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Status {
    Starting,
    Ready,
    Failed,
    Disabled,
}

impl Status {
    pub fn as_str(self) -> &'static str {
        match self {
            Status::Starting => "starting",
            Status::Ready => "ready",
            Status::Failed => "failed",
            Status::Disabled => "disabled",
        }
    }
}

/// A server as front ends show it.
#[derive(Clone, Debug)]
pub struct ServerView {
    pub name: String,
    pub status: Status,
    pub transport: &'static str,
    pub tools: Vec<ToolView>,
    pub error: Option<String>,
}

#[derive(Clone, Debug)]
pub struct ToolView {
    /// As offered to the model.
    pub name: String,
    /// The server's own name for it.
    pub original: String,
    pub description: String,
    pub read_only: bool,
}
