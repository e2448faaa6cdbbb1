//! Language servers: one per language and project root, started on the first file of their
//! language (`touch` when the model reads it, or the first change), kept in step with the
//! files the agent reads and changes, and asked for the diagnostics of each change — the
//! engine waits for them, bounded (`[lsp] diagnostics_wait_secs`), after `write`, `edit`, and
//! a command that changed files a server has open — and, through the `lsp` tool, for
//! definitions, references, hovers and symbols. `Lsp` owns the servers; the engine reaches it
//! through `ToolSettings::lsp`, front ends read `views` and `totals` for `/lsp`, `get_state`
//! and the status line, and `shut_down` ends them all with the agent.

pub mod documents;
mod inbox;
mod initialize;
pub mod location;
pub mod navigate;
mod process;
pub mod report;
pub mod rpc;
pub mod server;
pub mod view;

use crate::config::lsp::{LspSettings, ServerSpec};
use report::{FileReport, Outcome};
use server::{NotReady, Server, ServerView, Status};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};
use tokio::sync::watch;
use tokio_util::sync::CancellationToken;
pub use view::{View, views_json};

/// At most this many servers run at once (one per language and root).
pub const MAX_SERVERS: usize = 8;

pub struct Lsp {
    settings: LspSettings,
    specs: Vec<Arc<ServerSpec>>,
    cwd: PathBuf,
    hidden_env: Arc<Vec<String>>,
    servers: Mutex<Vec<Arc<Server>>>,
    changes: Arc<watch::Sender<u64>>,
    /// Some server is for this workspace (see `available`).
    available: bool,
}

impl std::fmt::Debug for Lsp {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Lsp")
            .field("enabled", &self.settings.enabled)
            .field("servers", &self.specs.len())
            .finish()
    }
}

impl Lsp {
    /// The servers of `settings` for a workspace at `cwd` (none started yet); their
    /// environment lacks `hidden_env` (the providers' keys).
    pub fn new(settings: LspSettings, cwd: PathBuf, hidden_env: Vec<String>) -> Arc<Lsp> {
        let specs = settings.servers.iter().cloned().map(Arc::new).collect();
        let available = settings.usable().any(|spec| for_workspace(spec, &cwd));
        Arc::new(Lsp {
            available,
            settings,
            specs,
            cwd,
            hidden_env: Arc::new(hidden_env),
            servers: Mutex::default(),
            changes: Arc::new(watch::channel(0).0),
        })
    }

    /// Whether a server can run for this workspace (the `lsp` tool is offered only then): a
    /// configured one whose program is there, or a built-in one whose program is on PATH
    /// and whose language the workspace looks like (one of its root markers in the working
    /// directory or above, or a file of its type at the top).
    pub fn available(&self) -> bool {
        self.available
    }

    /// How long a change waits for its diagnostics.
    pub fn wait(&self) -> Duration {
        self.settings.wait
    }

    pub fn cwd(&self) -> &Path {
        &self.cwd
    }

    /// Changes whenever a server's status or diagnostics change.
    pub fn subscribe(&self) -> watch::Receiver<u64> {
        self.changes.subscribe()
    }

    /// The usable servers for a file's type: those configured for it, or else the first
    /// built-in one found.
    fn specs_for(&self, path: &Path) -> Vec<Arc<ServerSpec>> {
        let extension = location::extension(path);
        if extension.is_empty() || !self.settings.enabled {
            return Vec::new();
        }
        let serving: Vec<&Arc<ServerSpec>> = self
            .specs
            .iter()
            .filter(|s| s.enabled && s.program.is_some() && s.filetypes.contains(&extension))
            .collect();
        let configured: Vec<Arc<ServerSpec>> = serving
            .iter()
            .filter(|s| !s.builtin)
            .map(|s| Arc::clone(s))
            .collect();
        if !configured.is_empty() {
            return configured;
        }
        serving.into_iter().take(1).cloned().collect()
    }

    /// Whether some server is for files like `path`.
    pub fn serves(&self, path: &Path) -> bool {
        !self.specs_for(path).is_empty()
    }

    /// The servers for `path` (created when needed, not started).
    pub fn servers_for(&self, path: &Path) -> Vec<Arc<Server>> {
        let mut servers = self.servers.lock().unwrap_or_else(PoisonError::into_inner);
        let mut found = Vec::new();
        for spec in self.specs_for(path) {
            let root = root_of(path, &spec.root_markers, &self.cwd);
            if let Some(server) = servers
                .iter()
                .find(|s| s.spec.name == spec.name && s.root == root)
            {
                found.push(server.clone());
                continue;
            }
            let live = servers
                .iter()
                .filter(|s| s.status() != Status::Stopped)
                .count();
            if live >= MAX_SERVERS {
                tracing::warn!(target: "lsp", server = %spec.name, root = %root.display(), "too many language servers; not starting another");
                continue;
            }
            let server = Server::new(spec, root, self.hidden_env.clone(), self.changes.clone());
            servers.push(server.clone());
            found.push(server);
        }
        found
    }

    /// Every server started so far.
    pub fn started(&self) -> Vec<Arc<Server>> {
        self.servers
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }

    /// The model looked at `path`: start its servers and open it there, in the background,
    /// so that the diagnostics of a later change can be told from those before it.
    pub fn touch(&self, path: PathBuf) {
        for server in self.servers_for(&path) {
            let path = path.clone();
            crate::tasks::spawn(async move {
                let deadline = Instant::now() + server.spec.startup_timeout;
                let cancel = CancellationToken::new();
                if let Ok((connection, capabilities)) = server.ready(deadline, &cancel).await {
                    let _ = server.sync(&connection, &capabilities, &path).await;
                }
            });
        }
    }

    /// After `paths` changed: each one's diagnostics from each of its servers, waiting for
    /// them at most `wait` (all files together).
    pub async fn after_change(
        &self,
        paths: &[PathBuf],
        cancel: &CancellationToken,
    ) -> Vec<FileReport> {
        let deadline = Instant::now() + self.settings.wait;
        let checks = paths.iter().flat_map(|path| {
            self.servers_for(path)
                .into_iter()
                .map(move |server| self.check_synced(server, path.clone(), deadline, cancel, true))
        });
        futures_util::future::join_all(checks)
            .await
            .into_iter()
            .flatten()
            .map(|(report, _)| report)
            .collect()
    }

    /// After a command: the diagnostics of the open files it changed (none when it changed
    /// none).
    pub async fn after_command(&self, cancel: &CancellationToken) -> Vec<FileReport> {
        let deadline = Instant::now() + self.settings.wait;
        let mut checks = Vec::new();
        for server in self.started() {
            if server.status() != Status::Ready {
                continue;
            }
            for (path, stamp) in server.open_files() {
                let now = std::fs::metadata(&path)
                    .ok()
                    .map(|m| (m.modified().ok(), m.len()));
                match now {
                    None => {
                        if let Ok((connection, _)) = server.ready(deadline, cancel).await {
                            server.forget(&connection, &path);
                        }
                    }
                    Some((Some(modified), len)) if stamp == Some((modified, len)) => {}
                    Some(_) => {
                        checks.push(self.check_if_changed(server.clone(), path, deadline, cancel))
                    }
                }
            }
        }
        futures_util::future::join_all(checks)
            .await
            .into_iter()
            .flatten()
            .collect()
    }

    /// The diagnostics of `path` as it is now, for the `lsp` tool: waiting at most `wait`.
    pub async fn diagnostics(
        &self,
        path: &Path,
        wait: Duration,
        cancel: &CancellationToken,
    ) -> Vec<FileReport> {
        let deadline = Instant::now() + wait;
        let checks = self
            .servers_for(path)
            .into_iter()
            .map(|server| self.check_synced(server, path.to_path_buf(), deadline, cancel, false));
        futures_util::future::join_all(checks)
            .await
            .into_iter()
            .flatten()
            .map(|(report, _)| report)
            .collect()
    }

    async fn check_if_changed(
        &self,
        server: Arc<Server>,
        path: PathBuf,
        deadline: Instant,
        cancel: &CancellationToken,
    ) -> Option<FileReport> {
        let (report, changed) = self
            .check_synced(server, path, deadline, cancel, true)
            .await?;
        // A command that touched the file but left its text as it was changed nothing.
        changed.then_some(report)
    }

    /// Sync `path` with `server` and wait for its diagnostics until `deadline`: the report,
    /// and whether the text the server got was new to it. With `failure_once`, a server
    /// that could not start is reported the first time only (`None` after that).
    async fn check_synced(
        &self,
        server: Arc<Server>,
        path: PathBuf,
        deadline: Instant,
        cancel: &CancellationToken,
        failure_once: bool,
    ) -> Option<(FileReport, bool)> {
        let name = server.name().to_string();
        let report = |outcome| FileReport {
            path: path.clone(),
            server: name.clone(),
            outcome,
        };
        let (connection, capabilities) = match server.ready(deadline, cancel).await {
            Ok(ready) => ready,
            Err(NotReady::Failed(_)) if failure_once && server.failure_told() => return None,
            Err(not_ready) => return Some((report(not_ready_outcome(&server, not_ready)), true)),
        };
        let synced = match server.sync(&connection, &capabilities, &path).await {
            Ok(synced) => synced,
            Err(_) if connection.is_closed() => {
                // It just died: say so once its end is recorded.
                server.until_not_ready(deadline).await;
                let outcome = not_ready_outcome(&server, NotReady::Restarting(String::new()));
                return Some((report(outcome), true));
            }
            Err(why) => return Some((report(Outcome::Unavailable(why)), true)),
        };
        let outcome = match server.wait_current(&path, deadline, cancel).await {
            Some(now) => report::checked(
                &now,
                synced.before.as_ref(),
                synced.changed,
                &synced.text,
                capabilities.encoding,
                self.settings.max_diagnostics,
            ),
            None if cancel.is_cancelled() => Outcome::Late("the run was stopped".into()),
            None if server.status() != Status::Ready => {
                not_ready_outcome(&server, NotReady::Restarting(String::new()))
            }
            None => {
                let waited = format!("{name} did not publish them in time");
                Outcome::Late(match server.busy() {
                    Some(busy) => format!("{waited} (it is busy: {busy})"),
                    None => waited,
                })
            }
        };
        Some((report(outcome), synced.changed))
    }

    /// Every configured server, and each root a started one serves, in name order.
    pub fn views(&self) -> Vec<View> {
        let started = self.started();
        let mut views = Vec::new();
        for spec in &self.specs {
            let base = View {
                name: spec.name.clone(),
                command: spec.command.clone(),
                filetypes: spec.filetypes.clone(),
                status: String::new(),
                root: None,
                error: None,
                open_files: 0,
                errors: 0,
                warnings: 0,
                busy: Vec::new(),
            };
            let status = if !self.settings.enabled || !spec.enabled {
                Some("disabled")
            } else if spec.program.is_none() {
                Some("not installed")
            } else {
                None
            };
            if let Some(status) = status {
                views.push(View {
                    status: status.to_string(),
                    ..base
                });
                continue;
            }
            let mine: Vec<ServerView> = started
                .iter()
                .filter(|s| s.spec.name == spec.name)
                .map(|s| s.view())
                .collect();
            if mine.is_empty() {
                views.push(View {
                    status: Status::Idle.as_str().to_string(),
                    ..base.clone()
                });
            }
            for view in mine {
                views.push(View {
                    status: view.status.as_str().to_string(),
                    root: Some(view.root),
                    error: view.error,
                    open_files: view.open_files,
                    errors: view.errors,
                    warnings: view.warnings,
                    busy: view
                        .progress
                        .iter()
                        .map(|p| match p.percentage {
                            Some(percent) => format!("{} {percent}%", p.title),
                            None => p.title.clone(),
                        })
                        .collect(),
                    ..base.clone()
                });
            }
        }
        views
    }

    /// Errors and warnings over every started server; `None` before any has started.
    pub fn totals(&self) -> Option<(usize, usize)> {
        let started = self.started();
        if started.is_empty() {
            return None;
        }
        Some(
            started
                .iter()
                .map(|s| s.totals())
                .fold((0, 0), |(e, w), (e2, w2)| (e + e2, w + w2)),
        )
    }

    /// Stop every server (in parallel), each one's whole process tree included.
    pub async fn shut_down(&self) {
        let servers = self.started();
        let stopping = servers.iter().map(|server| server.stop());
        let _ = tokio::time::timeout(
            Duration::from_secs(5),
            futures_util::future::join_all(stopping),
        )
        .await;
    }
}

fn not_ready_outcome(server: &Server, not_ready: NotReady) -> Outcome {
    let name = server.name();
    match not_ready {
        NotReady::Starting => Outcome::Late(match server.busy() {
            Some(busy) => format!("{name} is still starting ({busy})"),
            None => format!("{name} is still starting"),
        }),
        NotReady::Restarting(why) => {
            let why = if why.is_empty() {
                server.view().error.unwrap_or_default()
            } else {
                why
            };
            Outcome::Unavailable(format!(
                "{name} stopped ({why}); it is started again on a later use"
            ))
        }
        NotReady::Failed(why) => Outcome::Unavailable(format!("{name} is not available: {why}")),
        NotReady::Stopped => Outcome::Unavailable(format!("{name} was stopped")),
        NotReady::Cancelled => Outcome::Late("the run was stopped".to_string()),
    }
}

/// Whether `spec` is for the workspace at `cwd` (see `Lsp::available`).
fn for_workspace(spec: &ServerSpec, cwd: &Path) -> bool {
    if !spec.builtin {
        return true;
    }
    let marked = cwd
        .ancestors()
        .any(|dir| spec.root_markers.iter().any(|m| dir.join(m).exists()));
    marked
        || std::fs::read_dir(cwd).is_ok_and(|entries| {
            entries
                .flatten()
                .take(1000)
                .any(|entry| spec.filetypes.contains(&location::extension(&entry.path())))
        })
}

/// The project root of `path` for a server with `markers`: the nearest directory above it
/// holding one of them; without one, the working directory for a file inside it, else the
/// file's own directory.
pub fn root_of(path: &Path, markers: &[String], cwd: &Path) -> PathBuf {
    let start = path.parent().unwrap_or(path);
    for dir in start.ancestors() {
        if markers.iter().any(|m| dir.join(m).exists()) {
            return dir.to_path_buf();
        }
    }
    if path.starts_with(cwd) {
        cwd.to_path_buf()
    } else {
        start.to_path_buf()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_root_is_the_nearest_marker_above_the_file() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        std::fs::create_dir_all(root.join("crates/a/src")).unwrap();
        std::fs::write(root.join("Cargo.toml"), "").unwrap();
        std::fs::write(root.join("crates/a/Cargo.toml"), "").unwrap();
        let markers = vec!["Cargo.toml".to_string()];
        assert_eq!(
            root_of(&root.join("crates/a/src/lib.rs"), &markers, root),
            root.join("crates/a")
        );
        assert_eq!(root_of(&root.join("build.rs"), &markers, root), root);
        let none = vec!["nothing-here.marker".to_string()];
        assert_eq!(
            root_of(&root.join("crates/a/src/lib.rs"), &none, root),
            root
        );
        let outside = tempfile::tempdir().unwrap();
        assert_eq!(
            root_of(&outside.path().join("x.rs"), &none, root),
            outside.path()
        );
    }
}
