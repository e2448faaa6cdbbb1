//! `web_fetch` against a real HTTP server on 127.0.0.1, driven by the agent loop: HTML
//! arrives as Markdown, a redirect loop and an oversized body fail cleanly, a private or
//! loopback address is refused unless `[web] allow_hosts` names the host, a redirect to
//! another host is not followed (an allowed host cannot lead the request elsewhere), and in
//! ask mode the call asks first, naming the host.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // test code fails loudly

use crate::support;

use agent::protocol::event::AgentEvent;
use agent::protocol::message::join_text;
use agent::tools::permission::PermissionMode;
use agent::tools::web::WebSettings;
use serde_json::json;
use support::chat;
use support::harness::{Harness, end_of};
use support::server::{FakeServer, Reply};

/// An agent with every tool whose `web_fetch` settings are `web`.
async fn harness(web: WebSettings) -> Harness {
    Harness::start_with(vec![], |c| {
        c.tools = agent::tools::Tools::from_names(agent::tools::ALL_TOOLS).unwrap();
        c.tool_settings.web = web;
    })
    .await
}

fn loopback_allowed() -> WebSettings {
    WebSettings {
        allow_hosts: vec!["127.0.0.1".to_string()],
        ..WebSettings::default()
    }
}

/// Fetch `url` in one call; the result's text and error flag.
async fn fetch(h: &mut Harness, url: &str) -> (String, bool) {
    h.server.push(Reply::sse(chat::tool_call(
        "c1",
        "web_fetch",
        json!({"url": url, "prompt": "the title"}),
    )));
    h.server.push(Reply::sse(chat::text("read it")));
    h.prompt("look it up");
    let events = h.until_end().await;
    assert_eq!(end_of(&events).0, "completed");
    events
        .iter()
        .find_map(|e| match e {
            AgentEvent::ToolExecutionEnd {
                result, is_error, ..
            } => Some((join_text(&result.content), *is_error)),
            _ => None,
        })
        .unwrap()
}

#[tokio::test]
async fn an_html_page_arrives_as_markdown() {
    let web = FakeServer::start(vec![Reply::body(
        200,
        "text/html; charset=utf-8",
        "<html><head><script>steal()</script></head><body><h1>Release notes</h1>\
         <p>Version <b>2.0</b> is out. See <a href=\"https://example.com/x\">the list</a>.</p>\
         </body></html>",
    )])
    .await;
    let mut h = harness(loopback_allowed()).await;
    let url = format!("{}/notes", web.origin);
    let (text, is_error) = fetch(&mut h, &url).await;
    assert!(!is_error, "{text}");
    assert!(
        text.starts_with(&format!("URL: {url}\nLooking for: the title\n")),
        "{text}"
    );
    assert!(text.contains("# Release notes"), "{text}");
    assert!(
        text.contains("Version **2.0** is out. See [the list](https://example.com/x)."),
        "{text}"
    );
    assert!(!text.contains("steal"), "{text}");
    assert_eq!(web.requests()[0].path, "/notes");
}

#[tokio::test]
async fn a_redirect_loop_stops_after_five_hops() {
    let web = FakeServer::start(vec![]).await;
    for _ in 0..10 {
        web.push(Reply::body(302, "text/plain", "").with_header("location", "/again"));
    }
    let mut h = harness(loopback_allowed()).await;
    let (text, is_error) = fetch(&mut h, &format!("{}/start", web.origin)).await;
    assert!(is_error);
    assert!(text.contains("too many redirects (more than 5)"), "{text}");
    assert_eq!(web.requests().len(), 6);
}

#[tokio::test]
async fn an_oversized_body_is_refused() {
    let web = FakeServer::start(vec![Reply::body(200, "text/plain", &"x".repeat(5000))]).await;
    let mut h = harness(WebSettings {
        max_bytes: 1000,
        ..loopback_allowed()
    })
    .await;
    let (text, is_error) = fetch(&mut h, &format!("{}/big", web.origin)).await;
    assert!(is_error);
    assert!(
        text.contains("the page is 5000 bytes, more than the 1000-byte limit"),
        "{text}"
    );
}

#[tokio::test]
async fn a_loopback_address_is_refused_unless_allowed_and_redirects_never_change_host() {
    let web = FakeServer::start(vec![]).await;
    let mut h = harness(WebSettings::default()).await;
    let (text, is_error) = fetch(&mut h, &format!("{}/secret", web.origin)).await;
    assert!(is_error);
    assert!(
        text.contains("refused: 127.0.0.1 is a loopback address (127.0.0.1)"),
        "{text}"
    );
    assert!(web.requests().is_empty(), "the request was sent");
    // `localhost` is allowed; the redirect it answers with leads to another host
    // (127.0.0.1), which is not followed.
    let port = web.origin.rsplit(':').next().unwrap().to_string();
    web.push(
        Reply::body(302, "text/plain", "")
            .with_header("location", &format!("http://127.0.0.1:{port}/secret")),
    );
    let mut h = harness(WebSettings {
        allow_hosts: vec!["localhost".to_string()],
        ..WebSettings::default()
    })
    .await;
    let (text, is_error) = fetch(&mut h, &format!("http://localhost:{port}/start")).await;
    assert!(is_error);
    assert!(
        text.contains(&format!(
            "redirects to another host: http://127.0.0.1:{port}/secret. It was not followed"
        )),
        "{text}"
    );
    assert_eq!(web.requests().len(), 1, "only the allowed host was asked");
}

#[tokio::test]
async fn in_ask_mode_it_asks_first_naming_the_host() {
    let web = FakeServer::start(vec![]).await;
    let mut h = Harness::start_with(vec![], |c| {
        c.tools = agent::tools::Tools::from_names(agent::tools::ALL_TOOLS).unwrap();
        c.tool_settings.web = loopback_allowed();
        c.permission_mode = PermissionMode::Ask;
    })
    .await;
    let (text, is_error) = fetch(&mut h, &format!("{}/page", web.origin)).await;
    assert!(is_error);
    assert!(
        text.contains("it fetches a page from the web host 127.0.0.1"),
        "{text}"
    );
    assert!(web.requests().is_empty());
}
