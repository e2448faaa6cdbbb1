//! `agent serve` (docs/protocol.md §4.6) as a real process on a loopback port: who it
//! refuses (no token → 401, a foreign Host or Origin → 403, non-loopback without token or
//! TLS → it does not start), and a session hosted with no terminal: started with a prompt,
//! followed over server-sent events, driven by commands, closed and resumed.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // test code fails loudly

use crate::support;

use serde_json::{Value, json};
use std::time::Duration;
use support::chat;
use support::env::{Env, env};
use support::server::{FakeServer, Reply};
use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader};
use tokio::net::TcpStream;
use tokio::process::Child;

const TOKEN: &str = "serve-s3cret";

struct Serve {
    _child: Child,
    /// `127.0.0.1:PORT`
    addr: String,
}

fn configure(env: &Env, upstream: &FakeServer) {
    let config = format!(
        "provider = \"local\"\nmodel = \"test-model\"\n[providers.local]\napi = \"openai-chat\"\nbase_url = \"{}\"\n",
        upstream.v1()
    );
    std::fs::write(env.home.path().join("config.toml"), config).unwrap();
}

async fn start(env: &Env, upstream: &FakeServer) -> Serve {
    configure(env, upstream);
    start_with(env, &["--listen", "127.0.0.1:0"], "http").await
}

/// `agent serve ARGS` with the config as it is; ready once it says where it listens.
async fn start_with(env: &Env, args: &[&str], scheme: &str) -> Serve {
    let mut cmd = support::process::command(env.home.path(), env.cwd.path());
    cmd.arg("serve").args(args).env("AGENT_SERVE_TOKENS", TOKEN);
    let mut child = cmd.spawn().unwrap();
    let stdout = child.stdout.take().unwrap();
    let mut first = String::new();
    tokio::time::timeout(
        Duration::from_secs(20),
        BufReader::new(stdout).read_line(&mut first),
    )
    .await
    .expect("agent serve says where it listens")
    .unwrap();
    let addr = first
        .trim()
        .strip_prefix(&format!("agent serve: listening on {scheme}://"))
        .unwrap_or_else(|| panic!("unexpected first line: {first}"))
        .to_string();
    Serve {
        _child: child,
        addr,
    }
}

/// One raw request with `headers` (`host` unless given); the connection, answer unread.
async fn send(
    addr: &str,
    method: &str,
    path: &str,
    headers: &[(&str, &str)],
    body: &str,
) -> TcpStream {
    let mut stream = TcpStream::connect(addr).await.unwrap();
    let mut head = format!("{method} {path} HTTP/1.1\r\n");
    if !headers.iter().any(|(name, _)| *name == "host") {
        head.push_str(&format!("host: {addr}\r\n"));
    }
    for (name, value) in headers {
        head.push_str(&format!("{name}: {value}\r\n"));
    }
    head.push_str(&format!(
        "content-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n",
        body.len()
    ));
    stream.write_all(head.as_bytes()).await.unwrap();
    stream.write_all(body.as_bytes()).await.unwrap();
    stream
}

/// The status and the JSON body of a whole answer.
async fn call(
    addr: &str,
    method: &str,
    path: &str,
    headers: &[(&str, &str)],
    body: &str,
) -> (u16, Value, String) {
    let mut stream = send(addr, method, path, headers, body).await;
    let mut answer = Vec::new();
    tokio::time::timeout(Duration::from_secs(20), stream.read_to_end(&mut answer))
        .await
        .expect("an answer")
        .unwrap();
    let answer = String::from_utf8_lossy(&answer).into_owned();
    let status = answer[9..12].parse().unwrap();
    let (head, body) = answer.split_once("\r\n\r\n").unwrap();
    (
        status,
        serde_json::from_str(body).unwrap_or(Value::Null),
        head.to_string(),
    )
}

const AUTH: (&str, &str) = ("authorization", "Bearer serve-s3cret");

#[tokio::test]
async fn serve_refuses_missing_tokens_and_foreign_hosts_and_origins() {
    let env = env();
    let upstream = FakeServer::start(vec![]).await;
    let serve = start(&env, &upstream).await;
    let addr = serve.addr.as_str();
    let (status, _, head) = call(addr, "GET", "/v1/sessions", &[], "").await;
    assert_eq!(status, 401);
    assert!(
        head.to_ascii_lowercase()
            .contains("www-authenticate: bearer"),
        "{head}"
    );
    let wrong = ("authorization", "Bearer nope");
    assert_eq!(call(addr, "GET", "/v1/sessions", &[wrong], "").await.0, 401);
    // DNS rebinding: the name the browser resolved is not this server's.
    let rebound = ("host", "attacker.example:80");
    assert_eq!(
        call(addr, "GET", "/v1/sessions", &[AUTH, rebound], "")
            .await
            .0,
        403
    );
    // A page of another site using the user's browser.
    let foreign = ("origin", "http://attacker.example");
    let (status, body, _) = call(addr, "POST", "/v1/sessions", &[AUTH, foreign], "{}").await;
    assert_eq!(status, 403, "{body}");
    assert!(
        env.session_files().is_empty(),
        "a refused request started a session"
    );
    // Its own origin and a token: answered.
    let own = format!("http://{addr}");
    let (status, body, _) = call(addr, "GET", "/v1/sessions", &[AUTH, ("origin", &own)], "").await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["sessions"], json!([]));
    assert_eq!(call(addr, "GET", "/healthz", &[], "").await.0, 200);
}

#[tokio::test]
async fn serve_will_not_listen_beyond_loopback_without_a_token_and_tls() {
    let env = env();
    let upstream = FakeServer::start(vec![]).await;
    configure(&env, &upstream);
    let run = |args: &'static [&'static str], token: bool| {
        let mut cmd = support::process::command(env.home.path(), env.cwd.path());
        cmd.arg("serve").args(args);
        if token {
            cmd.env("AGENT_SERVE_TOKENS", TOKEN);
        }
        support::process::run(cmd)
    };
    let no_token = run(&["--listen", "0.0.0.0:0"], false).await;
    assert_eq!(no_token.code, 1);
    assert!(
        no_token.stderr.contains("AGENT_SERVE_TOKENS"),
        "{}",
        no_token.stderr
    );
    let no_tls = run(&["--listen", "0.0.0.0:0"], true).await;
    assert_eq!(no_tls.code, 1);
    assert!(
        no_tls.stderr.contains("--insecure-no-tls"),
        "{}",
        no_tls.stderr
    );
    let public = run(&["--listen", "0.0.0.0:0", "--insecure-no-tls"], true).await;
    assert_eq!(public.code, 1);
    assert!(
        public.stderr.contains("only allowed on a private address"),
        "{}",
        public.stderr
    );
}

/// The `data:` lines of an event stream, one at a time.
struct Events {
    lines: tokio::io::Lines<BufReader<TcpStream>>,
}

impl Events {
    async fn open(addr: &str, id: &str) -> Events {
        let stream = send(
            addr,
            "GET",
            &format!("/v1/sessions/{id}/events"),
            &[AUTH],
            "",
        )
        .await;
        let mut lines = BufReader::new(stream).lines();
        let status = lines.next_line().await.unwrap().unwrap();
        assert!(status.contains(" 200 "), "{status}");
        Events { lines }
    }

    async fn next(&mut self) -> Option<Value> {
        loop {
            let line = tokio::time::timeout(Duration::from_secs(20), self.lines.next_line())
                .await
                .expect("an event")
                .unwrap()?;
            if let Some(data) = line.strip_prefix("data: ") {
                return Some(serde_json::from_str(data).unwrap());
            }
        }
    }

    async fn until(&mut self, pred: impl Fn(&Value) -> bool) -> Vec<Value> {
        let mut seen = Vec::new();
        loop {
            let event = self.next().await.expect("the stream ended");
            let done = pred(&event);
            seen.push(event);
            if done {
                return seen;
            }
        }
    }
}

fn said(line: &Value, text: &str) -> bool {
    line["type"] == "message_end" && line["message"]["content"][0]["text"] == text
}

#[tokio::test]
async fn serve_hosts_a_session_started_with_a_prompt_and_resumes_it() {
    let env = env();
    let upstream = FakeServer::start(vec![
        Reply::sse(chat::text("one")),
        Reply::sse(chat::text("two")),
        Reply::sse(chat::text("three")),
    ])
    .await;
    let serve = start(&env, &upstream).await;
    let addr = serve.addr.as_str();
    let (status, body, _) = call(
        addr,
        "POST",
        "/v1/sessions",
        &[AUTH],
        r#"{"prompt": "first"}"#,
    )
    .await;
    assert_eq!(status, 201, "{body}");
    let id = body["sessionId"].as_str().unwrap().to_string();
    // Followed from elsewhere: the answer to the prompt, whether replayed or live.
    let mut events = Events::open(addr, &id).await;
    let attached = events.next().await.unwrap();
    assert_eq!(attached["command"], "attach", "{attached}");
    let replayed = attached["data"]["messages"].as_array().unwrap().clone();
    if !replayed.iter().any(|m| m["content"][0]["text"] == "one") {
        events.until(|l| said(l, "one")).await;
    }
    if attached["data"]["isStreaming"] == true
        || !replayed.iter().any(|m| m["content"][0]["text"] == "one")
    {
        events.until(|l| l["type"] == "agent_end").await;
    }
    // A command from anywhere; its run streams to the followers.
    let prompt = json!({"type": "prompt", "message": "second"}).to_string();
    let path = format!("/v1/sessions/{id}/commands");
    let (status, answer, _) = call(addr, "POST", &path, &[AUTH], &prompt).await;
    assert_eq!(
        (status, &answer["success"]),
        (200, &json!(true)),
        "{answer}"
    );
    events.until(|l| said(l, "two")).await;
    events.until(|l| l["type"] == "agent_end").await;
    let (_, listed, _) = call(addr, "GET", "/v1/sessions", &[AUTH], "").await;
    assert_eq!(listed["sessions"][0]["id"], id.as_str(), "{listed}");
    assert_eq!(listed["sessions"][0]["hosted"], true);
    // Closed: the followers are told; then resumed with its conversation.
    let (status, _, _) = call(addr, "DELETE", &format!("/v1/sessions/{id}"), &[AUTH], "").await;
    assert_eq!(status, 200);
    let end = events.until(|l| l["type"] == "live_end").await;
    assert!(
        end.last().unwrap()["reason"]
            .as_str()
            .unwrap()
            .contains("closed")
    );
    let (status, _, _) = call(addr, "POST", &path, &[AUTH], &prompt).await;
    assert_eq!(status, 404, "a closed session still takes commands");
    let resume = json!({"resume": id, "prompt": "third"}).to_string();
    let (status, body, _) = call(addr, "POST", "/v1/sessions", &[AUTH], &resume).await;
    assert_eq!(status, 201, "{body}");
    assert_eq!(body["sessionId"], id.as_str());
    let mut events = Events::open(addr, &id).await;
    let attached = events.next().await.unwrap();
    let texts: Vec<&str> = attached["data"]["messages"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|m| m["content"].as_str().or(m["content"][0]["text"].as_str()))
        .collect();
    assert!(
        texts.starts_with(&["first", "one", "second", "two"]),
        "{texts:?}"
    );
}

#[tokio::test]
async fn serve_speaks_tls_with_the_configured_certificate() {
    use rustls::pki_types::pem::PemObject;
    use rustls::pki_types::{CertificateDer, ServerName};
    let env = env();
    let upstream = FakeServer::start(vec![]).await;
    let (cert, key) = (
        env.home.path().join("cert.pem"),
        env.home.path().join("key.pem"),
    );
    let made = tokio::process::Command::new("openssl")
        .args([
            "req",
            "-x509",
            "-newkey",
            "ec",
            "-pkeyopt",
            "ec_paramgen_curve:prime256v1",
        ])
        .args(["-nodes", "-days", "2", "-subj", "/CN=localhost"])
        .args(["-addext", "subjectAltName=DNS:localhost,IP:127.0.0.1"])
        .args(["-addext", "basicConstraints=critical,CA:FALSE"])
        .arg("-keyout")
        .arg(&key)
        .arg("-out")
        .arg(&cert)
        .output()
        .await;
    if !made.is_ok_and(|out| out.status.success()) {
        support::skip::skip("no openssl to make a certificate");
        return;
    }
    configure(&env, &upstream);
    let mut config = std::fs::read_to_string(env.home.path().join("config.toml")).unwrap();
    config.push_str(&format!(
        "[serve]\ntls_cert = '{}'\ntls_key = '{}'\n",
        cert.display(),
        key.display()
    ));
    std::fs::write(env.home.path().join("config.toml"), config).unwrap();
    let serve = start_with(&env, &["--listen", "127.0.0.1:0"], "https").await;
    // A client that trusts the certificate gets answers over TLS.
    let mut roots = rustls::RootCertStore::empty();
    for der in CertificateDer::pem_file_iter(&cert).unwrap() {
        roots.add(der.unwrap()).unwrap();
    }
    let provider = std::sync::Arc::new(rustls::crypto::ring::default_provider());
    let client = rustls::ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .unwrap()
        .with_root_certificates(roots)
        .with_no_client_auth();
    let connector = tokio_rustls::TlsConnector::from(std::sync::Arc::new(client));
    let tcp = TcpStream::connect(&serve.addr).await.unwrap();
    let name = ServerName::try_from("localhost").unwrap();
    let mut tls = connector.connect(name, tcp).await.unwrap();
    let request = format!(
        "GET /v1/sessions HTTP/1.1\r\nhost: {}\r\nauthorization: Bearer {TOKEN}\r\nconnection: close\r\n\r\n",
        serve.addr
    );
    tls.write_all(request.as_bytes()).await.unwrap();
    let mut answer = Vec::new();
    let _ = tls.read_to_end(&mut answer).await;
    let answer = String::from_utf8_lossy(&answer);
    assert!(answer.starts_with("HTTP/1.1 200"), "{answer}");
    // Plain HTTP gets no answer.
    let mut plain = send(&serve.addr, "GET", "/healthz", &[], "").await;
    let mut bytes = Vec::new();
    let _ = plain.read_to_end(&mut bytes).await;
    assert!(!String::from_utf8_lossy(&bytes).contains("HTTP/1.1 200"));
    // Beyond loopback, TLS and a token are enough.
    let wide = start_with(&env, &["--listen", "0.0.0.0:0"], "https").await;
    assert!(wide.addr.starts_with("0.0.0.0:"), "{}", wide.addr);
}
