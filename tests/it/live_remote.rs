//! A live session driven through `live::remote::RemoteEngine`, the adapter the interface of
//! `agent attach` talks to (engine commands in, typed events out): a real
//! `agent --mode rpc` serves its session; two remote engines share a run — one prompts, both
//! see it stream, the second approves, the first aborts —, a replay of the last messages
//! only, and the owner's exit reported to both.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // test code fails loudly

use crate::support;

use agent::live::remote::RemoteEngine;
use agent::protocol::command::{ApprovalDecision, Command, Delivery, UserInput};
use agent::protocol::event::{AgentEvent, AssistantMessageEvent, RunStatus};
use agent::protocol::message::Message;
use agent::protocol::outcome::Outcome;
use serde_json::json;
use std::path::PathBuf;
use std::time::Duration;
use support::chat;
use support::env::{Env, env};
use support::live::{Socket, socket};
use support::process::Rpc;
use support::server::{End, FakeServer, Reply};
use tokio::sync::mpsc::UnboundedReceiver;

/// Generous: CI runs the whole suite on a loaded 2-core machine.
const WAIT: Duration = Duration::from_secs(120);

async fn owner(env: &Env, server: &FakeServer) -> (Rpc, PathBuf) {
    let mut rpc = Rpc::spawn(env.agent(server, &["--mode", "rpc"]));
    rpc.send(json!({"id": "state", "type": "get_state"})).await;
    let state = rpc.response("state").await;
    let id = state["data"]["sessionId"].as_str().unwrap().to_string();
    (rpc, socket(env.home.path(), &id))
}

/// Events until one matches `pred` (that one included).
async fn until(
    events: &mut UnboundedReceiver<AgentEvent>,
    pred: impl Fn(&AgentEvent) -> bool,
) -> Vec<AgentEvent> {
    let mut seen = Vec::new();
    loop {
        let event = tokio::time::timeout(WAIT, events.recv())
            .await
            .unwrap_or_else(|_| panic!("timed out waiting for an event; saw {seen:?}"))
            .unwrap_or_else(|| panic!("the stream ended; saw {seen:?}"));
        let done = pred(&event);
        seen.push(event);
        if done {
            return seen;
        }
    }
}

fn is_delta(event: &AgentEvent, text: &str) -> bool {
    matches!(
        event,
        AgentEvent::MessageUpdate {
            assistant_message_event: AssistantMessageEvent::TextDelta { delta, .. }
        } if delta == text
    )
}

fn prompt(text: &str) -> Command {
    Command::Prompt {
        input: UserInput::text(text),
        delivery: Delivery::Start,
    }
}

#[tokio::test]
async fn live_remote_engines_share_a_run_and_either_may_drive_it() {
    let env = env();
    let mut frames = chat::text_deltas(&["still ", "working"]);
    frames.truncate(frames.len() - 3);
    let server = FakeServer::start(vec![
        Reply::sse(chat::tool_call(
            "c1",
            "bash",
            json!({"command": "touch approved"}),
        )),
        Reply::sse(frames).then(End::Stall),
    ])
    .await;
    let (rpc, path) = owner(&env, &server).await;
    let (first, mut first_events) = RemoteEngine::attach(&path, Some(200)).await.unwrap();
    let (second, mut second_events) = RemoteEngine::attach(&path, Some(200)).await.unwrap();
    assert!(!first.is_running());
    let accepted = first.execute(prompt("make a file")).await.unwrap();
    assert!(matches!(accepted, Outcome::Accepted { .. }), "{accepted:?}");
    for events in [&mut first_events, &mut second_events] {
        let asked = until(events, |e| {
            matches!(e, AgentEvent::ToolApprovalRequest { .. })
        })
        .await;
        assert!(
            asked.iter().any(|e| matches!(e, AgentEvent::AgentStart)),
            "{asked:?}"
        );
    }
    assert!(first.is_running() && second.is_running());
    // The second answers; the first sees the call run.
    second
        .execute(Command::Approve {
            tool_call_id: "c1".into(),
            agent_id: None,
            decision: ApprovalDecision::Allow,
        })
        .await
        .unwrap();
    until(
        &mut first_events,
        |e| matches!(e, AgentEvent::ToolExecutionEnd { tool_call_id, .. } if tool_call_id == "c1"),
    )
    .await;
    // A second answer is refused with the session's words.
    let late = first
        .execute(Command::Approve {
            tool_call_id: "c1".into(),
            agent_id: None,
            decision: ApprovalDecision::DenySession,
        })
        .await;
    assert!(late.is_err(), "{late:?}");
    for events in [&mut first_events, &mut second_events] {
        until(events, |e| is_delta(e, "working")).await;
    }
    assert!(env.cwd.path().join("approved").exists());
    // The first stops the run; both see it end, and the mirror knows.
    first.execute(Command::Abort).await.unwrap();
    for events in [&mut first_events, &mut second_events] {
        let end = until(events, |e| matches!(e, AgentEvent::AgentEnd { .. })).await;
        match end.last() {
            Some(AgentEvent::AgentEnd { status, .. }) => assert_eq!(*status, RunStatus::Aborted),
            other => panic!("{other:?}"),
        }
    }
    assert!(!first.is_running());
    // The user's question, the call, its result and the aborted answer are mirrored.
    let roles: Vec<&str> = second
        .messages()
        .iter()
        .map(|m| match m.as_ref() {
            Message::User(_) => "user",
            Message::Assistant(_) => "assistant",
            _ => "other",
        })
        .collect();
    assert_eq!(roles.first(), Some(&"user"), "{roles:?}");
    assert_eq!(
        second.snapshot().session.id,
        path.file_stem().unwrap().to_str().unwrap()
    );
    // The owner goes: both streams end and say why.
    assert_eq!(rpc.exit_code().await, 0);
    for (engine, events) in [(&first, &mut first_events), (&second, &mut second_events)] {
        while tokio::time::timeout(WAIT, events.recv())
            .await
            .expect("the stream did not end")
            .is_some()
        {}
        let why = engine.ended().expect("no reason");
        assert!(why.contains("exited"), "{why}");
    }
}

#[tokio::test]
async fn live_attach_replays_only_the_last_messages_asked_for() {
    let env = env();
    let server = FakeServer::start(vec![
        Reply::sse(chat::text("one")),
        Reply::sse(chat::text("two")),
    ])
    .await;
    let (mut rpc, path) = owner(&env, &server).await;
    for (n, text) in ["first", "second"].iter().enumerate() {
        let id = format!("p{n}");
        rpc.send(json!({"id": id, "type": "prompt", "message": text}))
            .await;
        rpc.until(|l| l["type"] == "agent_end").await;
    }
    // The live session notes the engine's events in its own task, which may not have seen
    // the last answer yet when the RPC client read `agent_end`: attach until it has.
    let started = std::time::Instant::now();
    let (mut client, answer) = loop {
        let mut client = Socket::connect(&path).await;
        client
            .send(json!({"id": "a", "type": "attach", "last": 1}))
            .await;
        let answer = client.response("a").await;
        if answer["data"]["messages"][0]["content"][0]["text"] == "two" || started.elapsed() > WAIT
        {
            break (client, answer);
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    };
    let messages = answer["data"]["messages"].as_array().unwrap();
    assert_eq!(messages.len(), 1, "{answer}");
    assert_eq!(messages[0]["content"][0]["text"], "two");
    assert_eq!(answer["data"]["omitted"], 3);
    // Not a count: refused, with why.
    client
        .send(json!({"id": "b", "type": "attach", "last": "all"}))
        .await;
    let refused = client.response("b").await;
    assert_eq!(refused["success"], false);
    assert!(refused["error"].as_str().unwrap().contains("last"));
    // The adapter mirrors what it was replayed, and how much it was not.
    let (remote, _events) = RemoteEngine::attach(&path, Some(2)).await.unwrap();
    assert_eq!(remote.messages().len(), 2);
    assert_eq!(remote.omitted(), 2);
    assert_eq!(remote.snapshot().message_count, 4);
    assert_eq!(rpc.exit_code().await, 0);
}

#[tokio::test]
async fn live_remote_abort_overtakes_a_command_in_flight() {
    let env = env();
    let server = FakeServer::start(vec![]).await;
    let (rpc, path) = owner(&env, &server).await;
    let (remote, _events) = RemoteEngine::attach(&path, Some(10)).await.unwrap();
    let remote = std::sync::Arc::new(remote);
    let shell = tokio::spawn({
        let remote = remote.clone();
        async move {
            remote
                .execute(Command::RunShell {
                    command: "echo started > started; sleep 600".into(),
                })
                .await
        }
    });
    let started = env.cwd.path().join("started");
    tokio::time::timeout(WAIT, async {
        while !started.exists() {
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    })
    .await
    .expect("the shell command did not start");
    // The abort is not queued behind the command on the same connection: it stops it.
    tokio::time::timeout(WAIT, remote.execute(Command::Abort))
        .await
        .expect("abort waited for the command in flight")
        .unwrap();
    let shell = tokio::time::timeout(WAIT, shell)
        .await
        .expect("the command was not stopped")
        .unwrap();
    assert!(shell.is_ok(), "{shell:?}");
    assert_eq!(rpc.exit_code().await, 0);
}
