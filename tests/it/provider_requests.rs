//! What each wire API is sent, asserted on the request the loopback server received:
//! endpoint, headers and key, tool schemas, the system prompt, history conversion (tool
//! calls and results, Anthropic's grouped tool results, thinking replayed to the model that
//! wrote it and converted or dropped for another) and the thinking parameters.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // test code fails loudly

use crate::support;

use agent::llm::catalog;
use agent::llm::client::Provider;
use agent::llm::model::ModelInfo;
use agent::llm::provider::{Api, ProviderSettings};
use agent::llm::request::{ModelRequest, ThinkingLevel};
use agent::llm::timeouts::Timeouts;
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
        Api::AgentProxy => unreachable!("the proxy's requests are in tests/it/proxy.rs"),
    };
    let server = FakeServer::start(vec![Reply::sse(answer)]).await;
    let settings = ProviderSettings {
        api,
        ..provider_settings(&base_url(&server, api))
    };
    let provider = Provider::new(settings, Timeouts::all(Duration::from_secs(5))).unwrap();
    let messages: Vec<Arc<Message>> = history.iter().cloned().map(Arc::new).collect();
    let tools = Tools::from_names(&["read", "bash"]).unwrap().specs();
    let request = ModelRequest {
        model,
        system_prompt: SYSTEM,
        messages: &messages,
        tools: &tools,
        thinking,
        web_search: None,
        cache_key: None,
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
        refusal: None,
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
    // Exactly these keys (sorted: JSON objects keep insertion order in this build).
    let keys: Vec<Vec<&str>> = tools
        .iter()
        .map(|t| {
            let mut keys: Vec<&str> = t.as_object().unwrap().keys().map(String::as_str).collect();
            keys.sort_unstable();
            keys
        })
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
    let model = ModelInfo {
        images: true,
        ..ModelInfo::unknown("test-model")
    };
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

/// `tool_round` as a Responses model writes it: its reasoning's signature holds the
/// reasoning item's id and encrypted content.
fn responses_round(model: &str) -> Vec<Message> {
    let mut history = tool_round(model);
    if let Message::Assistant(message) = &mut history[1] {
        message.content[0] = thinking(
            "I should look.",
            &agent::llm::openai_responses::signature::encode(Some("rs_1"), "sig-1"),
        );
    }
    history
}

#[tokio::test]
async fn responses_history_replays_encrypted_reasoning_to_the_same_model_only() {
    let model = ModelInfo::unknown("test-model");
    let request = send(
        Api::OpenaiResponses,
        &model,
        ThinkingLevel::Off,
        &responses_round("test-model"),
    )
    .await;
    // Replayed items carry what the API's input types require: a reasoning item's id, an
    // output message's id, status and annotations.
    assert_eq!(
        request.body["input"],
        json!([
            {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "list files"}]},
            {"type": "reasoning", "id": "rs_1", "encrypted_content": "sig-1",
             "summary": [{"type": "summary_text", "text": "I should look."}]},
            {"type": "message", "id": "msg_2", "role": "assistant", "status": "completed",
             "content": [{"type": "output_text", "text": "Let me look.", "annotations": []}]},
            {"type": "function_call", "call_id": "c1", "name": "bash",
             "arguments": "{\"command\":\"ls\"}"},
            {"type": "function_call", "call_id": "functions.read:0", "name": "read",
             "arguments": "{\"path\":\"a.txt\"}"},
            {"type": "function_call_output", "call_id": "c1", "output": "a.txt\nb.txt"},
            {"type": "function_call_output", "call_id": "functions.read:0", "output": "no such file"},
            {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "also check b.txt"}]}
        ])
    );
    // Another model's reasoning, and reasoning stored without its item id (sessions from
    // before ids were kept), cannot be sent back.
    for history in [responses_round("other-model"), tool_round("test-model")] {
        let request = send(Api::OpenaiResponses, &model, ThinkingLevel::Off, &history).await;
        let kinds: Vec<&str> = request.body["input"]
            .as_array()
            .unwrap()
            .iter()
            .map(|item| item["type"].as_str().unwrap())
            .collect();
        assert!(!kinds.contains(&"reasoning"), "{kinds:?}");
        assert_eq!(kinds.len(), 7);
    }
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

/// A call cut off by the output limit (or an abort) and answered with an error, and a call
/// whose result was never recorded (the agent stopped while it ran).
fn damaged_history() -> Vec<Message> {
    let mut cut = ToolCall {
        id: "c1".into(),
        name: "write".into(),
        arguments: json!({}),
        invalid_arguments: Some("{\"path\": \"a.txt\", \"content\": \"abc".into()),
    };
    let mut cut_off = assistant("test-model", vec![AssistantContent::ToolCall(cut.clone())]);
    if let Message::Assistant(message) = &mut cut_off {
        message.stop_reason = StopReason::Length;
    }
    cut.invalid_arguments = None;
    vec![
        user("write it"),
        cut_off,
        result(
            "c1",
            "write",
            "Not executed: the arguments were cut off.",
            true,
        ),
        user("again, shorter"),
        assistant(
            "test-model",
            vec![call("c2", "bash", json!({"command": "sleep 100"}))],
        ),
        user("are you there?"),
    ]
}

#[tokio::test]
async fn a_damaged_history_is_replayed_as_every_api_accepts_it() {
    let model = ModelInfo::unknown("test-model");
    let chat = send(
        Api::OpenaiChat,
        &model,
        ThinkingLevel::Off,
        &damaged_history(),
    )
    .await;
    let messages = chat.body["messages"].as_array().unwrap();
    assert_eq!(
        messages[2]["tool_calls"][0]["function"]["arguments"], "{}",
        "cut-off arguments are replayed as valid JSON"
    );
    assert_eq!(
        messages[3],
        json!({"role": "tool", "tool_call_id": "c1",
               "content": "Not executed: the arguments were cut off."})
    );
    assert_eq!(messages[5]["tool_calls"][0]["id"], "c2");
    assert_eq!(
        messages[6]["role"], "tool",
        "the missing result is filled in"
    );
    assert_eq!(messages[6]["tool_call_id"], "c2");
    assert!(
        messages[6]["content"]
            .as_str()
            .unwrap()
            .starts_with("No result was recorded")
    );
    assert_eq!(messages[7]["content"], "are you there?");

    let responses = send(
        Api::OpenaiResponses,
        &model,
        ThinkingLevel::Off,
        &damaged_history(),
    )
    .await;
    let input = responses.body["input"].as_array().unwrap();
    assert_eq!(input[1]["type"], "function_call");
    assert_eq!(input[1]["arguments"], "{}");
    assert_eq!(input[2]["type"], "function_call_output");
    assert_eq!(input[2]["call_id"], "c1");
    assert_eq!(input[5]["type"], "function_call_output");
    assert_eq!(input[5]["call_id"], "c2");

    let anthropic = send(
        Api::Anthropic,
        &model,
        ThinkingLevel::Off,
        &damaged_history(),
    )
    .await;
    let turns = anthropic.body["messages"].as_array().unwrap();
    assert_eq!(turns[1]["content"][0]["input"], json!({}));
    assert_eq!(turns[4]["content"][0]["type"], "tool_result");
    assert_eq!(turns[4]["content"][0]["tool_use_id"], "c2");
    assert_eq!(turns[4]["content"][0]["is_error"], true);
}

#[tokio::test]
async fn images_reach_only_models_that_take_them() {
    let image = Content::Image {
        data: "aGVsbG8=".into(),
        mime_type: "image/png".into(),
    };
    let history = vec![
        Message::User(UserMessage {
            content: vec![Content::text("what is this?"), image.clone()],
            timestamp: 1,
        }),
        assistant(
            "test-model",
            vec![call("c1", "read", json!({"path": "a.png"}))],
        ),
        Message::ToolResult(ToolResultMessage {
            tool_call_id: "c1".into(),
            tool_name: "read".into(),
            content: vec![Content::text("Read image a.png"), image],
            details: None,
            is_error: false,
            timestamp: 3,
        }),
    ];
    let blind = ModelInfo::unknown("text-only");
    let seeing = ModelInfo {
        images: true,
        ..ModelInfo::unknown("vision")
    };
    for api in [Api::OpenaiChat, Api::OpenaiResponses, Api::Anthropic] {
        let sent = send(api, &blind, ThinkingLevel::Off, &history).await.body;
        let text = sent.to_string();
        assert!(!text.contains("aGVsbG8="), "{api:?}: {text}");
        assert_eq!(
            text.matches("It is not sent: this model does not take image input.")
                .count(),
            2,
            "{api:?}: the model is told, for the prompt's image and the tool's: {text}"
        );
        let sent = send(api, &seeing, ThinkingLevel::Off, &history).await.body;
        let text = sent.to_string();
        assert_eq!(text.matches("aGVsbG8=").count(), 2, "{api:?}: {text}");
        assert!(!text.contains("not sent"), "{api:?}");
    }
}

#[tokio::test]
async fn every_request_names_the_agent_and_chat_sets_the_output_limit() {
    let mut model = ModelInfo::unknown("local-model");
    model.max_output_tokens = 4096;
    for api in [Api::OpenaiChat, Api::OpenaiResponses, Api::Anthropic] {
        let request = send(api, &model, ThinkingLevel::Off, &[user("hi")]).await;
        assert_eq!(
            request.header("user-agent"),
            Some(concat!("agent/", env!("CARGO_PKG_VERSION"))),
            "{api:?}"
        );
    }
    // A local server with no default of its own would otherwise generate without end.
    let request = send(Api::OpenaiChat, &model, ThinkingLevel::Off, &[user("hi")]).await;
    assert_eq!(request.body["max_tokens"], 4096);
    assert!(request.body.get("max_completion_tokens").is_none());
}
