//! RPC lines are the engine's commands: each line a front end sends is mapped onto one
//! `Command` (read back from the debug log, `support::commands`) and answered from its
//! outcome in pi's shapes; reads (`get_*`) are no commands. Each operation is checked for
//! the command logged and for what it did (request bodies, the session file, the events).
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // test code fails loudly

use crate::support;

use serde_json::{Value, json};
use support::chat;
use support::commands::{logged_commands, logged_results};
use support::env::{Env, env};
use support::process::Rpc;
use support::server::{FakeServer, Reply};

async fn call(rpc: &mut Rpc, id: &str, command: Value) -> Value {
    let mut command = command;
    command["id"] = json!(id);
    rpc.send(command.clone()).await;
    let answer = rpc.response(id).await;
    assert_eq!(answer["success"], true, "{command} → {answer}");
    answer
}

fn text(text: &str) -> Value {
    json!({"parts": [{"kind": "text", "text": text}]})
}

/// An agent in RPC mode, logging at debug level, on provider `local` (`thinker` reasons,
/// `plain` does not), with a custom command `/review` whose model is `local/plain`.
fn rpc(env: &Env, server: &FakeServer, extra: &[&str]) -> Rpc {
    std::fs::write(
        env.home.path().join("config.toml"),
        format!(
            "[providers.local]\napi = \"openai-chat\"\nbase_url = \"{}\"\n\
             [providers.local.models.thinker]\nreasoning = true\n\
             [providers.local.models.plain]\nreasoning = false\n",
            server.v1()
        ),
    )
    .unwrap();
    let commands = env.cwd.path().join(".agent/commands");
    std::fs::create_dir_all(&commands).unwrap();
    std::fs::write(
        commands.join("review.md"),
        "---\nmodel: local/plain\n---\nReview $1 with care.\n",
    )
    .unwrap();
    let mut cmd = support::process::command(env.home.path(), env.cwd.path());
    cmd.args(["--mode", "rpc", "--provider", "local", "--model", "thinker"])
        .args(extra)
        .env("RUST_LOG", "debug");
    Rpc::spawn(cmd)
}

#[tokio::test]
async fn rpc_settings_prompts_and_sessions_are_engine_commands() {
    let env = env();
    let server = FakeServer::start(vec![
        Reply::sse(chat::text("reviewed")),
        Reply::sse(chat::text("The summary.")),
    ])
    .await;
    let mut rpc = rpc(&env, &server, &[]);

    // A custom command runs with its own model for the run it starts.
    call(
        &mut rpc,
        "p",
        json!({"type": "prompt", "message": "/review main.rs"}),
    )
    .await;
    rpc.until(|l| l["type"] == "agent_end").await;
    assert_eq!(server.bodies()[0]["model"], "plain");
    let unknown = {
        rpc.send(json!({"id": "u", "type": "prompt", "message": "/nope"}))
            .await;
        rpc.response("u").await
    };
    assert_eq!(unknown["success"], false);
    assert!(
        unknown["error"].as_str().unwrap().contains("/nope"),
        "{unknown}"
    );

    let model = call(
        &mut rpc,
        "m",
        json!({"type": "set_model", "provider": "local", "modelId": "plain"}),
    )
    .await;
    assert_eq!(model["data"]["modelId"], "plain");
    assert_eq!(model["data"]["provider"], "local");
    // A model that does not reason stays off.
    call(
        &mut rpc,
        "t",
        json!({"type": "set_thinking_level", "level": "high"}),
    )
    .await;
    let cycled = call(&mut rpc, "c", json!({"type": "cycle_thinking_level"})).await;
    assert_eq!(cycled["data"], Value::Null);
    call(
        &mut rpc,
        "q",
        json!({"type": "set_follow_up_mode", "mode": "all"}),
    )
    .await;
    // One short exchange, compacted because it was asked for (issue 35 §1.10).
    rpc.send(json!({"id": "k", "type": "compact"})).await;
    let compacted = rpc.response("k").await;
    assert_eq!(compacted["success"], true, "{compacted}");
    let shell = call(
        &mut rpc,
        "b",
        json!({"type": "bash", "command": "echo from-the-user; exit 3"}),
    )
    .await;
    assert_eq!(shell["data"]["exitCode"], 3);
    assert!(
        shell["data"]["output"]
            .as_str()
            .unwrap()
            .contains("from-the-user")
    );

    rpc.send(json!({"id": "n", "type": "new_session"})).await;
    let lines = rpc
        .until(|l| l["type"] == "response" && l["id"] == "n")
        .await;
    let answer = lines.last().unwrap();
    let changed = lines
        .iter()
        .find(|l| l["type"] == "session_changed")
        .unwrap();
    assert_eq!(changed["session"]["id"], answer["data"]["sessionId"]);
    let state = call(&mut rpc, "s", json!({"type": "get_state"})).await;
    assert_eq!(state["data"]["sessionId"], answer["data"]["sessionId"]);
    assert_eq!(state["data"]["sessionFile"], answer["data"]["sessionFile"]);
    assert_eq!(state["data"]["model"], "plain");
    assert_eq!(state["data"]["thinkingLevel"], "off");
    assert_eq!(state["data"]["followUpMode"], "all");
    call(
        &mut rpc,
        "name",
        json!({"type": "set_session_name", "name": " renamed "}),
    )
    .await;
    call(
        &mut rpc,
        "ac",
        json!({"type": "set_auto_compaction", "enabled": false}),
    )
    .await;
    call(&mut rpc, "ar", json!({"type": "abort_retry"})).await;
    assert_eq!(rpc.exit_code().await, 0);

    assert_eq!(
        logged_commands(env.home.path()),
        [
            json!({"type": "prompt", "input": text("/review main.rs"), "delivery": "start"}),
            json!({"type": "prompt", "input": text("/nope"), "delivery": "start"}),
            json!({"type": "set_model", "model": {"provider": "local", "model": "plain"}}),
            json!({"type": "set_thinking", "level": "high"}),
            json!({"type": "cycle_thinking"}),
            json!({"type": "set_queue_mode", "queue": "follow_up", "mode": "all"}),
            json!({"type": "compact"}),
            json!({"type": "run_shell", "command": "echo from-the-user; exit 3"}),
            json!({"type": "new_session"}),
            json!({"type": "set_session_name", "name": " renamed "}),
            json!({"type": "set_auto_compaction", "enabled": false}),
            json!({"type": "abort_retry"}),
        ]
    );
    let results = logged_results(env.home.path());
    assert_eq!(results.len(), 12, "{results:#?}");
    assert!(results[1].starts_with("prompt err: "), "{results:#?}");
    assert!(results[6].starts_with("compact ok"), "{results:#?}");
    assert!(
        results
            .iter()
            .enumerate()
            .all(|(i, r)| i == 1 || i == 6 || r.ends_with(" ok")),
        "{results:#?}"
    );
}

/// The entry ids of the context's messages.
async fn entries(rpc: &mut Rpc) -> Vec<String> {
    let messages = call(rpc, "g", json!({"type": "get_messages"})).await;
    messages["data"]["messages"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["entryId"].as_str().unwrap().to_string())
        .collect()
}

#[tokio::test]
async fn rpc_time_travel_is_engine_commands_and_a_branch_switch_answers_the_head() {
    let env = env();
    let server = chat::answering(&["first answer", "second answer"]).await;
    let mut rpc = rpc(&env, &server, &[]);
    for (id, message) in [("p1", "first question"), ("p2", "second question")] {
        call(&mut rpc, id, json!({"type": "prompt", "message": message})).await;
        rpc.until(|l| l["type"] == "agent_end").await;
    }
    let ids = entries(&mut rpc).await;
    assert_eq!(ids.len(), 4);

    let rewound = call(
        &mut rpc,
        "r",
        json!({"type": "rewind", "entryId": ids[2], "restore": "conversation"}),
    )
    .await;
    assert_eq!(rewound["data"]["text"], "second question");
    assert_eq!(entries(&mut rpc).await, ids[..2]);
    let undone = call(&mut rpc, "u", json!({"type": "undo_rewind"})).await;
    assert_eq!(undone["data"]["restored"], json!([]));
    assert_eq!(entries(&mut rpc).await, ids);

    let switched = call(
        &mut rpc,
        "sb",
        json!({"type": "switch_branch", "entryId": ids[1]}),
    )
    .await;
    assert_eq!(switched["data"]["head"], ids[1].as_str());
    let tree = call(&mut rpc, "t", json!({"type": "get_tree"})).await;
    assert_eq!(tree["data"]["head"], ids[1].as_str());
    let state = call(&mut rpc, "s", json!({"type": "get_state"})).await;
    assert_eq!(switched["data"]["sessionId"], state["data"]["sessionId"]);

    let forked = call(&mut rpc, "f", json!({"type": "fork", "entryId": ids[0]})).await;
    assert_eq!(forked["data"]["text"], "first question");
    assert_ne!(forked["data"]["sessionId"], state["data"]["sessionId"]);
    let cloned = call(&mut rpc, "c", json!({"type": "clone"})).await;
    assert_eq!(cloned["data"].get("text"), None, "{cloned}");
    let state = call(&mut rpc, "s2", json!({"type": "get_state"})).await;
    assert_eq!(state["data"]["sessionId"], cloned["data"]["sessionId"]);
    assert_eq!(state["data"]["sessionFile"], cloned["data"]["sessionFile"]);
    assert_eq!(rpc.exit_code().await, 0);

    let logged = logged_commands(env.home.path());
    let kinds: Vec<&str> = logged.iter().map(|c| c["type"].as_str().unwrap()).collect();
    assert_eq!(
        kinds,
        [
            "prompt",
            "prompt",
            "rewind",
            "undo_rewind",
            "switch_branch",
            "fork",
            "clone"
        ]
    );
    assert_eq!(
        logged[2],
        json!({"type": "rewind", "target": {"kind": "entry", "entryId": ids[2]},
               "restore": "conversation", "force": false})
    );
    assert_eq!(
        logged[4],
        json!({"type": "switch_branch", "entryId": ids[1], "restoreFiles": false, "force": false})
    );
    assert!(
        logged_results(env.home.path())
            .iter()
            .all(|r| r.ends_with(" ok"))
    );
}

#[tokio::test]
async fn rpc_approval_requests_carry_the_diff_the_failure_or_the_command_and_answers_are_approve_commands()
 {
    let env = env();
    std::fs::write(env.cwd.path().join("notes.txt"), "old line\n").unwrap();
    let calls = [
        (
            "w1",
            "write",
            json!({"path": "new.txt", "content": "fresh\n"}),
        ),
        (
            "e1",
            "edit",
            json!({"path": "notes.txt", "edits": [{"oldText": "old line", "newText": "new line"}]}),
        ),
        (
            "e2",
            "edit",
            json!({"path": "notes.txt", "edits": [{"oldText": "not there", "newText": "x"}]}),
        ),
        ("b1", "bash", json!({"command": "echo approved"})),
    ];
    let server = FakeServer::start(vec![
        Reply::sse(chat::tool_calls(&calls)),
        Reply::sse(chat::text("done")),
    ])
    .await;
    let mut rpc = rpc(
        &env,
        &server,
        &["--permission-mode", "ask", "--sandbox", "off"],
    );
    rpc.send(json!({"type": "prompt", "message": "change things"}))
        .await;
    let answers = [
        json!({"decision": "allow"}),
        json!({"decision": "deny", "message": "not like that"}),
        json!({"decision": "deny"}),
        json!({"decision": "allow_session"}),
    ];
    let mut requests = Vec::new();
    for answer in &answers {
        let lines = rpc.until(|l| l["type"] == "tool_approval_request").await;
        let request = lines.last().unwrap().clone();
        let mut approve = answer.clone();
        approve["type"] = json!("approve");
        approve["toolCallId"] = request["toolCallId"].clone();
        rpc.send(approve).await;
        requests.push(request);
    }
    rpc.until(|l| l["type"] == "agent_end").await;
    let ids: Vec<&str> = requests
        .iter()
        .map(|r| r["toolCallId"].as_str().unwrap())
        .collect();
    assert_eq!(ids, ["w1", "e1", "e2", "b1"]);

    let write = &requests[0]["preview"];
    assert_eq!(write["kind"], "diff", "{write}");
    assert_eq!(write["newFile"], true);
    assert!(
        write["diff"].as_str().unwrap().contains("+fresh"),
        "{write}"
    );
    let edit = &requests[1]["preview"];
    assert_eq!(edit["kind"], "diff", "{edit}");
    assert_eq!(edit["path"], "notes.txt");
    assert!(
        edit["diff"]
            .as_str()
            .unwrap()
            .contains("-old line\n+new line"),
        "{edit}"
    );
    let failing = &requests[2]["preview"];
    assert_eq!(failing["kind"], "unavailable", "{failing}");
    assert!(!failing["why"].as_str().unwrap().is_empty(), "{failing}");
    assert_eq!(
        requests[3]["preview"],
        json!({"kind": "command", "command": "echo approved", "unsandboxedAllowed": true})
    );
    // What the answers did: the write ran, the edits did not, the command ran.
    assert_eq!(
        std::fs::read_to_string(env.cwd.path().join("new.txt")).unwrap(),
        "fresh\n"
    );
    assert_eq!(
        std::fs::read_to_string(env.cwd.path().join("notes.txt")).unwrap(),
        "old line\n"
    );
    let results = &server.bodies()[1]["messages"];
    assert!(results.to_string().contains("not like that"), "{results}");
    assert!(results.to_string().contains("approved"), "{results}");
    assert_eq!(rpc.exit_code().await, 0);

    let approvals: Vec<Value> = logged_commands(env.home.path())
        .into_iter()
        .filter(|c| c["type"] == "approve")
        .collect();
    assert_eq!(
        approvals,
        [
            json!({"type": "approve", "toolCallId": "w1", "decision": "allow"}),
            json!({"type": "approve", "toolCallId": "e1", "decision": {"deny": "not like that"}}),
            json!({"type": "approve", "toolCallId": "e2", "decision": {"deny": null}}),
            json!({"type": "approve", "toolCallId": "b1", "decision": "allow_session"}),
        ]
    );
}
