//! One MCP server over its life: starting (within its startup limit), ready with its tools,
//! failed (why, and when a call may restart it), or disabled. A server that crashes, hangs
//! or speaks garbage only ever changes this state: its calls answer with a clear error, and
//! the next call after a short backoff starts it again. Shutting down ends a stdio server's
//! whole process group.

use super::config::ServerConfig;
use super::connect::{Connected, Connection, ListSync, connect};
use super::tool::McpTool;
use super::transport::{self, SpawnEnv, StderrTail};
pub use super::view::{ServerView, Status, ToolView};
use crate::tools::Tool;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError, Weak};
use std::time::Duration;
use tokio::sync::watch;
use tokio::time::Instant;

/// What the manager hears from its servers: the offered tools changed (for the engine), or
/// anything changed (for front ends).
#[derive(Default)]
pub struct Changes {
    pub tools: AtomicU64,
    pub any: watch::Sender<u64>,
}

impl Changes {
    fn status_changed(&self) {
        self.any.send_modify(|n| *n = n.wrapping_add(1));
    }

    pub(super) fn tools_changed(&self) {
        self.tools.fetch_add(1, Ordering::SeqCst);
        self.status_changed();
    }
}

pub struct Server {
    pub config: ServerConfig,
    /// The server's part of its tools' names.
    part: String,
    env: SpawnEnv,
    changes: Arc<Changes>,
    state: Mutex<State>,
    status: watch::Sender<Status>,
    /// One start at a time; calls wait here while the server starts.
    starting: tokio::sync::Mutex<()>,
    lists: Arc<ListSync>,
    this: Weak<Server>,
}

#[derive(Default)]
struct State {
    error: Option<String>,
    tools: Vec<Arc<McpTool>>,
    connection: Option<Arc<Connection>>,
    /// The process group of a start in progress, to end it if the start is given up.
    starting_group: Option<i32>,
    /// Failed starts and crashes since the last good answer, for the backoff.
    failures: u32,
    retry_at: Option<Instant>,
    /// Why the first start failed, until the user has been told.
    notice: Option<String>,
    shut_down: bool,
}

/// How long to wait before starting a server again after `failures` failures in a row: the
/// first restart at once, then 0.5 s doubling up to 30 s.
pub fn backoff(failures: u32) -> Duration {
    if failures <= 1 {
        return Duration::ZERO;
    }
    let exponent = (failures - 2).min(6);
    Duration::from_millis(500 * 2u64.pow(exponent)).min(Duration::from_secs(30))
}

impl Server {
    pub fn new(
        config: ServerConfig,
        part: String,
        env: SpawnEnv,
        changes: Arc<Changes>,
    ) -> Arc<Server> {
        let initial = if config.enabled {
            Status::Starting
        } else {
            Status::Disabled
        };
        Arc::new_cyclic(|this| Server {
            config,
            part,
            env,
            changes,
            state: Mutex::new(State::default()),
            status: watch::Sender::new(initial),
            starting: tokio::sync::Mutex::new(()),
            lists: Arc::default(),
            this: this.clone(),
        })
    }

    fn state(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    pub fn name(&self) -> &str {
        &self.config.name
    }

    pub fn status(&self) -> Status {
        *self.status.borrow()
    }

    fn set_status(&self, status: Status) {
        self.status.send_replace(status);
        self.changes.status_changed();
    }

    /// The first start, in the background at launch.
    pub async fn start(self: Arc<Self>) {
        if !self.config.enabled {
            return;
        }
        let _one = self.starting.lock().await;
        tracing::info!(server = %self.config.name, "starting MCP server");
        let _ = self.attempt(true).await;
    }

    /// Wait until the server is no longer starting (its start has its own time limit).
    pub async fn settled(&self) {
        let mut status = self.status.subscribe();
        let _ = status.wait_for(|s| *s != Status::Starting).await;
    }

    /// Why the first start failed, once.
    pub fn take_notice(&self) -> Option<String> {
        self.state().notice.take()
    }

    /// One start: connect and list the tools within the startup limit. A failed first start
    /// (`first`) leaves a notice for the user, in place before anyone hears of the failure.
    async fn attempt(self: &Arc<Self>, first: bool) -> Result<Arc<Connection>, String> {
        self.set_status(Status::Starting);
        let limit = self.config.startup_timeout;
        let tail = StderrTail::new(transport::TAIL_LINES);
        let started = tokio::time::timeout(limit, connect(self, &self.env, &tail)).await;
        let group = self.state().starting_group.take();
        let failure = match started {
            Ok(Ok(connected)) => return Ok(self.install(connected)),
            Ok(Err(error)) => error,
            Err(_) => format!(
                "did not start within {} s (mcp_servers.{}.startup_timeout_secs)",
                limit.as_secs_f64(),
                self.config.name
            ),
        };
        if let Some(group) = group {
            transport::signal_group(group, libc::SIGKILL);
        }
        let failure = match tail.last(3) {
            Some(stderr) if !failure.contains(&stderr) => format!("{failure} (stderr: {stderr})"),
            _ => failure,
        };
        tracing::warn!(server = %self.config.name, error = %failure, "MCP server did not start");
        {
            let mut state = self.state();
            state.error = Some(failure.clone());
            if first {
                state.notice = Some(failure.clone());
            }
            state.failures = state.failures.saturating_add(1);
            state.retry_at = Some(Instant::now() + backoff(state.failures));
        }
        self.set_status(Status::Failed);
        Err(failure)
    }

    pub(super) fn lists(&self) -> Arc<ListSync> {
        self.lists.clone()
    }

    /// Wait until the tool lists the server announced (`tools/list_changed`) are in.
    pub async fn lists_caught_up(&self) {
        self.lists.caught_up().await;
    }

    /// Remember the process group of a start in progress.
    pub(super) fn starting_group(&self, group: Option<i32>) {
        self.state().starting_group = group;
    }

    fn install(self: &Arc<Self>, connected: Connected) -> Arc<Connection> {
        let Connected { connection, tools } = connected;
        let tools = McpTool::build(&self.this, &self.config, &self.part, tools);
        tracing::info!(server = %self.config.name, tools = tools.len(), "MCP server ready");
        let shut_down = {
            let mut state = self.state();
            state.connection = Some(connection.clone());
            state.tools = tools;
            state.error = None;
            state.notice = None;
            state.shut_down
        };
        if shut_down {
            connection.close();
        }
        self.set_status(Status::Ready);
        self.changes.tools_changed();
        connection
    }

    /// A new list of tools from a ready server (`tools/list_changed`).
    pub(super) fn replace_tools(
        &self,
        connection: &Arc<Connection>,
        tools: Vec<rmcp::model::Tool>,
    ) {
        let tools = McpTool::build(&self.this, &self.config, &self.part, tools);
        {
            let mut state = self.state();
            if !state
                .connection
                .as_ref()
                .is_some_and(|c| Arc::ptr_eq(c, connection))
            {
                return;
            }
            state.tools = tools;
        }
        self.changes.tools_changed();
    }

    /// The connection ended without us ending it (the server exited, the stream broke). Its
    /// tools stay offered: the next call starts it again.
    pub(super) fn lost(&self, connection: &Arc<Connection>, why: &str) {
        {
            let mut state = self.state();
            if !state
                .connection
                .as_ref()
                .is_some_and(|c| Arc::ptr_eq(c, connection))
            {
                return;
            }
            state.connection = None;
            let mut error = why.to_string();
            if let Some(stderr) = connection.stderr.last(3) {
                error.push_str(&format!(" (stderr: {stderr})"));
            }
            tracing::warn!(server = %self.config.name, %error, "MCP server connection lost");
            state.error = Some(error);
            state.failures = state.failures.saturating_add(1);
            state.retry_at = Some(Instant::now() + backoff(state.failures));
        }
        connection.close();
        self.lists.forget();
        self.set_status(Status::Failed);
    }

    /// A call got its answer: the server works, so the next failure restarts it at once.
    pub(super) fn answered(&self) {
        self.state().failures = 0;
    }

    /// A live connection for a call: the current one, or a new one if the server is down and
    /// its backoff has passed. `Err` says why there is none.
    pub async fn connection(self: &Arc<Self>) -> Result<Arc<Connection>, String> {
        if let Some(connection) = self.live() {
            return Ok(connection);
        }
        let _one = self.starting.lock().await;
        if let Some(connection) = self.live() {
            return Ok(connection);
        }
        let name = &self.config.name;
        let (error, retry_at, shut_down) = {
            let state = self.state();
            (state.error.clone(), state.retry_at, state.shut_down)
        };
        if shut_down || !self.config.enabled {
            return Err(format!("MCP server `{name}` is not running"));
        }
        let why = error.unwrap_or_else(|| "it stopped".to_string());
        if let Some(at) = retry_at
            && at > Instant::now()
        {
            let wait = at.saturating_duration_since(Instant::now());
            return Err(format!(
                "MCP server `{name}` is down: {why}. It will be restarted by a call made after {:.1} s.",
                wait.as_secs_f64()
            ));
        }
        tracing::info!(server = %name, "restarting MCP server");
        self.attempt(false).await.map_err(|error| {
            format!("MCP server `{name}` is down ({why}) and could not be restarted: {error}")
        })
    }

    fn live(&self) -> Option<Arc<Connection>> {
        self.state()
            .connection
            .clone()
            .filter(|connection| !connection.is_closed())
    }

    /// The tools offered now.
    pub fn tools(&self) -> Vec<Arc<dyn Tool>> {
        self.state()
            .tools
            .iter()
            .map(|tool| tool.clone() as Arc<dyn Tool>)
            .collect()
    }

    pub fn view(&self) -> ServerView {
        let state = self.state();
        ServerView {
            name: self.config.name.clone(),
            status: self.status(),
            transport: self.config.transport.kind(),
            tools: state.tools.iter().map(|tool| tool.view()).collect(),
            error: state.error.clone(),
        }
    }

    /// End the server for good: its connection, and a stdio server's whole process group
    /// (asked to stop, then killed if it has not within a moment).
    pub async fn shut_down(&self) {
        let (connection, group) = {
            let mut state = self.state();
            state.shut_down = true;
            (state.connection.take(), state.starting_group.take())
        };
        if let Some(group) = group {
            transport::signal_group(group, libc::SIGKILL);
        }
        let Some(connection) = connection else {
            return;
        };
        connection.close();
        if let Some(group) = connection.group {
            transport::signal_group(group, libc::SIGTERM);
            let deadline = Instant::now() + Duration::from_millis(300);
            while transport::group_alive(group) && Instant::now() < deadline {
                tokio::time::sleep(Duration::from_millis(10)).await;
            }
            transport::signal_group(group, libc::SIGKILL);
        }
        connection.finished().await;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn restarts_back_off() {
        assert_eq!(backoff(1), Duration::ZERO);
        assert_eq!(backoff(2), Duration::from_millis(500));
        assert_eq!(backoff(3), Duration::from_secs(1));
        assert_eq!(backoff(50), Duration::from_secs(30));
    }
}
