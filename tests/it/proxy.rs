//! `agent proxy` and the `agent-proxy` provider, as real processes over loopback HTTP: a run
//! through the proxy gives the same deltas and final messages as a direct connection; bad
//! tokens, oversized bodies and too many streams are refused; a client that goes away cancels
//! the upstream request; upstream errors keep their retry semantics.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // test code fails loudly

use crate::support;

use serde_json::{Value, json};
use std::time::Duration;
use support::chat;
use support::env::{Env, env};
use support::process::{Output, command, run};
use support::proxy::Proxy;
use support::server::{End, FakeServer, Reply};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

const TOKENS: &str = "tok-a, tok-b";

/// A running `agent proxy` whose default provider is `upstream`, with `proxy_table` as its
/// `[proxy]` settings.
async fn start_proxy(upstream: &FakeServer, proxy_table: &str) -> Proxy {
    let config = format!(
        "provider = \"upstream\"\nmodel = \"test-model\"\n\n[providers.upstream]\napi = \
         \"openai-chat\"\nbase_url = \"{}\"\napi_key_env = \"UPSTREAM_KEY\"\n\n[proxy]\n{proxy_table}\n",
        upstream.v1()
    );
    Proxy::start(
        &config,
        &[
            ("UPSTREAM_KEY", "sk-upstream-secret"),
            ("AGENT_PROXY_TOKENS", TOKENS),
        ],
    )
    .await
}

/// Send one raw HTTP/1.1 request; the whole answer as text once the server closes.
async fn http(addr: &str, method: &str, path: &str, token: Option<&str>, body: &str) -> String {
    let mut stream = request(addr, method, path, token, body).await;
    let mut answer = Vec::new();
    tokio::time::timeout(Duration::from_secs(20), stream.read_to_end(&mut answer))
        .await
        .expect("an answer")
        .unwrap();
    String::from_utf8_lossy(&answer).into_owned()
}

async fn request(
    addr: &str,
    method: &str,
    path: &str,
    token: Option<&str>,
    body: &str,
) -> TcpStream {
    let mut stream = TcpStream::connect(addr).await.unwrap();
    let auth = token
        .map(|t| format!("authorization: Bearer {t}\r\n"))
        .unwrap_or_default();
    let head = format!(
        "{method} {path} HTTP/1.1\r\nhost: {addr}\r\n{auth}content-type: application/json\r\n\
         content-length: {}\r\nconnection: close\r\n\r\n",
        body.len()
    );
    stream.write_all(head.as_bytes()).await.unwrap();
    stream.write_all(body.as_bytes()).await.unwrap();
    stream
}

/// `POST /v1/stream` asking "hi" with `token`; the whole answer.
async fn ask(proxy: &Proxy, token: Option<&str>) -> String {
    http(
        proxy.addr(),
        "POST",
        "/v1/stream",
        token,
        &stream_body("hi"),
    )
    .await
}

/// `POST /v1/stream` asking "hi" as `tok-a`: the connection, its answer not read yet.
async fn start_asking(proxy: &Proxy) -> TcpStream {
    request(
        proxy.addr(),
        "POST",
        "/v1/stream",
        Some("tok-a"),
        &stream_body("hi"),
    )
    .await
}

fn stream_body(text: &str) -> String {
    json!({
        "model": "test-model",
        "context": {
            "systemPrompt": "You are a test.",
            "messages": [{"role": "user", "content": [{"type": "text", "text": text}], "timestamp": 1}],
            "tools": []
        }
    })
    .to_string()
}

/// The `data:` lines of an event-stream answer.
fn data_lines(answer: &str) -> Vec<Value> {
    answer
        .lines()
        .filter_map(|l| l.strip_prefix("data: "))
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

/// An agent whose provider `team` is the proxy.
fn client(proxy: &Proxy, env: &Env, token: &str, args: &[&str]) -> tokio::process::Command {
    std::fs::write(
        env.home.path().join("config.toml"),
        format!(
            "provider = \"team\"\nmodel = \"test-model\"\n\n[providers.team]\napi = \
             \"agent-proxy\"\nbase_url = \"{}\"\napi_key_env = \"TEAM_TOKEN\"\n",
            proxy.origin
        ),
    )
    .unwrap();
    let mut cmd = command(env.home.path(), env.cwd.path());
    cmd.args(args).env("TEAM_TOKEN", token);
    cmd
}

/// The JSON lines of a `--mode json` run.
fn json_lines(out: &Output) -> Vec<Value> {
    assert_eq!(out.code, 0, "{}", out.stderr);
    out.stdout
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

/// The deltas and the final messages of a run, without what differs between any two runs
/// (timestamps, the provider's name).
fn outcome(lines: &[Value]) -> (Vec<Value>, Vec<Value>) {
    // Deltas of one block that queued up behind each other may reach a client of the proxy
    // as one (docs/protocol.md §8): compared joined.
    let mut deltas: Vec<Value> = Vec::new();
    for event in lines
        .iter()
        .filter(|l| l["type"] == "message_update")
        .map(|l| &l["assistantMessageEvent"])
    {
        match deltas.last_mut() {
            Some(last)
                if event["type"]
                    .as_str()
                    .is_some_and(|t| t.ends_with("_delta"))
                    && last["type"] == event["type"]
                    && last["contentIndex"] == event["contentIndex"] =>
            {
                let joined = format!(
                    "{}{}",
                    last["delta"].as_str().unwrap(),
                    event["delta"].as_str().unwrap()
                );
                last["delta"] = Value::String(joined);
            }
            _ => deltas.push(event.clone()),
        }
    }
    let end = lines.iter().find(|l| l["type"] == "agent_end").unwrap();
    let messages = end["messages"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| {
            let mut m = m.clone();
            let object = m.as_object_mut().unwrap();
            object.remove("timestamp");
            object.remove("provider");
            m
        })
        .collect();
    (deltas, messages)
}

fn script() -> Vec<Reply> {
    vec![
        Reply::sse(chat::tool_calls(&[
            ("c1", "bash", json!({"command": "echo one"})),
            ("c2", "read", json!({"path": "missing.txt"})),
        ])),
        Reply::sse(chat::thinking_then_text("let me see", "Done: one.")),
    ]
}

#[tokio::test]
async fn a_run_through_the_proxy_is_the_same_as_a_direct_one() {
    let args = ["--mode", "json", "--permission-mode", "auto", "go"];
    let direct_server = FakeServer::start(script()).await;
    let direct_env = env();
    let direct = json_lines(&run(direct_env.agent(&direct_server, &args)).await);

    let upstream = FakeServer::start(script()).await;
    let proxy = start_proxy(&upstream, "").await;
    let client_env = env();
    let proxied = json_lines(&run(client(&proxy, &client_env, "tok-b", &args)).await);

    assert_eq!(outcome(&proxied), outcome(&direct));
    let (_, messages) = outcome(&proxied);
    assert_eq!(messages.len(), 5, "{messages:#?}");
    assert_eq!(
        messages[1]["content"][0]["id"], "c1",
        "tool call ids come with `done`"
    );
    assert_eq!(messages[4]["content"][1]["text"], "Done: one.");
    // The proxy called the provider with its own key; the client's token went no further.
    let requests = upstream.requests();
    assert_eq!(requests.len(), 2);
    assert_eq!(
        requests[0].header("authorization"),
        Some("Bearer sk-upstream-secret")
    );
    // The same history (the system prompts differ only in their working directory).
    assert_eq!(
        requests[1].body["messages"].as_array().unwrap()[1..],
        direct_server.requests()[1].body["messages"]
            .as_array()
            .unwrap()[1..],
    );
}

#[tokio::test]
async fn the_stream_is_deltas_then_done_never_the_partial_message() {
    let upstream = FakeServer::start(vec![Reply::sse(chat::text_deltas(&["Hel", "lo"]))]).await;
    let proxy = start_proxy(&upstream, "").await;
    let answer = ask(&proxy, Some("tok-a")).await;
    assert!(answer.starts_with("HTTP/1.1 200"), "{answer}");
    assert!(
        answer.contains("content-type: text/event-stream"),
        "{answer}"
    );
    let lines = data_lines(&answer);
    // The deltas may go as they came or, when the second had queued up behind the first,
    // joined into one (docs/protocol.md §8); either way deltas only, then `done`.
    let (done, events) = lines.split_last().unwrap();
    let (start, rest) = events.split_first().unwrap();
    let (end, deltas) = rest.split_last().unwrap();
    assert_eq!(*start, json!({"type": "text_start", "contentIndex": 0}));
    assert_eq!(*end, json!({"type": "text_end", "contentIndex": 0}));
    assert!((1..=2).contains(&deltas.len()), "{deltas:?}");
    let mut text = String::new();
    for delta in deltas {
        assert_eq!(delta["type"], "text_delta", "{delta}");
        assert_eq!(delta["contentIndex"], 0, "{delta}");
        assert_eq!(
            delta.as_object().unwrap().len(),
            3,
            "only the delta: {delta}"
        );
        text.push_str(delta["delta"].as_str().unwrap());
    }
    assert_eq!(text, "Hello");
    assert_eq!(done["type"], "done");
    assert_eq!(done["message"]["content"][0]["text"], "Hello");
}

#[tokio::test]
async fn tokens_health_and_models() {
    let upstream = FakeServer::start(vec![]).await;
    let proxy = start_proxy(&upstream, "").await;
    let health = http(proxy.addr(), "GET", "/healthz", None, "").await;
    assert!(health.starts_with("HTTP/1.1 200"), "{health}");
    for token in [None, Some("tok-c"), Some("tok-")] {
        let answer = ask(&proxy, token).await;
        assert!(answer.starts_with("HTTP/1.1 401"), "{answer}");
        assert!(
            answer.contains(r#""error":{"message":"missing or unknown bearer token"#),
            "{answer}"
        );
        let answer = http(proxy.addr(), "GET", "/v1/models", token, "").await;
        assert!(answer.starts_with("HTTP/1.1 401"), "{answer}");
    }
    let models = http(proxy.addr(), "GET", "/v1/models", Some("tok-a"), "").await;
    assert!(models.starts_with("HTTP/1.1 200"), "{models}");
    let body: serde_json::Value = models
        .split_once("\r\n\r\n")
        .and_then(|(_, body)| serde_json::from_str(body).ok())
        .unwrap_or_else(|| panic!("no JSON body: {models}"));
    assert_eq!(
        body["default"],
        serde_json::json!({"provider": "upstream", "model": "test-model"}),
        "{models}"
    );
    assert!(
        upstream.requests().is_empty(),
        "nothing reached the provider"
    );
}

#[tokio::test]
async fn without_a_token_the_proxy_refuses_to_start() {
    let env = env();
    let mut cmd = command(env.home.path(), env.cwd.path());
    cmd.args(["proxy", "--listen", "127.0.0.1:0"]);
    let out = run(cmd).await;
    assert_eq!(out.code, 1);
    assert!(
        out.stderr
            .contains("no client tokens: set AGENT_PROXY_TOKENS"),
        "{}",
        out.stderr
    );
    let mut cmd = command(env.home.path(), env.cwd.path());
    cmd.args(["proxy", "--listen", "0.0.0.0:0", "--insecure-no-auth"]);
    let out = run(cmd).await;
    assert_eq!(out.code, 1);
    assert!(
        out.stderr.contains("only allowed on a loopback address"),
        "{}",
        out.stderr
    );
}

#[tokio::test]
async fn oversized_bodies_and_too_many_streams_are_refused() {
    let upstream = FakeServer::start(vec![
        Reply::sse(chat::text_deltas(&["slow"])[..2].to_vec()).then(End::Stall),
    ])
    .await;
    let proxy = start_proxy(
        &upstream,
        "max_body_bytes = 2000\nmax_streams_per_token = 1",
    )
    .await;
    let big = stream_body(&"x".repeat(5000));
    let answer = http(proxy.addr(), "POST", "/v1/stream", Some("tok-a"), &big).await;
    assert!(answer.starts_with("HTTP/1.1 413"), "{answer}");
    assert!(
        answer.contains("larger than 2000 bytes (max_body_bytes)"),
        "{answer}"
    );

    let mut open = start_asking(&proxy).await;
    let mut first = [0u8; 64];
    let n = open.read(&mut first).await.unwrap();
    assert!(first[..n].starts_with(b"HTTP/1.1 200"));
    upstream.wait_for_requests(1).await;
    let answer = ask(&proxy, Some("tok-a")).await;
    assert!(answer.starts_with("HTTP/1.1 429"), "{answer}");
    assert!(answer.contains("max_streams_per_token"), "{answer}");
}

#[tokio::test]
async fn a_client_that_goes_away_cancels_the_upstream_request() {
    let mut frames = chat::text_deltas(&["still ", "going"]);
    frames.truncate(2);
    let upstream = FakeServer::start(vec![Reply::sse(frames).then(End::KeepAlive {
        frame: ": ping\n\n".into(),
        every: Duration::from_millis(20),
    })])
    .await;
    let proxy = start_proxy(&upstream, "").await;
    let mut stream = start_asking(&proxy).await;
    let mut seen = Vec::new();
    while !String::from_utf8_lossy(&seen).contains("text_delta") {
        let mut chunk = [0u8; 1024];
        let n = stream.read(&mut chunk).await.unwrap();
        assert!(n > 0, "the stream ended early");
        seen.extend_from_slice(&chunk[..n]);
    }
    drop(stream);
    // The upstream reply ends only when its connection is closed under it.
    tokio::time::timeout(Duration::from_secs(20), async {
        while upstream.reply_times().is_empty() {
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    })
    .await
    .expect("the proxy closes the upstream connection");
}

#[tokio::test]
async fn upstream_errors_are_relayed_with_their_retry_semantics() {
    let upstream = FakeServer::start(vec![
        Reply::status(429, r#"{"error":{"message":"slow down"}}"#).with_header("retry-after", "2"),
        Reply::status(400, r#"{"error":{"message":"This model's maximum context length is 4096 tokens.","code":"context_length_exceeded"}}"#),
        Reply::status(503, "overloaded"),
        Reply::sse(chat::text("fine now")),
    ])
    .await;
    let proxy = start_proxy(&upstream, "").await;
    let answer = ask(&proxy, Some("tok-a")).await;
    let lines = data_lines(&answer);
    assert_eq!(lines.len(), 1, "{answer}");
    assert_eq!(lines[0]["type"], "error");
    assert_eq!(lines[0]["status"], 429);
    assert_eq!(lines[0]["retry"], "transient");
    assert_eq!(lines[0]["retryAfterMs"], 2000);
    assert!(
        lines[0]["message"].as_str().unwrap().contains("slow down"),
        "{answer}"
    );
    let answer = ask(&proxy, Some("tok-a")).await;
    let lines = data_lines(&answer);
    assert_eq!(lines[0]["retry"], "never");
    assert_eq!(lines[0]["contextOverflow"], true);

    // An agent through the proxy retries a relayed 503 as it would a direct one.
    let client_env = env();
    let out = run(client(
        &proxy,
        &client_env,
        "tok-a",
        &["--mode", "json", "hi"],
    ))
    .await;
    let lines = json_lines(&out);
    let retry = lines
        .iter()
        .find(|l| l["type"] == "auto_retry_start")
        .unwrap();
    assert!(
        retry["errorMessage"].as_str().unwrap().contains("HTTP 503"),
        "{retry}"
    );
    let end = lines.last().unwrap();
    assert_eq!(end["status"], "completed");
    assert_eq!(end["messages"][1]["content"][0]["text"], "fine now");
}

/// Why the proxy relays deltas only (docs/benchmarks.md): the bytes a 2,000-delta answer
/// puts on the wire, against a relay that would send the partial message with every delta.
#[tokio::test]
async fn a_long_answer_costs_linear_bytes_on_the_wire() {
    let words = vec!["word "; 2000];
    let upstream = FakeServer::start(vec![Reply::sse(chat::text_deltas(&words))]).await;
    let proxy = start_proxy(&upstream, "").await;
    let answer = ask(&proxy, Some("tok-a")).await;
    let wire: usize = answer
        .lines()
        .filter(|l| l.starts_with("data: "))
        .map(|l| l.len() + 2)
        .sum();
    let lines = data_lines(&answer);
    let done = lines.last().unwrap();
    assert_eq!(done["type"], "done");
    assert_eq!(
        done["message"]["content"][0]["text"]
            .as_str()
            .unwrap()
            .len(),
        10_000
    );
    // The provider's 2,000 deltas, each with the partial message as it stood (deltas that
    // queued up behind each other go as one line here, which only makes the wire shorter).
    let mut partial = done["message"].clone();
    let mut with_partial = 0;
    for (i, word) in words.iter().enumerate() {
        partial["content"][0]["text"] = json!(word.repeat(i));
        let line = json!({"type": "text_delta", "contentIndex": 0, "delta": word,
                          "partial": partial});
        with_partial += format!("data: {line}\n\n").len();
    }
    eprintln!(
        "2,000 deltas: {wire} bytes relayed as deltas, {with_partial} bytes with the partial each time"
    );
    assert!(wire < 200_000, "{wire}");
    assert!(with_partial > 50 * wire, "{with_partial} vs {wire}");
}

/// Uploads that stall hold no stream place: with `max_streams_per_token = 2`, three clients
/// that send half a body leave the token free for a fourth request, and each of them gets
/// 408 once `body_timeout_secs` has passed.
#[tokio::test]
async fn stalled_uploads_do_not_lock_a_token_out() {
    let upstream = FakeServer::start(vec![Reply::sse(chat::text("fine"))]).await;
    let proxy = start_proxy(
        &upstream,
        "max_streams_per_token = 2\nbody_timeout_secs = 1",
    )
    .await;
    let body = stream_body("hi");
    let mut stalled = Vec::new();
    for _ in 0..3 {
        let mut stream = TcpStream::connect(proxy.addr()).await.unwrap();
        let head = format!(
            "POST /v1/stream HTTP/1.1\r\nhost: {}\r\nauthorization: Bearer tok-a\r\n\
             content-type: application/json\r\ncontent-length: {}\r\n\r\n",
            proxy.addr(),
            body.len()
        );
        stream.write_all(head.as_bytes()).await.unwrap();
        stream
            .write_all(&body.as_bytes()[..body.len() / 2])
            .await
            .unwrap();
        stalled.push(stream);
    }
    let answer = ask(&proxy, Some("tok-a")).await;
    assert!(answer.starts_with("HTTP/1.1 200"), "{answer}");
    assert!(answer.contains("\"done\""), "{answer}");
    for mut stream in stalled {
        let mut answer = Vec::new();
        tokio::time::timeout(Duration::from_secs(20), stream.read_to_end(&mut answer))
            .await
            .expect("the stalled upload is answered")
            .unwrap();
        let answer = String::from_utf8_lossy(&answer);
        assert!(answer.starts_with("HTTP/1.1 408"), "{answer}");
        assert!(answer.contains("body_timeout_secs"), "{answer}");
    }
    assert_eq!(
        upstream.requests().len(),
        1,
        "only the whole request went upstream"
    );
}
