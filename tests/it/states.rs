//! The agent's state machine as `state` events: the sequence of states of runs with tools,
//! approvals, retries, compactions and aborts, and what `snapshot().state` says meanwhile.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // test code fails loudly

use crate::support;

use agent::agent::Approval;
use agent::protocol::event::{AgentEvent, RunState};
use agent::tools::permission::PermissionMode;
use serde_json::json;
use support::chat;
use support::harness::{Harness, end_of};
use support::server::Reply;

const OVERFLOW: &str = r#"{"error":{"message":"This model's maximum context length is 4096 tokens.","code":"context_length_exceeded"}}"#;

async fn asking_harness(replies: Vec<Reply>) -> Harness {
    Harness::start_with(replies, |c| {
        c.permission_mode = PermissionMode::Ask;
        c.can_ask = true;
        c.compaction.keep_recent_tokens = 20_000;
    })
    .await
}

/// Wait for the approval request; returns its tool call id.
async fn approval_request(h: &mut Harness) -> String {
    let seen = h
        .until(|e| matches!(e, AgentEvent::ToolApprovalRequest { .. }))
        .await;
    match seen.last() {
        Some(AgentEvent::ToolApprovalRequest { tool_call_id, .. }) => tool_call_id.clone(),
        other => panic!("expected an approval request, got {other:?}"),
    }
}

#[tokio::test]
async fn a_run_with_a_retry_a_tool_an_approval_and_a_compaction_reports_each_state() {
    let mut h = asking_harness(vec![
        Reply::sse(chat::text("earlier answer")),
        Reply::status(503, "overloaded"),
        Reply::sse(chat::tool_call(
            "c1",
            "bash",
            json!({"command": "touch made"}),
        )),
        Reply::status(400, OVERFLOW),
        Reply::sse(chat::text("summary of everything")),
        Reply::sse(chat::text("done")),
    ])
    .await;
    assert_eq!(h.agent.snapshot().state, RunState::Idle);
    h.prompt("q1");
    h.until_end().await;
    h.until_idle_state().await;
    assert_eq!(
        h.states,
        [
            "idle>preparing",
            "preparing>model_running",
            "model_running>completed",
            "completed>idle"
        ]
    );
    h.states.clear();

    h.prompt("make it");
    let id = approval_request(&mut h).await;
    assert_eq!(h.agent.snapshot().state, RunState::AwaitingHuman);
    h.agent.approve(&id, Approval::Allow).unwrap();
    let events = h.until_end().await;
    assert_eq!(end_of(&events).0, "completed");
    assert!(h.dir.path().join("made").exists());
    h.until_idle_state().await;
    assert_eq!(
        h.states,
        [
            "idle>preparing",
            "preparing>model_running",
            "model_running>retrying",
            "retrying>model_running",
            "model_running>tool_running",
            "tool_running>awaiting_human",
            "awaiting_human>tool_running",
            "tool_running>model_running",
            "model_running>compacting",
            "compacting>model_running",
            "model_running>completed",
            "completed>idle",
        ]
    );
    assert_eq!(h.agent.snapshot().state, RunState::Idle);
    assert_eq!(h.server.bodies().len(), 6);
}

#[tokio::test]
async fn state_events_come_in_order_with_the_run_and_say_how_long_the_last_state_lasted() {
    let mut h = asking_harness(vec![Reply::sse(chat::text("hi"))]).await;
    h.prompt("hello");
    let mut seen = Vec::new();
    loop {
        let event = h.next_any_event().await;
        let idle = matches!(
            event,
            AgentEvent::State {
                state: RunState::Idle,
                ..
            }
        );
        seen.push(serde_json::to_value(&event).unwrap());
        if idle {
            break;
        }
    }
    let types: Vec<&str> = seen.iter().map(|e| e["type"].as_str().unwrap()).collect();
    // The run is `preparing` before its first event, and `idle` after its last.
    assert_eq!(types.first(), Some(&"state"));
    assert_eq!(types[1], "agent_start");
    assert_eq!(&types[types.len() - 3..], ["state", "agent_end", "state"]);
    let model_running = seen
        .iter()
        .position(|e| e["state"] == "model_running")
        .unwrap();
    let first_request = seen
        .iter()
        .position(|e| e["type"] == "message_start" && e["message"]["role"] == "assistant")
        .unwrap();
    assert!(model_running < first_request);
    for state in seen.iter().filter(|e| e["type"] == "state") {
        assert!(state["elapsedMs"].is_u64(), "{state}");
        assert!(state["previous"].is_string(), "{state}");
    }
}

#[tokio::test]
async fn an_abort_while_awaiting_approval_ends_aborted_then_idle() {
    let mut h = asking_harness(vec![Reply::sse(chat::tool_call(
        "c1",
        "bash",
        json!({"command": "touch made"}),
    ))])
    .await;
    h.prompt("make it");
    approval_request(&mut h).await;
    h.agent.abort();
    let events = h.until_end().await;
    assert_eq!(end_of(&events).0, "aborted");
    h.until_idle_state().await;
    assert_eq!(
        &h.states[h.states.len() - 3..],
        [
            "tool_running>awaiting_human",
            "awaiting_human>aborted",
            "aborted>idle"
        ]
    );
    assert!(!h.dir.path().join("made").exists());
}

#[tokio::test]
async fn a_failed_run_and_a_manual_compaction_have_their_states() {
    let mut h = Harness::start_with(
        vec![
            Reply::status(401, "bad key"),
            Reply::sse(chat::text("an answer")),
            Reply::sse(chat::text("summary")),
        ],
        |c| c.compaction.keep_recent_tokens = 1,
    )
    .await;
    h.prompt("hello");
    let events = h.until_end().await;
    assert_eq!(end_of(&events).0, "failed");
    h.until_idle_state().await;
    assert_eq!(
        h.states,
        [
            "idle>preparing",
            "preparing>model_running",
            "model_running>failed",
            "failed>idle"
        ]
    );
    h.prompt("again");
    h.until_end().await;
    h.until_idle_state().await;
    h.states.clear();
    h.agent.compact(None).await.unwrap();
    h.until_idle_state().await;
    assert_eq!(h.states, ["idle>compacting", "compacting>idle"]);
}
