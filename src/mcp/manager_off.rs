//! `McpManager` in a build without the `mcp` feature: the same face, no client. It starts no
//! server; configured servers get one notice saying the build left MCP out and which feature
//! brings it back.

use super::config::ServerConfig;
use super::view::ServerView;
use crate::sandbox::Sandbox;
use crate::tools::Tool;
use crate::tools::source::ToolSource;
use futures_util::future::BoxFuture;
use std::path::PathBuf;
use std::sync::{Arc, Mutex, PoisonError};
use tokio::sync::watch;
use tokio_util::sync::CancellationToken;

pub struct McpManager {
    /// Told once: servers are configured but this build cannot start them.
    notice: Mutex<Option<String>>,
    changes: watch::Sender<u64>,
}

impl McpManager {
    pub fn empty() -> Arc<McpManager> {
        Arc::new(McpManager {
            notice: Mutex::new(None),
            changes: watch::Sender::new(0),
        })
    }

    pub fn start(
        configs: Vec<ServerConfig>,
        cwd: PathBuf,
        hidden_env: Vec<String>,
        sandbox: Sandbox,
    ) -> Result<Arc<McpManager>, String> {
        McpManager::configure(configs, cwd, hidden_env, sandbox)
    }

    pub fn configure(
        configs: Vec<ServerConfig>,
        _cwd: PathBuf,
        _hidden_env: Vec<String>,
        _sandbox: Sandbox,
    ) -> Result<Arc<McpManager>, String> {
        let manager = McpManager::empty();
        if !configs.is_empty() {
            let names: Vec<&str> = configs.iter().map(|c| c.name.as_str()).collect();
            let notice = format!(
                "MCP servers ({}) are not started: {}",
                names.join(", "),
                crate::features::MCP.missing()
            );
            *manager
                .notice
                .lock()
                .unwrap_or_else(PoisonError::into_inner) = Some(notice);
        }
        Ok(manager)
    }

    pub fn launch(&self) {}

    pub fn views(&self) -> Vec<ServerView> {
        Vec::new()
    }

    pub fn readiness(&self) -> Option<(usize, usize)> {
        None
    }

    pub fn subscribe(&self) -> watch::Receiver<u64> {
        self.changes.subscribe()
    }

    pub fn take_notices(&self) -> Vec<String> {
        let mut notice = self.notice.lock().unwrap_or_else(PoisonError::into_inner);
        notice.take().into_iter().collect()
    }

    pub async fn shut_down(&self) {}
}

impl ToolSource for McpManager {
    fn generation(&self) -> u64 {
        0
    }

    fn tools(&self) -> Vec<Arc<dyn Tool>> {
        Vec::new()
    }

    fn settle<'a>(&'a self, _cancel: &'a CancellationToken) -> BoxFuture<'a, Vec<String>> {
        Box::pin(async move { self.take_notices() })
    }

    fn catch_up<'a>(&'a self, _cancel: &'a CancellationToken) -> BoxFuture<'a, ()> {
        Box::pin(async {})
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn configured_servers_are_told_once_that_the_build_has_no_mcp() {
        let table: crate::mcp::config::ServerTable =
            toml::from_str("command = \"server\"").unwrap();
        let config = table.resolve("files").unwrap();
        let manager =
            McpManager::configure(vec![config], "/".into(), Vec::new(), Sandbox::default())
                .unwrap();
        let notices = manager.take_notices();
        assert_eq!(notices.len(), 1);
        assert!(notices[0].contains("files"), "{notices:?}");
        assert!(
            notices[0].contains("rebuild with --features mcp"),
            "{notices:?}"
        );
        assert!(manager.take_notices().is_empty());
        assert!(manager.views().is_empty());
    }
}
