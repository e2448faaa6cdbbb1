//! `agent serve [--listen ADDR]`: a headless host that keeps sessions running with no
//! terminal attached and reaches every live session of the user over HTTP
//! (docs/protocol.md §4.6): start one with a prompt, follow its events, send it commands,
//! resume an old one. `access` decides who may; `host` keeps the sessions; `routes` answers.
//! HTTP/1.1 with hyper (already built for `agent proxy`), HTTPS with rustls when `[serve]`
//! names a certificate.

pub mod access;
mod host;
mod routes;
mod web;

use crate::cli::ServeArgs;
use crate::config::Settings;
use access::{Access, TOKENS_ENV, Wanted};
use host::Host;
use hyper::server::conn::http1;
use hyper::service::service_fn;
use hyper_util::rt::{TokioIo, TokioTimer};
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;
use tokio::io::{AsyncRead, AsyncWrite};
use tokio::net::TcpListener;

/// How long a client has to send a request's headers.
const HEADER_TIMEOUT: Duration = Duration::from_secs(30);

struct Server {
    access: Access,
    host: Host,
    settings: Settings,
    /// `$AGENT_HOME`, where the sockets are.
    home: PathBuf,
    /// `http` or `https`: what an `Origin` of this server starts with.
    scheme: &'static str,
    /// With `--web`: the web client's sign-ins.
    web: Option<web::Web>,
}

/// Run `agent serve` until SIGINT or SIGTERM: 0, or 1 when it cannot start.
pub fn run(settings: Settings, args: &ServeArgs) -> u8 {
    crate::startup::server::run_to_end("serve", serve(settings, args))
}

async fn serve(settings: Settings, args: &ServeArgs) -> Result<(), String> {
    let listen: SocketAddr = args.listen.parse().map_err(|_| {
        format!(
            "--listen: `{}` is not an address and port (e.g. 127.0.0.1:8788)",
            args.listen
        )
    })?;
    let tls = match (&settings.serve.tls_cert, &settings.serve.tls_key) {
        (Some(cert), Some(key)) => Some(acceptor(cert, key)?),
        (None, None) => None,
        _ => return Err("[serve] needs both tls_cert and tls_key".to_string()),
    };
    let tokens = crate::proxy::auth::Tokens::from_env(TOKENS_ENV, |var| std::env::var(var).ok());
    let wanted = Wanted {
        listen,
        tls: tls.is_some(),
        insecure_no_tls: args.insecure_no_tls,
        names: &args.allow_host,
    };
    let access = Access::new(&wanted, tokens)?;
    let listener = TcpListener::bind(listen)
        .await
        .map_err(|e| format!("cannot listen on {listen}: {e}"))?;
    let bound = listener
        .local_addr()
        .map_err(|e| format!("cannot listen on {listen}: {e}"))?;
    let scheme = if tls.is_some() { "https" } else { "http" };
    let server = Arc::new(Server {
        access: access.with_port(listen.port(), bound.port()),
        host: Host::new(settings.clone()),
        home: settings.paths.home.clone(),
        settings,
        scheme,
        web: args.web.then(|| web::Web::new(tls.is_some())),
    });
    println!("agent serve: listening on {scheme}://{bound}");
    if args.web {
        let sign_in = if server.access.needs_token() {
            format!(
                " (sign in by opening {scheme}://{bound}/#token=TOKEN, TOKEN one of {TOKENS_ENV})"
            )
        } else {
            String::new()
        };
        // Not `println!`: a reader that stopped after the first line must not stop the server.
        use std::io::Write;
        let _ = writeln!(
            std::io::stdout(),
            "agent serve: web client at {scheme}://{bound}/{sign_in}"
        );
    }
    let mut terminate = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate())
        .map_err(|e| format!("cannot watch SIGTERM: {e}"))?;
    loop {
        let (stream, peer) = tokio::select! {
            accepted = listener.accept() => match accepted {
                Ok(accepted) => accepted,
                Err(e) => {
                    tracing::warn!(error = %e, "accept failed");
                    tokio::time::sleep(Duration::from_millis(50)).await;
                    continue;
                }
            },
            _ = tokio::signal::ctrl_c() => break,
            _ = terminate.recv() => break,
        };
        let _ = stream.set_nodelay(true);
        let (server, tls) = (server.clone(), tls.clone());
        crate::tasks::spawn(async move {
            match tls {
                Some(tls) => match tls.accept(stream).await {
                    Ok(stream) => connection(server, stream, peer).await,
                    Err(e) => tracing::debug!(%peer, error = %e, "TLS handshake failed"),
                },
                None => connection(server, stream, peer).await,
            }
        });
    }
    server.host.close_all().await;
    Ok(())
}

async fn connection<S>(server: Arc<Server>, stream: S, peer: SocketAddr)
where
    S: AsyncRead + AsyncWrite + Unpin + Send + 'static,
{
    let service = service_fn(move |request| {
        let server = server.clone();
        async move { Ok::<_, std::convert::Infallible>(routes::route(&server, request).await) }
    });
    let served = http1::Builder::new()
        .timer(TokioTimer::new())
        .header_read_timeout(HEADER_TIMEOUT)
        .serve_connection(TokioIo::new(stream), service);
    if let Err(e) = served.await {
        tracing::debug!(%peer, error = %e, "serve connection ended");
    }
}

/// The TLS side of the server from `[serve] tls_cert` / `tls_key` (PEM).
fn acceptor(cert: &Path, key: &Path) -> Result<tokio_rustls::TlsAcceptor, String> {
    use rustls::pki_types::pem::PemObject;
    use rustls::pki_types::{CertificateDer, PrivateKeyDer};
    let certs: Vec<CertificateDer<'static>> = CertificateDer::pem_file_iter(cert)
        .and_then(|certs| certs.collect())
        .map_err(|e| format!("[serve] tls_cert {}: {e}", cert.display()))?;
    let key = PrivateKeyDer::from_pem_file(key)
        .map_err(|e| format!("[serve] tls_key {}: {e}", key.display()))?;
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let config = rustls::ServerConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map_err(|e| format!("TLS: {e}"))?
        .with_no_client_auth()
        .with_single_cert(certs, key)
        .map_err(|e| format!("[serve] the certificate and key: {e}"))?;
    Ok(tokio_rustls::TlsAcceptor::from(Arc::new(config)))
}
