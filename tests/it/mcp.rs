//! The MCP client against a real MCP server written with rmcp's server side
//! (support/mcp_fixture.rs), over stdio (the `test_mcp_server` program from tests/fixtures, as
//! a child process) and streamable HTTP (in-process, on 127.0.0.1): tool calls through the
//! engine with text, image, error, structured and long results, progress, cancellation on
//! abort, timeouts, crash and restart, garbage on stdout, a server that never answers,
//! `tools/list_changed`, permissions and shutting the servers down.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // test code fails loudly

use crate::support;
use crate::support::mcp_fixture;

use agent::mcp::McpManager;
use agent::mcp::config::{ServerConfig, ServerTable};
use agent::mcp::server::Status;
use agent::protocol::event::AgentEvent;
use agent::protocol::message::Content;
use agent::tools::permission::{PermissionMode, PermissionRules};
use agent::tools::rules::RuleSet;
use agent::tools::source::ToolSource;
use serde_json::{Value, json};
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;
use support::chat;
use support::harness::{Harness, end_of, process_alive, wait_until_dead};
use support::server::Reply;

/// A `[mcp_servers.NAME]` table for the stdio fixture in `mode`, with `extra` TOML lines.
fn stdio_config(name: &str, mode: &str, marks: &Path, extra: &str) -> ServerConfig {
    let (command, args, env) = mcp_fixture::stdio_command(mode, marks);
    let env: Vec<String> = env
        .iter()
        .map(|(k, v)| format!("{k} = {}", json!(v)))
        .collect();
    let text = format!(
        "command = {}\nargs = {}\nenv = {{ {} }}\n{extra}",
        json!(command),
        json!(args),
        env.join(", ")
    );
    toml::from_str::<ServerTable>(&text)
        .unwrap()
        .resolve(name)
        .unwrap()
}

fn http_config(name: &str, url: &str, extra: &str) -> ServerConfig {
    toml::from_str::<ServerTable>(&format!("url = {}\n{extra}", json!(url)))
        .unwrap()
        .resolve(name)
        .unwrap()
}

fn start(configs: Vec<ServerConfig>, cwd: &Path) -> Arc<McpManager> {
    start_in(configs, cwd, agent::sandbox::Sandbox::default())
}

/// `start`, with stdio servers that ask for it run inside `sandbox`.
fn start_in(
    configs: Vec<ServerConfig>,
    cwd: &Path,
    sandbox: agent::sandbox::Sandbox,
) -> Arc<McpManager> {
    McpManager::start(configs, cwd.to_path_buf(), Vec::new(), sandbox).unwrap()
}

/// An agent offering `mcp`'s tools, answering with `replies` (from a model that takes
/// images).
async fn harness(mcp: &Arc<McpManager>, replies: Vec<Reply>) -> Harness {
    let source = mcp.clone() as Arc<dyn ToolSource>;
    Harness::start_with(replies, move |config| {
        config.tool_source = Some(source);
        config.model.images = true;
    })
    .await
}

/// Wait for a file the fixture writes (a mark), at most 20 s.
async fn wait_for_mark(marks: &Path, name: &str) -> String {
    for _ in 0..2000 {
        if let Ok(text) = std::fs::read_to_string(marks.join(name)) {
            return text;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    panic!("the fixture never wrote `{name}`");
}

/// The result of each finished tool call: (name, text, is_error, details).
fn results(events: &[AgentEvent]) -> Vec<(String, String, bool, Option<Value>)> {
    events
        .iter()
        .filter_map(|event| match event {
            AgentEvent::ToolExecutionEnd {
                tool_name,
                result,
                is_error,
                ..
            } => Some((
                tool_name.clone(),
                agent::protocol::message::join_text(&result.content),
                *is_error,
                result.details.clone(),
            )),
            _ => None,
        })
        .collect()
}

fn offered_tools(body: &Value) -> Vec<String> {
    body["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["function"]["name"].as_str().unwrap().to_string())
        .collect()
}

#[tokio::test]
async fn stdio_tools_are_offered_and_their_results_mapped() {
    let marks = tempfile::tempdir().unwrap();
    let mcp = start(
        vec![stdio_config("fx", "stdio", marks.path(), "")],
        marks.path(),
    );
    let mut h = harness(
        &mcp,
        vec![
            Reply::sse(chat::tool_calls(&[
                ("c1", "mcp__fx__echo", json!({"text": "hi"})),
                ("c2", "mcp__fx__image", json!({})),
                ("c3", "mcp__fx__fail", json!({})),
                ("c4", "mcp__fx__structured", json!({})),
                ("c5", "mcp__fx__big", json!({})),
                ("c6", "mcp__fx__echo", json!({"txt": 1})),
            ])),
            Reply::sse(chat::text("done")),
        ],
    )
    .await;
    h.prompt("use the tools");
    let events = h.until_end().await;
    assert_eq!(end_of(&events).0, "completed");
    let results = results(&events);
    assert_eq!(results[0].1, "echo: hi");
    assert!(!results[0].2);
    assert_eq!(results[2].1, "boom");
    assert!(results[2].2, "isError is kept");
    assert_eq!(results[3].1, "{\n  \"sum\": 3\n}");
    assert!(
        results[4]
            .1
            .contains("[Output truncated: showing the first 2000 lines"),
        "{}",
        results[4].1
    );
    let saved = results[4].3.as_ref().unwrap()["fullOutputPath"]
        .as_str()
        .unwrap()
        .to_string();
    assert_eq!(
        std::fs::read_to_string(&saved).unwrap().lines().count(),
        3000
    );
    let _ = std::fs::remove_file(saved);
    assert!(results[5].2);
    assert!(
        results[5]
            .1
            .starts_with("Invalid arguments for `mcp__fx__echo`"),
        "{}",
        results[5].1
    );
    let image = events
        .iter()
        .find_map(|e| match e {
            AgentEvent::ToolExecutionEnd {
                tool_call_id,
                result,
                ..
            } if tool_call_id == "c2" => Some(result.content.clone()),
            _ => None,
        })
        .unwrap();
    assert_eq!(
        image,
        vec![
            Content::text("a picture"),
            Content::Image {
                data: mcp_fixture::PNG.into(),
                mime_type: "image/png".into()
            }
        ]
    );
    // Offered with the server's own schemas; the hidden tool is not there.
    let bodies = h.server.bodies();
    let tools = offered_tools(&bodies[0]);
    for name in [
        "read",
        "bash",
        "mcp__fx__echo",
        "mcp__fx__image",
        "mcp__fx__peek",
    ] {
        assert!(tools.contains(&name.to_string()), "{tools:?}");
    }
    assert!(!tools.contains(&"mcp__fx__secret".to_string()));
    let echo = bodies[0]["tools"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["function"]["name"] == "mcp__fx__echo")
        .unwrap();
    assert_eq!(echo["function"]["parameters"]["required"], json!(["text"]));
    assert_eq!(echo["function"]["description"], "Echo text back");
    let view = &mcp.views()[0];
    assert_eq!((view.status, view.transport), (Status::Ready, "stdio"));
    assert!(
        view.tools
            .iter()
            .any(|t| t.name == "mcp__fx__peek" && t.read_only)
    );
    mcp.shut_down().await;
}

#[tokio::test]
async fn progress_arrives_as_updates_before_the_result() {
    let marks = tempfile::tempdir().unwrap();
    let mcp = start(
        vec![stdio_config("fx", "stdio", marks.path(), "")],
        marks.path(),
    );
    let mut h = harness(
        &mcp,
        vec![
            Reply::sse(chat::tool_call("c1", "mcp__fx__progress", json!({}))),
            Reply::sse(chat::text("done")),
        ],
    )
    .await;
    h.prompt("go");
    let events = h.until_end().await;
    let updates: Vec<String> = events
        .iter()
        .filter_map(|e| match e {
            AgentEvent::ToolExecutionUpdate { partial_result, .. } => {
                Some(agent::protocol::message::join_text(&partial_result.content))
            }
            _ => None,
        })
        .collect();
    assert_eq!(
        updates,
        [
            "[progress 1/3] step 1",
            "[progress 2/3] step 2",
            "[progress 3/3] step 3"
        ]
    );
    assert_eq!(results(&events)[0].1, "progress done");
    mcp.shut_down().await;
}

#[tokio::test]
async fn a_changed_tool_list_is_offered_in_the_next_request() {
    let marks = tempfile::tempdir().unwrap();
    let mcp = start(
        vec![stdio_config("fx", "stdio", marks.path(), "")],
        marks.path(),
    );
    let mut h = harness(
        &mcp,
        vec![
            Reply::sse(chat::tool_call("c1", "mcp__fx__reveal", json!({}))),
            Reply::sse(chat::tool_call("c2", "mcp__fx__secret", json!({}))),
            Reply::sse(chat::text("done")),
        ],
    )
    .await;
    h.prompt("go");
    let events = h.until_end().await;
    let results = results(&events);
    assert_eq!(results[1].1, "the secret is 42");
    let bodies = h.server.bodies();
    assert!(!offered_tools(&bodies[0]).contains(&"mcp__fx__secret".to_string()));
    assert!(offered_tools(&bodies[1]).contains(&"mcp__fx__secret".to_string()));
    mcp.shut_down().await;
}

#[tokio::test]
async fn abort_cancels_the_call_on_the_server() {
    let marks = tempfile::tempdir().unwrap();
    let mcp = start(
        vec![stdio_config("fx", "stdio", marks.path(), "")],
        marks.path(),
    );
    let mut h = harness(
        &mcp,
        vec![Reply::sse(chat::tool_call(
            "c1",
            "mcp__fx__slow",
            json!({}),
        ))],
    )
    .await;
    h.prompt("go");
    wait_for_mark(marks.path(), "slow-started").await;
    h.agent.abort();
    let events = h.until_end().await;
    assert_eq!(end_of(&events).0, "aborted");
    assert!(results(&events)[0].2);
    wait_for_mark(marks.path(), "cancelled").await;
    mcp.shut_down().await;
}

#[tokio::test]
async fn a_call_over_its_timeout_is_cancelled_and_says_so() {
    let marks = tempfile::tempdir().unwrap();
    let mcp = start(
        vec![stdio_config(
            "fx",
            "stdio",
            marks.path(),
            "tool_timeout_secs = 0.3",
        )],
        marks.path(),
    );
    let mut h = harness(
        &mcp,
        vec![
            Reply::sse(chat::tool_call("c1", "mcp__fx__slow", json!({}))),
            Reply::sse(chat::text("done")),
        ],
    )
    .await;
    h.prompt("go");
    let events = h.until_end().await;
    let (_, text, is_error, _) = &results(&events)[0];
    assert!(is_error);
    assert!(
        text.contains(
            "did not finish within its timeout of 0.3 s (mcp_servers.fx.tool_timeout_secs)"
        ),
        "{text}"
    );
    wait_for_mark(marks.path(), "cancelled").await;
    mcp.shut_down().await;
}

/// An answer of 20 MB, over the 16 MiB one MCP message may hold: the call says which limit
/// was hit and keeps the start of the answer (cut and saved as any long result), instead of
/// waiting for its timeout; the server goes on answering.
#[tokio::test]
async fn a_huge_answer_reports_the_size_limit_and_keeps_its_start() {
    let marks = tempfile::tempdir().unwrap();
    let config = stdio_config("fx", "stdio", marks.path(), "tool_timeout_secs = 60");
    huge_answer_is_cut(config, marks.path()).await;
}

/// The same over streamable HTTP, answered as an event stream: the event is read bounded
/// (never 20 MB in memory), the call keeps the start and names the limit, and the server is
/// not restarted (the next call goes to the same session).
#[tokio::test]
async fn a_huge_answer_over_http_reports_the_size_limit_and_keeps_its_start() {
    let marks = tempfile::tempdir().unwrap();
    let url = mcp_fixture::serve_http(None, None).await;
    huge_answer_is_cut(
        http_config("fx", &url, "tool_timeout_secs = 60"),
        marks.path(),
    )
    .await;
}

/// The same over streamable HTTP answered with plain JSON bodies.
#[tokio::test]
async fn a_huge_json_answer_over_http_reports_the_size_limit_and_keeps_its_start() {
    let marks = tempfile::tempdir().unwrap();
    let mode = mcp_fixture::HttpMode {
        json: true,
        ..Default::default()
    };
    let url = mcp_fixture::serve_http_with(None, None, mode).await;
    huge_answer_is_cut(
        http_config("fx", &url, "tool_timeout_secs = 60"),
        marks.path(),
    )
    .await;
}

/// Call the `huge` tool of `config`'s server, then `echo`.
async fn huge_answer_is_cut(config: ServerConfig, dir: &Path) {
    let mcp = start(vec![config], dir);
    let mut h = harness(
        &mcp,
        vec![
            Reply::sse(chat::tool_call("c1", "mcp__fx__huge", json!({}))),
            Reply::sse(chat::tool_call(
                "c2",
                "mcp__fx__echo",
                json!({"text": "after"}),
            )),
            Reply::sse(chat::text("done")),
        ],
    )
    .await;
    h.prompt("go");
    let events = h.until_end().await;
    let results = results(&events);
    let (_, text, is_error, details) = &results[0];
    assert!(!is_error, "{text}");
    assert!(
        text.starts_with("BEGIN zzz"),
        "{}",
        &text[..100.min(text.len())]
    );
    assert!(
        text.contains(
            "[The MCP server's answer was 20.0 MB, more than the 16 MiB one MCP message may \
             hold: only its first 8 MiB were read.]"
        ),
        "{}",
        &text[text.len().saturating_sub(400)..]
    );
    assert!(!text.contains("timeout"), "not reported as a timeout");
    let saved = details.as_ref().unwrap()["fullOutputPath"]
        .as_str()
        .unwrap();
    let kept = std::fs::metadata(saved).unwrap().len();
    assert!(kept > 8_000_000 && kept <= 8 * 1024 * 1024, "{kept}");
    assert_eq!(results[1].1, "echo: after");
    let fx = mcp.views().into_iter().find(|v| v.name == "fx").unwrap();
    assert_eq!(fx.status, Status::Ready, "{:?}", fx.error);
    mcp.shut_down().await;
}

/// A response to a request nobody sent, before the `initialize` answer, is ignored (and
/// logged): the handshake succeeds and the server's tools work.
#[tokio::test]
async fn a_stray_response_before_initialize_is_ignored() {
    let marks = tempfile::tempdir().unwrap();
    let mcp = start(
        vec![stdio_config("fx", "stray", marks.path(), "")],
        marks.path(),
    );
    let mut h = harness(
        &mcp,
        vec![
            Reply::sse(chat::tool_call(
                "c1",
                "mcp__fx__echo",
                json!({"text": "hi"}),
            )),
            Reply::sse(chat::text("done")),
        ],
    )
    .await;
    h.prompt("go");
    let events = h.until_end().await;
    assert_eq!(end_of(&events).0, "completed");
    let results = results(&events);
    assert_eq!(results[0].1, "echo: hi", "{results:?}");
    assert!(!results[0].2);
    mcp.shut_down().await;
}

/// Over streamable HTTP too: a response to a request nobody sent, first in the event stream
/// that answers `initialize`, is ignored (and logged), not taken for the end of that stream.
#[tokio::test]
async fn a_stray_response_on_the_http_stream_is_ignored() {
    let marks = tempfile::tempdir().unwrap();
    let mode = mcp_fixture::HttpMode {
        stray: true,
        ..Default::default()
    };
    let url = mcp_fixture::serve_http_with(None, None, mode).await;
    let mcp = start(vec![http_config("fx", &url, "")], marks.path());
    let mut h = harness(
        &mcp,
        vec![
            Reply::sse(chat::tool_call(
                "c1",
                "mcp__fx__echo",
                json!({"text": "hi"}),
            )),
            Reply::sse(chat::text("done")),
        ],
    )
    .await;
    h.prompt("go");
    let events = h.until_end().await;
    assert_eq!(end_of(&events).0, "completed");
    let results = results(&events);
    assert_eq!(results[0].1, "echo: hi", "{results:?}");
    assert!(!results[0].2);
    mcp.shut_down().await;
}

#[tokio::test]
async fn a_crashed_server_answers_with_an_error_and_is_restarted_on_the_next_call() {
    let marks = tempfile::tempdir().unwrap();
    let mcp = start(
        vec![stdio_config("fx", "stdio", marks.path(), "")],
        marks.path(),
    );
    let mut h = harness(
        &mcp,
        vec![
            Reply::sse(chat::tool_call("c1", "mcp__fx__pid", json!({}))),
            Reply::sse(chat::tool_call("c2", "mcp__fx__crash", json!({}))),
            Reply::sse(chat::tool_call("c3", "mcp__fx__pid", json!({}))),
            Reply::sse(chat::text("done")),
        ],
    )
    .await;
    h.prompt("go");
    let events = h.until_end().await;
    assert_eq!(end_of(&events).0, "completed");
    let results = results(&events);
    let first: i32 = results[0].1.parse().unwrap();
    let (_, crash, crash_error, _) = &results[1];
    assert!(crash_error);
    assert!(
        crash.contains("MCP server `fx` went away during the call"),
        "{crash}"
    );
    assert!(
        crash.contains("crashing on purpose"),
        "stderr tail: {crash}"
    );
    let second: i32 = results[2].1.parse().unwrap();
    assert_ne!(first, second, "a new server process answered");
    assert!(wait_until_dead(first).await, "{first} is still alive");
    assert_eq!(mcp.views()[0].status, Status::Ready);
    mcp.shut_down().await;
    assert!(wait_until_dead(second).await, "{second} is still alive");
}

#[tokio::test]
async fn garbage_on_stdout_is_skipped() {
    let marks = tempfile::tempdir().unwrap();
    let mcp = start(
        vec![stdio_config("fx", "garbage", marks.path(), "")],
        marks.path(),
    );
    let mut h = harness(
        &mcp,
        vec![
            Reply::sse(chat::tool_call("c1", "mcp__fx__garbage", json!({}))),
            Reply::sse(chat::tool_call(
                "c2",
                "mcp__fx__echo",
                json!({"text": "still"}),
            )),
            Reply::sse(chat::text("done")),
        ],
    )
    .await;
    h.prompt("go");
    let events = h.until_end().await;
    let results = results(&events);
    assert_eq!(results[0].1, "survived");
    assert_eq!(results[1].1, "echo: still");
    mcp.shut_down().await;
}

#[tokio::test]
async fn a_server_that_never_answers_is_given_up_once_and_the_run_goes_on() {
    let marks = tempfile::tempdir().unwrap();
    std::fs::create_dir(marks.path().join("fx")).unwrap();
    let mcp = start(
        vec![
            stdio_config("stuck", "hang", marks.path(), "startup_timeout_secs = 0.5"),
            stdio_config("fx", "stdio", &marks.path().join("fx"), ""),
        ],
        marks.path(),
    );
    let mut h = harness(
        &mcp,
        vec![
            Reply::sse(chat::text("first")),
            Reply::sse(chat::text("second")),
        ],
    )
    .await;
    h.prompt("one");
    let events = h.until_end().await;
    assert_eq!(end_of(&events).0, "completed");
    let notices: Vec<&str> = events
        .iter()
        .filter_map(|e| match e {
            AgentEvent::Notice { message, .. } => Some(message.as_str()),
            _ => None,
        })
        .collect();
    assert_eq!(notices.len(), 1, "{notices:?}");
    assert!(
        notices[0].contains("MCP server `stuck` is not available: did not start within 0.5 s"),
        "{}",
        notices[0]
    );
    let tools = offered_tools(&h.server.bodies()[0]);
    assert!(tools.contains(&"mcp__fx__echo".to_string()), "{tools:?}");
    assert!(!tools.iter().any(|t| t.starts_with("mcp__stuck")));
    let pid: i32 = wait_for_mark(marks.path(), "pid").await.parse().unwrap();
    assert!(wait_until_dead(pid).await, "{pid} is still alive");
    // Said once: the next run is quiet about it.
    h.prompt("two");
    let events = h.until_end().await;
    assert!(
        !events
            .iter()
            .any(|e| matches!(e, AgentEvent::Notice { .. }))
    );
    let stuck = mcp.views().into_iter().find(|v| v.name == "stuck").unwrap();
    assert_eq!(stuck.status, Status::Failed);
    assert!(stuck.error.unwrap().contains("startup_timeout_secs"));
    mcp.shut_down().await;
}

#[tokio::test]
async fn shutting_down_ends_every_server_process() {
    let marks = tempfile::tempdir().unwrap();
    let mcp = start(
        vec![stdio_config("fx", "stdio", marks.path(), "")],
        marks.path(),
    );
    let cancel = tokio_util::sync::CancellationToken::new();
    assert!(mcp.settle(&cancel).await.is_empty());
    assert_eq!(mcp.readiness(), Some((1, 1)));
    let pid: i32 = wait_for_mark(marks.path(), "pid").await.parse().unwrap();
    assert!(process_alive(pid));
    mcp.shut_down().await;
    assert!(wait_until_dead(pid).await, "{pid} is still alive");
}

#[tokio::test]
async fn streamable_http_works_the_same_way() {
    let marks = tempfile::tempdir().unwrap();
    let url = mcp_fixture::serve_http(Some("s3cret"), Some(marks.path().to_path_buf())).await;
    let mcp = start(
        vec![
            http_config(
                "web",
                &url,
                "http_headers = { Authorization = \"Bearer s3cret\" }",
            ),
            http_config("nokey", &url, ""),
        ],
        marks.path(),
    );
    let mut h = harness(
        &mcp,
        vec![
            Reply::sse(chat::tool_call("c1", "mcp__web__progress", json!({}))),
            Reply::sse(chat::tool_call("c2", "mcp__web__reveal", json!({}))),
            Reply::sse(chat::tool_call("c3", "mcp__web__secret", json!({}))),
            Reply::sse(chat::tool_call("c4", "mcp__web__slow", json!({}))),
        ],
    )
    .await;
    h.prompt("go");
    let events = h
        .until(|e| matches!(e, AgentEvent::ToolExecutionStart { tool_call_id, .. } if tool_call_id == "c4"))
        .await;
    let updates = events
        .iter()
        .filter(|e| matches!(e, AgentEvent::ToolExecutionUpdate { .. }))
        .count();
    assert_eq!(updates, 3);
    let done = results(&events);
    assert_eq!(done[0].1, "progress done");
    assert_eq!(done[2].1, "the secret is 42");
    wait_for_mark(marks.path(), "slow-started").await;
    h.agent.abort();
    let events = h.until_end().await;
    assert_eq!(end_of(&events).0, "aborted");
    wait_for_mark(marks.path(), "cancelled").await;
    let nokey = mcp.views().into_iter().find(|v| v.name == "nokey").unwrap();
    assert_eq!(nokey.status, Status::Failed);
    assert!(
        nokey.error.unwrap().contains("401"),
        "the server's refusal is shown"
    );
    mcp.shut_down().await;
}

#[tokio::test]
async fn mcp_tools_follow_the_permission_mode_and_rules() {
    let marks = tempfile::tempdir().unwrap();
    let mcp = start(
        vec![stdio_config("fx", "stdio", marks.path(), "")],
        marks.path(),
    );
    let calls = || {
        Reply::sse(chat::tool_calls(&[
            ("c1", "mcp__fx__peek", json!({})),
            ("c2", "mcp__fx__echo", json!({"text": "x"})),
        ]))
    };
    // Ask mode, nobody to ask: even the read-only-hinted tool is not run without a rule.
    let source = mcp.clone() as Arc<dyn ToolSource>;
    let mut h = Harness::start_with(vec![calls(), Reply::sse(chat::text("ok"))], {
        let source = source.clone();
        move |config| {
            config.tool_source = Some(source);
            config.permission_mode = PermissionMode::Ask;
        }
    })
    .await;
    h.prompt("go");
    let results_ask = results(&h.until_end().await);
    assert!(results_ask[0].2 && results_ask[1].2, "{results_ask:?}");
    assert_eq!(
        results_ask[0].3.as_ref().unwrap()["denied"],
        "noApprover",
        "{results_ask:?}"
    );
    // A rule naming the server's tools allows them.
    let mut h = Harness::start_with(vec![calls(), Reply::sse(chat::text("ok"))], {
        let source = source.clone();
        move |config| {
            config.tool_source = Some(source);
            config.permission_mode = PermissionMode::Ask;
            let rules = RuleSet::parse(
                &["mcp__fx__*".to_string()],
                &[],
                &["mcp__fx__echo".to_string()],
                &config.cwd,
            )
            .unwrap();
            config.permission_rules = PermissionRules {
                rules,
                cwd: config.cwd.clone(),
            };
        }
    })
    .await;
    h.prompt("go");
    let results_rules = results(&h.until_end().await);
    assert_eq!(results_rules[0].1, "looked");
    assert_eq!(results_rules[1].3.as_ref().unwrap()["denied"], "rule");
    // Read-only mode: the hinted tool counts as read-only (asks), the other is denied.
    let mut h = Harness::start_with(vec![calls(), Reply::sse(chat::text("ok"))], {
        let source = source.clone();
        move |config| {
            config.tool_source = Some(source);
            config.permission_mode = PermissionMode::ReadOnly;
        }
    })
    .await;
    h.prompt("go");
    let results_read_only = results(&h.until_end().await);
    assert_eq!(
        results_read_only[0].3.as_ref().unwrap()["denied"],
        "noApprover"
    );
    assert_eq!(
        results_read_only[1].3.as_ref().unwrap()["denied"],
        "readOnlyMode"
    );
    mcp.shut_down().await;
}

/// A stdio server with `sandbox = true` runs inside the command sandbox: the fixture's first
/// act (writing its pid mark) works inside the workspace and fails outside it, while the same
/// server without the key writes outside too.
#[cfg(target_os = "linux")]
#[tokio::test]
async fn a_sandboxed_server_writes_only_where_commands_may() {
    use agent::sandbox::{Sandbox, SandboxConfig, SandboxMode, Status as SandboxStatus};
    // Outside the system temp directory, which sandboxed processes may write.
    let base = crate::support::sandbox::outside();
    let [workspace, outside, free] = ["ws", "out", "free"].map(|d| base.path().join(d));
    for dir in [&workspace, &outside, &free] {
        std::fs::create_dir(dir).unwrap();
    }
    let config = SandboxConfig {
        mode: SandboxMode::WorkspaceWrite,
        network: false,
        ..SandboxConfig::default()
    };
    let sandbox = Sandbox::start(&config, &workspace);
    assert_eq!(
        sandbox.status,
        SandboxStatus::Enforced,
        "this machine has Landlock"
    );
    let mcp = start_in(
        vec![
            stdio_config("inside", "stdio", &workspace, "sandbox = true"),
            stdio_config("outside", "stdio", &outside, "sandbox = true"),
            stdio_config("free", "stdio", &free, ""),
        ],
        &workspace,
        sandbox,
    );
    let cancel = tokio_util::sync::CancellationToken::new();
    assert!(mcp.settle(&cancel).await.is_empty());
    assert_eq!(mcp.readiness(), Some((3, 3)), "{:?}", mcp.take_notices());
    wait_for_mark(&workspace, "pid").await;
    wait_for_mark(&free, "pid").await;
    // Ready means the fixture got past its mark: the sandbox refused the write.
    assert!(!outside.join("pid").exists());
    mcp.shut_down().await;
}

/// Never started unsandboxed behind the user's back: a server asking for the sandbox where
/// it is unavailable fails to start, saying why and what to change.
#[tokio::test]
async fn a_server_asking_for_an_unavailable_sandbox_is_not_started() {
    use agent::sandbox::{Sandbox, SandboxMode, Status as SandboxStatus};
    let marks = tempfile::tempdir().unwrap();
    let sandbox = Sandbox {
        mode: SandboxMode::WorkspaceWrite,
        policy: None,
        status: SandboxStatus::Unavailable("no Landlock in this kernel".into()),
        ..Sandbox::default()
    };
    let mcp = start_in(
        vec![stdio_config(
            "boxed",
            "stdio",
            marks.path(),
            "sandbox = true",
        )],
        marks.path(),
        sandbox,
    );
    let cancel = tokio_util::sync::CancellationToken::new();
    mcp.settle(&cancel).await;
    let view = mcp.views().remove(0);
    assert_eq!(view.status, Status::Failed);
    let error = view.error.unwrap();
    assert!(
        error.contains("no Landlock in this kernel") && error.contains("sandbox = false"),
        "{error}"
    );
    assert!(!marks.path().join("pid").exists(), "the server never ran");
    mcp.shut_down().await;
}
