//! `McpManager`: the servers of `[mcp_servers]`, started in parallel in the background; the
//! engine sees it only as a `ToolSource`, front ends read its `views`. A profile's
//! `mcp_servers` selects some of them (`ToolSource::select`): the others are not started,
//! shown or offered (one already running keeps running, unseen, until the end, so
//! switching back to it is instant).

use super::config::ServerConfig;
use super::names;
use super::server::{Changes, Server};
use super::transport::SpawnEnv;
use super::view::{ServerView, Status};
use crate::sandbox::Sandbox;
use crate::tools::Tool;
use crate::tools::source::ToolSource;
use futures_util::future::BoxFuture;
use std::collections::BTreeSet;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::Duration;
use tokio::sync::watch;
use tokio_util::sync::CancellationToken;

pub struct McpManager {
    servers: Vec<Arc<Server>>,
    changes: Arc<Changes>,
    /// The servers' first starts were spawned (`launch`).
    launched: AtomicBool,
    /// The runtime the servers run on (the one `configure` was called in).
    runtime: Option<tokio::runtime::Handle>,
    /// The servers in use, by name (`None`: all of them).
    selection: Mutex<Option<BTreeSet<String>>>,
    /// The servers whose start was spawned.
    spawned: Mutex<BTreeSet<String>>,
}

fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}

impl McpManager {
    /// A manager without servers.
    pub fn empty() -> Arc<McpManager> {
        Arc::new(McpManager {
            servers: Vec::new(),
            changes: Arc::default(),
            launched: AtomicBool::new(false),
            runtime: None,
            selection: Mutex::new(None),
            spawned: Mutex::new(BTreeSet::new()),
        })
    }

    /// Start every enabled server in the background (call inside the runtime); returns at
    /// once. Stdio servers with `sandbox = true` run inside `sandbox`.
    pub fn start(
        configs: Vec<ServerConfig>,
        cwd: PathBuf,
        hidden_env: Vec<String>,
        sandbox: Sandbox,
    ) -> Result<Arc<McpManager>, String> {
        let manager = McpManager::configure(configs, cwd, hidden_env, sandbox)?;
        manager.launch();
        Ok(manager)
    }

    /// The servers, not started yet (call inside the runtime): `launch` starts them, and so
    /// does a run that begins before (it waits for them as for servers still starting).
    /// They show as `starting` meanwhile.
    pub fn configure(
        configs: Vec<ServerConfig>,
        cwd: PathBuf,
        hidden_env: Vec<String>,
        sandbox: Sandbox,
    ) -> Result<Arc<McpManager>, String> {
        if configs.is_empty() {
            return Ok(McpManager::empty());
        }
        let env = SpawnEnv::new(cwd, hidden_env, sandbox)?;
        let changes: Arc<Changes> = Arc::default();
        let mut configs = configs;
        configs.sort_by(|a, b| a.name.cmp(&b.name));
        let names: Vec<&str> = configs.iter().map(|c| c.name.as_str()).collect();
        let parts = names::server_parts(&names);
        let servers: Vec<Arc<Server>> = configs
            .into_iter()
            .zip(parts)
            .map(|(config, part)| Server::new(config, part, env.clone(), changes.clone()))
            .collect();
        Ok(Arc::new(McpManager {
            servers,
            changes,
            launched: AtomicBool::new(false),
            runtime: tokio::runtime::Handle::try_current().ok(),
            selection: Mutex::new(None),
            spawned: Mutex::new(BTreeSet::new()),
        }))
    }

    /// Start every enabled server in the background, in parallel; returns at once. Only
    /// the first call does anything.
    pub fn launch(&self) {
        let Some(runtime) = &self.runtime else {
            return;
        };
        if self.launched.swap(true, Ordering::SeqCst) {
            return;
        }
        tracing::debug!(servers = self.servers.len(), "starting the MCP servers");
        self.spawn_selected(runtime);
    }

    /// Spawn the start of every server in use whose start was not spawned yet.
    fn spawn_selected(&self, runtime: &tokio::runtime::Handle) {
        let mut spawned = lock(&self.spawned);
        for server in self.selected() {
            if spawned.insert(server.name().to_string()) {
                crate::tasks::spawn_on(runtime, server.clone().start());
            }
        }
    }

    /// The servers in use (all, or the profile's), in name order.
    fn selected(&self) -> impl Iterator<Item = &Arc<Server>> {
        let selection = lock(&self.selection).clone();
        self.servers.iter().filter(move |server| {
            selection
                .as_ref()
                .is_none_or(|names| names.contains(server.name()))
        })
    }

    /// Every server in use, in name order.
    pub fn views(&self) -> Vec<ServerView> {
        self.selected().map(|s| s.view()).collect()
    }

    /// `(ready, enabled)` server counts, for a status line; `None` without enabled servers.
    pub fn readiness(&self) -> Option<(usize, usize)> {
        let enabled = self.selected().filter(|s| s.config.enabled).count();
        let ready = self
            .selected()
            .filter(|s| s.status() == Status::Ready)
            .count();
        (enabled > 0).then_some((ready, enabled))
    }

    /// Changes whenever any server's status or tools change.
    pub fn subscribe(&self) -> watch::Receiver<u64> {
        self.changes.any.subscribe()
    }

    /// Why servers failed to start, each once (whoever asks first tells the user).
    pub fn take_notices(&self) -> Vec<String> {
        self.selected()
            .filter_map(|server| {
                server.take_notice().map(|why| {
                    format!(
                        "MCP server `{}` is not available: {why}. Going on without its tools (/mcp shows the servers).",
                        server.name()
                    )
                })
            })
            .collect()
    }

    /// End every server (in parallel), each stdio server's process group included. Bounded:
    /// a server that will not stop is killed.
    pub async fn shut_down(&self) {
        let ending = self.servers.iter().map(|server| server.shut_down());
        let _ = tokio::time::timeout(
            Duration::from_secs(3),
            futures_util::future::join_all(ending),
        )
        .await;
    }
}

impl ToolSource for McpManager {
    fn generation(&self) -> u64 {
        self.changes.tools.load(Ordering::SeqCst)
    }

    fn tools(&self) -> Vec<Arc<dyn Tool>> {
        self.selected().flat_map(|s| s.tools()).collect()
    }

    fn select(&self, names: Option<&[String]>) {
        *lock(&self.selection) = names.map(|names| names.iter().cloned().collect());
        if self.launched.load(Ordering::SeqCst)
            && let Some(runtime) = &self.runtime
        {
            self.spawn_selected(runtime);
        }
        self.changes.tools_changed();
    }

    fn settle<'a>(&'a self, cancel: &'a CancellationToken) -> BoxFuture<'a, Vec<String>> {
        Box::pin(async move {
            // A run that begins before the front end started the servers starts them.
            self.launch();
            let starting = self
                .selected()
                .filter(|s| s.status() == Status::Starting)
                .map(|s| s.settled());
            tokio::select! {
                _ = cancel.cancelled() => {}
                _ = futures_util::future::join_all(starting) => {}
            }
            self.take_notices()
        })
    }

    fn catch_up<'a>(&'a self, cancel: &'a CancellationToken) -> BoxFuture<'a, ()> {
        Box::pin(async move {
            self.launch();
            let lists = self.selected().map(|server| {
                tokio::time::timeout(server.config.startup_timeout, server.lists_caught_up())
            });
            tokio::select! {
                _ = cancel.cancelled() => {}
                _ = futures_util::future::join_all(lists) => {}
            }
        })
    }
}
