//! The `notify` command of the config (docs/protocol.md §4.7), as a real command the agent
//! starts: it gets a JSON description as its last argument when a run ends (`-p`) and when a
//! call waits for approval (`--mode rpc`).
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // test code fails loudly

use crate::support;

use serde_json::{Value, json};
use std::path::Path;
use std::time::Duration;
use support::chat;
use support::env::{Env, env};
use support::process::Rpc;
use support::server::{FakeServer, Reply};

/// A config whose `notify` command appends its last argument as a line to `log`.
fn configure(env: &Env, server: &FakeServer, log: &Path) {
    let config = format!(
        "provider = \"local\"\nmodel = \"test-model\"\nnotify = ['/bin/sh', '-c', 'printf \"%s\\n\" \"$1\" >> \"$0\"', '{}']\n[providers.local]\napi = \"openai-chat\"\nbase_url = \"{}\"\n",
        log.display(),
        server.v1()
    );
    std::fs::write(env.home.path().join("config.toml"), config).unwrap();
}

/// The descriptions the command got, once there are `count` (the command runs on its own).
async fn notified(log: &Path, count: usize) -> Vec<Value> {
    for _ in 0..2000 {
        let lines: Vec<Value> = std::fs::read_to_string(log)
            .unwrap_or_default()
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect();
        if lines.len() >= count {
            return lines;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    panic!("the notify command was not run {count} time(s)");
}

#[tokio::test]
async fn notify_hears_when_a_print_run_ends() {
    let env = env();
    let server = FakeServer::start(vec![Reply::sse(chat::text("all done"))]).await;
    let log = env.cwd.path().join("notify.log");
    configure(&env, &server, &log);
    let mut cmd = support::process::command(env.home.path(), env.cwd.path());
    cmd.args(["-p", "tidy up"]);
    let out = support::process::run(cmd).await;
    assert_eq!(out.code, 0, "{}", out.stderr);
    let lines = notified(&log, 1).await;
    let done = &lines[0];
    assert_eq!(done["type"], "agent-turn-complete", "{done}");
    assert_eq!(done["status"], "completed");
    assert_eq!(done["last-assistant-message"], "all done");
    assert_eq!(done["input-messages"], json!(["tidy up"]));
    let session = env.only_session();
    let id = done["session-id"].as_str().unwrap();
    assert!(
        session.to_string_lossy().contains(id),
        "{id} {}",
        session.display()
    );
    assert_eq!(done["cwd"], env.cwd.path().to_string_lossy().as_ref());
}

#[tokio::test]
async fn notify_hears_when_a_call_waits_for_approval() {
    let env = env();
    let server = FakeServer::start(vec![
        Reply::sse(chat::tool_call("c1", "bash", json!({"command": "touch x"}))),
        Reply::sse(chat::text("fine, not then")),
    ])
    .await;
    let log = env.cwd.path().join("notify.log");
    configure(&env, &server, &log);
    let mut cmd = support::process::command(env.home.path(), env.cwd.path());
    cmd.args(["--mode", "rpc"]);
    let mut rpc = Rpc::spawn(cmd);
    rpc.send(json!({"id": "p", "type": "prompt", "message": "make x"}))
        .await;
    rpc.until(|l| l["type"] == "tool_approval_request").await;
    let asked = notified(&log, 1).await;
    assert_eq!(asked[0]["type"], "approval-requested", "{asked:?}");
    assert_eq!(asked[0]["tool-name"], "bash");
    assert_eq!(asked[0]["tool-call-id"], "c1");
    assert_eq!(asked[0]["arguments"]["command"], "touch x");
    rpc.send(json!({"id": "no", "type": "approve", "toolCallId": "c1", "decision": "deny"}))
        .await;
    rpc.until(|l| l["type"] == "agent_end").await;
    let lines = notified(&log, 2).await;
    assert_eq!(lines[1]["type"], "agent-turn-complete");
    assert_eq!(lines[1]["last-assistant-message"], "fine, not then");
    assert_eq!(rpc.exit_code().await, 0);
}
