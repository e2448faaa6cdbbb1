//! The MCP client against real servers nobody here wrote:
//! `@modelcontextprotocol/server-everything` (over stdio and in its streamable HTTP mode) and
//! `@modelcontextprotocol/server-filesystem`, installed with npm by tests/npm/install.sh at
//! pinned versions. Without node and npm the tests say so and pass without running.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // test code fails loudly

use crate::support;

use agent::mcp::McpManager;
use agent::mcp::config::{ServerConfig, ServerTable};
use agent::mcp::server::Status;
use agent::protocol::event::AgentEvent;
use agent::protocol::message::{Content, join_text};
use agent::tools::source::ToolSource;
use serde_json::{Value, json};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;
use support::chat;
use support::harness::{Harness, end_of};
use support::server::Reply;

/// The installed packages' directory (installing them first); `None` after a visible skip.
fn servers_installed() -> Option<PathBuf> {
    support::npm::installed(
        "npm",
        &[".bin/mcp-server-everything", ".bin/mcp-server-filesystem"],
        "the real MCP servers",
    )
}

fn config(name: &str, toml_text: &str) -> ServerConfig {
    toml::from_str::<ServerTable>(toml_text)
        .unwrap()
        .resolve(name)
        .unwrap()
}

fn stdio(name: &str, script: &Path, args: &[&str]) -> ServerConfig {
    let mut all = vec![script.display().to_string()];
    all.extend(args.iter().map(|a| a.to_string()));
    config(
        name,
        &format!(
            "command = \"node\"\nargs = {}\nstartup_timeout_secs = 60",
            json!(all)
        ),
    )
}

async fn harness(mcp: &Arc<McpManager>, replies: Vec<Reply>) -> Harness {
    let source = mcp.clone() as Arc<dyn ToolSource>;
    Harness::start_with(replies, move |config| {
        config.tool_source = Some(source);
        config.model.images = true;
    })
    .await
}

/// (tool call id, content, is_error) of each finished call.
fn results(events: &[AgentEvent]) -> Vec<(String, Vec<Content>, bool)> {
    events
        .iter()
        .filter_map(|event| match event {
            AgentEvent::ToolExecutionEnd {
                tool_call_id,
                result,
                is_error,
                ..
            } => Some((tool_call_id.clone(), result.content.clone(), *is_error)),
            _ => None,
        })
        .collect()
}

fn updates(events: &[AgentEvent]) -> Vec<String> {
    events
        .iter()
        .filter_map(|e| match e {
            AgentEvent::ToolExecutionUpdate { partial_result, .. } => {
                Some(join_text(&partial_result.content))
            }
            _ => None,
        })
        .collect()
}

/// Calls that work on any version of server-everything we pin: echo, a sum, an image, a
/// resource, and progress.
fn everything_calls(server: &str) -> Vec<Reply> {
    let tool = |name: &str| format!("mcp__{server}__{name}");
    vec![
        Reply::sse(chat::tool_calls(&[
            ("c1", &tool("echo"), json!({"message": "hello"})),
            ("c2", &tool("get-sum"), json!({"a": 2, "b": 3})),
            ("c3", &tool("get-tiny-image"), json!({})),
            (
                "c4",
                &tool("get-resource-reference"),
                json!({"resourceId": 1}),
            ),
            (
                "c5",
                &tool("trigger-long-running-operation"),
                json!({"duration": 0.3, "steps": 3}),
            ),
        ])),
        Reply::sse(chat::text("done")),
    ]
}

fn check_everything(events: &[AgentEvent]) {
    assert_eq!(end_of(events).0, "completed");
    let results = results(events);
    assert_eq!(results.len(), 5, "{results:?}");
    for (id, content, is_error) in &results {
        assert!(!is_error, "{id}: {content:?}");
    }
    assert!(
        join_text(&results[0].1).contains("hello"),
        "{:?}",
        results[0].1
    );
    assert!(join_text(&results[1].1).contains('5'), "{:?}", results[1].1);
    assert!(
        results[2]
            .1
            .iter()
            .any(|c| matches!(c, Content::Image { mime_type, .. } if mime_type == "image/png")),
        "{:?}",
        results[2].1
    );
    assert!(
        join_text(&results[3].1).contains("[resource "),
        "{:?}",
        results[3].1
    );
    assert_eq!(
        updates(events),
        ["[progress 1/3]", "[progress 2/3]", "[progress 3/3]"]
    );
}

#[tokio::test]
async fn server_everything_over_stdio() {
    let Some(modules) = servers_installed() else {
        return;
    };
    let script = modules.join("@modelcontextprotocol/server-everything/dist/index.js");
    let dir = tempfile::tempdir().unwrap();
    let mcp = McpManager::start(
        vec![stdio("everything", &script, &["stdio"])],
        dir.path().to_path_buf(),
        Vec::new(),
        agent::sandbox::Sandbox::default(),
    )
    .unwrap();
    let mut h = harness(&mcp, everything_calls("everything")).await;
    h.prompt("go");
    let events = h.until_end().await;
    check_everything(&events);
    let view = &mcp.views()[0];
    assert_eq!(view.status, Status::Ready);
    let long = view
        .tools
        .iter()
        .find(|t| t.name == "mcp__everything__trigger-long-running-operation")
        .unwrap();
    assert!(long.read_only, "its readOnlyHint is read");
    mcp.shut_down().await;
}

#[tokio::test]
async fn server_everything_over_streamable_http() {
    let Some(modules) = servers_installed() else {
        return;
    };
    let script = modules.join("@modelcontextprotocol/server-everything/dist/index.js");
    let port = {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        listener.local_addr().unwrap().port()
    };
    let mut server = tokio::process::Command::new("node")
        .arg(&script)
        .arg("streamableHttp")
        .env("PORT", port.to_string())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    // It says on stderr when it listens.
    let stderr = server.stderr.take().unwrap();
    let mut lines = tokio::io::AsyncBufReadExt::lines(tokio::io::BufReader::new(stderr));
    tokio::time::timeout(Duration::from_secs(60), async {
        while let Some(line) = lines.next_line().await.unwrap() {
            if line.contains("listening") {
                return;
            }
        }
        panic!("server-everything exited before listening");
    })
    .await
    .expect("server-everything did not start listening");
    tokio::spawn(async move { while let Ok(Some(_)) = lines.next_line().await {} });
    let dir = tempfile::tempdir().unwrap();
    let mcp = McpManager::start(
        vec![config(
            "web",
            &format!("url = \"http://127.0.0.1:{port}/mcp\""),
        )],
        dir.path().to_path_buf(),
        Vec::new(),
        agent::sandbox::Sandbox::default(),
    )
    .unwrap();
    let mut h = harness(&mcp, everything_calls("web")).await;
    h.prompt("go");
    let events = h.until_end().await;
    check_everything(&events);
    assert_eq!(mcp.views()[0].transport, "http");
    mcp.shut_down().await;
    let _ = server.kill().await;
}

#[tokio::test]
async fn server_filesystem_reads_and_writes_where_it_is_allowed() {
    let Some(modules) = servers_installed() else {
        return;
    };
    let script = modules.join("@modelcontextprotocol/server-filesystem/dist/index.js");
    let root = tempfile::tempdir().unwrap();
    let root_path = std::fs::canonicalize(root.path()).unwrap();
    std::fs::write(root_path.join("notes.txt"), "alpha\nbeta\n").unwrap();
    let mcp = McpManager::start(
        vec![stdio("fs", &script, &[&root_path.display().to_string()])],
        root_path.clone(),
        Vec::new(),
        agent::sandbox::Sandbox::default(),
    )
    .unwrap();
    let file = |name: &str| root_path.join(name).display().to_string();
    let mut h = harness(
        &mcp,
        vec![
            Reply::sse(chat::tool_calls(&[
                (
                    "c1",
                    "mcp__fs__read_text_file",
                    json!({"path": file("notes.txt")}),
                ),
                ("c2", "mcp__fs__list_directory", json!({"path": file("")})),
                (
                    "c3",
                    "mcp__fs__write_file",
                    json!({"path": file("new.txt"), "content": "written by the agent"}),
                ),
                (
                    "c4",
                    "mcp__fs__read_text_file",
                    json!({"path": "/etc/hostname"}),
                ),
            ])),
            Reply::sse(chat::text("done")),
        ],
    )
    .await;
    h.prompt("go");
    let events = h.until_end().await;
    assert_eq!(end_of(&events).0, "completed");
    let results = results(&events);
    assert_eq!(join_text(&results[0].1), "alpha\nbeta\n");
    assert!(
        join_text(&results[1].1).contains("notes.txt"),
        "{:?}",
        results[1].1
    );
    assert!(!results[2].2, "{:?}", results[2].1);
    assert_eq!(
        std::fs::read_to_string(root_path.join("new.txt")).unwrap(),
        "written by the agent"
    );
    assert!(results[3].2, "outside its root: {:?}", results[3].1);
    let tools: Vec<Value> = mcp.views()[0]
        .tools
        .iter()
        .map(|t| json!([t.name, t.read_only]))
        .collect();
    assert!(
        tools.contains(&json!(["mcp__fs__read_text_file", true])),
        "{tools:?}"
    );
    assert!(
        tools.contains(&json!(["mcp__fs__write_file", false])),
        "{tools:?}"
    );
    mcp.shut_down().await;
}
