//! Connecting to a server with rmcp: open the transport, do the `initialize` handshake, list
//! the tools. Incoming messages pass through `Observed` on their way to rmcp, in the order
//! the server sent them: progress goes to its call there (rmcp would hand notifications to
//! tasks that may run after the call's answer), and `tools/list_changed` is noted there, so
//! the engine knows a fresh list is coming before it sees the answer of the call that
//! changed it. A watcher notices when the server goes away.

use super::erased::AnyTransport;
use super::progress::ProgressRouter;
use super::server::Server;
use super::transport::{self, Opened, SpawnEnv, StderrTail};
use rmcp::model::{
    ClientCapabilities, ClientConfig, Implementation, JsonRpcMessage, RequestId, ServerNotification,
};
use rmcp::service::{RunningService, RxJsonRpcMessage, TxJsonRpcMessage};
use rmcp::transport::Transport;
use rmcp::{ClientHandler, Peer, RoleClient, ServiceExt};
use std::collections::HashSet;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::Duration;
use tokio::sync::{mpsc, watch};
use tokio_util::sync::CancellationToken;

/// A live connection to a server.
pub struct Connection {
    pub peer: Peer<RoleClient>,
    pub progress: Arc<ProgressRouter>,
    /// A stdio server's process group.
    pub group: Option<i32>,
    pub stderr: StderrTail,
    /// Ends the rmcp service (and with it the transport).
    stop: CancellationToken,
    closed: AtomicBool,
    /// `true` once the service has ended and its transport is gone.
    ended: watch::Receiver<bool>,
}

impl Connection {
    pub fn is_closed(&self) -> bool {
        self.closed.load(Ordering::SeqCst) || *self.ended.borrow()
    }

    /// Stop using it and end the service.
    pub fn close(&self) {
        self.closed.store(true, Ordering::SeqCst);
        self.stop.cancel();
    }

    /// Wait (briefly) until the service has ended and let go of its transport.
    pub async fn finished(&self) {
        let mut ended = self.ended.clone();
        let _ = tokio::time::timeout(Duration::from_secs(1), ended.wait_for(|e| *e)).await;
    }
}

/// A connection and the server's tools.
pub struct Connected {
    pub connection: Arc<Connection>,
    pub tools: Vec<rmcp::model::Tool>,
}

/// The client side of one connection: who we are. Everything else the server sends is
/// handled in `Observed` or by rmcp's defaults (no sampling, no roots, elicitation declined).
struct Handler;

impl ClientHandler for Handler {
    fn get_info(&self) -> ClientConfig {
        ClientConfig::new(
            ClientCapabilities::default(),
            Implementation::new("agent", env!("CARGO_PKG_VERSION")),
        )
    }
}

/// Announced and finished tool-list refreshes of one server: the engine waits, before a
/// model request, until every announced list is in.
#[derive(Default)]
pub struct ListSync {
    announced: AtomicU64,
    done: watch::Sender<u64>,
}

impl ListSync {
    fn announce(&self) {
        self.announced.fetch_add(1, Ordering::SeqCst);
    }

    fn finish(&self, upto: u64) {
        self.done.send_if_modified(|done| {
            let newer = upto > *done;
            if newer {
                *done = upto;
            }
            newer
        });
    }

    /// Give up on refreshes still announced (the connection is gone).
    pub fn forget(&self) {
        self.finish(self.announced.load(Ordering::SeqCst));
    }

    /// Wait until every list announced so far is in.
    pub async fn caught_up(&self) {
        let target = self.announced.load(Ordering::SeqCst);
        let mut done = self.done.subscribe();
        let _ = done.wait_for(|done| *done >= target).await;
    }
}

/// A transport whose incoming messages are looked at in order before rmcp gets them. A
/// response to a request that was never sent (or was answered already) is dropped and
/// logged: rmcp would take one that comes before the `initialize` answer for a failed
/// handshake, and leave the server out for the whole session.
struct Observed<T> {
    inner: T,
    progress: Arc<ProgressRouter>,
    lists: Arc<ListSync>,
    list_changed: mpsc::UnboundedSender<()>,
    server: String,
    /// The requests sent and not yet answered.
    pending: HashSet<RequestId>,
}

impl<T> Observed<T> {
    fn new(
        inner: T,
        server: &str,
        progress: &Arc<ProgressRouter>,
        lists: &Arc<ListSync>,
        list_changed: &mpsc::UnboundedSender<()>,
    ) -> Self {
        Observed {
            inner,
            progress: progress.clone(),
            lists: lists.clone(),
            list_changed: list_changed.clone(),
            server: server.to_string(),
            pending: HashSet::new(),
        }
    }

    /// Whether `message` answers a request we sent (and is no longer awaited then); any
    /// other message passes.
    fn expected(&mut self, message: &RxJsonRpcMessage<RoleClient>) -> bool {
        let id = match message {
            JsonRpcMessage::Response(response) => &response.id,
            JsonRpcMessage::Error(error) => match &error.id {
                Some(id) => id,
                // An error about a request the server could not read: rmcp reports it.
                None => return true,
            },
            JsonRpcMessage::Request(_) | JsonRpcMessage::Notification(_) => return true,
        };
        if self.pending.remove(id) {
            return true;
        }
        tracing::warn!(
            target: "mcp",
            server = %self.server,
            %id,
            "ignored a response to a request that was never sent"
        );
        false
    }
}

impl<T: Transport<RoleClient>> Transport<RoleClient> for Observed<T> {
    type Error = T::Error;

    fn send(
        &mut self,
        item: TxJsonRpcMessage<RoleClient>,
    ) -> impl Future<Output = Result<(), Self::Error>> + Send + 'static {
        if let JsonRpcMessage::Request(request) = &item {
            self.pending.insert(request.id.clone());
        }
        self.inner.send(item)
    }

    async fn receive(&mut self) -> Option<RxJsonRpcMessage<RoleClient>> {
        let message = loop {
            let message = self.inner.receive().await;
            match &message {
                Some(message) if !self.expected(message) => continue,
                _ => break message,
            }
        };
        if let Some(JsonRpcMessage::Notification(notification)) = &message {
            match &notification.notification {
                ServerNotification::ProgressNotification(progress) => {
                    self.progress.deliver(progress.params.clone());
                }
                ServerNotification::ToolListChangedNotification(_) => {
                    self.lists.announce();
                    let _ = self.list_changed.send(());
                }
                _ => {}
            }
        }
        message
    }

    fn close(&mut self) -> impl Future<Output = Result<(), Self::Error>> + Send {
        self.inner.close()
    }
}

/// Connect to `server` and list its tools. The caller bounds the time this takes.
pub async fn connect(
    server: &Arc<Server>,
    env: &SpawnEnv,
    tail: &StderrTail,
) -> Result<Connected, String> {
    // A server signed in to (`agent mcp login`) and given no token of its own by the config.
    let signed_in = match (&server.config.transport, crate::auth::requests::store()) {
        (
            super::config::Transport::Http {
                url,
                bearer_token_env: None,
                ..
            },
            Some(store),
        ) => crate::auth::mcp::authorized(store, server.name(), url.as_str()).await?,
        _ => None,
    };
    let opened = transport::open(
        server.name(),
        &server.config.transport,
        env,
        tail,
        signed_in,
    )?;
    let progress = Arc::new(ProgressRouter::default());
    let lists = server.lists();
    let (list_changed, mut changes) = mpsc::unbounded_channel();
    // One transport type, so rmcp's service is compiled once (src/mcp/erased.rs).
    let (transport, group) = match opened {
        Opened::Stdio { transport, group } => {
            server.starting_group(group);
            (AnyTransport::new(transport), group)
        }
        Opened::Http(transport) => (AnyTransport::new(transport), None),
    };
    let observed = Observed::new(transport, server.name(), &progress, &lists, &list_changed);
    let running = Handler.serve(observed).await;
    let running: RunningService<RoleClient, Handler> = running.map_err(|e| {
        let error = e.to_string();
        // The server answered 401: it wants an OAuth sign-in (or a renewed one).
        if error.contains("Auth required") || error.contains("authorization required") {
            crate::auth::mcp::needs_login(server.name())
        } else {
            handshake_error(&error)
        }
    })?;
    let peer = running.peer().clone();
    let offers_tools = peer
        .peer_info()
        .is_some_and(|info| info.capabilities.tools.is_some());
    let tools = if offers_tools {
        peer.list_all_tools()
            .await
            .map_err(|e| format!("listing its tools failed: {e}"))?
    } else {
        Vec::new()
    };
    let stop = CancellationToken::new();
    let (ended_tx, ended) = watch::channel(false);
    let connection = Arc::new(Connection {
        peer: peer.clone(),
        progress,
        group,
        stderr: tail.clone(),
        stop: stop.clone(),
        closed: AtomicBool::new(false),
        ended,
    });
    // Watch the service: when it ends by itself, the server is down.
    let watched = (Arc::downgrade(server), connection.clone());
    crate::tasks::spawn(async move {
        let service = running.cancellation_token();
        let waiting = running.waiting();
        tokio::pin!(waiting);
        let ended_by_us = tokio::select! {
            _ = stop.cancelled() => {
                service.cancel();
                let _ = waiting.await;
                true
            }
            _ = &mut waiting => false,
        };
        let (server, connection) = watched;
        if !ended_by_us && let Some(server) = server.upgrade() {
            server.lost(
                &connection,
                "the server closed the connection (it exited or crashed)",
            );
        }
        let _ = ended_tx.send(true);
    });
    // Fresh lists after `tools/list_changed`, one at a time.
    let listing = (Arc::downgrade(server), Arc::downgrade(&connection));
    let lists = server.lists();
    crate::tasks::spawn(async move {
        while changes.recv().await.is_some() {
            let (Some(server), Some(connection)) = (listing.0.upgrade(), listing.1.upgrade())
            else {
                lists.forget();
                return;
            };
            let upto = lists.announced.load(Ordering::SeqCst);
            let limit = server.config.startup_timeout;
            let listed = tokio::time::timeout(limit, connection.peer.list_all_tools()).await;
            match listed {
                Ok(Ok(tools)) => server.replace_tools(&connection, tools),
                Ok(Err(error)) => {
                    tracing::warn!(server = %server.name(), %error, "listing changed tools failed");
                }
                Err(_) => {
                    tracing::warn!(server = %server.name(), "listing changed tools timed out")
                }
            }
            lists.finish(upto);
        }
    });
    Ok(Connected { connection, tools })
}

/// Why the handshake failed, in words a user can act on.
fn handshake_error(error: &str) -> String {
    if error.contains("connection closed") {
        format!("it closed the connection before answering `initialize` ({error})")
    } else {
        format!("the `initialize` handshake failed: {error}")
    }
}
