//! The socket a running `agent` serves its session on: `$AGENT_HOME/run/<session-id>.sock`,
//! in a directory only its user may enter (0700), the socket itself 0600. Sockets left by
//! processes that died are removed when the next one starts; the socket follows the
//! session when its id changes (a new, resumed or forked session) and goes when the
//! process ends, after every client was told why.

use super::connection;
use super::hub::Hub;
use crate::agent::Agent;
use crate::config::Settings;
use crate::mcp::McpManager;
use crate::modes::rpc::Context;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::net::UnixListener;
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

/// How long an ending process waits for its clients to be told (they may not read).
const GOODBYE_WAIT: Duration = Duration::from_secs(2);

#[derive(Debug, thiserror::Error)]
pub enum ServeError {
    #[error("cannot prepare {}: {source}", .path.display())]
    Directory {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("{} belongs to another user (uid {owner}); live sessions are not served", .path.display())]
    NotOurs { path: PathBuf, owner: u32 },
    #[error("session {0} is already served by another running agent")]
    Taken(String),
    #[error("cannot listen on {}: {source}", .path.display())]
    Bind {
        path: PathBuf,
        source: std::io::Error,
    },
}

/// The directory of the sockets: `run/` in the agent's home.
pub fn run_dir(home: &Path) -> PathBuf {
    home.join("run")
}

/// The socket of session `id`.
pub fn socket_path(home: &Path, id: &str) -> PathBuf {
    run_dir(home).join(format!("{id}.sock"))
}

/// A session being served; `shutdown` ends it (dropping it only removes the socket).
pub struct LiveServer {
    hub: Arc<Hub>,
    closing: CancellationToken,
    path: Arc<Mutex<PathBuf>>,
    /// Held by every connection: all are done when `recv` gives `None`.
    connections: Option<mpsc::Sender<()>>,
    done: mpsc::Receiver<()>,
}

/// Serve `agent`'s session on its socket. Must be called inside the tokio runtime.
pub fn serve(
    agent: &Agent,
    settings: &Settings,
    mcp: Arc<McpManager>,
) -> Result<LiveServer, ServeError> {
    let dir = run_dir(&settings.paths.home);
    prepare_dir(&dir)?;
    clean_stale(&dir);
    let agent = Arc::new(agent.client_handle());
    let events = agent.subscribe();
    let id = agent.snapshot().session.id;
    let path = dir.join(format!("{id}.sock"));
    let listener = bind(&path, &id)?;
    let (renames_tx, renames) = mpsc::unbounded_channel();
    let hub = Hub::new(agent.clone(), renames_tx);
    let closing = CancellationToken::new();
    crate::tasks::spawn(hub.clone().pump(events, closing.clone()));
    let path = Arc::new(Mutex::new(path));
    crate::tasks::spawn(follow_renames(dir, path.clone(), renames));
    let context = Arc::new(Context {
        agent,
        mcp,
        settings: settings.clone(),
    });
    let (connections, done) = mpsc::channel(1);
    crate::tasks::spawn(accept(
        listener,
        hub.clone(),
        context,
        closing.clone(),
        connections.clone(),
    ));
    Ok(LiveServer {
        hub,
        closing,
        path,
        connections: Some(connections),
        done,
    })
}

impl LiveServer {
    /// The socket's path now.
    pub fn path(&self) -> PathBuf {
        lock(&self.path).clone()
    }

    /// End the live session: every client gets a `live_end` line saying `reason`, then its
    /// connection closes; the socket is removed.
    pub async fn shutdown(mut self, reason: &str) {
        remove_socket(&self.path);
        self.hub.close(reason);
        self.closing.cancel();
        self.connections = None;
        let _ = tokio::time::timeout(GOODBYE_WAIT, self.done.recv()).await;
    }
}

impl Drop for LiveServer {
    fn drop(&mut self) {
        self.closing.cancel();
        remove_socket(&self.path);
    }
}

fn lock(path: &Mutex<PathBuf>) -> std::sync::MutexGuard<'_, PathBuf> {
    path.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
}

fn remove_socket(path: &Mutex<PathBuf>) {
    let _ = std::fs::remove_file(&*lock(path));
}

/// `run/`, 0700 and ours (made so when it is ours but too open).
fn prepare_dir(dir: &Path) -> Result<(), ServeError> {
    use std::os::unix::fs::{DirBuilderExt, MetadataExt};
    let failed = |source| ServeError::Directory {
        path: dir.to_path_buf(),
        source,
    };
    match std::fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(dir)
    {
        Ok(()) => {}
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {}
        Err(e) => return Err(failed(e)),
    }
    let metadata = std::fs::symlink_metadata(dir).map_err(failed)?;
    // SAFETY: geteuid has no preconditions and cannot fail.
    let me = unsafe { libc::geteuid() };
    if metadata.uid() != me || !metadata.is_dir() {
        return Err(ServeError::NotOurs {
            path: dir.to_path_buf(),
            owner: metadata.uid(),
        });
    }
    if metadata.mode() & 0o777 != 0o700 {
        std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o700)).map_err(failed)?;
    }
    Ok(())
}

/// Whether a process still listens on `path`.
fn alive(path: &Path) -> bool {
    std::os::unix::net::UnixStream::connect(path).is_ok()
}

/// Remove the sockets in `dir` nobody listens on any more (their process died).
pub fn clean_stale(dir: &Path) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for entry in entries.flatten() {
        let path = entry.path();
        if path.extension().is_some_and(|e| e == "sock") && !alive(&path) {
            let _ = std::fs::remove_file(&path);
        }
    }
}

fn bind(path: &Path, id: &str) -> Result<UnixListener, ServeError> {
    if path.exists() {
        if alive(path) {
            return Err(ServeError::Taken(id.to_string()));
        }
        let _ = std::fs::remove_file(path);
    }
    let failed = |source| ServeError::Bind {
        path: path.to_path_buf(),
        source,
    };
    let listener = UnixListener::bind(path).map_err(failed)?;
    // The directory is 0700 already; the socket is made 0600 besides.
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o600)).map_err(failed)?;
    Ok(listener)
}

/// Rename the socket after the session when its id changes (a socket renamed is still the
/// one listened on); not over a socket another process serves.
async fn follow_renames(
    dir: PathBuf,
    path: Arc<Mutex<PathBuf>>,
    mut renames: mpsc::UnboundedReceiver<String>,
) {
    while let Some(id) = renames.recv().await {
        let target = dir.join(format!("{id}.sock"));
        if alive(&target) {
            tracing::warn!(%id, "the new session is served by another agent: keeping the old socket");
            continue;
        }
        let mut current = lock(&path);
        match std::fs::rename(&*current, &target) {
            Ok(()) => *current = target,
            Err(error) => tracing::warn!(%error, "cannot rename the live session's socket"),
        }
    }
}

/// Whether process `pid` descends from this one: a command the agent started (a tool's
/// process, sandboxed or not) must never drive its own agent — approve its own calls, change
/// the permission mode, run the user's shell.
fn started_by_us(pid: i32) -> bool {
    let me = i64::from(std::process::id());
    let mut current = i64::from(pid);
    // Far deeper than any real process tree; a loop in /proc cannot hold us.
    for _ in 0..256 {
        match parent_of(current) {
            Some(parent) if parent == me => return true,
            Some(parent) if parent > 1 => current = parent,
            _ => return false,
        }
    }
    false
}

/// The parent of `pid` from `/proc/PID/stat` (after the command name, which may hold
/// anything, comes the state and then the parent's pid).
fn parent_of(pid: i64) -> Option<i64> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let after_name = &stat[stat.rfind(')')? + 1..];
    after_name.split_whitespace().nth(1)?.parse().ok()
}

async fn refuse(stream: tokio::net::UnixStream) {
    use tokio::io::AsyncWriteExt;
    let mut stream = stream;
    let line = serde_json::json!({
        "type": "live_end",
        "reason": "refused: a command this agent started cannot drive its session",
    });
    let _ = stream.write_all(format!("{line}\n").as_bytes()).await;
    let _ = stream.shutdown().await;
}

async fn accept(
    listener: UnixListener,
    hub: Arc<Hub>,
    context: Arc<Context>,
    closing: CancellationToken,
    connections: mpsc::Sender<()>,
) {
    loop {
        let stream = tokio::select! {
            () = closing.cancelled() => return,
            accepted = listener.accept() => match accepted {
                Ok((stream, _)) => stream,
                Err(error) => {
                    tracing::warn!(%error, "live session: accept failed");
                    continue;
                }
            },
        };
        if hub.is_closed() {
            return;
        }
        if let Some(pid) = stream.peer_cred().ok().and_then(|c| c.pid())
            && started_by_us(pid)
        {
            crate::tasks::spawn(refuse(stream));
            continue;
        }
        let (hub, context, closing, held) = (
            hub.clone(),
            context.clone(),
            closing.clone(),
            connections.clone(),
        );
        crate::tasks::spawn(async move {
            connection::serve(stream, hub, context, closing).await;
            drop(held);
        });
    }
}
