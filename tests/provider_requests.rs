//! What each wire API is sent, asserted on the request the loopback server received:
//! endpoint, headers and key, tool schemas, the system prompt, history conversion (tool
//! calls and results, Anthropic's grouped tool results, thinking replayed to the model that
//! wrote it and converted or dropped for another) and the thinking parameters.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // test code fails loudly

mod support;

use agent::llm::catalog;
use agent::llm::client::Provider;
use agent::llm::model::ModelInfo;
use agent::llm::provider::{Api, ProviderSettings};
use agent::llm::request::{ModelRequest, ThinkingLevel};
use agent::protocol::message::{
    AssistantContent, AssistantMessage, Content, Message, StopReason, ToolCall, ToolResultMessage,
    Usage, UserMessage,
};
use agent::tools::Tools;
use serde_json::{Value, json};
use std::sync::Arc;
use std::time::Duration;
use support::harness::{base_url, provider_settings};
use support::server::{FakeServer, Recorded, Reply};
use support::{anthropic, chat, responses};
use tokio_util::sync::CancellationToken;

const SYSTEM: &str = "You are a test.";

/// Send one request with this history through the real client; return what arrived.
async fn send(
    api: Api,
    model: &ModelInfo,
    thinking: ThinkingLevel,
    history: &[Message],
) -> Recorded {
    let answer = match api {
        Api::Anthropic => anthropic::text("ok"),
        Api::OpenaiResponses => responses::text("ok"),
        Api::OpenaiChat => chat::text("ok"),
    };
    let server = FakeServer::start(vec![Reply::sse(answer)]).await;
    let settings = ProviderSettings {
        api,
        ..provider_settings(&base_url(&server, api))
    };
    let provider = Provider::new(settings, Duration::from_secs(5)).unwrap();
    let messages: Vec<Arc<Message>> = history.iter().cloned().map(Arc::new).collect();
    let tools = Tools::from_names(&["read", "bash"]).unwrap().specs();
    let request = ModelRequest {
        model,
        system_prompt: SYSTEM,
        messages: &messages,
        tools: &tools,
        thinking,
    };
    provider
        .stream(&request, &CancellationToken::new(), &mut |_| {})
        .await
        .expect("the scripted answer streams");
    server.requests().remove(0)
}

fn user(text: &str) -> Message {
    Message::User(UserMessage {
        content: vec![Content::text(text)],
        timestamp: 1,
    })
}

fn call(id: &str, name: &str, arguments: Value) -> AssistantContent {
    AssistantContent::ToolCall(ToolCall {
        id: id.into(),
        name: name.into(),
        arguments,
        invalid_arguments: None,
    })
}

fn assistant(model: &str, content: Vec<AssistantContent>) -> Message {
    Message::Assistant(AssistantMessage {
        content,
        provider: "test".into(),
        model: model.into(),
        usage: Usage::default(),
        stop_reason: StopReason::ToolUse,
        error_message: None,
        timestamp: 2,
    })
}

fn result(id: &str, name: &str, text: &str, is_error: bool) -> Message {
    Message::ToolResult(ToolResultMessage {
        tool_call_id: id.into(),
        tool_name: name.into(),
        content: vec![Content::text(text)],
        details: None,
        is_error,
        timestamp: 3,
    })
}

fn thinking(text: &str, signature: &str) -> AssistantContent {
    AssistantContent::Thinking {
        thinking: text.into(),
        signature: Some(signature.into()),
        redacted: false,
    }
}

/// A round with thinking, text and two tool calls (one with an id from another API), its
/// two results (one an error), and a user message that arrived after them.
fn tool_round(model: &str) -> Vec<Message> {
    vec![
        user("list files"),
        assistant(
            model,
            vec![
                thinking("I should look.", "sig-1"),
                AssistantContent::Text {
                    text: "Let me look.".into(),
                },
                call("c1", "bash", json!({"command": "ls"})),
                call("functions.read:0", "read", json!({"path": "a.txt"})),
            ],
        ),
        result("c1", "bash", "a.txt\nb.txt", false),
        result("functions.read:0", "read", "no such file", true),
        user("also check b.txt"),
    ]
}

#[tokio::test]
async fn anthropic_requests_carry_the_key_system_tools_and_limits() {
    let model = ModelInfo::unknown("test-model");
    let request = send(Api::Anthropic, &model, ThinkingLevel::Off, &[user("hi")]).await;
    assert_eq!(request.path, "/v1/messages");
    assert_eq!(request.header("x-api-key"), Some("sk-test-key"));
    assert_eq!(request.header("anthropic-version"), Some("2023-06-01"));
    assert_eq!(request.header("authorization"), None);
    let body = &request.body;
    assert_eq!(body["model"], "test-model");
    assert_eq!(body["max_tokens"], 16_000);
    assert_eq!(body["stream"], true);
    assert_eq!(
        body["system"],
        json!([{"type": "text", "text": SYSTEM, "cache_control": {"type": "ephemeral"}}])
    );
    assert!(body.get("thinking").is_none());
    let tools = body["tools"].as_array().unwrap();
    let keys: Vec<Vec<&str>> = tools
        .iter()
        .map(|t| t.as_object().unwrap().keys().map(String::as_str).collect())
        .collect();
    assert_eq!(keys, vec![vec!["description", "input_schema", "name"]; 2]);
    assert_eq!(tools[0]["name"], "read");
    assert_eq!(tools[0]["input_schema"]["required"], json!(["path"]));
    assert_eq!(
        body["messages"],
        json!([{"role": "user", "content": [
            {"type": "text", "text": "hi", "cache_control": {"type": "ephemeral"}}]}])
    );
}

#[tokio::test]
async fn anthropic_history_groups_tool_results_and_replays_signed_thinking() {
    let model = ModelInfo::unknown("test-model");
    let request = send(
        Api::Anthropic,
        &model,
        ThinkingLevel::Off,
        &tool_round("test-model"),
    )
    .await;
    assert_eq!(
        request.body["messages"],
        json!([
            {"role": "user", "content": [{"type": "text", "text": "list files"}]},
            {"role": "assistant", "content": [
                {"type": "thinking", "thinking": "I should look.", "signature": "sig-1"},
                {"type": "text", "text": "Let me look."},
                {"type": "tool_use", "id": "c1", "name": "bash", "input": {"command": "ls"}},
                {"type": "tool_use", "id": "functions_read_0", "name": "read",
                 "input": {"path": "a.txt"}}
            ]},
            {"role": "user", "content": [
                {"type": "tool_result", "tool_use_id": "c1",
                 "content": [{"type": "text", "text": "a.txt\nb.txt"}], "is_error": false},
                {"type": "tool_result", "tool_use_id": "functions_read_0",
                 "content": [{"type": "text", "text": "no such file"}], "is_error": true},
                {"type": "text", "text": "also check b.txt", "cache_control": {"type": "ephemeral"}}
            ]}
        ])
    );
}

#[tokio::test]
async fn anthropic_gets_another_models_thinking_as_text_and_never_its_redactions() {
    let model = ModelInfo::unknown("test-model");
    let mut history = tool_round("other-model");
    if let Message::Assistant(message) = &mut history[1] {
        message.content.insert(
            0,
            AssistantContent::Thinking {
                thinking: String::new(),
                signature: Some("opaque".into()),
                redacted: true,
            },
        );
    }
    let request = send(Api::Anthropic, &model, ThinkingLevel::Off, &history).await;
    let assistant = &request.body["messages"][1]["content"];
    assert_eq!(
        assistant[0],
        json!({"type": "text", "text": "I should look."})
    );
    assert_eq!(
        assistant[1],
        json!({"type": "text", "text": "Let me look."})
    );
    assert_eq!(assistant.as_array().unwrap().len(), 4);

    // From the same model, the redacted block goes back as it came.
    if let Message::Assistant(message) = &mut history[1] {
        message.model = "test-model".into();
    }
    let request = send(Api::Anthropic, &model, ThinkingLevel::Off, &history).await;
    let assistant = &request.body["messages"][1]["content"];
    assert_eq!(
        assistant[0],
        json!({"type": "redacted_thinking", "data": "opaque"})
    );
    assert_eq!(assistant[1]["type"], "thinking");
}

#[tokio::test]
async fn anthropic_images_are_base64_blocks() {
    let model = ModelInfo::unknown("test-model");
    let history = [Message::User(UserMessage {
        content: vec![
            Content::text("what is this?"),
            Content::Image {
                data: "aGVsbG8=".into(),
                mime_type: "image/png".into(),
            },
        ],
        timestamp: 1,
    })];
    let request = send(Api::Anthropic, &model, ThinkingLevel::Off, &history).await;
    assert_eq!(
        request.body["messages"][0]["content"][1],
        json!({"type": "image", "source": {"type": "base64", "media_type": "image/png",
               "data": "aGVsbG8="}, "cache_control": {"type": "ephemeral"}})
    );
}

#[tokio::test]
async fn anthropic_thinking_sets_a_budget_inside_max_tokens() {
    let model = catalog::lookup("claude-sonnet-4-5").unwrap();
    let request = send(Api::Anthropic, &model, ThinkingLevel::High, &[user("hi")]).await;
    assert_eq!(request.body["max_tokens"], 64_000);
    assert_eq!(
        request.body["thinking"],
        json!({"type": "enabled", "budget_tokens": 32_000})
    );
    let request = send(Api::Anthropic, &model, ThinkingLevel::Low, &[user("hi")]).await;
    assert_eq!(request.body["thinking"]["budget_tokens"], 4096);
    let haiku_3_5 = catalog::lookup("claude-3-5-haiku-latest").unwrap();
    let request = send(
        Api::Anthropic,
        &haiku_3_5,
        ThinkingLevel::High,
        &[user("hi")],
    )
    .await;
    assert!(
        request.body.get("thinking").is_none(),
        "this model cannot think"
    );
    assert_eq!(request.body["max_tokens"], 8192);
}

#[tokio::test]
async fn responses_requests_are_stateless_with_instructions_and_plain_functions() {
    let model = ModelInfo::unknown("test-model");
    let request = send(
        Api::OpenaiResponses,
        &model,
        ThinkingLevel::Off,
        &[user("hi")],
    )
    .await;
    assert_eq!(request.path, "/v1/responses");
    assert_eq!(request.header("authorization"), Some("Bearer sk-test-key"));
    let body = &request.body;
    assert_eq!(body["model"], "test-model");
    assert_eq!(body["instructions"], SYSTEM);
    assert_eq!(body["store"], false);
    assert_eq!(body["stream"], true);
    assert!(body.get("reasoning").is_none());
    assert!(body.get("include").is_none());
    let read = &body["tools"][0];
    assert_eq!(read["type"], "function");
    assert_eq!(read["name"], "read");
    assert_eq!(read["strict"], false);
    assert_eq!(read["parameters"]["required"], json!(["path"]));
    assert!(read["description"].as_str().is_some_and(|d| !d.is_empty()));
    assert_eq!(
        body["input"],
        json!([{"type": "message", "role": "user",
                "content": [{"type": "input_text", "text": "hi"}]}])
    );
}

#[tokio::test]
async fn responses_history_replays_encrypted_reasoning_to_the_same_model_only() {
    let model = ModelInfo::unknown("test-model");
    let request = send(
        Api::OpenaiResponses,
        &model,
        ThinkingLevel::Off,
        &tool_round("test-model"),
    )
    .await;
    assert_eq!(
        request.body["input"],
        json!([
            {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "list files"}]},
            {"type": "reasoning", "encrypted_content": "sig-1",
             "summary": [{"type": "summary_text", "text": "I should look."}]},
            {"type": "message", "role": "assistant",
             "content": [{"type": "output_text", "text": "Let me look."}]},
            {"type": "function_call", "call_id": "c1", "name": "bash",
             "arguments": "{\"command\":\"ls\"}"},
            {"type": "function_call", "call_id": "functions.read:0", "name": "read",
             "arguments": "{\"path\":\"a.txt\"}"},
            {"type": "function_call_output", "call_id": "c1", "output": "a.txt\nb.txt"},
            {"type": "function_call_output", "call_id": "functions.read:0", "output": "no such file"},
            {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "also check b.txt"}]}
        ])
    );
    let request = send(
        Api::OpenaiResponses,
        &model,
        ThinkingLevel::Off,
        &tool_round("other-model"),
    )
    .await;
    let kinds: Vec<&str> = request.body["input"]
        .as_array()
        .unwrap()
        .iter()
        .map(|item| item["type"].as_str().unwrap())
        .collect();
    assert!(!kinds.contains(&"reasoning"), "{kinds:?}");
    assert_eq!(kinds.len(), 7);
}

#[tokio::test]
async fn responses_reasoning_effort_follows_the_thinking_level() {
    let model = catalog::lookup("o4-mini").unwrap();
    let request = send(
        Api::OpenaiResponses,
        &model,
        ThinkingLevel::Medium,
        &[user("hi")],
    )
    .await;
    assert_eq!(
        request.body["reasoning"],
        json!({"effort": "medium", "summary": "auto"})
    );
    assert_eq!(
        request.body["include"],
        json!(["reasoning.encrypted_content"])
    );
    let gpt_4_1 = catalog::lookup("gpt-4.1").unwrap();
    let request = send(
        Api::OpenaiResponses,
        &gpt_4_1,
        ThinkingLevel::High,
        &[user("hi")],
    )
    .await;
    assert!(request.body.get("reasoning").is_none());
}

#[tokio::test]
async fn chat_reasoning_effort_is_sent_only_when_thinking() {
    let model = ModelInfo::unknown("local-model");
    let request = send(
        Api::OpenaiChat,
        &model,
        ThinkingLevel::Minimal,
        &[user("hi")],
    )
    .await;
    assert_eq!(request.body["reasoning_effort"], "minimal");
    let request = send(Api::OpenaiChat, &model, ThinkingLevel::Off, &[user("hi")]).await;
    assert!(request.body.get("reasoning_effort").is_none());
    let gpt_4o = catalog::lookup("gpt-4o").unwrap();
    let request = send(Api::OpenaiChat, &gpt_4o, ThinkingLevel::High, &[user("hi")]).await;
    assert!(request.body.get("reasoning_effort").is_none());
}
