//! `agent --mode acp` driven by a real ACP client that nobody here wrote: the TypeScript SDK
//! from npm (`@agentclientprotocol/sdk`, pinned in tests/acp-node/package-lock.json), through
//! its `ClientSideConnection`, by the script tests/acp-node/client.mjs. It initializes, opens
//! a session, runs a prompt whose bash call is approved in ask mode (streamed text and tool
//! updates), cancels a second one mid-tool, and loads the session again in a new process.
//!
//! Needs node and the SDK (`tests/acp-node/install.sh`); without them the test says it
//! skipped (`support::skip`), as the conformance test does without its corpus.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // test code fails loudly

use crate::support;

use serde_json::{Value, json};
use std::path::Path;
use std::process::Stdio;
use std::time::Duration;
use support::chat;
use support::env::env;
use support::harness::after_file;
use support::server::{FakeServer, Reply};

const CLIENT_DIR: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/acp-node");

/// Why the client cannot run here, if it cannot.
async fn missing() -> Option<String> {
    let node = tokio::process::Command::new("node")
        .arg("--version")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .await;
    if !node.is_ok_and(|status| status.success()) {
        return Some("node is not installed".into());
    }
    let sdk = Path::new(CLIENT_DIR).join("node_modules/@agentclientprotocol/sdk/package.json");
    if !sdk.exists() {
        return Some(format!(
            "the ACP SDK is not installed: run {CLIENT_DIR}/install.sh (needs npm)"
        ));
    }
    None
}

#[tokio::test]
async fn acp_the_typescript_sdk_drives_a_session_end_to_end() {
    if let Some(why) = missing().await {
        support::skip::skip(&why);
        return;
    }
    let env = env();
    // The waiting command writes its pid, prints a line, and would go on only if the file
    // `go` appeared (it never does: the client cancels it).
    let waits = format!(
        "echo $$ > pid; echo waiting; {}",
        after_file("go", "echo on")
    );
    let server = FakeServer::start(vec![
        Reply::sse(chat::tool_call(
            "c1",
            "bash",
            json!({"command": "echo from-bash"}),
        )),
        // Its words apart in time: queued deltas are sent as one chunk, and the client
        // checks that the answer streams in several.
        Reply::sse(chat::text("All done")).slowly(Duration::from_millis(500)),
        Reply::sse(chat::tool_call("c2", "bash", json!({"command": waits}))),
        Reply::sse(chat::text("Still here")),
    ])
    .await;
    // The agent's environment, as support::process gives it: its own home, no keys.
    let mut cmd = tokio::process::Command::new("node");
    cmd.arg(Path::new(CLIENT_DIR).join("client.mjs"))
        .arg(env!("CARGO_BIN_EXE_agent"))
        .args([
            "--base-url",
            &server.v1(),
            "--model",
            "test-model",
            "--mode",
            "acp",
        ])
        .current_dir(env.cwd.path())
        .env("AGENT_HOME", env.home.path())
        .env_remove("OPENAI_API_KEY")
        .env_remove("OPENAI_BASE_URL")
        .env_remove("ANTHROPIC_API_KEY")
        .env_remove("ANTHROPIC_BASE_URL")
        .env_remove("RUST_LOG")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true);
    let output = tokio::time::timeout(
        Duration::from_secs(120),
        cmd.spawn().expect("spawn node").wait_with_output(),
    )
    .await
    .expect("the node client did not finish within 120 s")
    .unwrap();
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        output.status.success(),
        "the node client failed ({}):\n{stderr}\n{stdout}",
        output.status
    );
    let summary: Value = serde_json::from_str(stdout.trim()).expect("one JSON summary line");
    let seen = summary["firstUpdates"].to_string();
    for kind in [
        "available_commands_update",
        "tool_call",
        "tool_call_update",
        "agent_message_chunk",
    ] {
        assert!(seen.contains(kind), "{kind} missing: {seen}");
    }
    // The session the SDK loaded is the one on disk, and the model saw its history.
    let file = env.only_session();
    let id = summary["sessionId"].as_str().unwrap();
    assert!(file.to_string_lossy().contains(id), "{file:?}");
    let last = server.bodies().last().unwrap()["messages"].to_string();
    assert!(
        last.contains("run it") && last.contains("from-bash") && last.contains("again"),
        "{last}"
    );
}
