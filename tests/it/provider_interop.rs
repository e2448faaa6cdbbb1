//! What real servers and real users run into: an answer cut by the output limit inside a
//! tool call's arguments (stops for `length`, the call never runs, the session goes on), a
//! refusal (a normal stop, kept and shown as a refusal), the timeouts of config.toml reaching
//! the requests, and a local `http://` endpoint that works without any certificate store
//! (which is loaded only for `https`).
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // test code fails loudly

use crate::support;

use agent::llm::provider::Api;
use agent::protocol::message::{Message, StopReason};
use serde_json::json;
use support::anthropic::event;
use support::chat;
use support::env::env;
use support::harness::{Harness, end_of};
use support::process::run;
use support::server::{FakeServer, Reply};

/// An Anthropic answer whose `write` call is cut off by `max_tokens` mid-string, as the
/// API sends it: no `content_block_stop` for the call, `stop_reason: max_tokens`.
fn cut_off_write() -> Vec<String> {
    vec![
        event(
            "message_start",
            json!({"type": "message_start", "message": {"id": "msg_1", "type": "message",
                   "role": "assistant", "content": [], "model": "test-model",
                   "usage": {"input_tokens": 40, "output_tokens": 1}}}),
        ),
        event(
            "content_block_start",
            json!({"type": "content_block_start", "index": 0, "content_block":
                   {"type": "tool_use", "id": "toolu_1", "name": "bash", "input": {}}}),
        ),
        event(
            "content_block_delta",
            json!({"type": "content_block_delta", "index": 0, "delta":
                   {"type": "input_json_delta", "partial_json": "{\"command\": \"touch ran; echo "}}),
        ),
        event(
            "message_delta",
            json!({"type": "message_delta", "delta": {"stop_reason": "max_tokens"},
                   "usage": {"output_tokens": 4096}}),
        ),
        event("message_stop", json!({"type": "message_stop"})),
    ]
}

#[tokio::test]
async fn a_tool_call_cut_by_the_output_limit_stops_for_length_and_never_runs() {
    let mut h = Harness::start_api(
        Api::Anthropic,
        vec![
            Reply::sse(cut_off_write()),
            Reply::sse(support::anthropic::text("I will keep it shorter.")),
        ],
        |_| {},
    )
    .await;
    h.prompt("make a file");
    let events = h.until_end().await;
    assert_eq!(end_of(&events), ("completed".to_string(), None));
    let messages = h.agent.messages();
    let cut = messages[1].as_assistant().unwrap();
    assert_eq!(cut.stop_reason, StopReason::Length);
    assert!(cut.tool_calls().next().unwrap().invalid_arguments.is_some());
    let Message::ToolResult(result) = messages[2].as_ref() else {
        panic!("the cut-off call is answered: {:?}", messages[2]);
    };
    assert!(result.is_error);
    assert!(
        !h.dir.path().join("ran").exists(),
        "the cut-off call never ran"
    );
    // The next request replays the call with valid (empty) input and its error result.
    let second = &h.server.bodies()[1];
    assert_eq!(second["messages"][1]["content"][0]["input"], json!({}));
    assert_eq!(second["messages"][2]["content"][0]["is_error"], true);
    assert_eq!(
        messages.last().unwrap().as_assistant().unwrap().text(),
        "I will keep it shorter."
    );
}

fn refusal_stream() -> Vec<String> {
    let chunk = |delta: serde_json::Value, finish: Option<&str>| {
        chat::frame(json!({"id": "c", "object": "chat.completion.chunk",
            "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]}))
    };
    vec![
        chunk(
            json!({"role": "assistant", "content": null, "refusal": ""}),
            None,
        ),
        chunk(json!({"refusal": "I'm sorry, "}), None),
        chunk(json!({"refusal": "I can't help with that."}), None),
        chunk(json!({}), Some("stop")),
        "data: [DONE]\n\n".to_string(),
    ]
}

#[tokio::test]
async fn a_refusal_is_a_normal_stop_that_keeps_what_the_model_said() {
    let mut h = Harness::start(vec![
        Reply::sse(refusal_stream()),
        Reply::sse(chat::text("Fine.")),
    ])
    .await;
    h.prompt("do something bad");
    let events = h.until_end().await;
    assert_eq!(end_of(&events), ("completed".to_string(), None));
    let answer = h.agent.messages()[1].as_assistant().cloned().unwrap();
    assert_eq!(answer.stop_reason, StopReason::Stop);
    assert_eq!(answer.error_message, None);
    assert_eq!(
        answer.refusal.as_deref(),
        Some("I'm sorry, I can't help with that.")
    );
    assert_eq!(answer.text(), "");
    // The session goes on, with the refusal in its history.
    h.prompt("something else then");
    assert_eq!(end_of(&h.until_end().await).0, "completed");
    assert_eq!(
        h.server.bodies()[1]["messages"][2],
        json!({"role": "assistant", "content": "I'm sorry, I can't help with that."})
    );
}

#[tokio::test]
async fn print_mode_prints_a_refusal_as_the_answer_and_succeeds() {
    let env = env();
    let server = FakeServer::start(vec![Reply::sse(refusal_stream())]).await;
    let out = run(env.agent(&server, &["-p", "do something bad"])).await;
    assert_eq!(out.code, 0, "stderr: {}", out.stderr);
    assert_eq!(out.stdout, "I'm sorry, I can't help with that.\n");
    assert!(out.stderr.contains("the model refused"), "{}", out.stderr);
}

#[tokio::test]
async fn timeouts_from_the_config_file_reach_the_requests() {
    let env = env();
    std::fs::write(
        env.home.path().join("config.toml"),
        "response_timeout_secs = 0.3\n[retry]\nmax_retries = 0\n",
    )
    .unwrap();
    let server = FakeServer::start(vec![Reply::Silent]).await;
    let out = run(env.agent(&server, &["-p", "hi"])).await;
    assert_eq!(out.code, 1);
    assert_eq!(
        out.stderr.lines().last().unwrap(),
        "agent: error: the provider did not answer within 300 ms (response_timeout_secs)"
    );
}

#[tokio::test]
async fn certificates_are_loaded_only_for_https_endpoints() {
    let env = env();
    // A certificate store with nothing in it: anything that loads it fails.
    let no_certs = env.home.path().join("no-certs.pem");
    std::fs::write(&no_certs, "").unwrap();
    let server = FakeServer::start(vec![Reply::sse(chat::text("over plain http"))]).await;
    let mut cmd = env.agent(&server, &["-p", "hi"]);
    cmd.env("SSL_CERT_FILE", &no_certs)
        .env_remove("SSL_CERT_DIR");
    let out = run(cmd).await;
    assert_eq!(out.code, 0, "stderr: {}", out.stderr);
    assert_eq!(out.stdout, "over plain http\n");

    // An https endpoint loads the store at its first request, and says what went wrong.
    let https = server.v1().replacen("http://", "https://", 1);
    let mut cmd = support::process::command(env.home.path(), env.cwd.path());
    cmd.args(["--base-url", &https, "--model", "test-model", "-p", "hi"])
        .env("SSL_CERT_FILE", &no_certs)
        .env_remove("SSL_CERT_DIR");
    let out = run(cmd).await;
    assert_eq!(out.code, 1);
    let last = out.stderr.lines().last().unwrap();
    assert!(
        last.starts_with("agent: error: could not set up the connection to the provider")
            && last.contains("No CA certificates"),
        "{last}"
    );
    assert_eq!(
        server.requests().len(),
        1,
        "nothing reached the server over https"
    );
}

#[tokio::test]
async fn an_image_for_a_model_without_image_input_becomes_a_placeholder_and_a_note() {
    let png = b"\x89PNG\r\n\x1a\n\0\0\0\rIHDR".to_vec();
    for images in [false, true] {
        let mut h = Harness::start_with(
            vec![
                Reply::sse(chat::tool_call("c1", "read", json!({"path": "shot.png"}))),
                Reply::sse(chat::text("I see.")),
            ],
            |config| config.model.images = images,
        )
        .await;
        std::fs::write(h.dir.path().join("shot.png"), &png).unwrap();
        h.prompt("look at shot.png");
        assert_eq!(end_of(&h.until_end().await).0, "completed");
        let Message::ToolResult(result) = h.agent.messages()[2].as_ref().clone() else {
            panic!("expected the read result");
        };
        let said = agent::protocol::message::join_text(&result.content);
        let sent = h.server.bodies()[1].to_string();
        if images {
            assert!(!said.contains("does not take image input"), "{said}");
            assert!(sent.contains("data:image/png;base64,"), "{sent}");
        } else {
            assert!(
                said.contains("The model `test-model` does not take image input"),
                "the user and the model are told: {said}"
            );
            assert!(!sent.contains("data:image/png;base64,"), "{sent}");
            assert!(sent.contains("It is not sent: this model does not take image input."));
        }
    }
}
