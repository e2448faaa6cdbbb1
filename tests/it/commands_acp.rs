//! ACP requests are the engine's commands: each operation an editor asks for through the real
//! ACP client (`support::acp`) is mapped onto one `Command`, read back from the agent's debug
//! log (`support::commands`), and checked for what it did (the updates, the model requests).
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // test code fails loudly

use crate::support;

use agent_client_protocol::v1::schema::{
    CancelNotification, SessionConfigOptionValue, SetSessionConfigOptionRequest,
    SetSessionModeRequest, StopReason,
};
use serde_json::{Value, json};
use support::acp::{Acp, choose, text_of};
use support::chat;
use support::commands::{logged_commands, logged_results};
use support::env::env;
use support::server::{FakeServer, Reply};

/// The logged commands without the prompt's stamped timestamp (which the test cannot know).
fn commands(home: &std::path::Path) -> Vec<Value> {
    let mut commands = logged_commands(home);
    for command in &mut commands {
        if let Some(input) = command.get_mut("input").and_then(Value::as_object_mut) {
            assert!(
                input.remove("timestamp").is_some(),
                "ACP stamps each prompt"
            );
        }
    }
    commands
}

#[tokio::test]
async fn acp_settings_commands_prompts_approvals_and_cancel_are_engine_commands() {
    let env = env();
    let server = FakeServer::start(vec![
        Reply::sse(chat::text("hello back")),
        Reply::sse(chat::tool_call("c1", "bash", json!({"command": "true"}))),
        Reply::sse(chat::text("ran it")),
    ])
    .await;
    let mut cmd = env.agent(&server, &["--mode", "acp"]);
    cmd.env("RUST_LOG", "debug");
    let mut acp = Acp::spawn(cmd).await;
    let id = acp.open(env.cwd.path()).await.session_id;
    let home = env.home.path();

    // The mode: the editor is told through the engine's config_changed.
    acp.request(SetSessionModeRequest::new(id.clone(), "auto"))
        .await
        .unwrap();
    let changed = acp
        .until(|u| u["sessionUpdate"] == "config_option_update")
        .await;
    assert!(
        changed
            .iter()
            .any(|u| u["sessionUpdate"] == "current_mode_update" && u["currentModeId"] == "auto"),
        "{changed:#?}"
    );
    // The model and the reasoning level (a level's name in any case).
    acp.request(SetSessionConfigOptionRequest::new(
        id.clone(),
        "model",
        SessionConfigOptionValue::value_id("openai/other-model".to_string()),
    ))
    .await
    .unwrap();
    acp.request(SetSessionConfigOptionRequest::new(
        id.clone(),
        "thinking",
        SessionConfigOptionValue::value_id("HIGH".to_string()),
    ))
    .await
    .unwrap();
    let said = async |acp: &mut Acp, text: &str| {
        let answer = acp.prompt(&id, text).await.unwrap().unwrap();
        assert_eq!(answer.stop_reason, StopReason::EndTurn);
        text_of(&acp.drain(), "agent_message_chunk")
    };
    assert_eq!(said(&mut acp, "/thinking low").await, "Thinking: low.");
    assert_eq!(
        said(&mut acp, "/model openai/test-model").await,
        "Model: openai/test-model."
    );
    let text = said(&mut acp, "/compact").await;
    assert!(text.contains("Nothing was compacted"), "{text}");
    let text = said(&mut acp, "/new").await;
    assert!(text.starts_with("Started a new session"), "{text}");
    // Steering with no run going is refused by the engine.
    acp.request(support::acp::steer(&id, "nothing runs"))
        .await
        .unwrap_err();
    assert_eq!(said(&mut acp, "hi").await, "hello back");
    assert_eq!(server.bodies()[0]["model"], "test-model");

    // An approval answer (ask mode), then a cancel.
    acp.request(SetSessionModeRequest::new(id.clone(), "ask"))
        .await
        .unwrap();
    let answer = acp.prompt(&id, "run true");
    let (_, _, responder) = acp.permission().await;
    choose(responder, "allow_once");
    assert_eq!(
        answer.await.unwrap().unwrap().stop_reason,
        StopReason::EndTurn
    );
    acp.cx
        .send_notification(CancelNotification::new(id.clone()))
        .unwrap();
    let text = |t: &str| json!({"parts": [{"kind": "text", "text": t}]});
    let expected = vec![
        json!({"type": "set_permission_mode", "mode": "auto"}),
        json!({"type": "set_model", "model": "openai/other-model"}),
        json!({"type": "set_thinking", "level": "high"}),
        json!({"type": "set_thinking", "level": "low"}),
        json!({"type": "set_model", "model": "openai/test-model"}),
        json!({"type": "compact"}),
        json!({"type": "new_session"}),
        json!({"type": "prompt", "input": text("nothing runs"), "delivery": "steer_running"}),
        json!({"type": "prompt", "input": text("hi"), "delivery": "follow_up"}),
        json!({"type": "set_permission_mode", "mode": "ask"}),
        json!({"type": "prompt", "input": text("run true"), "delivery": "follow_up"}),
        json!({"type": "approve", "toolCallId": "c1", "decision": "allow"}),
        json!({"type": "abort"}),
        json!({"type": "set_permission_mode", "mode": "ask"}),
    ];
    // The cancel is a notification: a request after it is handled after it. The editor is
    // told of the change after the answer (as the engine announces it): wait for that.
    acp.drain();
    acp.request(SetSessionModeRequest::new(id.clone(), "ask"))
        .await
        .unwrap();
    acp.until(|u| u["sessionUpdate"] == "config_option_update")
        .await;
    assert_eq!(commands(home), expected);
    // How each ended (in the order they finished, which for the approval, answered from
    // its own task, need not be the order they began).
    let results = logged_results(home);
    let ended = |result: &str| results.iter().filter(|r| r.starts_with(result)).count();
    assert_eq!(results.len(), expected.len(), "{results:?}");
    assert_eq!(ended("compact err"), 1, "{results:?}");
    assert_eq!(ended("prompt err: no run is active"), 1, "{results:?}");
    assert_eq!(ended("prompt ok"), 2, "{results:?}");
    assert_eq!(ended("approve ok"), 1, "{results:?}");
    assert_eq!(ended("abort ok"), 1, "{results:?}");
    assert_eq!(acp.exit_code().await, 0);
}

#[tokio::test]
async fn acp_compact_reports_its_result_once() {
    let env = env();
    std::fs::write(
        env.home.path().join("config.toml"),
        "[compaction]\nkeep_recent_tokens = 10\n",
    )
    .unwrap();
    let server = FakeServer::start(vec![
        Reply::sse(chat::text(&"long answer ".repeat(400))),
        Reply::sse(chat::text("short summary")),
    ])
    .await;
    let mut cmd = env.agent(&server, &["--mode", "acp"]);
    cmd.env("RUST_LOG", "debug");
    let mut acp = Acp::spawn(cmd).await;
    let id = acp.open(env.cwd.path()).await.session_id;
    acp.prompt(&id, "tell me everything")
        .await
        .unwrap()
        .unwrap();
    let answer = acp.prompt(&id, "/compact").await.unwrap().unwrap();
    assert_eq!(answer.stop_reason, StopReason::EndTurn);
    let said = |u: &Value| u.to_string().contains("Compacted the conversation");
    acp.until(said).await;
    // The engine's compaction notice says it; the command does not say it again (the
    // command's own text would come before its answer).
    let told: Vec<Value> = acp.wire_updates().into_iter().filter(said).collect();
    assert_eq!(told.len(), 1, "{told:#?}");
    assert_eq!(server.bodies().len(), 2, "the summary was asked for");
    assert_eq!(
        commands(env.home.path()).last().unwrap(),
        &json!({"type": "compact"})
    );
    assert_eq!(acp.exit_code().await, 0);
}
