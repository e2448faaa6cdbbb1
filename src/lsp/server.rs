//! One language server for one root: started on first use (`ensure`), initialized within
//! its startup limit, its documents kept in step with the files (`sync`), its diagnostics
//! awaited for the text it has now (`wait_current`), restarted with a growing delay after a
//! crash (and given up on after `MAX_CRASHES` in a row), stopped with the agent.

use super::documents::{Documents, Published, Sync};
use super::inbox::Inbox;
use super::location::{Encoding, language_id, uri_of};
use super::process::{self, Process};
use super::rpc::{Connection, RpcError};
use crate::config::lsp::ServerSpec;
use lsp_types::notification::{
    DidChangeTextDocument, DidCloseTextDocument, DidOpenTextDocument, DidSaveTextDocument,
    Initialized,
};
use lsp_types::request::{Initialize, Shutdown};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::{Duration, Instant};
use tokio::sync::watch;
use tokio_util::sync::CancellationToken;

/// Crashes in a row after which a server is not started again.
pub const MAX_CRASHES: u32 = 4;
/// A server that ran this long before it crashed starts over with a clean record.
const STABLE: Duration = Duration::from_secs(60);
/// Files larger than this are not sent to a server.
pub const MAX_FILE: u64 = 4 * 1024 * 1024;
/// Unversioned diagnostics (the server does not say which text they are of) are taken once
/// the server has published nothing more for the file for this long: some servers publish
/// a file's diagnostics in parts (syntax first, then types).
const SETTLE: Duration = Duration::from_millis(200);

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Status {
    /// Not needed yet.
    Idle,
    Starting,
    Ready,
    /// Crashed; starts again on the next use after its delay.
    Restarting,
    /// Gave up on it (it would not start, or crashed again and again).
    Failed,
    /// Stopped with the agent.
    Stopped,
}

impl Status {
    pub fn as_str(self) -> &'static str {
        match self {
            Status::Idle => "idle",
            Status::Starting => "starting",
            Status::Ready => "ready",
            Status::Restarting => "restarting",
            Status::Failed => "failed",
            Status::Stopped => "stopped",
        }
    }
}

/// What the server said it can do, as far as we use it.
#[derive(Clone, Debug, Default)]
pub struct Capabilities {
    pub encoding: Encoding,
    /// `Some(include_text)` when it wants `didSave`.
    pub save: Option<bool>,
    pub definition: bool,
    pub references: bool,
    pub hover: bool,
    pub document_symbol: bool,
    pub workspace_symbol: bool,
}

/// Work the server reports in progress (`$/progress`).
#[derive(Clone, Debug, PartialEq)]
pub struct Progress {
    pub title: String,
    pub message: Option<String>,
    pub percentage: Option<u32>,
}

struct State {
    connection: Option<Arc<Connection>>,
    process: Option<Process>,
    capabilities: Capabilities,
    /// Counts starts: what an older start reports is ignored.
    generation: u64,
    crashes: u32,
    retry_at: Option<Instant>,
    up_since: Option<Instant>,
    /// Whether some start became ready: a later start that fails is then a crash to retry
    /// (a loaded machine, a killed process), not a server that can never start.
    was_ready: bool,
    error: Option<String>,
    progress: BTreeMap<String, Progress>,
}

pub struct Server {
    pub spec: Arc<ServerSpec>,
    pub root: PathBuf,
    hidden_env: Arc<Vec<String>>,
    status: watch::Sender<Status>,
    state: Mutex<State>,
    /// The documents of the running connection. Lock order: `docs`, then `state` (a sync
    /// checks under `docs` that its connection is still the running one); never the other
    /// way round.
    docs: Mutex<Documents>,
    /// Bumped on every `publishDiagnostics`.
    published: watch::Sender<u64>,
    /// The manager's: bumped on anything a status line or `/lsp` shows.
    changes: Arc<watch::Sender<u64>>,
    /// Its failure was reported in a tool result already.
    told: std::sync::atomic::AtomicBool,
}

/// Why a server cannot answer now.
#[derive(Clone, Debug, PartialEq)]
pub enum NotReady {
    /// Still starting (or doing its first work) when the time was up.
    Starting,
    /// It crashed; starts again on its next use after the delay.
    Restarting(String),
    Failed(String),
    Stopped,
    Cancelled,
}

/// A file as the server has it now.
#[derive(Clone, Debug)]
pub struct Synced {
    /// The diagnostics it had published for the file before this text, if any.
    pub before: Option<Published>,
    /// Whether this text is new to the server.
    pub changed: bool,
    pub text: Arc<str>,
}

/// A server's state for `/lsp` and `get_state`.
#[derive(Clone, Debug)]
pub struct ServerView {
    pub name: String,
    pub root: PathBuf,
    pub status: Status,
    pub error: Option<String>,
    pub open_files: usize,
    pub errors: usize,
    pub warnings: usize,
    pub progress: Vec<Progress>,
}

fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}

impl Server {
    pub fn new(
        spec: Arc<ServerSpec>,
        root: PathBuf,
        hidden_env: Arc<Vec<String>>,
        changes: Arc<watch::Sender<u64>>,
    ) -> Arc<Server> {
        Arc::new(Server {
            spec,
            root,
            hidden_env,
            status: watch::channel(Status::Idle).0,
            state: Mutex::new(State {
                connection: None,
                process: None,
                capabilities: Capabilities::default(),
                generation: 0,
                crashes: 0,
                retry_at: None,
                up_since: None,
                was_ready: false,
                error: None,
                progress: BTreeMap::new(),
            }),
            docs: Mutex::default(),
            published: watch::channel(0).0,
            changes,
            told: Default::default(),
        })
    }

    pub fn name(&self) -> &str {
        &self.spec.name
    }

    pub fn status(&self) -> Status {
        *self.status.borrow()
    }

    pub(super) fn changed(&self) {
        self.changes.send_modify(|n| *n = n.wrapping_add(1));
    }

    fn set_status(&self, status: Status) {
        self.status.send_replace(status);
        self.changed();
    }

    pub fn view(&self) -> ServerView {
        let (error, progress) = {
            let state = lock(&self.state);
            (
                state.error.clone(),
                state.progress.values().cloned().collect(),
            )
        };
        let docs = lock(&self.docs);
        let (errors, warnings) = docs.totals();
        ServerView {
            name: self.spec.name.clone(),
            root: self.root.clone(),
            status: self.status(),
            error,
            open_files: docs.open_files().len(),
            errors,
            warnings,
            progress,
        }
    }

    /// Wait until a server whose connection is gone has recorded why (it leaves `Ready`),
    /// at most until `deadline`.
    pub async fn until_not_ready(&self, deadline: Instant) {
        let mut status = self.status.subscribe();
        let _ = tokio::time::timeout_at(deadline.into(), status.wait_for(|s| *s != Status::Ready))
            .await;
    }

    /// The process id of the server while it runs.
    pub fn pid(&self) -> Option<i32> {
        lock(&self.state).process.as_ref().map(|p| p.pid)
    }

    /// Errors and warnings the server reports now, over every file.
    pub fn totals(&self) -> (usize, usize) {
        lock(&self.docs).totals()
    }

    /// What it is busy with, in a few words ("indexing 40%"), if anything.
    pub fn busy(&self) -> Option<String> {
        let state = lock(&self.state);
        let progress = state.progress.values().next()?;
        Some(match progress.percentage {
            Some(percent) => format!("{} {percent}%", progress.title),
            None => progress.title.clone(),
        })
    }

    /// Start the server unless it runs, is starting, or may not start (yet).
    pub fn ensure(self: &Arc<Self>) {
        let generation = {
            let mut state = lock(&self.state);
            let may_start = match self.status() {
                Status::Idle => true,
                Status::Restarting => state.retry_at.is_none_or(|at| Instant::now() >= at),
                _ => false,
            };
            if !may_start {
                return;
            }
            state.generation += 1;
            state.generation
        };
        self.set_status(Status::Starting);
        crate::tasks::spawn(self.clone().start(generation));
    }

    /// The connection once the server is ready, waiting for it until `deadline`.
    pub async fn ready(
        self: &Arc<Self>,
        deadline: Instant,
        cancel: &CancellationToken,
    ) -> Result<(Arc<Connection>, Capabilities), NotReady> {
        self.ensure();
        let mut status = self.status.subscribe();
        loop {
            let now = *status.borrow_and_update();
            match now {
                Status::Ready => {
                    let state = lock(&self.state);
                    if let Some(connection) = &state.connection {
                        return Ok((connection.clone(), state.capabilities.clone()));
                    }
                    return Err(NotReady::Restarting(
                        state.error.clone().unwrap_or_default(),
                    ));
                }
                Status::Failed => {
                    return Err(NotReady::Failed(
                        lock(&self.state).error.clone().unwrap_or_default(),
                    ));
                }
                Status::Restarting => {
                    return Err(NotReady::Restarting(
                        lock(&self.state).error.clone().unwrap_or_default(),
                    ));
                }
                Status::Stopped => return Err(NotReady::Stopped),
                Status::Idle | Status::Starting => {}
            }
            tokio::select! {
                changed = status.changed() => {
                    if changed.is_err() {
                        return Err(NotReady::Stopped);
                    }
                }
                () = tokio::time::sleep_until(deadline.into()) => return Err(NotReady::Starting),
                () = cancel.cancelled() => return Err(NotReady::Cancelled),
            }
        }
    }

    async fn start(self: Arc<Self>, generation: u64) {
        let spawned = process::spawn(&self.spec, &self.root, &self.hidden_env);
        let (process, stdin, stdout) = match spawned {
            Ok(spawned) => spawned,
            Err(why) => {
                // Not a crash: it would fail the same way again.
                lock(&self.state).error = Some(why);
                self.set_status(Status::Failed);
                return;
            }
        };
        tracing::info!(target: "lsp", server = %self.spec.name, root = %self.root.display(), pid = process.pid, "language server started");
        let inbox = Arc::new(Inbox::new(Arc::downgrade(&self), generation));
        let (connection, serving) = Connection::start(stdout, stdin, inbox);
        let current = {
            let mut state = lock(&self.state);
            let current = state.generation == generation && self.status() != Status::Stopped;
            if current {
                state.connection = Some(connection.clone());
            }
            current
        };
        if !current {
            process.kill().await;
            return;
        }
        lock(&self.state).process = Some(process);
        // Watch for its end from now on: a crash during `initialize` is a crash too.
        let watcher = self.clone();
        crate::tasks::spawn(async move {
            let why = serving
                .await
                .unwrap_or_else(|e| format!("its connection failed: {e}"));
            watcher.ended(generation, why).await;
        });
        let params = super::initialize::params(&self.spec, &self.root);
        let answer = connection
            .call::<Initialize>(params, self.spec.startup_timeout)
            .await;
        let result = match answer {
            Ok(result) => result,
            Err(RpcError::Timeout(limit)) => {
                let why = format!(
                    "it did not answer `initialize` within {} s",
                    limit.as_secs_f32()
                );
                self.crashed(generation, why).await;
                return;
            }
            // The watcher tells why it ended.
            Err(RpcError::Closed) => return,
            Err(error) => {
                let why = format!("`initialize` failed: {error}");
                self.crashed(generation, why).await;
                return;
            }
        };
        let capabilities = super::initialize::capabilities(&result.capabilities);
        let _ = connection.tell::<Initialized>(lsp_types::InitializedParams {});
        {
            let mut state = lock(&self.state);
            if state.generation != generation || self.status() != Status::Starting {
                return;
            }
            state.capabilities = capabilities;
            state.up_since = Some(Instant::now());
            state.was_ready = true;
            state.error = None;
        }
        tracing::info!(target: "lsp", server = %self.spec.name, "language server ready");
        self.set_status(Status::Ready);
    }

    /// The server's connection ended: a crash unless we stopped it.
    async fn ended(&self, generation: u64, why: String) {
        let process = {
            let mut state = lock(&self.state);
            if state.generation != generation || self.status() == Status::Stopped {
                return;
            }
            state.process.take()
        };
        let mut message = why;
        if let Some(mut process) = process {
            if let Some(status) = process.exit_status(Duration::from_millis(500)).await {
                message = format!("it exited ({status})");
            }
            process.stderr_read(Duration::from_millis(500)).await;
            if let Some(tail) = process.stderr.last(3) {
                message.push_str(&format!("; its last words: {tail}"));
            }
            process.kill().await;
        }
        self.crashed(generation, message).await;
    }

    /// Record a crash of start `generation`: kill what is left, forget the documents, and
    /// restart on a later use after a growing delay — or give up: on a server that never
    /// became ready (it would fail the same way again), and after `MAX_CRASHES` in a row.
    async fn crashed(&self, generation: u64, why: String) {
        let (process, failed) = {
            let mut state = lock(&self.state);
            // Recorded once per start: its connection ending after it was given up on (and
            // killed) is no second crash.
            let recorded = matches!(
                self.status(),
                Status::Stopped | Status::Failed | Status::Restarting
            );
            if state.generation != generation || recorded {
                return;
            }
            let starting = self.status() == Status::Starting;
            if state.up_since.is_some_and(|at| at.elapsed() >= STABLE) {
                state.crashes = 0;
            }
            state.crashes += 1;
            state.connection = None;
            state.up_since = None;
            state.progress.clear();
            let failed = (starting && !state.was_ready) || state.crashes >= MAX_CRASHES;
            state.error = Some(if starting {
                format!("it did not start: {why}")
            } else if failed {
                format!("{why} (given up after {} crashes in a row)", state.crashes)
            } else {
                why
            });
            let delay = Duration::from_secs(1 << state.crashes.min(5).saturating_sub(1));
            state.retry_at = (!failed).then(|| Instant::now() + delay);
            tracing::warn!(target: "lsp", server = %self.spec.name, error = ?state.error, "language server stopped");
            (state.process.take(), failed)
        };
        lock(&self.docs).clear();
        self.set_status(if failed {
            Status::Failed
        } else {
            Status::Restarting
        });
        if let Some(process) = process {
            process.kill().await;
        }
    }

    /// Whether its failure was told already (it is told once).
    pub fn failure_told(&self) -> bool {
        self.told.swap(true, std::sync::atomic::Ordering::SeqCst)
    }

    /// Stop the server for good: ask it to shut down (briefly), then kill it and everything
    /// below it — before it exits, while what it started is still found below it.
    pub async fn stop(&self) {
        let (connection, process) = {
            let mut state = lock(&self.state);
            state.generation += 1;
            (state.connection.take(), state.process.take())
        };
        self.set_status(Status::Stopped);
        if let Some(connection) = connection {
            let _ = connection
                .request(
                    <Shutdown as lsp_types::request::Request>::METHOD,
                    serde_json::Value::Null,
                    Duration::from_secs(1),
                )
                .await;
        }
        if let Some(process) = process {
            process.kill().await;
        }
        lock(&self.docs).clear();
    }

    /// Tell the server `path`'s text as it is on disk now (opening the document, or
    /// changing it when it differs from what the server has).
    pub async fn sync(
        &self,
        connection: &Connection,
        capabilities: &Capabilities,
        path: &Path,
    ) -> Result<Synced, String> {
        let uri = uri_of(path).ok_or_else(|| format!("{} is not a file path", path.display()))?;
        let metadata = tokio::fs::metadata(path)
            .await
            .map_err(|e| format!("cannot read {}: {e}", path.display()))?;
        if metadata.len() > MAX_FILE {
            return Err(format!(
                "{} is too large to send to a language server ({} bytes)",
                path.display(),
                metadata.len()
            ));
        }
        let bytes = tokio::fs::read(path)
            .await
            .map_err(|e| format!("cannot read {}: {e}", path.display()))?;
        let text: Arc<str> = String::from_utf8_lossy(&bytes).into();
        let stamp = metadata.modified().ok().map(|m| (m, metadata.len()));
        let mut docs = lock(&self.docs);
        // A crash forgets every document (after it took the connection away): what is
        // recorded for a connection that is no longer the running one would read as open to
        // the server started next, which would then never be sent the file (nor publish for
        // it). Checked under `docs`, so a crash cannot come between the check and the record.
        if !self.is_current(connection) {
            return Err(format!("cannot reach {}: it stopped", self.spec.name));
        }
        let before = docs.diagnostics(path).cloned();
        let (sync, evicted) = docs.record(path, text.clone(), stamp);
        let sent = match sync {
            Sync::Same(_) => Ok(()),
            Sync::Open(version) => {
                connection.tell::<DidOpenTextDocument>(lsp_types::DidOpenTextDocumentParams {
                    text_document: lsp_types::TextDocumentItem {
                        uri: uri.clone(),
                        language_id: language_id(path),
                        version,
                        text: text.to_string(),
                    },
                })
            }
            Sync::Change(version) => {
                connection.tell::<DidChangeTextDocument>(lsp_types::DidChangeTextDocumentParams {
                    text_document: lsp_types::VersionedTextDocumentIdentifier {
                        uri: uri.clone(),
                        version,
                    },
                    content_changes: vec![lsp_types::TextDocumentContentChangeEvent {
                        range: None,
                        range_length: None,
                        text: text.to_string(),
                    }],
                })
            }
        };
        let changed = !matches!(sync, Sync::Same(_));
        if changed && let Some(include_text) = capabilities.save {
            let _ = connection.tell::<DidSaveTextDocument>(lsp_types::DidSaveTextDocumentParams {
                text_document: lsp_types::TextDocumentIdentifier { uri },
                text: include_text.then(|| text.to_string()),
            });
        }
        if let Some(uri) = evicted.as_deref().and_then(uri_of) {
            let _ =
                connection.tell::<DidCloseTextDocument>(lsp_types::DidCloseTextDocumentParams {
                    text_document: lsp_types::TextDocumentIdentifier { uri },
                });
        }
        drop(docs);
        sent.map_err(|e| format!("cannot reach {}: {e}", self.spec.name))?;
        Ok(Synced {
            before,
            changed,
            text,
        })
    }

    /// Whether `connection` is the running server's (not one a crash has ended).
    fn is_current(&self, connection: &Connection) -> bool {
        lock(&self.state)
            .connection
            .as_ref()
            .is_some_and(|current| std::ptr::eq(current.as_ref(), connection))
    }

    /// The file is gone: close its document and drop its diagnostics.
    pub fn forget(&self, connection: &Connection, path: &Path) {
        let was_open = {
            let mut docs = lock(&self.docs);
            // Not a document of the server started after a crash.
            self.is_current(connection) && docs.forget(path)
        };
        if was_open && let Some(uri) = uri_of(path) {
            let _ =
                connection.tell::<DidCloseTextDocument>(lsp_types::DidCloseTextDocumentParams {
                    text_document: lsp_types::TextDocumentIdentifier { uri },
                });
        }
        self.changed();
    }

    /// The open documents and their stamps (modification time and length when read).
    pub fn open_files(&self) -> Vec<(PathBuf, Option<(std::time::SystemTime, u64)>)> {
        lock(&self.docs).open_files()
    }

    /// The text the server has of `path`, when it is open.
    pub fn open_text(&self, path: &Path) -> Option<Arc<str>> {
        lock(&self.docs).get(path).map(|doc| doc.text.clone())
    }

    /// The diagnostics of `path`'s current text, waiting for them until `deadline`; `None`
    /// when they did not come in time (or the server stopped).
    pub async fn wait_current(
        &self,
        path: &Path,
        deadline: Instant,
        cancel: &CancellationToken,
    ) -> Option<Published> {
        let mut published = self.published.subscribe();
        let mut status = self.status.subscribe();
        // Unversioned diagnostics: the last ones seen and since when nothing followed.
        let mut quiet: Option<(u64, Instant)> = None;
        loop {
            published.borrow_and_update();
            status.borrow_and_update();
            if self.status() != Status::Ready {
                return None;
            }
            let current = lock(&self.docs).current(path).cloned();
            let mut wake = deadline;
            if let Some(current) = current {
                if current.version.is_some() {
                    return Some(current);
                }
                let since = match quiet {
                    Some((seq, since)) if seq == current.seq => since,
                    _ => Instant::now(),
                };
                quiet = Some((current.seq, since));
                let settled = since + SETTLE;
                if Instant::now() >= settled || Instant::now() >= deadline {
                    return Some(current);
                }
                wake = settled.min(deadline);
            }
            tokio::select! {
                _ = published.changed() => {}
                _ = status.changed() => {}
                () = tokio::time::sleep_until(wake.into()) => {
                    if wake == deadline && quiet.is_none() {
                        return None;
                    }
                }
                () = cancel.cancelled() => return None,
            }
        }
    }

    // For the inbox.

    pub(super) fn publish(
        &self,
        path: PathBuf,
        version: Option<i32>,
        items: Vec<lsp_types::Diagnostic>,
    ) {
        lock(&self.docs).publish(path, version, items);
        self.published.send_modify(|n| *n = n.wrapping_add(1));
        self.changed();
    }

    pub(super) fn progress(&self, token: String, progress: Option<Progress>) {
        let mut state = lock(&self.state);
        match progress {
            Some(progress) => state.progress.insert(token, progress),
            None => state.progress.remove(&token),
        };
        drop(state);
        self.changed();
    }

    pub(super) fn progress_of(&self, token: &str) -> Option<Progress> {
        lock(&self.state).progress.get(token).cloned()
    }

    pub(super) fn is_generation(&self, generation: u64) -> bool {
        lock(&self.state).generation == generation
    }
}

#[cfg(test)]
#[path = "server_tests.rs"]
mod tests;
