//! MCP servers behind OAuth, end to end with the real binary: a streamable-HTTP server that
//! answers 401 with `WWW-Authenticate` reports "needs login"; `agent mcp login NAME` goes
//! from the challenge through protected-resource and authorization-server metadata, dynamic
//! client registration and PKCE to tokens kept per server; the agent's tool calls then
//! carry the token, and a token the server stops honouring mid-session is renewed and the
//! call sent again; `agent mcp logout NAME` forgets it.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // test code fails loudly

use crate::support::auth_server::AuthServer;
use crate::support::chat;
use crate::support::env::{Env, env};
use crate::support::mcp_fixture::{self, Guard, HttpMode};
use crate::support::process::{command, run};
use crate::support::server::{FakeServer, Gate, Reply};
use serde_json::json;
use std::sync::Arc;
use tokio::io::{AsyncBufReadExt, BufReader};

/// The fixture MCP server, honouring only tokens `auth` minted and has not revoked.
async fn protected_server(auth: &AuthServer) -> String {
    let issuer = auth.clone();
    let guard: Guard = Arc::new(move |given: Option<&str>| {
        let token = given.and_then(|g| g.strip_prefix("Bearer "));
        match token {
            Some(token) if issuer.honours(token) => None,
            _ => Some(issuer.challenge()),
        }
    });
    let url = mcp_fixture::serve_http_guarded(guard, None, HttpMode::default()).await;
    auth.with(|s| s.resource = url.clone());
    url
}

fn configure(e: &Env, url: &str, extra: &str) {
    std::fs::write(
        e.home.path().join("config.toml"),
        format!("[mcp_servers.remote]\nurl = \"{url}\"\n{extra}"),
    )
    .unwrap();
}

/// `agent mcp login remote`, with the test as the browser.
async fn login(e: &Env) {
    let mut cmd = command(e.home.path(), e.cwd.path());
    cmd.env("AGENT_CREDENTIAL_STORE", "file")
        .env("AGENT_NO_BROWSER", "1")
        .args(["mcp", "login", "remote"]);
    let mut child = cmd.spawn().unwrap();
    let mut lines = BufReader::new(child.stderr.take().unwrap()).lines();
    let url = loop {
        let line = lines
            .next_line()
            .await
            .unwrap()
            .expect("the sign-in address");
        if let Some(url) = line.trim().strip_prefix("http") {
            break format!("http{url}");
        }
    };
    let _ = rustls::crypto::ring::default_provider().install_default();
    let browser = reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .unwrap();
    let answer = browser.get(&url).send().await.unwrap();
    let back = answer.headers()["location"].to_str().unwrap().to_string();
    browser.get(&back).send().await.unwrap();
    let output = child.wait_with_output().await.unwrap();
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(output.status.success(), "{stdout}");
    assert!(
        stdout.contains("Signed in to MCP server `remote`"),
        "{stdout}"
    );
}

#[tokio::test]
async fn a_server_asking_for_oauth_needs_login_then_works_and_renews_mid_session() {
    let auth = AuthServer::start().await;
    let url = protected_server(&auth).await;
    let e = env();
    configure(&e, &url, "");

    // Before signing in: the server is reported as needing it.
    let server = FakeServer::start(vec![Reply::sse(chat::text("no tools"))]).await;
    let mut cmd = e.agent(&server, &["-p", "hello"]);
    cmd.env("AGENT_CREDENTIAL_STORE", "file");
    let out = run(cmd).await;
    assert!(
        out.stderr
            .contains("needs login: run `agent mcp login remote`"),
        "{}",
        out.stderr
    );

    login(&e).await;
    auth.with(|s| {
        assert_eq!(s.registrations, 1, "registered dynamically");
        assert_eq!(s.verified, 1, "PKCE verified");
    });
    let saved = std::fs::read_to_string(e.home.path().join("auth.json")).unwrap();
    assert!(saved.contains("mcp/remote"), "{saved}");

    // Signed in: the tool call works; the token is refused from the second model request
    // on, so the call renews it first.
    let gate = Gate::new();
    let server = FakeServer::start(vec![
        Reply::sse(chat::tool_call(
            "c1",
            "mcp__remote__echo",
            json!({"text": "hi"}),
        ))
        .after(&gate),
        Reply::sse(chat::text("done")),
    ])
    .await;
    let mut cmd = e.agent(&server, &["-p", "hello", "--permission-mode", "auto"]);
    cmd.env("AGENT_CREDENTIAL_STORE", "file");
    let running = tokio::spawn(run(cmd));
    server.wait_for_requests(1).await;
    let first = server.bodies()[0].to_string();
    assert!(
        first.contains("mcp__remote__echo"),
        "the server's tools are offered: {first}"
    );
    auth.with(|s| s.revoked.push("at-minted-1-abcdef".into()));
    gate.open();
    let out = running.await.unwrap();
    assert_eq!(out.code, 0, "{}", out.stderr);
    let next = server.bodies()[1].to_string();
    assert!(next.contains("echo: hi"), "{next}");
    auth.with(|s| assert_eq!(s.refreshes, 1, "{:?}", s.grants));

    let mut logout = command(e.home.path(), e.cwd.path());
    logout
        .env("AGENT_CREDENTIAL_STORE", "file")
        .args(["mcp", "logout", "remote"]);
    let out = run(logout).await;
    assert_eq!(out.code, 0, "{}", out.stderr);
    let saved = std::fs::read_to_string(e.home.path().join("auth.json")).unwrap();
    assert!(!saved.contains("mcp/remote"), "{saved}");
}

#[tokio::test]
async fn a_configured_client_id_signs_in_where_registration_is_not_offered() {
    let auth = AuthServer::start().await;
    auth.with(|s| s.no_registration = true);
    let url = protected_server(&auth).await;
    let e = env();
    configure(&e, &url, "oauth_client_id = \"preset-client\"\n");
    login(&e).await;
    auth.with(|s| {
        assert_eq!(s.registrations, 0);
        assert_eq!(s.authorized_clients, ["preset-client"]);
        assert_eq!(s.verified, 1);
    });
}
