//! Sub-agents seen from an editor (`--mode acp`): a child's tool calls are tool calls of their
//! own (titled with the child's id), its approval requests name a call the editor was shown,
//! and the call ends when the child's does.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // test code fails loudly

use crate::support;

use agent_client_protocol::v1::schema::StopReason;
use serde_json::{Value, json};
use support::acp::{Acp, choose};
use support::chat;
use support::env::env;
use support::server::{FakeServer, Reply};

fn updates_of<'a>(updates: &'a [Value], id: &str) -> Vec<&'a Value> {
    updates.iter().filter(|u| u["toolCallId"] == id).collect()
}

#[tokio::test]
async fn acp_shows_a_sub_agents_call_before_relaying_its_approval_and_ends_it() {
    let env = env();
    let server = FakeServer::start(vec![
        Reply::sse(chat::tool_call(
            "c1",
            "task",
            json!({"description": "writes", "prompt": "CHILD-A: write"}),
        )),
        Reply::sse(chat::text("parent done")),
    ])
    .await;
    // The child's call has the same id as the parent's: the editor must still tell them apart.
    server.route(
        "CHILD-A",
        vec![
            Reply::sse(chat::tool_call(
                "c1",
                "bash",
                json!({"command": "echo yes > allowed.txt"}),
            )),
            Reply::sse(chat::text("child wrote it")),
        ],
    );
    let mut acp = Acp::spawn(env.agent(&server, &["--mode", "acp"])).await;
    let id = acp.open(env.cwd.path()).await.session_id;
    let answer = acp.prompt(&id, "delegate");
    let (before, request, responder) = acp.permission().await;
    let shown = request.tool_call.tool_call_id.to_string();
    assert_eq!(shown, "a1/c1");
    let started = updates_of(&before, "a1/c1");
    let first = started
        .first()
        .unwrap_or_else(|| panic!("the child's call was never shown: {before:#?}"));
    assert_eq!(first["sessionUpdate"], "tool_call");
    assert_eq!(first["kind"], "execute");
    assert!(
        first["title"].as_str().unwrap().starts_with("a1: bash"),
        "{first}"
    );
    // The parent's own `task` call is a different call.
    let task = updates_of(&before, "c1");
    assert_eq!(task[0]["sessionUpdate"], "tool_call", "{before:#?}");
    // Titled with what it asks, not its arguments as JSON.
    assert_eq!(task[0]["title"], "task general: writes", "{before:#?}");
    choose(responder, "allow_once");

    let answer = answer.await.unwrap().unwrap();
    assert_eq!(answer.stop_reason, StopReason::EndTurn);
    let after = acp.drain();
    let ended = updates_of(&after, "a1/c1");
    let last = ended
        .last()
        .unwrap_or_else(|| panic!("the child's call never ended: {after:#?}"));
    assert_eq!(last["status"], "completed", "{after:#?}");
    let task_end = updates_of(&after, "c1");
    assert_eq!(task_end.last().unwrap()["status"], "completed");
    assert_eq!(
        std::fs::read_to_string(env.cwd.path().join("allowed.txt")).unwrap(),
        "yes\n"
    );
    assert_eq!(acp.exit_code().await, 0);
}
