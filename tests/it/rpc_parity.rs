//! The commands pi's `RpcClient` sends that are about the agent's settings and sessions,
//! against the real binary in `--mode rpc`: each one takes effect (pi's client reads no
//! answer of the commands without data, so an unknown command would look like success
//! while nothing changed), and answers `success: false` only when it did not.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // test code fails loudly

use crate::support;

use serde_json::{Value, json};
use support::chat;
use support::env::{Env, env};
use support::process::Rpc;
use support::server::{FakeServer, Reply};

async fn call(rpc: &mut Rpc, id: &str, command: Value) -> Value {
    let mut command = command;
    command["id"] = json!(id);
    rpc.send(command).await;
    rpc.response(id).await
}

async fn state(rpc: &mut Rpc) -> Value {
    call(rpc, "state", json!({"type": "get_state"})).await["data"].clone()
}

/// An agent in RPC mode on provider `local`: `thinker` reasons, `plain` does not.
fn with_models(env: &Env, server: &FakeServer, model: &str, extra: &[&str]) -> Rpc {
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
    let mut cmd = support::process::command(env.home.path(), env.cwd.path());
    cmd.args(["--mode", "rpc", "--provider", "local", "--model", model])
        .args(extra);
    Rpc::spawn(cmd)
}

#[tokio::test]
async fn thinking_levels_are_set_and_cycled_within_what_the_model_offers() {
    let env = env();
    let server = chat::answering(&["thought about it"]).await;
    let mut rpc = with_models(&env, &server, "thinker", &[]);
    let set = call(
        &mut rpc,
        "t1",
        json!({"type": "set_thinking_level", "level": "high"}),
    )
    .await;
    assert_eq!(set["success"], true, "{set}");
    assert_eq!(set.get("data"), None);
    assert_eq!(state(&mut rpc).await["thinkingLevel"], "high");
    rpc.send(json!({"id": "p", "type": "prompt", "message": "think"}))
        .await;
    rpc.until(|l| l["type"] == "agent_end").await;
    assert_eq!(server.bodies()[0]["reasoning_effort"], "high");

    let cycled = call(&mut rpc, "c1", json!({"type": "cycle_thinking_level"})).await;
    assert_eq!(cycled["data"], json!({"level": "off"}), "{cycled}");
    let cycled = call(&mut rpc, "c2", json!({"type": "cycle_thinking_level"})).await;
    assert_eq!(cycled["data"], json!({"level": "minimal"}), "{cycled}");
    assert_eq!(state(&mut rpc).await["thinkingLevel"], "minimal");

    let bad = call(
        &mut rpc,
        "t2",
        json!({"type": "set_thinking_level", "level": "extreme"}),
    )
    .await;
    assert_eq!(bad["success"], false);
    assert!(
        bad["error"].as_str().unwrap().contains("`extreme`"),
        "{bad}"
    );
    assert_eq!(state(&mut rpc).await["thinkingLevel"], "minimal");

    // A model that does not reason: nothing to cycle, and the level is off.
    let switched = call(
        &mut rpc,
        "m",
        json!({"type": "set_model", "provider": "local", "modelId": "plain"}),
    )
    .await;
    assert_eq!(switched["success"], true, "{switched}");
    let cycled = call(&mut rpc, "c3", json!({"type": "cycle_thinking_level"})).await;
    assert_eq!(cycled["success"], true);
    assert_eq!(cycled["data"], Value::Null);
    let set = call(
        &mut rpc,
        "t3",
        json!({"type": "set_thinking_level", "level": "high"}),
    )
    .await;
    assert_eq!(set["success"], true, "{set}");
    assert_eq!(state(&mut rpc).await["thinkingLevel"], "off");
    assert_eq!(rpc.exit_code().await, 0);
}

#[tokio::test]
async fn auto_retry_and_auto_compaction_can_be_turned_off_and_a_retry_wait_ended() {
    let env = env();
    let unavailable = r#"{"error":{"message":"upstream unavailable"}}"#;
    let overflow = r#"{"error":{"message":"This model's maximum context length is 4096 tokens.","code":"context_length_exceeded"}}"#;
    let server = FakeServer::start(vec![
        Reply::status(503, unavailable),
        Reply::status(503, unavailable).with_header("retry-after", "30"),
        Reply::status(400, overflow),
    ])
    .await;
    let mut rpc = with_models(&env, &server, "plain", &[]);

    // No retries: a 503 ends the run at once.
    let off = call(
        &mut rpc,
        "r0",
        json!({"type": "set_auto_retry", "enabled": false}),
    )
    .await;
    assert_eq!(off["success"], true, "{off}");
    assert_eq!(state(&mut rpc).await["autoRetryEnabled"], false);
    rpc.send(json!({"id": "p1", "type": "prompt", "message": "one"}))
        .await;
    let lines = rpc.until(|l| l["type"] == "agent_end").await;
    assert_eq!(lines.last().unwrap()["status"], "failed");
    assert!(!lines.iter().any(|l| l["type"] == "auto_retry_start"));
    assert_eq!(server.requests().len(), 1);

    // Retries again: the wait the server asks for is ended by `abort_retry`, and the run
    // ends with the failure it was waiting to retry.
    call(
        &mut rpc,
        "r1",
        json!({"type": "set_auto_retry", "enabled": true}),
    )
    .await;
    rpc.send(json!({"id": "p2", "type": "prompt", "message": "two"}))
        .await;
    let started = rpc.until(|l| l["type"] == "auto_retry_start").await;
    assert_eq!(started.last().unwrap()["delayMs"], 30_000);
    rpc.send(json!({"id": "ar", "type": "abort_retry"})).await;
    let lines = rpc.until(|l| l["type"] == "agent_end").await;
    // The answer and the run's end race each other: the run may end before the answer is
    // written.
    let answer = match lines.iter().find(|l| l["id"] == "ar") {
        Some(answer) => answer.clone(),
        None => rpc.until(|l| l["id"] == "ar").await.pop().unwrap(),
    };
    assert_eq!(answer["success"], true, "{answer}");
    let ended = lines
        .iter()
        .find(|l| l["type"] == "auto_retry_end")
        .unwrap();
    assert_eq!(ended["success"], false, "{ended}");
    let end = lines.last().unwrap();
    assert_eq!(end["status"], "failed", "{end}");
    assert!(
        end["error"]
            .as_str()
            .unwrap()
            .contains("upstream unavailable"),
        "{end}"
    );
    assert_eq!(server.requests().len(), 2, "not retried");

    // No automatic compaction: an overflow fails the run instead of being summarised.
    call(
        &mut rpc,
        "ac",
        json!({"type": "set_auto_compaction", "enabled": false}),
    )
    .await;
    assert_eq!(state(&mut rpc).await["autoCompactionEnabled"], false);
    rpc.send(json!({"id": "p3", "type": "prompt", "message": "three"}))
        .await;
    let lines = rpc.until(|l| l["type"] == "agent_end").await;
    assert!(!lines.iter().any(|l| l["type"] == "auto_compaction_start"));
    assert_eq!(lines.last().unwrap()["status"], "failed");
    assert_eq!(server.requests().len(), 3, "no summary request");
    // While no retry waits, `abort_retry` has nothing to do, and that is no failure.
    let idle = call(&mut rpc, "ar2", json!({"type": "abort_retry"})).await;
    assert_eq!(idle["success"], true, "{idle}");
    assert_eq!(rpc.exit_code().await, 0);
}

#[tokio::test]
async fn a_session_is_named_its_fork_points_listed_and_cloned() {
    let env = env();
    let server = chat::answering(&["first answer", "second answer"]).await;
    let args = ["--mode", "rpc"];
    let mut rpc = Rpc::spawn(env.agent(&server, &args));
    for (id, text) in [("p1", "first question"), ("p2", "second question")] {
        rpc.send(json!({"id": id, "type": "prompt", "message": text}))
            .await;
        rpc.until(|l| l["type"] == "agent_end").await;
    }
    let empty = call(
        &mut rpc,
        "n0",
        json!({"type": "set_session_name", "name": "  "}),
    )
    .await;
    assert_eq!(empty["success"], false);
    assert!(
        empty["error"].as_str().unwrap().contains("cannot be empty"),
        "{empty}"
    );
    let named = call(
        &mut rpc,
        "n1",
        json!({"type": "set_session_name", "name": "  Release notes "}),
    )
    .await;
    assert_eq!(named["success"], true, "{named}");
    let before = state(&mut rpc).await;
    assert_eq!(before["sessionName"], "Release notes");

    let messages =
        call(&mut rpc, "m", json!({"type": "get_messages"})).await["data"]["messages"].clone();
    let user_entries: Vec<Value> = messages
        .as_array()
        .unwrap()
        .iter()
        .filter(|m| m["role"] == "user")
        .map(|m| m["entryId"].clone())
        .collect();
    let points = call(&mut rpc, "f", json!({"type": "get_fork_messages"})).await;
    assert_eq!(
        points["data"]["messages"],
        json!([
            {"entryId": user_entries[0], "text": "first question"},
            {"entryId": user_entries[1], "text": "second question"},
        ]),
        "{points}"
    );

    let cloned = call(&mut rpc, "c", json!({"type": "clone"})).await;
    assert_eq!(cloned["success"], true, "{cloned}");
    assert_eq!(cloned["data"]["cancelled"], false);
    let clone_file = cloned["data"]["sessionFile"].as_str().unwrap().to_string();
    assert_ne!(cloned["data"]["sessionId"], before["sessionId"]);
    let after = state(&mut rpc).await;
    assert_eq!(after["sessionId"], cloned["data"]["sessionId"]);
    assert_eq!(after["sessionFile"], clone_file.as_str());
    assert_eq!(after["sessionName"], "Release notes");
    let copied =
        call(&mut rpc, "m2", json!({"type": "get_messages"})).await["data"]["messages"].clone();
    assert_eq!(copied, messages, "the same conversation");
    assert_eq!(rpc.exit_code().await, 0);

    // Both files keep the name.
    for file in [before["sessionFile"].as_str().unwrap(), &clone_file] {
        let mut rpc = Rpc::spawn(env.agent(&server, &[&args[..], &["--session", file]].concat()));
        assert_eq!(
            state(&mut rpc).await["sessionName"],
            "Release notes",
            "{file}"
        );
        assert_eq!(rpc.exit_code().await, 0);
    }
}
