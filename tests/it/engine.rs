//! The agent loop against a real loopback model server: event order, tool rounds, steering,
//! follow-ups, queue modes, abort, limits, bad tool calls and provider failures.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // test code fails loudly

use crate::support;

use agent::agent::queue::QueueMode;
use agent::agent::{Approval, SKIPPED_TEXT};
use agent::protocol::event::{AgentEvent, AssistantMessageEvent};
use agent::protocol::message::{Message, UserMessage};
use agent::tools::permission::PermissionMode;
use serde_json::json;
use std::time::Duration;
use support::chat;
use support::harness::{
    Harness, after_file, end_of, names, process_alive, transcript, wait_for_pid, wait_until_dead,
};
use support::server::{End, Gate, Reply};

#[tokio::test]
async fn a_plain_answer_streams_and_completes() {
    let mut h = Harness::start(vec![Reply::sse(chat::text_deltas(&["Hel", "lo!"]))]).await;
    h.prompt("hi");
    let events = h.until_end().await;
    assert_eq!(
        names(&events),
        vec![
            "agent_start",
            "turn_start",
            "message_start:user",
            "message_end:user",
            "message_start:assistant",
            "message_end:assistant",
            "usage_update",
            "turn_end",
            "agent_end:completed"
        ]
    );
    let deltas: Vec<_> = events
        .iter()
        .filter_map(|e| match e {
            AgentEvent::MessageUpdate {
                assistant_message_event,
            } => Some(serde_json::to_value(assistant_message_event).unwrap()),
            _ => None,
        })
        .collect();
    assert_eq!(
        deltas,
        vec![
            json!({"type": "text_start", "contentIndex": 0}),
            json!({"type": "text_delta", "contentIndex": 0, "delta": "Hel"}),
            json!({"type": "text_delta", "contentIndex": 0, "delta": "lo!"}),
            json!({"type": "text_end", "contentIndex": 0}),
        ]
    );
    let AgentEvent::AgentEnd { messages, .. } = events.last().unwrap() else {
        unreachable!()
    };
    let answer = messages[1].as_assistant().unwrap();
    assert_eq!(answer.text(), "Hello!");
    assert_eq!(answer.usage.input, 10);
    assert_eq!(answer.usage.output, 2);

    let requests = h.server.requests();
    assert_eq!(requests.len(), 1);
    assert_eq!(requests[0].path, "/v1/chat/completions");
    assert_eq!(
        requests[0].header("authorization"),
        Some("Bearer sk-test-key")
    );
    let body = &requests[0].body;
    assert_eq!(body["model"], "test-model");
    assert_eq!(body["stream"], true);
    assert_eq!(body["stream_options"]["include_usage"], true);
    assert_eq!(transcript(body), vec!["system", "user:hi"]);
    assert_eq!(body["messages"][0]["content"], "You are a test.");
    let tools: Vec<_> = body["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["function"]["name"].as_str().unwrap())
        .collect();
    assert_eq!(tools, vec!["read", "bash"]);
    assert_eq!(
        body["tools"][0]["function"]["parameters"]["required"],
        json!(["path"])
    );
}

#[tokio::test]
async fn several_tool_rounds_feed_results_back() {
    let mut h = Harness::start(vec![]).await;
    std::fs::write(h.dir.path().join("notes.txt"), "alpha\nbeta\n").unwrap();
    h.server.push(Reply::sse(chat::tool_call(
        "call_1",
        "bash",
        json!({"command": "echo round-one"}),
    )));
    h.server.push(Reply::sse(chat::tool_call(
        "call_2",
        "read",
        json!({"path": "notes.txt"}),
    )));
    h.server.push(Reply::sse(chat::text("All done.")));
    h.prompt("work");
    let events = h.until_end().await;
    assert_eq!(end_of(&events).0, "completed");
    assert_eq!(
        events
            .iter()
            .filter(|e| matches!(e, AgentEvent::TurnStart))
            .count(),
        3
    );
    let bodies = h.server.bodies();
    assert_eq!(bodies.len(), 3);
    assert_eq!(
        transcript(&bodies[1]),
        vec![
            "system",
            "user:work",
            "assistant::[bash]",
            "tool:call_1:round-one\n\n[exit code 0]"
        ]
    );
    assert_eq!(
        bodies[1]["messages"][2]["tool_calls"][0]["function"]["arguments"],
        "{\"command\":\"echo round-one\"}"
    );
    assert_eq!(transcript(&bodies[2])[5], "tool:call_2:alpha\nbeta\n");
}

#[tokio::test]
async fn two_calls_in_one_message_run_in_order() {
    let mut h = Harness::start(vec![
        Reply::sse(chat::tool_calls(&[
            ("c1", "bash", json!({"command": "echo first"})),
            ("c2", "bash", json!({"command": "echo second"})),
        ])),
        Reply::sse(chat::text("ok")),
    ])
    .await;
    h.prompt("go");
    let events = h.until_end().await;
    let order: Vec<_> = names(&events)
        .into_iter()
        .filter(|n| n.starts_with("tool_execution"))
        .collect();
    assert_eq!(
        order,
        vec![
            "tool_execution_start:bash",
            "tool_execution_end:bash",
            "tool_execution_start:bash",
            "tool_execution_end:bash"
        ]
    );
    let t = transcript(&h.server.bodies()[1]);
    assert_eq!(
        &t[3..],
        [
            "tool:c1:first\n\n[exit code 0]",
            "tool:c2:second\n\n[exit code 0]"
        ]
    );
}

#[tokio::test]
async fn steering_skips_the_remaining_calls_and_reaches_the_next_request() {
    let mut h = Harness::start(vec![
        Reply::sse(chat::tool_calls(&[
            (
                "c1",
                "bash",
                json!({"command": after_file("go", "echo slow")}),
            ),
            ("c2", "bash", json!({"command": "echo never"})),
        ])),
        Reply::sse(chat::text("changed course")),
    ])
    .await;
    h.prompt("start");
    h.until(|e| matches!(e, AgentEvent::ToolExecutionStart { .. }))
        .await;
    h.agent.steer(UserMessage::text("use the other approach"));
    std::fs::write(h.dir.path().join("go"), "").unwrap();
    let events = h.until_end().await;
    assert_eq!(
        names(&events),
        vec![
            "queue_update",
            "tool_execution_end:bash",
            "message_start:toolResult",
            "message_end:toolResult",
            "queue_update",
            "tool_execution_start:bash",
            "tool_execution_end:bash:error",
            "message_start:toolResult",
            "message_end:toolResult",
            "turn_end",
            "turn_start",
            "message_start:user",
            "message_end:user",
            "message_start:assistant",
            "message_end:assistant",
            "usage_update",
            "turn_end",
            "agent_end:completed"
        ]
    );
    let skipped = events.iter().find_map(|e| match e {
        AgentEvent::ToolExecutionEnd {
            tool_call_id,
            result,
            ..
        } if tool_call_id == "c2" => Some(result.clone()),
        _ => None,
    });
    assert_eq!(
        agent::protocol::message::join_text(&skipped.unwrap().content),
        SKIPPED_TEXT
    );
    let t = transcript(&h.server.bodies()[1]);
    assert_eq!(
        &t[3..],
        [
            "tool:c1:slow\n\n[exit code 0]",
            &format!("tool:c2:{SKIPPED_TEXT}"),
            "user:use the other approach"
        ]
    );
}

#[tokio::test]
async fn a_follow_up_waits_for_the_final_answer() {
    let mut h = Harness::start(vec![
        Reply::sse(chat::tool_call(
            "c1",
            "bash",
            json!({"command": after_file("go", "echo x")}),
        )),
        Reply::sse(chat::text("first answer")),
        Reply::sse(chat::text("second answer")),
    ])
    .await;
    h.prompt("one");
    h.until(|e| matches!(e, AgentEvent::ToolExecutionStart { .. }))
        .await;
    h.agent.follow_up(UserMessage::text("and then two"));
    std::fs::write(h.dir.path().join("go"), "").unwrap();
    let events = h.until_end().await;
    assert_eq!(end_of(&events).0, "completed");
    assert_eq!(
        events
            .iter()
            .filter(|e| matches!(e, AgentEvent::AgentStart))
            .count(),
        0,
        "one run only"
    );
    let bodies = h.server.bodies();
    assert_eq!(bodies.len(), 3);
    assert!(
        !transcript(&bodies[1])
            .iter()
            .any(|m| m.contains("and then two"))
    );
    let last = transcript(&bodies[2]);
    assert_eq!(
        &last[last.len() - 2..],
        ["assistant:first answer:[]", "user:and then two"]
    );
}

#[tokio::test]
async fn one_at_a_time_delivers_steering_messages_one_per_check() {
    let mut h = Harness::start(vec![
        Reply::sse(chat::tool_call(
            "c1",
            "bash",
            json!({"command": after_file("go", "true")}),
        )),
        Reply::sse(chat::tool_call("c2", "bash", json!({"command": "true"}))),
        Reply::sse(chat::text("done")),
    ])
    .await;
    h.prompt("go");
    h.until(|e| matches!(e, AgentEvent::ToolExecutionStart { .. }))
        .await;
    h.agent.steer(UserMessage::text("s1"));
    h.agent.steer(UserMessage::text("s2"));
    std::fs::write(h.dir.path().join("go"), "").unwrap();
    h.until_end().await;
    let bodies = h.server.bodies();
    let second = transcript(&bodies[1]);
    assert_eq!(second.last().unwrap(), "user:s1");
    assert!(!second.iter().any(|m| m == "user:s2"));
    let third = transcript(&bodies[2]);
    assert_eq!(third.last().unwrap(), "user:s2");
}

#[tokio::test]
async fn all_mode_delivers_every_queued_message_at_once() {
    let mut h = Harness::start_with(
        vec![
            Reply::sse(chat::tool_call(
                "c1",
                "bash",
                json!({"command": after_file("go", "true")}),
            )),
            Reply::sse(chat::text("done")),
        ],
        |c| c.steering_mode = QueueMode::All,
    )
    .await;
    h.prompt("go");
    h.until(|e| matches!(e, AgentEvent::ToolExecutionStart { .. }))
        .await;
    h.agent.steer(UserMessage::text("s1"));
    h.agent.steer(UserMessage::text("s2"));
    std::fs::write(h.dir.path().join("go"), "").unwrap();
    h.until_end().await;
    let second = transcript(&h.server.bodies()[1]);
    assert_eq!(&second[second.len() - 2..], ["user:s1", "user:s2"]);
}

#[tokio::test]
async fn abort_mid_stream_ends_the_run_at_once() {
    // The stream sends two words and then nothing, for good: only the abort can end it
    // (the idle timeout would end the run as failed, not aborted).
    let frames = chat::text_deltas(&["a ", "b ", "c "]);
    let mut h = Harness::start(vec![Reply::sse(frames[..3].to_vec()).then(End::Stall)]).await;
    h.prompt("slow please");
    h.until(|e| {
        matches!(
            e,
            AgentEvent::MessageUpdate {
                assistant_message_event: AssistantMessageEvent::TextDelta { delta, .. }
            } if delta == "b "
        )
    })
    .await;
    h.agent.abort();
    let events = h.until_end().await;
    assert_eq!(end_of(&events).0, "aborted");
    let AgentEvent::AgentEnd { messages, .. } = events.last().unwrap() else {
        unreachable!()
    };
    let assistant = messages
        .iter()
        .rev()
        .find_map(|m| m.as_assistant())
        .unwrap();
    assert_eq!(
        serde_json::to_value(assistant.stop_reason).unwrap(),
        "aborted"
    );
    assert_eq!(assistant.text(), "a b ", "what had arrived is kept");
    assert!(!h.agent.is_running());
}

#[tokio::test]
async fn abort_mid_tool_kills_the_process_group_and_answers_every_call() {
    let mut h = Harness::start(vec![Reply::sse(chat::tool_calls(&[
        (
            "c1",
            "bash",
            json!({"command": "sleep 30 & echo $! > child.pid; echo $$ > shell.pid; wait"}),
        ),
        ("c2", "read", json!({"path": "x"})),
    ]))])
    .await;
    h.prompt("run it");
    h.until(|e| matches!(e, AgentEvent::ToolExecutionStart { .. }))
        .await;
    let child_pid = wait_for_pid(&h.dir.path().join("child.pid")).await;
    let shell_pid = wait_for_pid(&h.dir.path().join("shell.pid")).await;
    assert!(process_alive(child_pid));
    h.agent.abort();
    let events = h.until_end().await;
    assert_eq!(end_of(&events).0, "aborted");
    let results: Vec<_> = events
        .iter()
        .filter_map(|e| match e {
            AgentEvent::ToolExecutionEnd {
                tool_call_id,
                is_error,
                ..
            } => Some((tool_call_id.clone(), *is_error)),
            _ => None,
        })
        .collect();
    assert_eq!(
        results,
        vec![("c1".to_string(), true), ("c2".to_string(), true)]
    );
    assert!(
        wait_until_dead(child_pid).await,
        "the grandchild survived the abort"
    );
    assert!(
        wait_until_dead(shell_pid).await,
        "the shell survived the abort"
    );
    let messages = h.agent.messages();
    assert_eq!(
        messages
            .iter()
            .filter(|m| matches!(m.as_ref(), Message::ToolResult(_)))
            .count(),
        2
    );
}

#[tokio::test]
async fn the_turn_limit_ends_the_run_with_status_limit() {
    let mut h = Harness::start_with(
        vec![
            Reply::sse(chat::tool_call("c1", "bash", json!({"command": "true"}))),
            Reply::sse(chat::tool_call("c2", "bash", json!({"command": "true"}))),
        ],
        |c| c.limits.max_turns = Some(1),
    )
    .await;
    h.prompt("loop");
    let events = h.until_end().await;
    let (status, error) = end_of(&events);
    assert_eq!(status, "limit");
    assert!(error.unwrap().contains("1 model turns"));
    assert_eq!(h.server.requests().len(), 1);
}

#[tokio::test]
async fn the_tool_call_limit_answers_the_rest_and_stops() {
    let mut h = Harness::start_with(
        vec![Reply::sse(chat::tool_calls(&[
            ("c1", "bash", json!({"command": "echo one"})),
            ("c2", "bash", json!({"command": "echo two"})),
        ]))],
        |c| c.limits.max_tool_calls = Some(1),
    )
    .await;
    h.prompt("go");
    let events = h.until_end().await;
    let (status, error) = end_of(&events);
    assert_eq!(status, "limit");
    assert!(error.unwrap().contains("1 tool calls"));
    let messages = h.agent.messages();
    let Message::ToolResult(second) = messages.last().unwrap().as_ref() else {
        panic!()
    };
    assert!(second.is_error);
    assert!(agent::protocol::message::join_text(&second.content).contains("limit of 1 tool calls"));
}

#[tokio::test]
async fn the_time_limit_kills_the_running_tool() {
    let mut h = Harness::start_with(
        vec![Reply::sse(chat::tool_call(
            "c1",
            "bash",
            json!({"command": "echo $$ > shell.pid; sleep 30"}),
        ))],
        // Long enough for a loaded machine to start the command (and let it write its pid)
        // before the limit ends the run.
        |c| c.limits.timeout = Some(Duration::from_secs(3)),
    )
    .await;
    h.prompt("wait");
    let events = h.until_end().await;
    let (status, error) = end_of(&events);
    assert_eq!(status, "limit");
    assert!(error.unwrap().contains("time limit"));
    let pid = wait_for_pid(&h.dir.path().join("shell.pid")).await;
    assert!(wait_until_dead(pid).await, "the command survived the limit");
}

#[tokio::test]
async fn invalid_arguments_and_unknown_tools_become_error_results() {
    let mut h = Harness::start(vec![
        Reply::sse(chat::tool_calls_raw(&[
            ("c1", "bash", "{\"command\": \"echo hi"),
            ("c2", "teleport", "{}"),
        ])),
        Reply::sse(chat::text("sorry")),
    ])
    .await;
    h.prompt("go");
    let events = h.until_end().await;
    assert_eq!(end_of(&events).0, "completed");
    let t = transcript(&h.server.bodies()[1]);
    assert!(
        t[3].starts_with("tool:c1:The arguments of this `bash` call are not valid JSON"),
        "{}",
        t[3]
    );
    assert_eq!(
        t[4],
        "tool:c2:Tool `teleport` does not exist. Available tools: read, bash."
    );
    // The malformed arguments are replayed as valid JSON (servers reject the raw text);
    // the error result says what was wrong with them.
    assert_eq!(
        h.server.bodies()[1]["messages"][2]["tool_calls"][0]["function"]["arguments"],
        "{}"
    );
}

#[tokio::test]
async fn provider_auth_and_not_found_errors_fail_the_run_clearly() {
    let mut h = Harness::start(vec![Reply::status(
        401,
        r#"{"error":{"message":"Incorrect API key provided"}}"#,
    )])
    .await;
    h.prompt("hi");
    let events = h.until_end().await;
    let (status, error) = end_of(&events);
    assert_eq!(status, "failed");
    assert_eq!(
        error.unwrap(),
        "HTTP 401 Unauthorized: Incorrect API key provided (check the key given with --api-key)"
    );
    assert_eq!(h.server.requests().len(), 1, "a 401 is not retried");

    let mut h = Harness::start(vec![Reply::status(
        404,
        r#"{"error":{"message":"The model `nope` does not exist"}}"#,
    )])
    .await;
    h.prompt("hi");
    let (status, error) = end_of(&h.until_end().await);
    assert_eq!(status, "failed");
    let error = error.unwrap();
    assert!(
        error.starts_with("HTTP 404 Not Found: The model `nope` does not exist"),
        "{error}"
    );
    assert!(
        error.contains("check the model id and the base URL"),
        "{error}"
    );
}

#[tokio::test]
async fn a_transient_failure_is_retried_without_duplicating_text() {
    let mut h = Harness::start(vec![
        Reply::sse(chat::text_deltas(&["partial "])[..2].to_vec()).then(End::Drop),
        Reply::status(503, "overloaded"),
        Reply::sse(chat::text("fine now")),
    ])
    .await;
    h.prompt("hi");
    let events = h.until_end().await;
    assert_eq!(end_of(&events).0, "completed");
    let kinds = names(&events);
    assert_eq!(kinds.iter().filter(|k| *k == "auto_retry_start").count(), 2);
    assert_eq!(kinds.iter().filter(|k| *k == "auto_retry_end").count(), 1);
    let messages = h.agent.messages();
    assert_eq!(messages.len(), 2, "failed attempts are not in the history");
    assert_eq!(messages[1].as_assistant().unwrap().text(), "fine now");
    assert_eq!(transcript(&h.server.bodies()[2]), vec!["system", "user:hi"]);
}

#[tokio::test]
async fn asking_without_an_approver_denies_and_tells_the_model() {
    let mut h = Harness::start_with(
        vec![
            Reply::sse(chat::tool_call(
                "c1",
                "bash",
                json!({"command": "touch made"}),
            )),
            Reply::sse(chat::text("ok")),
        ],
        |c| c.permission_mode = PermissionMode::Ask,
    )
    .await;
    h.prompt("make it");
    h.until_end().await;
    assert!(!h.dir.path().join("made").exists());
    let t = transcript(&h.server.bodies()[1]);
    assert!(t[3].contains("--permission-mode auto"), "{}", t[3]);
}

#[tokio::test]
async fn approval_requests_wait_for_an_answer() {
    let mut h = Harness::start_with(
        vec![
            Reply::sse(chat::tool_call(
                "c1",
                "bash",
                json!({"command": "touch made"}),
            )),
            Reply::sse(chat::tool_call(
                "c2",
                "bash",
                json!({"command": "touch other"}),
            )),
            Reply::sse(chat::text("ok")),
        ],
        |c| {
            c.permission_mode = PermissionMode::Ask;
            c.can_ask = true;
        },
    )
    .await;
    h.prompt("make them");
    let seen = h
        .until(|e| matches!(e, AgentEvent::ToolApprovalRequest { .. }))
        .await;
    let AgentEvent::ToolApprovalRequest {
        tool_call_id, args, ..
    } = seen.last().unwrap()
    else {
        unreachable!()
    };
    assert_eq!(args["command"], "touch made");
    h.agent.approve(tool_call_id, Approval::Allow).unwrap();
    let seen = h
        .until(|e| matches!(e, AgentEvent::ToolApprovalRequest { .. }))
        .await;
    assert!(h.dir.path().join("made").exists());
    let AgentEvent::ToolApprovalRequest { tool_call_id, .. } = seen.last().unwrap() else {
        unreachable!()
    };
    h.agent
        .approve(tool_call_id, Approval::Deny(Some("not that file".into())))
        .unwrap();
    h.until_end().await;
    assert!(!h.dir.path().join("other").exists());
    let t = transcript(&h.server.bodies()[2]);
    assert_eq!(
        t.last().unwrap(),
        "tool:c2:The user denied this `bash` call. The user says: not that file"
    );
    assert!(h.agent.approve("c2", Approval::Allow).is_err());
}

#[tokio::test]
async fn the_streaming_message_is_readable_while_it_grows() {
    let frames = chat::tool_calls_raw(&[("c1", "read", "{\"path\": \"some/long/path.txt\"}")]);
    // Stall after the first half of the arguments.
    let mut h = Harness::start(vec![Reply::sse(frames[..2].to_vec()).then(End::Stall)]).await;
    h.prompt("read");
    h.until(|e| {
        matches!(
            e,
            AgentEvent::MessageUpdate {
                assistant_message_event:
                    agent::protocol::event::AssistantMessageEvent::ToolCallDelta { .. }
            }
        )
    })
    .await;
    let partial = h.agent.streaming_message().unwrap();
    let call = partial.tool_calls().next().unwrap();
    assert_eq!(call.name, "read");
    assert!(
        call.arguments["path"]
            .as_str()
            .unwrap()
            .starts_with("some/"),
        "{:?}",
        call.arguments
    );
    h.agent.abort();
    h.until_end().await;
    assert!(h.agent.streaming_message().is_none());
}

#[tokio::test]
async fn steer_and_follow_up_while_idle_start_a_run() {
    let mut h = Harness::start(vec![
        Reply::sse(chat::text("hello")),
        Reply::sse(chat::text("hello again")),
    ])
    .await;
    h.agent.steer(UserMessage::text("wake up"));
    let events = h.until_end().await;
    assert!(matches!(events[0], AgentEvent::AgentStart), "{events:?}");
    assert_eq!(end_of(&events).0, "completed");
    assert_eq!(
        transcript(&h.server.bodies()[0]),
        vec!["system", "user:wake up"]
    );
    assert!(!h.agent.is_running());
    h.agent.follow_up(UserMessage::text("and you"));
    let events = h.until_end().await;
    assert!(matches!(events[0], AgentEvent::AgentStart), "{events:?}");
    assert_eq!(end_of(&events).0, "completed");
    assert_eq!(
        transcript(&h.server.bodies()[1]),
        vec![
            "system",
            "user:wake up",
            "assistant:hello:[]",
            "user:and you"
        ]
    );
    assert!(
        !names(&events).iter().any(|n| n == "queue_update"),
        "delivered at once, never queued"
    );
}

#[tokio::test]
async fn a_follow_up_queued_during_a_failing_run_is_not_stranded() {
    let mut h = Harness::start(vec![
        Reply::sse(chat::tool_call(
            "c1",
            "bash",
            json!({"command": after_file("go", "true")}),
        )),
        Reply::status(400, r#"{"error":{"message":"bad request"}}"#),
        Reply::sse(chat::text("handled the follow-up")),
    ])
    .await;
    h.prompt("go");
    h.until(|e| matches!(e, AgentEvent::ToolExecutionStart { .. }))
        .await;
    h.agent.follow_up(UserMessage::text("then this"));
    std::fs::write(h.dir.path().join("go"), "").unwrap();
    let first = h.until_end().await;
    assert_eq!(end_of(&first).0, "failed");
    // The queued follow-up starts the next run by itself.
    let second = h.until_end().await;
    assert_eq!(end_of(&second).0, "completed");
    let last = transcript(&h.server.bodies()[2]);
    assert_eq!(last.last().unwrap(), "user:then this");
}

#[tokio::test]
async fn a_message_sent_during_a_manual_compaction_runs_when_it_ends() {
    let summary_held = Gate::new();
    let mut h = Harness::start(vec![
        Reply::sse(chat::text(&"long answer ".repeat(8000))),
        Reply::sse(chat::text("second answer")),
        Reply::sse(chat::text("a summary")).after(&summary_held),
        Reply::sse(chat::text("got it")),
    ])
    .await;
    h.prompt("start");
    h.until_end().await;
    h.prompt("second");
    h.until_end().await;
    let compacting = {
        let agent = &h.agent;
        async move { agent.compact(None).await }
    };
    let steer = async {
        h.server.wait_for_requests(3).await;
        h.agent.steer(UserMessage::text("during compaction"));
        summary_held.open();
    };
    let (compacted, ()) = tokio::join!(compacting, steer);
    compacted.unwrap();
    let events = h.until_end().await;
    assert_eq!(end_of(&events).0, "completed");
    assert_eq!(
        transcript(h.server.bodies().last().unwrap())
            .last()
            .unwrap(),
        "user:during compaction"
    );
}
