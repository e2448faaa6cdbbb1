//! Sub-agents over `--mode rpc` (docs/protocol.md §9): `subagent_event` lines (text deltas
//! merged without losing any), `get_agents`, `steer_agent` and `abort_agent`.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // test code fails loudly

use crate::support;

use serde_json::{Value, json};
use support::chat;
use support::delegation::{delegating_once, two_children_touching};
use support::env::env;
use support::harness::after_file;
use support::process::Rpc;
use support::server::{FakeServer, Reply};

fn is_child_event(line: &Value, call: &str, kind: &str) -> bool {
    line["type"] == "subagent_event"
        && line["parentToolCallId"] == call
        && line["event"]["type"] == kind
}

#[tokio::test]
async fn rpc_forwards_child_events_and_controls_each_child() {
    let env = env();
    let server = FakeServer::start(vec![
        Reply::sse(chat::tool_calls(&[
            (
                "c1",
                "task",
                json!({"description": "waits", "prompt": "CHILD-A: wait"}),
            ),
            (
                "c2",
                "task",
                json!({"description": "talks", "prompt": "CHILD-B: talk"}),
            ),
        ])),
        Reply::sse(chat::text("parent done")),
    ])
    .await;
    server.route(
        "CHILD-A",
        vec![Reply::sse(chat::tool_call(
            "b1",
            "bash",
            json!({"command": after_file("never", "echo no")}),
        ))],
    );
    let deltas: Vec<String> = (0..200).map(|i| format!("w{i} ")).collect();
    let refs: Vec<&str> = deltas.iter().map(String::as_str).collect();
    server.route("CHILD-B", vec![Reply::sse(chat::text_deltas(&refs))]);
    let mut rpc = Rpc::spawn(env.agent(&server, &["--mode", "rpc", "--permission-mode", "auto"]));
    rpc.send(json!({"id": "p", "type": "prompt", "message": "delegate"}))
        .await;
    // A is running its command; B has finished.
    let mut lines = rpc
        .until(|l| is_child_event(l, "c1", "tool_execution_start"))
        .await;
    if !lines.iter().any(|l| is_child_event(l, "c2", "agent_end")) {
        lines.extend(rpc.until(|l| is_child_event(l, "c2", "agent_end")).await);
    }
    let a = lines
        .iter()
        .find(|l| l["parentToolCallId"] == "c1")
        .map(|l| l["agentId"].as_str().unwrap().to_string())
        .unwrap();
    // B's text arrives whole, in order, however its deltas were merged.
    let text: String = lines
        .iter()
        .filter(|l| {
            is_child_event(l, "c2", "message_update")
                && l["event"]["assistantMessageEvent"]["type"] == "text_delta"
        })
        .map(|l| {
            l["event"]["assistantMessageEvent"]["delta"]
                .as_str()
                .unwrap()
        })
        .collect();
    assert_eq!(text, deltas.concat());

    // B's `agent_end` is forwarded before its `task` call has recorded how it ended: ask
    // until the list says so.
    let mut asked = 0;
    let agents = loop {
        asked += 1;
        let id = format!("g{asked}");
        rpc.send(json!({"id": id, "type": "get_agents"})).await;
        let agents = rpc.response(&id).await;
        let settled = agents["data"]["agents"]
            .as_array()
            .unwrap()
            .iter()
            .any(|a| a["parentToolCallId"] == "c2" && a["status"] != "running");
        if settled || asked == 2000 {
            break agents;
        }
        tokio::time::sleep(std::time::Duration::from_millis(10)).await;
    };
    let list = agents["data"]["agents"].as_array().unwrap().clone();
    assert_eq!(list.len(), 2, "{agents}");
    // The two children start concurrently, so their ids and list order are not fixed:
    // find each by the tool call that spawned it.
    let by_call = |call: &str| {
        list.iter()
            .find(|agent| agent["parentToolCallId"] == call)
            .unwrap_or_else(|| panic!("no child for {call}: {agents}"))
    };
    let first = by_call("c1");
    assert_eq!(first["agentId"], a.as_str());
    assert_eq!(first["parentToolCallId"], "c1");
    assert_eq!(first["name"], "general");
    assert_eq!(first["status"], "running");
    assert!(first["sessionFile"].as_str().unwrap().ends_with(".jsonl"));
    let second = by_call("c2");
    assert_eq!(second["status"], "completed");
    assert!(second["turns"].as_u64().unwrap() >= 1, "{agents}");

    rpc.send(json!({"id": "s", "type": "steer_agent", "agentId": a, "message": "hurry"}))
        .await;
    assert_eq!(rpc.response("s").await["success"], true);
    rpc.send(json!({"id": "x", "type": "abort_agent", "agentId": "a99"}))
        .await;
    let unknown = rpc.response("x").await;
    assert_eq!(unknown["success"], false);
    assert!(
        unknown["error"].as_str().unwrap().contains("no sub-agent"),
        "{unknown}"
    );
    rpc.send(json!({"id": "k", "type": "abort_agent", "agentId": a}))
        .await;
    // The stopped child's result may be written before the answer to `abort_agent`: keep
    // every line from here.
    let mut lines = rpc
        .until(|l| l["type"] == "response" && l["id"] == "k")
        .await;
    assert_eq!(lines.last().unwrap()["success"], true);
    if !lines.iter().any(|l| l["type"] == "agent_end") {
        lines.extend(rpc.until(|l| l["type"] == "agent_end").await);
    }
    let end = lines.iter().find(|l| l["type"] == "agent_end").unwrap();
    assert_eq!(end["status"], "completed");
    let result = lines
        .iter()
        .find(|l| l["type"] == "tool_execution_end" && l["toolCallId"] == "c1")
        .unwrap();
    assert_eq!(result["isError"], true);
    let said = result["result"]["content"][0]["text"].as_str().unwrap();
    assert!(said.contains("stopped by the user"), "{said}");
    rpc.send(json!({"id": "s2", "type": "steer_agent", "agentId": a, "message": "again"}))
        .await;
    let finished = rpc.response("s2").await;
    assert!(
        finished["error"].as_str().unwrap().contains("has finished"),
        "{finished}"
    );
    assert_eq!(rpc.exit_code().await, 0);
}

#[tokio::test]
async fn end_of_input_denies_a_childs_pending_approval() {
    let env = env();
    let server =
        delegating_once("echo no > denied.txt", Some("child gave up"), "parent done").await;
    let mut rpc = Rpc::spawn(env.agent(&server, &["--mode", "rpc", "--permission-mode", "ask"]));
    rpc.send(json!({"id": "p", "type": "prompt", "message": "delegate"}))
        .await;
    let lines = rpc
        .until(|l| l["type"] == "tool_approval_request" && l["agentId"].is_string())
        .await;
    let request = lines.last().unwrap();
    assert!(
        request["reason"]
            .as_str()
            .unwrap()
            .starts_with("sub-agent `general` (a1): "),
        "{request}"
    );
    rpc.close_stdin();
    let lines = rpc.until(|l| l["type"] == "agent_end").await;
    assert_eq!(lines.last().unwrap()["status"], "completed");
    assert!(!env.cwd.path().join("denied.txt").exists());
    assert_eq!(rpc.exit_code().await, 0);
}

/// Two sub-agents ask at once with the same call id: `approve` with the request's `agentId`
/// answers the one that asked, whichever started first.
#[tokio::test]
async fn approve_with_agent_id_answers_the_sub_agent_that_asked() {
    let env = env();
    let server = two_children_touching("child done", "parent done").await;
    let mut rpc = Rpc::spawn(env.agent(&server, &["--mode", "rpc", "--permission-mode", "ask"]));
    rpc.send(json!({"id": "p", "type": "prompt", "message": "delegate"}))
        .await;
    let is_request = |l: &Value| l["type"] == "tool_approval_request" && l["agentId"].is_string();
    let mut lines = rpc.until(is_request).await;
    lines.extend(rpc.until(is_request).await);
    let requests: Vec<&Value> = lines.iter().filter(|l| is_request(l)).collect();
    assert_eq!(requests.len(), 2, "{lines:#?}");
    // Answer the later-started child first: without its id the answer would reach a1.
    let later = requests
        .iter()
        .find(|r| r["agentId"] == "a2")
        .unwrap_or_else(|| panic!("no request of a2: {requests:#?}"));
    let later_file = if later["args"]["command"] == "touch a.txt" {
        "a.txt"
    } else {
        "b.txt"
    };
    let earlier_file = if later_file == "a.txt" {
        "b.txt"
    } else {
        "a.txt"
    };
    rpc.send(
        json!({"id": "y", "type": "approve", "toolCallId": "b1", "agentId": "a2",
                    "decision": "allow"}),
    )
    .await;
    assert_eq!(rpc.response("y").await["success"], true);
    rpc.send(
        json!({"id": "n", "type": "approve", "toolCallId": "b1", "agentId": "a1",
                    "decision": "deny"}),
    )
    .await;
    assert_eq!(rpc.response("n").await["success"], true);
    let lines = rpc.until(|l| l["type"] == "agent_end").await;
    assert_eq!(lines.last().unwrap()["status"], "completed");
    assert!(env.cwd.path().join(later_file).exists());
    assert!(!env.cwd.path().join(earlier_file).exists());
    rpc.send(
        json!({"id": "x", "type": "approve", "toolCallId": "b1", "agentId": "a9",
                    "decision": "allow"}),
    )
    .await;
    assert_eq!(rpc.response("x").await["success"], false);
    assert_eq!(rpc.exit_code().await, 0);
}
