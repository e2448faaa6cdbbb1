//! `agent proxy --listen ADDR`: an HTTP server (hyper, HTTP/1.1) that lets agents without
//! provider keys stream through the providers of this machine's config (docs/protocol.md §8).
//! It owns the routes (`GET /healthz`, `GET /v1/models`, `POST /v1/stream`), bearer-token
//! authentication and the request limits; `relay` owns the stream itself.

pub(crate) mod auth;
mod relay;

use crate::config::Settings;
use crate::llm::client::Provider;
use crate::llm::error::ProviderError;
use crate::llm::provider::ProviderSettings;
use auth::{StreamCounts, Tokens};
use bytes::Bytes;
use http_body_util::combinators::BoxBody;
use http_body_util::{BodyExt, Full, Limited};
use hyper::body::Incoming;
use hyper::server::conn::http1;
use hyper::service::service_fn;
use hyper::{Method, Request, Response, StatusCode};
use hyper_util::rt::{TokioIo, TokioTimer};
use serde_json::json;
use std::collections::HashMap;
use std::convert::Infallible;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};
use tokio::net::TcpListener;

pub use auth::DEFAULT_TOKENS_ENV;

pub(crate) type ProxyBody = BoxBody<Bytes, Infallible>;

const DEFAULT_MAX_BODY_BYTES: u64 = 32 * 1024 * 1024;
const DEFAULT_MAX_STREAMS_PER_TOKEN: usize = 8;
const DEFAULT_IDLE_TIMEOUT: Duration = Duration::from_secs(120);
/// How long a client may take to send a request's body (`[proxy] body_timeout_secs`).
const DEFAULT_BODY_TIMEOUT: Duration = Duration::from_secs(60);
/// How long a client may take to send a request's headers.
const HEADER_TIMEOUT: Duration = Duration::from_secs(30);

/// What the command line asks of the proxy.
pub struct ProxyOptions {
    pub listen: String,
    pub insecure_no_auth: bool,
}

pub struct Server {
    settings: Settings,
    tokens: Tokens,
    /// `None` with `--insecure-no-auth`.
    auth: bool,
    streams: StreamCounts,
    max_body: u64,
    idle: Duration,
    /// How long a client may take to send a `/v1/stream` body.
    body_timeout: Duration,
    providers: Mutex<HashMap<String, Arc<Provider>>>,
    requests: AtomicU64,
}

impl Server {
    fn next_request_id(&self) -> u64 {
        self.requests.fetch_add(1, Ordering::Relaxed) + 1
    }

    /// The provider client for these settings, kept so connections are reused.
    fn provider(&self, settings: ProviderSettings) -> Result<Arc<Provider>, ProviderError> {
        let mut providers = self
            .providers
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        if let Some(provider) = providers.get(&settings.name) {
            return Ok(provider.clone());
        }
        let mut timeouts = self.settings.timeouts;
        timeouts.idle = timeouts.idle.min(self.idle);
        let name = settings.name.clone();
        let provider = Arc::new(Provider::new(settings, timeouts)?);
        providers.insert(name, provider.clone());
        Ok(provider)
    }
}

/// `agent proxy`: check everything, then serve until SIGINT or SIGTERM. Returns the exit
/// code: 0 after a signal, 1 when it cannot start.
pub fn run(settings: Settings, args: &crate::cli::ProxyArgs) -> u8 {
    let options = ProxyOptions {
        listen: args.listen.clone(),
        insecure_no_auth: args.insecure_no_auth,
    };
    let (server, listen) = match prepare(settings, &options, |var| std::env::var(var).ok()) {
        Ok(prepared) => prepared,
        Err(e) => {
            eprintln!("agent proxy: {e}");
            return 1;
        }
    };
    crate::startup::server::run_to_end("proxy", serve(server, listen))
}

/// Check the options and the tokens before anything starts: without a token the proxy
/// refuses to start, unless `--insecure-no-auth` on a loopback address. `lookup` reads an
/// environment variable.
pub fn prepare(
    settings: Settings,
    options: &ProxyOptions,
    lookup: impl Fn(&str) -> Option<String>,
) -> Result<(Arc<Server>, SocketAddr), String> {
    let listen: SocketAddr = options.listen.parse().map_err(|_| {
        format!(
            "--listen: `{}` is not an address and port (e.g. 127.0.0.1:8787)",
            options.listen
        )
    })?;
    let var = settings
        .proxy
        .tokens_env
        .clone()
        .unwrap_or_else(|| DEFAULT_TOKENS_ENV.to_string());
    let tokens = Tokens::from_env(&var, lookup);
    let auth = !options.insecure_no_auth;
    if tokens.is_empty() && auth {
        return Err(format!(
            "no client tokens: set {var} to the accepted bearer tokens (comma-separated){}",
            if settings.proxy.tokens_env.is_none() {
                ", or name another variable with [proxy] tokens_env"
            } else {
                ""
            }
        ));
    }
    if !auth && !listen.ip().is_loopback() {
        return Err(format!(
            "--insecure-no-auth is only allowed on a loopback address, not {listen}"
        ));
    }
    let duration = |key: &str, value: Option<f64>, default: Duration| match value {
        Some(secs) => Duration::try_from_secs_f64(secs)
            .ok()
            .filter(|d| !d.is_zero())
            .ok_or_else(|| format!("[proxy] {key}: {secs} is not a duration")),
        None => Ok(default),
    };
    let idle = duration(
        "idle_timeout_secs",
        settings.proxy.idle_timeout_secs,
        DEFAULT_IDLE_TIMEOUT,
    )?;
    let body_timeout = duration(
        "body_timeout_secs",
        settings.proxy.body_timeout_secs,
        DEFAULT_BODY_TIMEOUT,
    )?;
    let server = Server {
        tokens,
        auth,
        streams: StreamCounts::new(
            settings
                .proxy
                .max_streams_per_token
                .unwrap_or(DEFAULT_MAX_STREAMS_PER_TOKEN)
                .max(1),
        ),
        max_body: settings
            .proxy
            .max_body_bytes
            .unwrap_or(DEFAULT_MAX_BODY_BYTES),
        idle,
        body_timeout,
        providers: Mutex::default(),
        requests: AtomicU64::new(0),
        settings,
    };
    Ok((Arc::new(server), listen))
}

/// Serve until SIGINT or SIGTERM. Prints `agent proxy: listening on http://ADDR` (the bound
/// address, so port 0 works) on stdout once it accepts connections.
pub async fn serve(server: Arc<Server>, listen: SocketAddr) -> Result<(), String> {
    let listener = TcpListener::bind(listen)
        .await
        .map_err(|e| format!("cannot listen on {listen}: {e}"))?;
    let bound = listener
        .local_addr()
        .map_err(|e| format!("cannot listen on {listen}: {e}"))?;
    if !server.auth {
        eprintln!("agent proxy: warning: --insecure-no-auth: any local process may use the keys");
    }
    println!("agent proxy: listening on http://{bound}");
    tracing::info!(%bound, auth = server.auth, "proxy listening");
    let mut terminate = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate())
        .map_err(|e| format!("cannot watch SIGTERM: {e}"))?;
    loop {
        let (stream, peer) = tokio::select! {
            accepted = listener.accept() => match accepted {
                Ok(accepted) => accepted,
                Err(e) => {
                    tracing::warn!(error = %e, "accept failed");
                    continue;
                }
            },
            _ = tokio::signal::ctrl_c() => break,
            _ = terminate.recv() => break,
        };
        let _ = stream.set_nodelay(true);
        let server = server.clone();
        crate::tasks::spawn(async move {
            let service = service_fn(move |request| handle(server.clone(), request));
            let connection = http1::Builder::new()
                .timer(TokioTimer::new())
                .header_read_timeout(HEADER_TIMEOUT)
                .serve_connection(TokioIo::new(stream), service);
            if let Err(e) = connection.await {
                tracing::debug!(%peer, error = %e, "proxy connection ended");
            }
        });
    }
    tracing::info!("proxy stopped");
    Ok(())
}

async fn handle(
    server: Arc<Server>,
    request: Request<Incoming>,
) -> Result<Response<ProxyBody>, Infallible> {
    let started = Instant::now();
    let (method, path) = (request.method().clone(), request.uri().path().to_string());
    let response = route(&server, request).await;
    tracing::info!(
        %method,
        %path,
        status = response.status().as_u16(),
        duration_ms = crate::time::millis(started.elapsed()),
        "proxy request"
    );
    Ok(response)
}

async fn route(server: &Arc<Server>, request: Request<Incoming>) -> Response<ProxyBody> {
    let path = request.uri().path();
    let allowed = match path {
        "/healthz" | "/v1/models" => Method::GET,
        "/v1/stream" => Method::POST,
        _ => return error_response(StatusCode::NOT_FOUND, &format!("no route {path}")),
    };
    if request.method() != allowed {
        return error_response(
            StatusCode::METHOD_NOT_ALLOWED,
            &format!("{path} takes {allowed}"),
        );
    }
    if path == "/healthz" {
        return json_response(StatusCode::OK, &json!({"status": "ok"}));
    }
    let token = if server.auth {
        let header = request
            .headers()
            .get(hyper::header::AUTHORIZATION)
            .and_then(|v| v.to_str().ok());
        match server.tokens.check(header) {
            Some(token) => token,
            None => {
                let mut response = error_response(
                    StatusCode::UNAUTHORIZED,
                    "missing or unknown bearer token (Authorization: Bearer TOKEN)",
                );
                response.headers_mut().insert(
                    hyper::header::WWW_AUTHENTICATE,
                    hyper::header::HeaderValue::from_static("Bearer"),
                );
                return response;
            }
        }
    } else {
        0
    };
    if path == "/v1/models" {
        return json_response(StatusCode::OK, &models(&server.settings));
    }
    // The whole body first: a client that is slow to send it holds no stream place, so
    // stalled uploads cannot lock its token out.
    let body = match read_body(request, server.max_body, server.body_timeout).await {
        Ok(body) => body,
        Err(response) => return response,
    };
    let Some(place) = server.streams.take(token) else {
        return error_response(
            StatusCode::TOO_MANY_REQUESTS,
            &format!(
                "this token already has {} streams open (max_streams_per_token)",
                server.streams.limit()
            ),
        );
    };
    relay::start(server, token, place, &body)
}

/// The request body, at most `max` bytes, all of it within `timeout` (408 otherwise).
async fn read_body(
    request: Request<Incoming>,
    max: u64,
    timeout: Duration,
) -> Result<Bytes, Response<ProxyBody>> {
    let too_large = || {
        error_response(
            StatusCode::PAYLOAD_TOO_LARGE,
            &format!("the request body is larger than {max} bytes (max_body_bytes)"),
        )
    };
    let declared = request
        .headers()
        .get(hyper::header::CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse::<u64>().ok());
    if declared.is_some_and(|length| length > max) {
        return Err(too_large());
    }
    let limit = usize::try_from(max).unwrap_or(usize::MAX);
    let collected =
        tokio::time::timeout(timeout, Limited::new(request.into_body(), limit).collect()).await;
    let Ok(collected) = collected else {
        let mut response = error_response(
            StatusCode::REQUEST_TIMEOUT,
            &format!(
                "the request body did not arrive within {} (body_timeout_secs)",
                crate::llm::timeouts::describe(timeout)
            ),
        );
        response.headers_mut().insert(
            hyper::header::CONNECTION,
            hyper::header::HeaderValue::from_static("close"),
        );
        return Err(response);
    };
    match collected {
        Ok(collected) => Ok(collected.to_bytes()),
        Err(e) if e.is::<http_body_util::LengthLimitError>() => Err(too_large()),
        Err(e) => Err(error_response(
            StatusCode::BAD_REQUEST,
            &format!("could not read the request body: {e}"),
        )),
    }
}

/// `GET /v1/models`: the models this proxy serves.
fn models(settings: &Settings) -> serde_json::Value {
    let current = (settings.provider.name.as_str(), settings.model.id.as_str());
    let models: Vec<_> = settings
        .available_models(current)
        .iter()
        .map(|available| {
            json!({
                "provider": available.provider.name,
                "id": available.model.id,
                "contextWindow": available.model.context_window,
                "maxOutputTokens": available.model.max_output_tokens,
                "reasoning": available.model.reasoning,
                "images": available.model.images,
            })
        })
        .collect();
    json!({
        "default": {"provider": current.0, "model": current.1},
        "models": models,
    })
}

fn json_response(status: StatusCode, body: &serde_json::Value) -> Response<ProxyBody> {
    let mut response = Response::new(Full::new(Bytes::from(body.to_string())).boxed());
    *response.status_mut() = status;
    response.headers_mut().insert(
        hyper::header::CONTENT_TYPE,
        hyper::header::HeaderValue::from_static("application/json"),
    );
    response
}

/// `{"error": {"message": …}}` with `status`.
pub(crate) fn error_response(status: StatusCode, message: &str) -> Response<ProxyBody> {
    json_response(status, &json!({"error": {"message": message}}))
}
