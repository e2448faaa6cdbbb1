//! `--mode rpc` driven from outside as docs/protocol.md §4 describes: framing, bad lines,
//! every command, the order commands take effect in, and abort/signals while a command that
//! takes time is in progress.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // test code fails loudly

mod support;

use serde_json::json;
use support::chat;
use support::env::env;
use support::process::Rpc;
use support::server::{End, FakeServer, Reply};

#[tokio::test]
async fn rpc_answers_bad_lines_and_keeps_running() {
    let env = env();
    let server = FakeServer::start(vec![]).await;
    let mut rpc = Rpc::spawn(env.agent(&server, &["--mode", "rpc"]));
    rpc.send_raw("this is not json").await;
    let response = rpc.next().await;
    assert_eq!(response["type"], "response");
    assert_eq!(response["command"], "parse");
    assert_eq!(response["success"], false);
    rpc.send_raw("[1, 2]").await;
    assert_eq!(rpc.next().await["command"], "parse");
    rpc.send(json!({"id": "u1", "type": "teleport"})).await;
    let response = rpc.next().await;
    assert_eq!(
        response,
        json!({"type": "response", "id": "u1", "command": "teleport", "success": false, "error": "unknown command type `teleport`"})
    );
    rpc.send(json!({"id": "m1", "type": "prompt"})).await;
    let response = rpc.next().await;
    assert_eq!(response["id"], "m1");
    assert_eq!(
        response["error"],
        "invalid `prompt` command: missing field `message`"
    );
    rpc.send(json!({"id": "a1", "type": "abort"})).await;
    assert_eq!(
        rpc.next().await["success"],
        true,
        "abort while idle succeeds"
    );
    rpc.send(json!({"id": "s1", "type": "get_state"})).await;
    let state = rpc.next().await;
    assert_eq!(state["success"], true);
    assert_eq!(state["data"]["model"], "test-model");
    assert_eq!(state["data"]["isStreaming"], false);
    assert_eq!(state["data"]["steeringMode"], "one-at-a-time");
    rpc.send(json!({"id": "x1", "type": "set_follow_up_mode", "mode": "all"}))
        .await;
    assert_eq!(rpc.next().await["success"], true);
    rpc.send(json!({"id": "x2", "type": "set_follow_up_mode", "mode": "sometimes"}))
        .await;
    assert_eq!(rpc.next().await["success"], false);
    rpc.send(json!({"id": "c1", "type": "compact"})).await;
    let response = rpc.response("c1").await;
    assert_eq!(response["success"], false);
    assert!(
        response["error"]
            .as_str()
            .unwrap()
            .contains("nothing to compact"),
        "{response}"
    );
    assert_eq!(rpc.exit_code().await, 0);
}

#[tokio::test]
async fn rpc_answers_non_utf8_and_over_long_lines_as_parse_errors() {
    let env = env();
    let server = FakeServer::start(vec![]).await;
    let mut rpc = Rpc::spawn(env.agent(&server, &["--mode", "rpc"]));
    rpc.send_bytes(b"{\"id\": \"bad\", \"type\": \"get_state\", \"x\": \"\xff\xfe\"}")
        .await;
    let response = rpc.next().await;
    assert_eq!(response["command"], "parse", "{response}");
    assert_eq!(response["success"], false);
    assert!(
        response["error"]
            .as_str()
            .unwrap()
            .contains("not valid UTF-8"),
        "{response}"
    );
    // One byte over the 64 MiB cap: refused with a reason, and the next line still works.
    let mut long = br#"{"type":"prompt","message":""#.to_vec();
    long.resize(64 * 1024 * 1024 - 1, b'a');
    long.extend_from_slice(br#""}"#);
    rpc.send_bytes(&long).await;
    let response = rpc.next().await;
    assert_eq!(response["command"], "parse", "{response}");
    assert!(
        response["error"]
            .as_str()
            .unwrap()
            .contains("is longer than the limit of 64 MiB"),
        "{response}"
    );
    rpc.send(json!({"id": "s", "type": "get_state"})).await;
    assert_eq!(rpc.next().await["id"], "s");
    assert_eq!(rpc.exit_code().await, 0);
}

#[tokio::test]
async fn rpc_steer_follow_up_and_abort_behave_as_specified() {
    let env = env();
    let server = FakeServer::start(vec![
        Reply::sse(chat::tool_calls(&[
            (
                "c1",
                "bash",
                json!({"command": support::harness::after_file("go", "echo one")}),
            ),
            ("c2", "bash", json!({"command": "echo two"})),
        ])),
        Reply::sse(chat::text("steered")),
        Reply::sse(chat::text("followed up")),
        Reply::sse(chat::tool_call(
            "c3",
            "bash",
            json!({"command": "sleep 30"}),
        )),
    ])
    .await;
    let mut rpc = Rpc::spawn(env.agent(&server, &["--mode", "rpc", "--permission-mode", "auto"]));
    rpc.send(json!({"id": "p1", "type": "prompt", "message": "start"}))
        .await;
    rpc.until(|l| l["type"] == "tool_execution_start").await;
    rpc.send(json!({"id": "p2", "type": "prompt", "message": "busy?"}))
        .await;
    let busy = rpc.response("p2").await;
    assert_eq!(busy["success"], false);
    assert!(
        busy["error"]
            .as_str()
            .unwrap()
            .contains("streamingBehavior")
    );
    rpc.send(json!({"id": "s1", "type": "steer", "message": "change plan"}))
        .await;
    rpc.send(json!({"id": "f1", "type": "prompt", "message": "afterwards", "streamingBehavior": "followUp"})).await;
    rpc.response("f1").await;
    std::fs::write(env.cwd.path().join("go"), "").unwrap();
    let lines = rpc.until(|l| l["type"] == "agent_end").await;
    assert_eq!(lines.last().unwrap()["status"], "completed");
    let skipped = lines
        .iter()
        .find(|l| l["type"] == "tool_execution_end" && l["toolCallId"] == "c2")
        .expect("the second call is answered");
    assert_eq!(skipped["isError"], true);
    assert_eq!(
        skipped["result"]["content"][0]["text"],
        "Skipped due to queued user message."
    );
    let bodies = server.bodies();
    assert_eq!(bodies.len(), 3);
    assert_eq!(
        bodies[1]["messages"].as_array().unwrap().last().unwrap()["content"],
        "change plan"
    );
    assert_eq!(
        bodies[2]["messages"].as_array().unwrap().last().unwrap()["content"],
        "afterwards"
    );

    rpc.send(json!({"id": "p3", "type": "prompt", "message": "long job"}))
        .await;
    rpc.until(|l| l["type"] == "tool_execution_start").await;
    rpc.send(json!({"id": "ab", "type": "abort"})).await;
    let lines = rpc.until(|l| l["type"] == "agent_end").await;
    assert_eq!(lines.last().unwrap()["status"], "aborted");
    rpc.send(json!({"id": "m", "type": "get_messages"})).await;
    let messages = rpc.response("m").await;
    let roles: Vec<&str> = messages["data"]["messages"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["role"].as_str().unwrap())
        .collect();
    assert_eq!(roles.last(), Some(&"toolResult"));
    assert_eq!(rpc.exit_code().await, 0);
}

#[tokio::test]
async fn rpc_approvals_round_trip() {
    let env = env();
    let server = FakeServer::start(vec![
        Reply::sse(chat::tool_call(
            "c1",
            "bash",
            json!({"command": "touch approved"}),
        )),
        Reply::sse(chat::text("done")),
    ])
    .await;
    let mut rpc = Rpc::spawn(env.agent(&server, &["--mode", "rpc"]));
    rpc.send(json!({"id": "p", "type": "prompt", "message": "make a file"}))
        .await;
    let request = rpc
        .until(|l| l["type"] == "tool_approval_request")
        .await
        .pop()
        .unwrap();
    assert_eq!(request["toolCallId"], "c1");
    assert_eq!(request["toolName"], "bash");
    assert_eq!(request["args"]["command"], "touch approved");
    rpc.send(json!({"id": "bad", "type": "approve", "toolCallId": "nope", "decision": "allow"}))
        .await;
    assert_eq!(rpc.response("bad").await["success"], false);
    rpc.send(json!({"id": "ok", "type": "approve", "toolCallId": "c1", "decision": "allow"}))
        .await;
    let lines = rpc.until(|l| l["type"] == "agent_end").await;
    assert_eq!(lines.last().unwrap()["status"], "completed");
    assert!(env.cwd.path().join("approved").exists());
    assert_eq!(rpc.exit_code().await, 0);
}

#[tokio::test]
async fn rpc_commands_take_effect_in_the_order_sent() {
    let env = env();
    let server = chat::answering(&["from the new model"]).await;
    let mut rpc = Rpc::spawn(env.agent(&server, &["--mode", "rpc"]));
    // Sent back to back: the prompt must already use the model set before it.
    rpc.send_raw(&format!(
        "{}\n{}",
        json!({"id": "m", "type": "set_model", "provider": "openai", "modelId": "second-model"}),
        json!({"id": "p", "type": "prompt", "message": "hi"})
    ))
    .await;
    assert_eq!(rpc.response("m").await["success"], true);
    rpc.until(|l| l["type"] == "agent_end").await;
    assert_eq!(server.bodies()[0]["model"], "second-model");
    assert_eq!(rpc.exit_code().await, 0);
}

#[tokio::test]
async fn rpc_prompt_images_reach_the_model() {
    let env = env();
    // `test-model` is not in the catalog: the config says it takes images.
    std::fs::write(
        env.home.path().join("config.toml"),
        "[providers.openai.models.test-model]\nimages = true\n",
    )
    .unwrap();
    let server = chat::answering(&["a red square"]).await;
    let mut rpc = Rpc::spawn(env.agent(&server, &["--mode", "rpc"]));
    rpc.send(json!({"id": "p", "type": "prompt", "message": "what is this?",
                    "images": [{"type": "image", "data": "iVBORw0KGgo=", "mimeType": "image/png"}]}))
        .await;
    assert_eq!(rpc.response("p").await["success"], true);
    rpc.until(|l| l["type"] == "agent_end").await;
    let content = &server.bodies()[0]["messages"][1]["content"];
    assert_eq!(content[0]["text"], "what is this?", "{content}");
    assert_eq!(
        content[1]["image_url"]["url"], "data:image/png;base64,iVBORw0KGgo=",
        "{content}"
    );
    assert_eq!(rpc.exit_code().await, 0);
}

/// An agent in RPC mode with a conversation long enough to compact, whose next model call
/// (the compaction's summary) never answers.
async fn compaction_that_hangs() -> (support::env::Env, FakeServer, Rpc) {
    let env = env();
    let server = FakeServer::start(vec![
        Reply::sse(chat::text(&"long answer ".repeat(8000))),
        Reply::sse(chat::text("short answer")),
        Reply::sse(vec![]).then(End::Stall),
    ])
    .await;
    let mut rpc = Rpc::spawn(env.agent(&server, &["--mode", "rpc"]));
    for (id, message) in [("p1", "first"), ("p2", "second")] {
        rpc.send(json!({"id": id, "type": "prompt", "message": message}))
            .await;
        rpc.until(|l| l["type"] == "agent_end").await;
    }
    rpc.send(json!({"id": "c", "type": "compact"})).await;
    rpc.until(|l| l["type"] == "auto_compaction_start").await;
    server.wait_for_requests(3).await;
    (env, server, rpc)
}

#[tokio::test]
async fn rpc_abort_stops_a_compaction_in_progress_and_later_commands_follow() {
    let (_env, _server, mut rpc) = compaction_that_hangs().await;
    // Sent while the compaction waits for the model: the state query waits its turn, the
    // abort does not.
    rpc.send(json!({"id": "s", "type": "get_state"})).await;
    rpc.send(json!({"id": "a", "type": "abort"})).await;
    let lines = rpc.until(|l| l["id"] == "s").await;
    let answers: Vec<_> = lines
        .iter()
        .filter(|l| l["type"] == "response")
        .map(|l| (l["id"].as_str().unwrap(), l["success"].as_bool().unwrap()))
        .collect();
    assert_eq!(
        answers,
        [("a", true), ("c", false), ("s", true)],
        "{lines:?}"
    );
    let end = lines
        .iter()
        .find(|l| l["type"] == "auto_compaction_end")
        .unwrap_or_else(|| panic!("the compaction ends: {lines:#?}"));
    assert_eq!(end["aborted"], true, "{end}");
    let state = lines.last().unwrap();
    assert_eq!(state["data"]["isStreaming"], false, "{state}");
    assert_eq!(
        state["data"]["messageCount"], 4,
        "nothing was lost: {state}"
    );
    assert_eq!(rpc.exit_code().await, 0);
}

#[tokio::test]
async fn rpc_sigint_during_a_compaction_exits_at_once() {
    let (_env, _server, rpc) = compaction_that_hangs().await;
    unsafe {
        libc::kill(rpc.child.id().unwrap() as i32, libc::SIGINT);
    }
    assert_eq!(rpc.exit_code().await, 130);
}

#[tokio::test]
async fn rpc_abort_also_stops_what_the_commands_sent_before_it_start() {
    let (_env, server, mut rpc) = compaction_that_hangs().await;
    server.push(Reply::sse(vec![]).then(End::Stall));
    // The prompt waits for the compaction; the abort stops the compaction at once and then,
    // at its place in the order, the run the prompt started.
    rpc.send(json!({"id": "p", "type": "prompt", "message": "after the compaction"}))
        .await;
    rpc.send(json!({"id": "a", "type": "abort"})).await;
    let lines = rpc.until(|l| l["type"] == "agent_end").await;
    let answers: Vec<_> = lines
        .iter()
        .filter(|l| l["type"] == "response")
        .map(|l| (l["id"].as_str().unwrap(), l["success"].as_bool().unwrap()))
        .collect();
    assert_eq!(
        answers,
        [("a", true), ("c", false), ("p", true)],
        "{lines:?}"
    );
    assert_eq!(lines.last().unwrap()["status"], "aborted");
    assert_eq!(rpc.exit_code().await, 0);
}
