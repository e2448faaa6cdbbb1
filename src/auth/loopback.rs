//! The loopback redirect of an authorization-code sign-in (RFC 8252 §7.3): a listener on
//! 127.0.0.1 that waits for the browser to come back with `code` and `state`. Written by
//! hand because it answers exactly one kind of request (a GET with a query) and a web
//! framework would be most of the code; requests to other paths get 404 and waiting goes on.

use super::error::AuthError;
use std::collections::HashMap;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

/// The request head we read at most.
const MAX_HEAD: usize = 16 * 1024;

pub struct Loopback {
    listener: TcpListener,
    path: String,
    /// The redirect URI to register with the authorization server.
    pub redirect_uri: String,
}

impl Loopback {
    /// Listen on 127.0.0.1:`port` (0: any free port) for `path`. `host` is the name the
    /// redirect URI uses (`localhost` where the server only accepts that, else `127.0.0.1`).
    pub async fn bind(port: u16, path: &str, host: &str) -> Result<Loopback, AuthError> {
        let listener = TcpListener::bind(("127.0.0.1", port)).await.map_err(|e| {
            AuthError::flow(format!(
                "cannot listen on 127.0.0.1:{port} for the sign-in's redirect: {e} (is another sign-in running?)"
            ))
        })?;
        let port = listener
            .local_addr()
            .map_err(|e| AuthError::flow(e.to_string()))?
            .port();
        Ok(Loopback {
            listener,
            path: path.to_string(),
            redirect_uri: format!("http://{host}:{port}{path}"),
        })
    }

    /// Wait for the redirect; its query parameters. The browser is told it may close the
    /// tab; what the parameters mean is the caller's to judge.
    pub async fn wait(&self) -> Result<HashMap<String, String>, AuthError> {
        loop {
            let (stream, _) = self
                .listener
                .accept()
                .await
                .map_err(|e| AuthError::flow(format!("the sign-in's redirect failed: {e}")))?;
            if let Some(query) = self.answer(stream).await {
                return Ok(query);
            }
        }
    }

    async fn answer(&self, mut stream: TcpStream) -> Option<HashMap<String, String>> {
        let mut head = Vec::new();
        let mut buffer = [0u8; 2048];
        while !head.windows(4).any(|w| w == b"\r\n\r\n") && head.len() < MAX_HEAD {
            let read = stream.read(&mut buffer).await.ok()?;
            if read == 0 {
                break;
            }
            head.extend_from_slice(&buffer[..read]);
        }
        let head = String::from_utf8_lossy(&head);
        let target = head
            .lines()
            .next()
            .and_then(|line| line.strip_prefix("GET "))
            .and_then(|rest| rest.split(' ').next())
            .unwrap_or("");
        let url = url::Url::parse(&format!("http://127.0.0.1{target}")).ok();
        let Some(url) = url.filter(|url| url.path() == self.path) else {
            let _ = stream
                .write_all(
                    b"HTTP/1.1 404 Not Found\r\ncontent-length: 0\r\nconnection: close\r\n\r\n",
                )
                .await;
            return None;
        };
        let query: HashMap<String, String> = url.query_pairs().into_owned().collect();
        let page = if query.contains_key("code") {
            "Signed in. You can close this tab and go back to the terminal."
        } else {
            "The sign-in did not complete. The terminal says why."
        };
        let answer = format!(
            "HTTP/1.1 200 OK\r\ncontent-type: text/plain; charset=utf-8\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{page}",
            page.len()
        );
        let _ = stream.write_all(answer.as_bytes()).await;
        let _ = stream.shutdown().await;
        Some(query)
    }
}
