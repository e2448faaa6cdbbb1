//! `agent login` / `logout` / `auth status` and stored credentials in real runs: a key
//! typed in lands in a 0600 `auth.json` when no keyring answers, requests use it, status
//! never shows it; an expiring token is renewed once by two agents starting together; a
//! token refused mid-session is renewed and the request sent again; a revoked sign-in
//! ends with what to run, not a bare 401.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // test code fails loudly

use crate::support::auth_server::AuthServer;
use crate::support::chat;
use crate::support::env::env;
use crate::support::process::{command, run};
use crate::support::server::{FakeServer, Reply};
use serde_json::json;
use std::process::Stdio;
use tokio::io::AsyncWriteExt;

const KEY: &str = "sk-typed-in-0123456789";

#[tokio::test]
async fn a_typed_key_goes_to_a_0600_file_without_a_keyring_and_is_used() {
    let e = env();
    // A session bus that is not there: the keyring cannot answer.
    let mut login = command(e.home.path(), e.cwd.path());
    login
        .env("DBUS_SESSION_BUS_ADDRESS", "unix:path=/nonexistent/bus")
        .env_remove("AGENT_CREDENTIAL_STORE")
        .args(["login", "--provider", "openai"])
        .stdin(Stdio::piped());
    let mut child = login.spawn().unwrap();
    let mut stdin = child.stdin.take().unwrap();
    stdin
        .write_all(format!("{KEY}\n").as_bytes())
        .await
        .unwrap();
    drop(stdin);
    let output = child.wait_with_output().await.unwrap();
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(
        output.status.success(),
        "{stdout} {}",
        String::from_utf8_lossy(&output.stderr)
    );
    let file = e.home.path().join("auth.json");
    assert!(
        stdout.contains(&file.display().to_string()),
        "says where: {stdout}"
    );
    assert!(!stdout.contains(KEY));
    use std::os::unix::fs::PermissionsExt;
    let mode = std::fs::metadata(&file).unwrap().permissions().mode();
    assert_eq!(mode & 0o777, 0o600);

    let mut status = command(e.home.path(), e.cwd.path());
    status
        .env("DBUS_SESSION_BUS_ADDRESS", "unix:path=/nonexistent/bus")
        .args(["auth", "status"]);
    let status = run(status).await;
    assert_eq!(status.code, 0, "{}", status.stderr);
    assert!(
        status.stdout.contains("provider `openai`: API key"),
        "{}",
        status.stdout
    );
    assert!(status.stdout.contains("no OS keyring"), "{}", status.stdout);
    assert!(!status.stdout.contains(KEY) && !status.stderr.contains(KEY));

    let server = FakeServer::start(vec![Reply::sse(chat::text("hi"))]).await;
    let out = run(e.agent(&server, &["-p", "hello"])).await;
    assert_eq!(out.code, 0, "{}", out.stderr);
    let requests = server.requests();
    assert_eq!(
        requests[0].header("authorization"),
        Some(format!("Bearer {KEY}").as_str())
    );

    let mut logout = command(e.home.path(), e.cwd.path());
    logout.args(["logout", "--provider", "openai"]);
    let out = run(logout).await;
    assert!(
        out.stdout.contains("Signed out of `openai`"),
        "{}",
        out.stdout
    );
    assert!(!std::fs::read_to_string(&file).unwrap().contains(KEY));
}

/// An `auth.json` holding tokens for `openai` renewed at `server`, expiring in `expires_in`
/// seconds.
fn store_tokens(home: &std::path::Path, server: &AuthServer, expires_in: u64) {
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs();
    let file = json!({"credentials": {"provider/openai": {
        "type": "oauth",
        "access_token": "at-original-abcdef",
        "refresh_token": "rt-original-abcdef",
        "expires_at": now + expires_in,
        "renewal": "refresh_token",
        "token_url": format!("{}/token", server.url),
        "client_id": "test-client",
    }}});
    std::fs::write(home.join("auth.json"), file.to_string()).unwrap();
}

fn stored_agent(e: &crate::support::env::Env, server: &FakeServer) -> tokio::process::Command {
    let mut cmd = e.agent(server, &["-p", "hello"]);
    cmd.env("AGENT_CREDENTIAL_STORE", "file");
    cmd
}

#[tokio::test]
async fn two_agents_renew_an_expiring_token_once() {
    let auth = AuthServer::start().await;
    // Each refresh is held a moment, so uncoordinated agents would both send one.
    auth.with(|s| s.refresh_delay = Some(std::time::Duration::from_millis(400)));
    let e = env();
    store_tokens(e.home.path(), &auth, 30);
    let server = FakeServer::start(vec![
        Reply::sse(chat::text("one")),
        Reply::sse(chat::text("two")),
    ])
    .await;
    let (first, second) = tokio::join!(
        run(stored_agent(&e, &server)),
        run(stored_agent(&e, &server))
    );
    assert_eq!(first.code, 0, "{}", first.stderr);
    assert_eq!(second.code, 0, "{}", second.stderr);
    auth.with(|s| assert_eq!(s.refreshes, 1, "renewed once: {:?}", s.grants));
    for request in server.requests() {
        assert_eq!(
            request.header("authorization"),
            Some("Bearer at-minted-1-abcdef")
        );
    }
    let saved = std::fs::read_to_string(e.home.path().join("auth.json")).unwrap();
    assert!(
        saved.contains("rt-minted-1-abcdef"),
        "the new refresh token is kept"
    );
}

#[tokio::test]
async fn a_token_refused_mid_session_is_renewed_and_the_request_sent_again() {
    let auth = AuthServer::start().await;
    let e = env();
    store_tokens(e.home.path(), &auth, 3600);
    let server = FakeServer::start(vec![
        Reply::status(401, r#"{"error":{"message":"token revoked"}}"#),
        Reply::sse(chat::text("fine")),
    ])
    .await;
    let out = run(stored_agent(&e, &server)).await;
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert!(out.stdout.contains("fine"), "{}", out.stdout);
    let requests = server.requests();
    assert_eq!(
        requests[0].header("authorization"),
        Some("Bearer at-original-abcdef")
    );
    assert_eq!(
        requests[1].header("authorization"),
        Some("Bearer at-minted-1-abcdef")
    );
    auth.with(|s| assert_eq!(s.refreshes, 1));
}

#[tokio::test]
async fn a_revoked_sign_in_says_to_sign_in_again() {
    let auth = AuthServer::start().await;
    auth.with(|s| s.refuse_refresh = true);
    let e = env();
    store_tokens(e.home.path(), &auth, 3600);
    let server = FakeServer::start(vec![Reply::status(
        401,
        r#"{"error":{"message":"token revoked"}}"#,
    )])
    .await;
    let out = run(stored_agent(&e, &server)).await;
    assert_ne!(out.code, 0);
    assert!(
        out.stderr
            .contains("sign in again: agent login --provider openai"),
        "{}",
        out.stderr
    );
    assert!(
        !out.stderr.contains("HTTP 401"),
        "no bare 401: {}",
        out.stderr
    );
    assert!(!out.stderr.contains("at-original-abcdef"), "{}", out.stderr);
    assert_eq!(server.requests().len(), 1);
}

#[tokio::test]
async fn a_model_cannot_read_a_stored_key() {
    const STORED: &str = "sk-stored-never-shown-42";
    let e = env();
    let file = e.home.path().join("auth.json");
    std::fs::write(
        &file,
        json!({"credentials": {"provider/openai": {"type": "api_key", "key": STORED}}}).to_string(),
    )
    .unwrap();
    // The model reads the credentials file, its own environment and its parent's.
    let attack = format!(
        "cat '{}'; env; tr '\\0' '\\n' < /proc/$PPID/environ; grep -r {} '{}' 2>&1 | head",
        file.display(),
        &STORED[..12],
        e.home.path().display()
    );
    let server = FakeServer::start(vec![
        Reply::sse(chat::tool_call("c1", "bash", json!({"command": attack}))),
        Reply::sse(chat::text("done")),
    ])
    .await;
    let mut cmd = e.agent(
        &server,
        &["--mode", "json", "--permission-mode", "auto", "go"],
    );
    cmd.env("AGENT_CREDENTIAL_STORE", "file");
    let out = run(cmd).await;
    assert_eq!(out.code, 0, "{}", out.stderr);
    let requests = server.requests();
    assert_eq!(requests.len(), 2);
    assert_eq!(
        requests[0].header("authorization"),
        Some(format!("Bearer {STORED}").as_str()),
        "the stored key is used"
    );
    assert!(out.stdout.contains("tool_execution_end"), "{}", out.stdout);
    assert!(!out.stdout.contains(STORED), "events: {}", out.stdout);
    assert!(!out.stderr.contains(STORED));
    let next = requests[1].body.to_string();
    assert!(!next.contains(STORED), "{next}");
    for session in e.session_files() {
        let text = std::fs::read_to_string(&session).unwrap();
        assert!(
            !text.contains(STORED),
            "{} holds the key",
            session.display()
        );
    }
}

#[tokio::test]
async fn a_mistyped_provider_is_refused_and_nothing_is_stored() {
    let e = env();
    let mut login = command(e.home.path(), e.cwd.path());
    login
        .env("AGENT_CREDENTIAL_STORE", "file")
        .args(["login", "--provider", "opnai"])
        .stdin(Stdio::piped());
    let mut child = login.spawn().unwrap();
    let mut stdin = child.stdin.take().unwrap();
    stdin
        .write_all(format!("{KEY}\n").as_bytes())
        .await
        .unwrap();
    drop(stdin);
    let output = child.wait_with_output().await.unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(1), "{stderr}");
    assert!(
        stderr.contains("unknown provider `opnai`") && stderr.contains("openai"),
        "{stderr}"
    );
    assert!(!e.home.path().join("auth.json").exists());
}
