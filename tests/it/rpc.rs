//! `--mode rpc` driven from outside as docs/protocol.md §4 describes: framing, bad lines,
//! every command, the order commands take effect in, and abort/signals while a command that
//! takes time is in progress.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // test code fails loudly

use crate::support;

use serde_json::{Value, json};
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
    assert_eq!(state["data"]["state"], "idle");
    assert!(state["data"]["stateElapsedMs"].is_u64(), "{state}");
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
        Reply::sse(chat::busy_until_go_then_another()),
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
    let mut lines = rpc.until(|l| l["type"] == "tool_approval_request").await;
    let request = lines.pop().unwrap();
    let states: Vec<_> = lines
        .iter()
        .filter(|l| l["type"] == "state")
        .map(|l| l["state"].as_str().unwrap())
        .collect();
    assert_eq!(
        states,
        [
            "preparing",
            "model_running",
            "tool_running",
            "awaiting_human"
        ]
    );
    rpc.send(json!({"id": "s", "type": "get_state"})).await;
    assert_eq!(rpc.response("s").await["data"]["state"], "awaiting_human");
    assert_eq!(request["toolCallId"], "c1");
    assert_eq!(request["toolName"], "bash");
    assert_eq!(request["args"]["command"], "touch approved");
    rpc.send(json!({"id": "bad", "type": "approve", "toolCallId": "nope", "decision": "allow"}))
        .await;
    assert_eq!(rpc.response("bad").await["success"], false);
    rpc.send(json!({"id": "ok", "type": "approve", "toolCallId": "c1", "decision": "allow"}))
        .await;
    let lines = rpc
        .until(|l| l["type"] == "state" && l["state"] == "idle")
        .await;
    let end = lines.iter().find(|l| l["type"] == "agent_end").unwrap();
    assert_eq!(end["status"], "completed");
    let states: Vec<_> = lines
        .iter()
        .filter(|l| l["type"] == "state")
        .map(|l| {
            (
                l["previous"].as_str().unwrap(),
                l["state"].as_str().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        states,
        [
            ("awaiting_human", "tool_running"),
            ("tool_running", "model_running"),
            ("model_running", "completed"),
            ("completed", "idle")
        ]
    );
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
    assert_eq!(state["data"]["state"], "idle", "{state}");
    let compaction_states: Vec<_> = lines
        .iter()
        .filter(|l| l["type"] == "state")
        .map(|l| l["state"].as_str().unwrap())
        .collect();
    assert_eq!(compaction_states, ["idle"], "{lines:?}");
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

/// An agent in RPC mode on a configured provider `local` with two models.
fn local_models(env: &support::env::Env, server: &FakeServer) -> Rpc {
    std::fs::write(
        env.home.path().join("config.toml"),
        format!(
            "[providers.local]\napi = \"openai-chat\"\nbase_url = \"{}\"\n\
             [providers.local.models.first-model]\ncontext_window = 1000\n\
             [providers.local.models.second-model]\nreasoning = false\n",
            server.v1()
        ),
    )
    .unwrap();
    let mut cmd = support::process::command(env.home.path(), env.cwd.path());
    // A hosted provider with its key at hand (taken out of the environment at start).
    cmd.env("ANTHROPIC_API_KEY", "sk-ant-test-key-for-listing");
    cmd.args([
        "--mode",
        "rpc",
        "--provider",
        "local",
        "--model",
        "first-model",
        "--permission-mode",
        "auto",
    ]);
    Rpc::spawn(cmd)
}

#[tokio::test]
async fn rpc_answers_pi_s_model_commands() {
    let env = env();
    let server = chat::answering(&["from the second model"]).await;
    let mut rpc = local_models(&env, &server);
    rpc.send(json!({"id": "m", "type": "get_available_models"}))
        .await;
    let models = rpc.response("m").await;
    let listed: Vec<(&str, &str)> = models["data"]["models"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| (m["provider"].as_str().unwrap(), m["id"].as_str().unwrap()))
        .collect();
    let local: Vec<_> = listed.iter().filter(|(p, _)| *p == "local").collect();
    assert_eq!(
        local,
        [&("local", "first-model"), &("local", "second-model")],
        "{models}"
    );
    assert!(
        listed.contains(&("anthropic", "claude-sonnet-4-5")),
        "a provider with its key is listed: {models}"
    );
    assert!(
        listed
            .iter()
            .all(|(p, _)| ["local", "anthropic"].contains(p)),
        "providers without a key are left out: {models}"
    );
    let first = models["data"]["models"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["id"] == "first-model")
        .unwrap();
    assert_eq!(first["contextWindow"], 1000);
    assert_eq!(first["api"], "openai-chat");
    assert_eq!(first["input"], json!(["text"]), "not known to take images");
    assert_eq!(first["baseUrl"], server.v1());
    rpc.send(json!({"id": "c", "type": "cycle_model"})).await;
    let cycled = rpc.response("c").await;
    assert_eq!(cycled["data"]["model"]["id"], "second-model", "{cycled}");
    assert_eq!(cycled["data"]["model"]["reasoning"], false);
    assert_eq!(cycled["data"]["isScoped"], false);
    rpc.send(json!({"id": "p", "type": "prompt", "message": "hi"}))
        .await;
    rpc.until(|l| l["type"] == "agent_end").await;
    assert_eq!(server.bodies()[0]["model"], "second-model");
    rpc.send(json!({"id": "c2", "type": "cycle_model"})).await;
    let wrapped = rpc.response("c2").await;
    assert_eq!(
        (
            wrapped["data"]["model"]["provider"].as_str().unwrap(),
            wrapped["data"]["model"]["id"].as_str().unwrap()
        ),
        listed[0],
        "after the last model, cycling wraps around: {wrapped}"
    );
    rpc.send(
        json!({"id": "s", "type": "set_model", "provider": "local", "modelId": "second-model"}),
    )
    .await;
    let set = rpc.response("s").await;
    assert_eq!(set["data"]["id"], "second-model", "{set}");
    assert_eq!(set["data"]["modelId"], "second-model");
    assert_eq!(set["data"]["provider"], "local");
    assert_eq!(rpc.exit_code().await, 0);
}

#[tokio::test]
async fn rpc_answers_pi_s_session_commands() {
    let env = env();
    let server = FakeServer::start(vec![
        Reply::sse(chat::tool_call(
            "c1",
            "bash",
            json!({"command": "echo <tool>"}),
        )),
        Reply::sse(chat::text("The **answer** is <42>.")),
    ])
    .await;
    let mut rpc = Rpc::spawn(env.agent(&server, &["--mode", "rpc", "--permission-mode", "auto"]));
    rpc.send(json!({"id": "t0", "type": "get_last_assistant_text"}))
        .await;
    assert_eq!(rpc.response("t0").await["data"], json!({"text": null}));
    rpc.send(json!({"id": "s0", "type": "get_state"})).await;
    assert_eq!(
        rpc.response("s0").await["data"]["sessionTitle"],
        Value::Null
    );
    rpc.send(json!({"id": "p", "type": "prompt", "message": "what is <it>?"}))
        .await;
    rpc.until(|l| l["type"] == "agent_end").await;

    rpc.send(json!({"id": "t", "type": "get_last_assistant_text"}))
        .await;
    assert_eq!(
        rpc.response("t").await["data"]["text"],
        "The **answer** is <42>."
    );
    // The session's title: its first prompt's first line until it is given a name.
    rpc.send(json!({"id": "s1", "type": "get_state"})).await;
    assert_eq!(
        rpc.response("s1").await["data"]["sessionTitle"],
        "what is <it>?"
    );
    rpc.send(json!({"id": "n", "type": "set_session_name", "name": "answers"}))
        .await;
    rpc.response("n").await;
    rpc.send(json!({"id": "s2", "type": "get_state"})).await;
    assert_eq!(rpc.response("s2").await["data"]["sessionTitle"], "answers");
    rpc.send(json!({"id": "st", "type": "get_session_stats"}))
        .await;
    let stats = rpc.response("st").await["data"].clone();
    assert_eq!(stats["userMessages"], 1, "{stats}");
    assert_eq!(stats["assistantMessages"], 2);
    assert_eq!(stats["toolCalls"], 1);
    assert_eq!(stats["toolResults"], 1);
    assert_eq!(stats["totalMessages"], 4);
    assert_eq!(
        stats["tokens"]["input"], 30,
        "both model calls count: {stats}"
    );
    assert_eq!(stats["tokens"]["total"], 44);
    assert!(stats["sessionFile"].as_str().unwrap().ends_with(".jsonl"));
    rpc.send(json!({"id": "cmd", "type": "get_commands"})).await;
    assert_eq!(rpc.response("cmd").await["data"], json!({"commands": []}));

    rpc.send(json!({"id": "e", "type": "export_html", "outputPath": "session.html"}))
        .await;
    let exported = rpc.response("e").await;
    let path = exported["data"]["path"].as_str().unwrap();
    assert_eq!(
        std::path::Path::new(path),
        env.cwd.path().join("session.html")
    );
    let html = std::fs::read_to_string(path).unwrap();
    assert!(html.starts_with("<!doctype html>"), "{html}");
    assert!(html.contains("what is &lt;it&gt;?"), "{html}");
    assert!(
        html.contains("The <strong>answer</strong> is &lt;42&gt;."),
        "{html}"
    );
    assert!(
        html.contains("&lt;tool&gt;"),
        "the tool result is in: {html}"
    );
    assert!(!html.contains("<script"), "{html}");
    rpc.send(json!({"id": "e2", "type": "export_html"})).await;
    let exported = rpc.response("e2").await;
    let default = exported["data"]["path"].as_str().unwrap();
    assert!(
        default.ends_with(&format!(
            "agent-session-{}.html",
            stats["sessionId"].as_str().unwrap()
        )),
        "{exported}"
    );
    assert!(std::path::Path::new(default).is_file());
    assert_eq!(rpc.exit_code().await, 0);
}

#[tokio::test]
async fn rpc_bash_runs_for_the_user_and_abort_bash_stops_it() {
    let env = env();
    let server = FakeServer::start(vec![]).await;
    let mut rpc = Rpc::spawn(env.agent(&server, &["--mode", "rpc"]));
    rpc.send(json!({"id": "b", "type": "bash", "command": "echo out; echo err >&2; exit 3"}))
        .await;
    let result = rpc.response("b").await["data"].clone();
    assert!(
        result["output"].as_str().unwrap().contains("out\nerr"),
        "{result}"
    );
    assert_eq!(result["exitCode"], 3);
    assert_eq!(result["cancelled"], false);
    assert_eq!(result["truncated"], false);

    rpc.send(json!({"id": "long", "type": "bash", "command": "echo $$ > bash.pid; sleep 30"}))
        .await;
    let pid = support::harness::wait_for_pid(&env.cwd.path().join("bash.pid")).await;
    rpc.send(json!({"id": "stop", "type": "abort_bash"})).await;
    let lines = rpc
        .until(|l| l["type"] == "response" && l["id"] == "long")
        .await;
    // (The command's `checkpoint` event comes before them.)
    let answers: Vec<&Value> = lines.iter().filter(|l| l["type"] == "response").collect();
    let ids: Vec<&str> = answers.iter().map(|l| l["id"].as_str().unwrap()).collect();
    assert_eq!(
        ids,
        ["stop", "long"],
        "abort_bash overtakes the command it stops"
    );
    let result = &answers[1]["data"];
    assert_eq!(result["cancelled"], true, "{result}");
    assert_eq!(result["exitCode"], json!(null));
    assert!(support::harness::wait_until_dead(pid).await);
    rpc.send(json!({"id": "idle", "type": "abort_bash"})).await;
    assert_eq!(rpc.response("idle").await["success"], true);
    assert_eq!(
        server.requests().len(),
        0,
        "the model never sees the user's commands"
    );
    assert_eq!(rpc.exit_code().await, 0);
}
