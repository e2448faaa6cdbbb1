//! `--mode acp` driven as an editor drives it, through the protocol crate's own client side
//! (tests/support/acp.rs) against the loopback model server: initialize, sessions (new,
//! resumable from the terminal, load with replay), prompts and what they stream, stop
//! reasons, follow-ups and steering, modes and options, commands, and bad input.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // test code fails loudly

use crate::support;

use agent_client_protocol::schema::ProtocolVersion;
use agent_client_protocol::v1::schema::{
    ContentBlock, EmbeddedResource, EmbeddedResourceResource, ImageContent, LoadSessionRequest,
    ResourceLink, SessionConfigOptionValue, SetSessionConfigOptionRequest, SetSessionModeRequest,
    StopReason, TextResourceContents,
};
use serde_json::{Value, json};
use support::acp::{Acp, kinds, text_of};
use support::chat;
use support::env::env;
use support::process::{Rpc, run};
use support::server::{FakeServer, Gate, Reply};

/// A chat stream that says `text` and then stops for `finish` (e.g. "length").
fn stops_with(text: &str, finish: &str) -> Vec<String> {
    let chunk = |delta: Value, finish: Option<&str>| {
        chat::frame(
            json!({"id": "x", "object": "chat.completion.chunk", "model": "test-model",
                           "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]}),
        )
    };
    vec![
        chunk(json!({"role": "assistant", "content": text}), None),
        chunk(json!({}), Some(finish)),
        "data: [DONE]\n\n".to_string(),
    ]
}

fn refusing(refusal: &str) -> Vec<String> {
    let chunk = |delta: Value, finish: Option<&str>| {
        chat::frame(
            json!({"id": "x", "object": "chat.completion.chunk", "model": "test-model",
                           "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]}),
        )
    };
    vec![
        chunk(json!({"role": "assistant", "refusal": refusal}), None),
        chunk(json!({}), Some("stop")),
        "data: [DONE]\n\n".to_string(),
    ]
}

#[tokio::test]
async fn acp_initialize_advertises_sessions_images_and_embedded_context() {
    let env = env();
    let server = FakeServer::start(vec![]).await;
    let acp = Acp::spawn(env.agent(&server, &["--mode", "acp"])).await;
    let init = acp.initialize().await;
    assert_eq!(init.protocol_version, ProtocolVersion::V1);
    let capabilities = &init.agent_capabilities;
    assert!(capabilities.load_session);
    assert!(capabilities.prompt_capabilities.image);
    assert!(capabilities.prompt_capabilities.embedded_context);
    assert!(!capabilities.prompt_capabilities.audio);
    // The MCP client speaks stdio (always taken) and streamable HTTP, not the old SSE.
    assert!(capabilities.mcp_capabilities.http && !capabilities.mcp_capabilities.sse);
    assert!(init.auth_methods.is_empty(), "a provider is configured");
    assert_eq!(acp.exit_code().await, 0);
}

#[tokio::test]
async fn acp_without_a_key_offers_how_to_set_one_and_refuses_sessions() {
    let env = env();
    // The real OpenAI endpoint (never reached): it needs a key, and none is set.
    let mut cmd = support::process::command(env.home.path(), env.cwd.path());
    cmd.args(["--mode", "acp"]);
    let acp = Acp::spawn(cmd).await;
    let init = acp.initialize().await;
    let method = serde_json::to_value(&init.auth_methods).unwrap();
    assert!(
        method.to_string().contains("OPENAI_API_KEY"),
        "the auth method says how: {method}"
    );
    let refused = acp
        .request(agent_client_protocol::v1::schema::NewSessionRequest::new(
            env.cwd.path(),
        ))
        .await
        .unwrap_err();
    assert!(refused.message.contains("OPENAI_API_KEY"), "{refused:?}");
    assert_eq!(acp.exit_code().await, 0);
}

#[tokio::test]
async fn acp_new_session_streams_thinking_and_text_and_is_resumable_from_the_terminal() {
    let env = env();
    let server = FakeServer::start(vec![
        Reply::sse(chat::thinking_then_text("pondering", "The answer")),
        // Its words apart in time: deltas that queue up go as one chunk.
        Reply::sse(chat::text("Hello there friend")).slowly(std::time::Duration::from_millis(300)),
    ])
    .await;
    let mut acp = Acp::spawn(env.agent(&server, &["--mode", "acp"])).await;
    let session = acp.open(env.cwd.path()).await;
    let id = session.session_id.clone();
    let modes = session.modes.as_ref().unwrap();
    assert_eq!(modes.current_mode_id.to_string(), "ask");
    let options = serde_json::to_value(session.config_options.as_ref().unwrap()).unwrap();
    assert_eq!(options[0]["id"], "mode");
    assert_eq!(options[1]["id"], "model");
    assert_eq!(options[1]["category"], "model");
    assert_eq!(options[1]["currentValue"], "openai/test-model");
    assert_eq!(options[2]["category"], "thought_level");
    let commands = acp
        .until(|u| u["sessionUpdate"] == "available_commands_update")
        .await;
    let names = commands.last().unwrap()["availableCommands"].to_string();
    assert!(
        names.contains("\"compact\"") && names.contains("\"new\""),
        "{names}"
    );

    let answer = acp.prompt(&id, "think first").await.unwrap().unwrap();
    assert_eq!(answer.stop_reason, StopReason::EndTurn);
    let updates = acp.drain();
    assert_eq!(text_of(&updates, "agent_thought_chunk"), "pondering");
    assert_eq!(text_of(&updates, "agent_message_chunk"), "The answer");
    let answer = acp.prompt(&id, "hi").await.unwrap().unwrap();
    assert_eq!(answer.stop_reason, StopReason::EndTurn);
    let updates = acp.drain();
    let chunks = updates
        .iter()
        .filter(|u| u["sessionUpdate"] == "agent_message_chunk")
        .count();
    assert!(chunks >= 2, "streamed as it came: {updates:#?}");
    assert_eq!(
        text_of(&updates, "agent_message_chunk"),
        "Hello there friend"
    );
    assert!(kinds(&updates).contains(&"usage_update".to_string()));
    assert_eq!(acp.exit_code().await, 0);

    // A real session file, resumed from the terminal by its id.
    let file = env.only_session();
    assert!(file.to_string_lossy().contains(&id.to_string()), "{file:?}");
    let later = chat::answering(&["still here"]).await;
    let out = run(env.agent(&later, &["--mode", "json", "-r", &id.to_string(), "again"])).await;
    assert_eq!(out.code, 0, "{}", out.stderr);
    let sent = later.bodies()[0]["messages"].to_string();
    assert!(
        sent.contains("think first")
            && sent.contains("Hello there friend")
            && sent.contains("again"),
        "{sent}"
    );
}

#[tokio::test]
async fn acp_prompt_text_links_embedded_files_and_images_reach_the_model() {
    let env = env();
    std::fs::write(
        env.home.path().join("config.toml"),
        "[providers.openai.models.test-model]\nimages = true\n",
    )
    .unwrap();
    let server = chat::answering(&["seen"]).await;
    let acp = Acp::spawn(env.agent(&server, &["--mode", "acp"])).await;
    let id = acp.open(env.cwd.path()).await.session_id;
    let blocks = vec![
        ContentBlock::from("what is wrong here?"),
        ContentBlock::Image(ImageContent::new("iVBORw0KGgo=", "image/png")),
        ContentBlock::ResourceLink(ResourceLink::new("main.rs", "file:///repo/src/main.rs")),
        ContentBlock::Resource(EmbeddedResource::new(
            EmbeddedResourceResource::TextResourceContents(TextResourceContents::new(
                "fn lib() {}",
                "file:///repo/src/lib.rs",
            )),
        )),
    ];
    let answer = acp.prompt_blocks(&id, blocks).await.unwrap().unwrap();
    assert_eq!(answer.stop_reason, StopReason::EndTurn);
    let content = &server.bodies()[0]["messages"][1]["content"];
    assert_eq!(content[0]["text"], "what is wrong here?", "{content}");
    assert_eq!(
        content[1]["image_url"]["url"], "data:image/png;base64,iVBORw0KGgo=",
        "{content}"
    );
    assert_eq!(content[2]["text"], "[@main.rs](file:///repo/src/main.rs)");
    assert_eq!(
        content[3]["text"],
        "<context ref=\"file:///repo/src/lib.rs\">\nfn lib() {}\n</context>"
    );
    assert_eq!(acp.exit_code().await, 0);
}

#[tokio::test]
async fn acp_stop_reasons_say_how_each_turn_ended() {
    let env = env();
    let server = FakeServer::start(vec![
        Reply::sse(stops_with("cut off mid", "length")),
        Reply::sse(refusing("I can't help with that.")),
        Reply::status(
            400,
            "{\"error\":{\"message\":\"the model does not exist\"}}",
        ),
    ])
    .await;
    let mut acp = Acp::spawn(env.agent(&server, &["--mode", "acp"])).await;
    let id = acp.open(env.cwd.path()).await.session_id;
    let answer = acp.prompt(&id, "long").await.unwrap().unwrap();
    assert_eq!(answer.stop_reason, StopReason::MaxTokens);
    let answer = acp.prompt(&id, "bad").await.unwrap().unwrap();
    assert_eq!(answer.stop_reason, StopReason::Refusal);
    let updates = acp.drain();
    assert!(
        text_of(&updates, "agent_message_chunk").contains("I can't help with that."),
        "the refusal is shown: {updates:#?}"
    );
    let failed = acp.prompt(&id, "fail").await.unwrap().unwrap_err();
    assert!(
        failed.message.contains("the model does not exist"),
        "a failed run answers with its error: {failed:?}"
    );
    assert_eq!(acp.exit_code().await, 0);

    // A loop limit.
    let server = FakeServer::start(vec![Reply::sse(chat::tool_call("c1", "ls", json!({})))]).await;
    let acp = Acp::spawn(env.agent(&server, &["--mode", "acp", "--max-turns", "1"])).await;
    let id = acp.open(env.cwd.path()).await.session_id;
    let answer = acp.prompt(&id, "look around").await.unwrap().unwrap();
    assert_eq!(answer.stop_reason, StopReason::MaxTurnRequests);
    assert_eq!(acp.exit_code().await, 0);
}

#[tokio::test]
async fn acp_a_prompt_during_a_run_is_a_follow_up_answered_when_its_turn_ends() {
    let env = env();
    let gate = Gate::new();
    let server = FakeServer::start(vec![
        Reply::sse(chat::text("first answer")).after(&gate),
        Reply::sse(chat::text("second answer")),
    ])
    .await;
    let mut acp = Acp::spawn(env.agent(&server, &["--mode", "acp"])).await;
    let id = acp.open(env.cwd.path()).await.session_id;
    let first = acp.prompt(&id, "one");
    server.wait_for_requests(1).await;
    let second = acp.prompt(&id, "two");
    // The agent takes requests in order: once a later one is answered, the prompt was
    // queued. Then the first answer may come.
    acp.request(SetSessionModeRequest::new(id.clone(), "ask"))
        .await
        .unwrap();
    gate.open();
    assert_eq!(
        first.await.unwrap().unwrap().stop_reason,
        StopReason::EndTurn
    );
    assert_eq!(
        second.await.unwrap().unwrap().stop_reason,
        StopReason::EndTurn
    );
    let messages = &server.bodies()[1]["messages"];
    let sent = messages.to_string();
    assert!(
        sent.contains("\"one\"") && sent.contains("first answer") && sent.contains("\"two\""),
        "the follow-up comes after the first turn: {sent}"
    );
    let text = text_of(&acp.drain(), "agent_message_chunk");
    assert_eq!(text, "first answersecond answer");
    assert_eq!(acp.exit_code().await, 0);
}

#[tokio::test]
async fn acp_steer_delivers_a_message_and_skips_the_remaining_calls() {
    let env = env();
    let server = FakeServer::start(vec![
        Reply::sse(chat::busy_until_go_then_another()),
        Reply::sse(chat::text("steered")),
    ])
    .await;
    let mut acp =
        Acp::spawn(env.agent(&server, &["--mode", "acp", "--permission-mode", "auto"])).await;
    let id = acp.open(env.cwd.path()).await.session_id;
    let idle = acp
        .request(support::acp::steer(&id, "nothing runs"))
        .await
        .unwrap_err();
    assert!(idle.message.contains("no run is active"), "{idle:?}");
    let answer = acp.prompt(&id, "run both");
    acp.until(|u| u["sessionUpdate"] == "tool_call" && u["toolCallId"] == "c1")
        .await;
    acp.request(support::acp::steer(&id, "stop after this one"))
        .await
        .unwrap();
    std::fs::write(env.cwd.path().join("go"), "").unwrap();
    assert_eq!(
        answer.await.unwrap().unwrap().stop_reason,
        StopReason::EndTurn
    );
    let updates = acp.drain();
    let skipped = updates
        .iter()
        .find(|u| u["toolCallId"] == "c2" && u["status"] == "failed")
        .unwrap_or_else(|| panic!("c2 is answered as skipped: {updates:#?}"));
    assert!(
        skipped["content"]
            .to_string()
            .contains("Skipped due to queued user message."),
        "{skipped}"
    );
    let sent = server.bodies()[1]["messages"].to_string();
    assert!(sent.contains("stop after this one"), "{sent}");
    assert_eq!(acp.exit_code().await, 0);
}

#[tokio::test]
async fn acp_load_replays_the_conversation_before_answering_and_continues_it() {
    let env = env();
    let server = FakeServer::start(vec![
        Reply::sse(chat::tool_call(
            "c1",
            "bash",
            json!({"command": "echo remembered"}),
        )),
        Reply::sse(chat::text("the number is 42")),
        Reply::sse(chat::text("it was 42")),
    ])
    .await;
    let acp = Acp::spawn(env.agent(&server, &["--mode", "acp", "--permission-mode", "auto"])).await;
    let id = acp.open(env.cwd.path()).await.session_id;
    acp.prompt(&id, "remember 42").await.unwrap().unwrap();
    assert_eq!(acp.exit_code().await, 0);

    let mut acp = Acp::spawn(env.agent(&server, &["--mode", "acp"])).await;
    acp.initialize().await;
    let loaded = acp
        .request(LoadSessionRequest::new(id.clone(), env.cwd.path()))
        .await
        .unwrap();
    assert_eq!(loaded.modes.unwrap().current_mode_id.to_string(), "ask");
    // Everything replayed was sent before the answer.
    let replayed = acp.drain();
    assert_eq!(
        kinds(&replayed)[..4],
        [
            "user_message_chunk",
            "tool_call",
            "tool_call_update",
            "agent_message_chunk"
        ],
        "{replayed:#?}"
    );
    assert_eq!(text_of(&replayed, "user_message_chunk"), "remember 42");
    assert_eq!(replayed[2]["status"], "completed");
    assert!(replayed[2]["content"].to_string().contains("remembered"));
    assert_eq!(
        text_of(&replayed, "agent_message_chunk"),
        "the number is 42"
    );
    let answer = acp.prompt(&id, "what was it?").await.unwrap().unwrap();
    assert_eq!(answer.stop_reason, StopReason::EndTurn);
    let sent = server.bodies()[2]["messages"].to_string();
    assert!(
        sent.contains("remember 42") && sent.contains("what was it?"),
        "{sent}"
    );
    let missing = acp
        .request(LoadSessionRequest::new("0123456789abcdef", env.cwd.path()))
        .await
        .unwrap_err();
    assert!(missing.message.contains("0123456789abcdef"), "{missing:?}");
    assert_eq!(acp.exit_code().await, 0);
}

#[tokio::test]
async fn acp_modes_and_options_switch_permissions_model_and_thinking() {
    let env = env();
    let server = FakeServer::start(vec![
        Reply::sse(chat::tool_call(
            "c1",
            "bash",
            json!({"command": "touch made"}),
        )),
        Reply::sse(chat::text("could not")),
        Reply::sse(chat::text("from the other model")),
    ])
    .await;
    let mut acp = Acp::spawn(env.agent(&server, &["--mode", "acp"])).await;
    let id = acp.open(env.cwd.path()).await.session_id;
    acp.request(SetSessionModeRequest::new(id.clone(), "read-only"))
        .await
        .unwrap();
    let changed = acp
        .until(|u| u["sessionUpdate"] == "current_mode_update")
        .await;
    assert_eq!(changed.last().unwrap()["currentModeId"], "read-only");
    // Read-only: the call is refused without asking.
    acp.prompt(&id, "make a file").await.unwrap().unwrap();
    let updates = acp.drain();
    let refused = updates
        .iter()
        .find(|u| u["toolCallId"] == "c1" && u["status"] == "failed")
        .unwrap_or_else(|| panic!("{updates:#?}"));
    assert!(
        refused["content"].to_string().contains("read-only mode"),
        "{refused}"
    );
    assert!(!env.cwd.path().join("made").exists());

    let options = acp
        .request(SetSessionConfigOptionRequest::new(
            id.clone(),
            "model",
            SessionConfigOptionValue::value_id("openai/other-model".to_string()),
        ))
        .await
        .unwrap();
    let options = serde_json::to_value(&options.config_options).unwrap();
    assert_eq!(
        options[1]["currentValue"], "openai/other-model",
        "{options}"
    );
    let options = acp
        .request(SetSessionConfigOptionRequest::new(
            id.clone(),
            "thinking",
            SessionConfigOptionValue::value_id("high".to_string()),
        ))
        .await
        .unwrap();
    let options = serde_json::to_value(&options.config_options).unwrap();
    assert_eq!(options[2]["currentValue"], "high", "{options}");
    acp.prompt(&id, "again").await.unwrap().unwrap();
    assert_eq!(server.bodies()[2]["model"], "other-model");
    let wrong = acp
        .request(SetSessionModeRequest::new(id.clone(), "yolo"))
        .await
        .unwrap_err();
    assert!(wrong.message.contains("unknown mode `yolo`"), "{wrong:?}");
    assert_eq!(acp.exit_code().await, 0);
}

#[tokio::test]
async fn acp_commands_run_from_a_prompt_and_other_slashes_are_prompts() {
    let env = env();
    let server = chat::answering(&["about hosts"]).await;
    let mut acp = Acp::spawn(env.agent(&server, &["--mode", "acp"])).await;
    let id = acp.open(env.cwd.path()).await.session_id;
    acp.until(|u| u["sessionUpdate"] == "available_commands_update")
        .await;
    let said = async |acp: &mut Acp, text: &str| {
        let answer = acp.prompt(&id, text).await.unwrap().unwrap();
        assert_eq!(answer.stop_reason, StopReason::EndTurn);
        text_of(&acp.drain(), "agent_message_chunk")
    };
    let text = said(&mut acp, "/thinking medium").await;
    assert_eq!(text, "Thinking: medium.");
    let text = said(&mut acp, "/model").await;
    assert!(text.starts_with("Model: openai/test-model."), "{text}");
    let text = said(&mut acp, "/compact").await;
    assert!(text.contains("Nothing was compacted"), "{text}");
    let text = said(&mut acp, "/new").await;
    assert!(text.starts_with("Started a new session"), "{text}");
    assert!(text.contains(&format!("agent -r {id}")), "{text}");
    let text = said(&mut acp, "/help").await;
    assert!(text.contains("/compact"), "{text}");
    assert!(server.bodies().is_empty(), "commands never reach the model");
    let text = said(&mut acp, "/etc/hosts looks wrong").await;
    assert_eq!(text, "about hosts");
    assert_eq!(acp.exit_code().await, 0);
    // The conversation after `/new` went to the new session.
    let file = env.only_session();
    assert!(
        !file.to_string_lossy().contains(&id.to_string()),
        "{file:?}"
    );
}

#[tokio::test]
async fn acp_bad_input_gets_json_rpc_errors_and_the_process_lives() {
    let env = env();
    let server = FakeServer::start(vec![]).await;
    let mut raw = Rpc::spawn(env.agent(&server, &["--mode", "acp"]));
    raw.send_raw("this is not json").await;
    let answer = raw.next().await;
    assert_eq!(answer["error"]["code"], -32700, "{answer}");
    raw.send_bytes(b"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"x\",\"p\":\"\xff\"}")
        .await;
    let answer = raw.next().await;
    assert_eq!(answer["error"]["code"], -32700, "{answer}");
    assert!(answer.to_string().contains("not valid UTF-8"), "{answer}");
    raw.send_raw("[1, 2]").await;
    assert_eq!(raw.next().await["error"]["code"], -32600);
    raw.send(json!({"jsonrpc": "2.0", "id": 2, "method": "teleport", "params": {}}))
        .await;
    let answer = raw.next().await;
    assert_eq!(answer["id"], 2);
    assert!(answer["error"].is_object(), "{answer}");
    raw.send(json!({"jsonrpc": "2.0", "id": 3, "method": "initialize",
                    "params": {"protocolVersion": 1, "clientCapabilities": {}}}))
        .await;
    let answer = raw.next().await;
    assert_eq!(answer["id"], 3);
    assert_eq!(answer["result"]["protocolVersion"], 1, "{answer}");
    raw.send(
        json!({"jsonrpc": "2.0", "id": 4, "method": "session/prompt",
                    "params": {"sessionId": "nope", "prompt": []}}),
    )
    .await;
    let answer = raw.next().await;
    assert_eq!(answer["id"], 4);
    assert!(answer["error"].is_object(), "{answer}");
    raw.send(json!({"jsonrpc": "2.0", "id": 5, "method": "session/new",
                    "params": {"cwd": "relative/dir", "mcpServers": []}}))
        .await;
    let answer = raw.next().await;
    assert!(
        answer["error"]["message"]
            .to_string()
            .contains("not an absolute path"),
        "{answer}"
    );
    assert_eq!(raw.exit_code().await, 0);
}

#[tokio::test]
async fn acp_refuses_a_prompt_or_session_flags_as_a_usage_error() {
    let env = env();
    let server = FakeServer::start(vec![]).await;
    for extra in [&["hello"][..], &["-c"], &["--no-session"]] {
        let mut args = vec!["--mode", "acp"];
        args.extend_from_slice(extra);
        let out = run(env.agent(&server, &args)).await;
        assert_eq!(out.code, 2, "{extra:?}: {}", out.stderr);
        assert!(
            out.stderr.contains("does not go with --mode acp"),
            "{}",
            out.stderr
        );
        assert!(out.stdout.is_empty(), "{}", out.stdout);
    }
}

/// An editor that stops reading (closes its end of our output, e.g. right after an answer)
/// has left: the agent's next write fails and it exits 0, as when the input ends, not 1 as
/// for a broken connection. Its input stays open, so only the failed write can end it.
#[tokio::test]
async fn an_editor_that_stops_reading_has_left_and_the_agent_exits_0() {
    use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
    let env = env();
    let server = FakeServer::start(vec![]).await;
    let mut cmd = env.agent(&server, &["--mode", "acp"]);
    cmd.stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::null());
    let mut child = cmd.spawn().unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let mut stdout = BufReader::new(child.stdout.take().unwrap()).lines();
    let initialize = |id: u32| {
        format!(
            "{}\n",
            json!({"jsonrpc": "2.0", "id": id, "method": "initialize",
                   "params": {"protocolVersion": 1, "clientCapabilities": {}}})
        )
    };
    stdin.write_all(initialize(1).as_bytes()).await.unwrap();
    let answer = stdout.next_line().await.unwrap().unwrap();
    assert!(answer.contains("\"id\":1"), "{answer}");
    drop(stdout);
    stdin.write_all(initialize(2).as_bytes()).await.unwrap();
    let status = tokio::time::timeout(std::time::Duration::from_secs(120), child.wait())
        .await
        .expect("the agent noticed nobody reads")
        .unwrap();
    assert_eq!(status.code(), Some(0));
    drop(stdin);
}
