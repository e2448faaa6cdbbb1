//! The egress proxy's HTTP/1.1 side (hyper): what it does with each connection a sandboxed
//! command makes to its listener.
//!
//! - `CONNECT host:port` (HTTPS, and any client that tunnels): the host and port are judged
//!   against `allow_hosts`, the name is resolved, the upstream connection opened, then
//!   `200` and bytes both ways until either side closes or nothing moves for `TUNNEL_IDLE`.
//! - `GET http://host:port/path` (absolute form: plain HTTP): judged the same way, then
//!   sent upstream on a connection of its own with the hop-by-hop headers taken out, and
//!   the answer streamed back.
//! - A refused host or port gets `403` with a reason phrase and a body naming the host and
//!   `[sandbox] allow_hosts` (curl prints the body of a plain request, npm the reason),
//!   and the refusal is recorded for the command's result.
//!
//! A wildcard entry never reaches an address of this machine or its link (`hosts::is_local`):
//! the name is resolved here, the addresses checked, and the connection made to exactly
//! those addresses, so a name that resolves to 127.0.0.1 — or re-resolves to it later —
//! does not open the agent's own loopback services. Limits: `PER_COMMAND` connections at
//! once per command and `ALL_COMMANDS` in all (further ones wait in the listen backlog),
//! `HEADER_TIMEOUT` for a request's head, `CONNECT_TIMEOUT` to resolve and connect,
//! `RESPONSE_TIMEOUT` for an upstream answer's head, `TUNNEL_IDLE` for a silent tunnel; and
//! everything ends with the command (`stop`).

use super::hosts::{self, Pattern, Verdict};
use super::{Reason, Refusal, Refusals};
use bytes::Bytes;
use http_body_util::combinators::BoxBody;
use http_body_util::{BodyExt, Empty, Full};
use hyper::body::Incoming;
use hyper::header::{self, HeaderMap, HeaderName, HeaderValue};
use hyper::server::conn::http1;
use hyper::service::service_fn;
use hyper::{Method, Request, Response, StatusCode, Uri};
use hyper_util::rt::{TokioIo, TokioTimer};
use std::convert::Infallible;
use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{OwnedSemaphorePermit, Semaphore, SemaphorePermit};
use tokio_util::sync::CancellationToken;

/// Connections one command may have open through the proxy at once.
pub const PER_COMMAND: usize = 64;
/// Connections all commands together may have open at once.
pub const ALL_COMMANDS: usize = 256;
/// How long a client may take to send a request's head.
pub const HEADER_TIMEOUT: Duration = Duration::from_secs(30);
/// How long resolving a name and connecting to it may take.
pub const CONNECT_TIMEOUT: Duration = Duration::from_secs(15);
/// How long an upstream server may take to answer a plain HTTP request.
pub const RESPONSE_TIMEOUT: Duration = Duration::from_secs(120);
/// How long a tunnel may carry nothing either way before it is closed.
pub const TUNNEL_IDLE: Duration = Duration::from_secs(300);

static ALL: Semaphore = Semaphore::const_new(ALL_COMMANDS);

pub type Body = BoxBody<Bytes, hyper::Error>;

/// One command's proxy.
pub struct Proxy {
    pub allow: Vec<Pattern>,
    pub refusals: Refusals,
    /// Cancelled when the command's supervisor is done with: every connection ends.
    pub stop: CancellationToken,
}

/// A connection's share of the limits, held as long as the connection (and its tunnel).
struct Permits {
    _command: OwnedSemaphorePermit,
    _all: SemaphorePermit<'static>,
}

/// Serve the command's listener until `proxy.stop`.
pub async fn serve(listener: TcpListener, proxy: Arc<Proxy>) {
    let command = Arc::new(Semaphore::new(PER_COMMAND));
    loop {
        let permits = tokio::select! {
            _ = proxy.stop.cancelled() => return,
            permits = async {
                let own = command.clone().acquire_owned().await.ok()?;
                let all = ALL.acquire().await.ok()?;
                Some(Permits { _command: own, _all: all })
            } => match permits {
                Some(permits) => Arc::new(permits),
                None => return,
            },
        };
        let stream = tokio::select! {
            _ = proxy.stop.cancelled() => return,
            accepted = listener.accept() => match accepted {
                Ok((stream, _)) => {
                    let _ = stream.set_nodelay(true);
                    stream
                }
                Err(e) => {
                    tracing::debug!(error = %e, "egress proxy: accept failed");
                    // Out of descriptors and the like: give the rest of the agent room.
                    tokio::time::sleep(Duration::from_millis(50)).await;
                    continue;
                }
            },
        };
        let proxy = proxy.clone();
        crate::tasks::spawn(async move {
            let stop = proxy.stop.clone();
            tokio::select! {
                _ = stop.cancelled() => {}
                _ = connection(stream, proxy, permits) => {}
            }
        });
    }
}

async fn connection(stream: TcpStream, proxy: Arc<Proxy>, permits: Arc<Permits>) {
    let service = service_fn(move |request| {
        let proxy = proxy.clone();
        let permits = permits.clone();
        async move { Ok::<_, Infallible>(proxy.handle(request, permits).await) }
    });
    let served = http1::Builder::new()
        .timer(TokioTimer::new())
        .header_read_timeout(HEADER_TIMEOUT)
        .serve_connection(TokioIo::new(stream), service)
        .with_upgrades()
        .await;
    if let Err(e) = served {
        tracing::debug!(error = %e, "egress proxy: connection ended");
    }
}

impl Proxy {
    async fn handle(&self, request: Request<Incoming>, permits: Arc<Permits>) -> Response<Body> {
        if request.method() == Method::CONNECT {
            self.tunnel(request, permits).await
        } else {
            self.forward(request).await
        }
    }

    /// `CONNECT host:port`.
    async fn tunnel(&self, request: Request<Incoming>, permits: Arc<Permits>) -> Response<Body> {
        let target = request
            .uri()
            .authority()
            .and_then(|a| Some((a.host().to_string(), a.port_u16()?)));
        let Some((host, port)) = target else {
            return answer(
                StatusCode::BAD_REQUEST,
                None,
                "agent sandbox proxy: CONNECT needs HOST:PORT\n".to_string(),
            );
        };
        let upstream = match self.open(&host, port).await {
            Ok(upstream) => upstream,
            Err(response) => return response,
        };
        let stop = self.stop.clone();
        crate::tasks::spawn(async move {
            let _permits = permits;
            tokio::select! {
                _ = stop.cancelled() => {}
                _ = async {
                    match hyper::upgrade::on(request).await {
                        Ok(upgraded) => relay(TokioIo::new(upgraded), upstream).await,
                        Err(e) => tracing::debug!(error = %e, "egress proxy: no tunnel"),
                    }
                } => {}
            }
        });
        Response::new(Empty::new().map_err(|never| match never {}).boxed())
    }

    /// A plain HTTP request in absolute form.
    async fn forward(&self, request: Request<Incoming>) -> Response<Body> {
        let uri = request.uri().clone();
        let (Some(host), Some("http")) = (uri.host(), uri.scheme_str()) else {
            let why = if uri.scheme_str() == Some("https") {
                "HTTPS goes through CONNECT (set HTTPS_PROXY)"
            } else {
                "this is the sandbox's egress proxy: it takes http:// URLs and CONNECT"
            };
            return answer(
                StatusCode::BAD_REQUEST,
                None,
                format!("agent sandbox proxy: {why}\n"),
            );
        };
        let port = uri.port_u16().unwrap_or(80);
        let upstream = match self.open(host, port).await {
            Ok(upstream) => upstream,
            Err(response) => return response,
        };
        let (mut sender, driver) = match hyper::client::conn::http1::handshake::<_, Incoming>(
            TokioIo::new(upstream),
        )
        .await
        {
            Ok(pair) => pair,
            Err(e) => return bad_gateway(host, port, &e.to_string()),
        };
        let stop = self.stop.clone();
        crate::tasks::spawn(async move {
            tokio::select! {
                _ = stop.cancelled() => {}
                _ = driver => {}
            }
        });
        let (mut parts, body) = request.into_parts();
        parts.uri = match uri.path_and_query() {
            Some(path) => Uri::from(path.clone()),
            None => Uri::from_static("/"),
        };
        strip_hop_by_hop(&mut parts.headers);
        // The request goes to the host that was judged, and says so: a `Host` header naming
        // another one (a shared server or CDN would answer for that one) is replaced, as
        // RFC 9112 §3.2.2 asks of a proxy — by the judged name (lowercase, no trailing dot),
        // never with the URL's `user:password@`.
        let judged = hosts::normalise(host);
        let judged = if judged.contains(':') {
            format!("[{judged}]")
        } else {
            judged
        };
        let target = match uri.port() {
            Some(port) => format!("{judged}:{port}"),
            None => judged,
        };
        match HeaderValue::from_str(&target) {
            Ok(value) => {
                parts.headers.insert(header::HOST, value);
            }
            Err(_) => return bad_gateway(host, port, "the host is no valid Host header"),
        }
        let sent = tokio::time::timeout(
            RESPONSE_TIMEOUT,
            sender.send_request(Request::from_parts(parts, body)),
        )
        .await;
        match sent {
            Ok(Ok(response)) => {
                let (mut parts, body) = response.into_parts();
                strip_hop_by_hop(&mut parts.headers);
                Response::from_parts(parts, body.boxed())
            }
            Ok(Err(e)) => bad_gateway(host, port, &e.to_string()),
            Err(_) => answer(
                StatusCode::GATEWAY_TIMEOUT,
                None,
                format!(
                    "agent sandbox proxy: {host}:{port} did not answer within {} s\n",
                    RESPONSE_TIMEOUT.as_secs()
                ),
            ),
        }
    }

    /// Judge `host:port`, resolve it and connect: the connection, or the answer to give
    /// instead (a refusal is also recorded).
    async fn open(&self, host: &str, port: u16) -> Result<TcpStream, Response<Body>> {
        let host = hosts::normalise(host);
        let exact = match hosts::judge(&self.allow, &host, port) {
            Verdict::Allowed { exact } => exact,
            Verdict::OtherPorts(ports) => return Err(self.refuse(host, port, Reason::Port(ports))),
            Verdict::NotListed => return Err(self.refuse(host, port, Reason::NotListed)),
        };
        let resolved =
            tokio::time::timeout(CONNECT_TIMEOUT, super::resolve::resolve(&host, port)).await;
        let addresses = match resolved {
            Ok(Ok(addresses)) => addresses,
            Ok(Err(e)) => return Err(bad_gateway(&host, port, &format!("cannot resolve: {e}"))),
            Err(_) => return Err(bad_gateway(&host, port, "resolving took too long")),
        };
        let (local, reachable): (Vec<SocketAddr>, Vec<SocketAddr>) = addresses
            .into_iter()
            .partition(|address| !exact && hosts::is_local(address.ip()));
        if reachable.is_empty() {
            if let Some(address) = local.first() {
                return Err(self.refuse(host, port, Reason::Local(address.ip())));
            }
            return Err(bad_gateway(&host, port, "the name has no address"));
        }
        let mut last_error = String::new();
        for address in reachable {
            match tokio::time::timeout(CONNECT_TIMEOUT, TcpStream::connect(address)).await {
                Ok(Ok(stream)) => {
                    let _ = stream.set_nodelay(true);
                    return Ok(stream);
                }
                Ok(Err(e)) => last_error = format!("{address}: {e}"),
                Err(_) => last_error = format!("{address}: no answer in time"),
            }
        }
        Err(bad_gateway(&host, port, &last_error))
    }

    fn refuse(&self, host: String, port: u16, reason: Reason) -> Response<Body> {
        let refusal = Refusal { host, port, reason };
        let message = refusal.message();
        let body = format!(
            "agent sandbox: {message} — {}.\n",
            refusal.reason.remedy(&refusal.host, port)
        );
        tracing::info!(%message, "egress proxy refused a connection");
        self.refusals.record(refusal);
        answer(StatusCode::FORBIDDEN, Some(message), body)
    }
}

/// Bytes both ways between `client` and `upstream`, each direction closed when its
/// sender is done, until both are or nothing moves for `TUNNEL_IDLE`.
async fn relay(client: impl AsyncRead + AsyncWrite, upstream: TcpStream) {
    let moved = AtomicU64::new(0);
    let (mut client_read, mut client_write) = tokio::io::split(client);
    let (mut upstream_read, mut upstream_write) = upstream.into_split();
    let both = async {
        tokio::join!(
            pump(&mut client_read, &mut upstream_write, &moved),
            pump(&mut upstream_read, &mut client_write, &moved)
        )
    };
    let watch = async {
        let mut seen = 0;
        loop {
            tokio::time::sleep(TUNNEL_IDLE).await;
            let now = moved.load(Ordering::Relaxed);
            if now == seen {
                return;
            }
            seen = now;
        }
    };
    tokio::select! {
        _ = both => {}
        _ = watch => {}
    }
}

async fn pump(
    from: &mut (impl AsyncRead + Unpin),
    to: &mut (impl AsyncWrite + Unpin),
    moved: &AtomicU64,
) {
    let mut buffer = vec![0u8; 16 * 1024];
    loop {
        match from.read(&mut buffer).await {
            Ok(0) | Err(_) => break,
            Ok(n) => {
                if to.write_all(&buffer[..n]).await.is_err() {
                    break;
                }
                moved.fetch_add(1, Ordering::Relaxed);
            }
        }
    }
    let _ = to.shutdown().await;
}

/// Headers that belong to one hop, not to the exchange: the ones `Connection` names too.
fn strip_hop_by_hop(headers: &mut HeaderMap) {
    let named: Vec<HeaderName> = headers
        .get_all(header::CONNECTION)
        .iter()
        .filter_map(|value| value.to_str().ok())
        .flat_map(|value| value.split(','))
        .filter_map(|name| HeaderName::from_bytes(name.trim().as_bytes()).ok())
        .collect();
    for name in named {
        headers.remove(name);
    }
    for name in [
        header::CONNECTION,
        header::PROXY_AUTHENTICATE,
        header::PROXY_AUTHORIZATION,
        header::TE,
        header::TRAILER,
        header::TRANSFER_ENCODING,
        header::UPGRADE,
    ] {
        headers.remove(name);
    }
    headers.remove("proxy-connection");
    headers.remove("keep-alive");
}

fn bad_gateway(host: &str, port: u16, why: &str) -> Response<Body> {
    answer(
        StatusCode::BAD_GATEWAY,
        None,
        format!("agent sandbox proxy: cannot reach {host}:{port}: {why}\n"),
    )
}

/// An answer of the proxy's own, with `reason` as the status line's reason phrase when it
/// can be one (visible ASCII).
fn answer(status: StatusCode, reason: Option<String>, body: String) -> Response<Body> {
    let mut response = Response::new(
        Full::new(Bytes::from(body))
            .map_err(|never| match never {})
            .boxed(),
    );
    *response.status_mut() = status;
    response.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("text/plain; charset=utf-8"),
    );
    if let Some(phrase) = reason.and_then(|r| hyper::ext::ReasonPhrase::try_from(r).ok()) {
        response.extensions_mut().insert(phrase);
    }
    response
}
