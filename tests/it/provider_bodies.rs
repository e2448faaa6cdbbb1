//! Servers that answer a streaming request with something other than an event stream: a
//! whole JSON completion (LiteLLM's mocks, some proxies and gateways) is accepted as the
//! answer for each wire API; an HTML page or any other body is reported as what it is, with
//! its start, and not retried.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // test code fails loudly

use crate::support;

use agent::llm::provider::Api;
use agent::protocol::event::AgentEvent;
use agent::protocol::message::{AssistantContent, StopReason};
use serde_json::json;
use support::harness::{Harness, end_of};
use support::server::Reply;

fn whole(value: serde_json::Value) -> Reply {
    Reply::body(200, "application/json", &value.to_string())
}

fn retried(events: &[AgentEvent]) -> bool {
    events
        .iter()
        .any(|e| matches!(e, AgentEvent::AutoRetryStart { .. }))
}

#[tokio::test]
async fn a_whole_json_completion_is_the_answer_for_every_wire_api() {
    let chat = json!({
        "id": "chatcmpl-1", "object": "chat.completion", "model": "test-model",
        "choices": [{"index": 0, "finish_reason": "tool_calls", "message": {
            "role": "assistant", "content": "Let me look.",
            "tool_calls": [
                {"id": "call_1", "type": "function", "function": {"name": "read", "arguments": "{\"path\":\"a.txt\"}"}},
                {"id": "call_2", "type": "function", "function": {"name": "bash", "arguments": "{\"command\":\"ls\"}"}}
            ]}}],
        "usage": {"prompt_tokens": 12, "completion_tokens": 7, "total_tokens": 19}
    });
    let anthropic = json!({
        "id": "msg_1", "type": "message", "role": "assistant", "model": "test-model",
        "content": [
            {"type": "text", "text": "Let me look."},
            {"type": "tool_use", "id": "call_1", "name": "read", "input": {"path": "a.txt"}},
            {"type": "tool_use", "id": "call_2", "name": "bash", "input": {"command": "ls"}}
        ],
        "stop_reason": "tool_use",
        "usage": {"input_tokens": 12, "output_tokens": 7}
    });
    let responses = json!({
        "id": "resp_1", "object": "response", "status": "completed", "model": "test-model",
        "output": [
            {"type": "message", "id": "msg_1", "role": "assistant", "status": "completed",
             "content": [{"type": "output_text", "text": "Let me look.", "annotations": []}]},
            {"type": "function_call", "id": "fc_1", "call_id": "call_1", "name": "read",
             "arguments": "{\"path\":\"a.txt\"}", "status": "completed"},
            {"type": "function_call", "id": "fc_2", "call_id": "call_2", "name": "bash",
             "arguments": "{\"command\":\"ls\"}", "status": "completed"}
        ],
        "usage": {"input_tokens": 12, "output_tokens": 7, "total_tokens": 19}
    });
    let finals = [
        (
            Api::OpenaiChat,
            chat,
            json!({"object": "chat.completion", "choices": [{"index": 0,
            "finish_reason": "stop", "message": {"role": "assistant", "content": "Done."}}]}),
        ),
        (
            Api::Anthropic,
            anthropic,
            json!({"type": "message", "role": "assistant",
            "content": [{"type": "text", "text": "Done."}], "stop_reason": "end_turn",
            "usage": {"input_tokens": 30, "output_tokens": 2}}),
        ),
        (
            Api::OpenaiResponses,
            responses,
            json!({"object": "response", "status": "completed",
            "output": [{"type": "message", "role": "assistant",
                        "content": [{"type": "output_text", "text": "Done."}]}]}),
        ),
    ];
    for (api, first, last) in finals {
        let mut h = Harness::start_api(api, vec![whole(first), whole(last)], |config| {
            config.retry.max_retries = 0;
        })
        .await;
        std::fs::write(h.dir.path().join("a.txt"), "alpha").unwrap();
        h.prompt("look");
        let events = h.until_end().await;
        assert_eq!(end_of(&events), ("completed".to_string(), None), "{api:?}");
        let messages = h.agent.messages();
        let first = messages[1].as_assistant().unwrap();
        assert_eq!(first.text(), "Let me look.", "{api:?}");
        assert_eq!(first.stop_reason, StopReason::ToolUse, "{api:?}");
        let calls: Vec<_> = first
            .tool_calls()
            .map(|c| (c.id.as_str(), c.name.as_str(), c.arguments.clone()))
            .collect();
        assert_eq!(
            calls,
            [
                ("call_1", "read", json!({"path": "a.txt"})),
                ("call_2", "bash", json!({"command": "ls"}))
            ],
            "{api:?}"
        );
        assert_eq!(first.usage.output, 7, "{api:?}");
        assert_eq!(
            messages.last().unwrap().as_assistant().unwrap().text(),
            "Done.",
            "{api:?}"
        );
        assert_eq!(
            messages.len(),
            5,
            "{api:?}: prompt, calls, two results, answer"
        );
    }
}

#[tokio::test]
async fn reasoning_and_refusals_in_whole_completions_are_kept() {
    let anthropic = json!({"type": "message", "role": "assistant", "stop_reason": "end_turn",
    "content": [
        {"type": "thinking", "thinking": "Hmm.", "signature": "sig-1"},
        {"type": "text", "text": "Yes."}
    ]});
    let mut h = Harness::start_api(Api::Anthropic, vec![whole(anthropic)], |_| {}).await;
    h.prompt("well?");
    assert_eq!(end_of(&h.until_end().await).0, "completed");
    let answer = h.agent.messages()[1].as_assistant().cloned().unwrap();
    assert_eq!(
        answer.content[0],
        AssistantContent::Thinking {
            thinking: "Hmm.".into(),
            signature: Some("sig-1".into()),
            redacted: false
        }
    );
    assert_eq!(answer.text(), "Yes.");

    let responses = json!({"object": "response", "status": "incomplete",
    "incomplete_details": {"reason": "max_output_tokens"},
    "output": [
        {"type": "reasoning", "id": "rs_1", "encrypted_content": "gAAA",
         "summary": [{"type": "summary_text", "text": "Thinking it over."}]},
        {"type": "message", "role": "assistant",
         "content": [{"type": "output_text", "text": "The answer is"}]}
    ]});
    let mut h = Harness::start_api(Api::OpenaiResponses, vec![whole(responses)], |_| {}).await;
    h.prompt("well?");
    assert_eq!(end_of(&h.until_end().await).0, "completed");
    let answer = h.agent.messages()[1].as_assistant().cloned().unwrap();
    assert_eq!(answer.stop_reason, StopReason::Length);
    assert_eq!(answer.text(), "The answer is");
    let AssistantContent::Thinking { thinking, .. } = &answer.content[0] else {
        panic!("reasoning first: {answer:?}");
    };
    assert_eq!(thinking, "Thinking it over.");
}

#[tokio::test]
async fn an_error_object_in_a_whole_body_is_the_providers_error() {
    let error =
        json!({"error": {"message": "model `nope` not found", "type": "invalid_request_error"}});
    let mut h = Harness::start(vec![whole(error)]).await;
    h.prompt("hi");
    let events = h.until_end().await;
    assert_eq!(
        end_of(&events),
        (
            "failed".to_string(),
            Some("model `nope` not found".to_string())
        )
    );
    assert!(!retried(&events));
}

#[tokio::test]
async fn an_html_page_is_reported_as_one_with_its_start() {
    let page = "<!DOCTYPE html>\n<html><head><title>Corporate proxy: sign in</title></head>\
                <body><form>...</form></body></html>";
    let mut h = Harness::start(vec![Reply::body(200, "text/html; charset=utf-8", page)]).await;
    h.prompt("hi");
    let events = h.until_end().await;
    let (status, error) = end_of(&events);
    assert_eq!(status, "failed");
    let error = error.unwrap();
    assert!(
        error.starts_with(
            "the provider answered with an HTML page (text/html) titled \
             \"Corporate proxy: sign in\": <!DOCTYPE html> <html><head>"
        ),
        "{error}"
    );
    assert!(
        !retried(&events),
        "a page is not an answer, however often it is asked"
    );
    assert_eq!(h.server.requests().len(), 1);

    // The same page as an error status says what it is too.
    let mut h = Harness::start(vec![Reply::body(403, "text/html", page)]).await;
    h.prompt("hi");
    let error = end_of(&h.until_end().await).1.unwrap();
    assert!(
        error.starts_with(
            "HTTP 403 Forbidden: an HTML page (text/html) titled \"Corporate proxy: sign in\""
        ),
        "{error}"
    );
}

#[tokio::test]
async fn an_unlabelled_body_is_read_by_its_first_byte() {
    // No useful Content-Type (or a wrong one): a stream is still a stream, JSON is still
    // JSON, and anything else is not an answer.
    let stream = support::chat::text("streamed").concat();
    let mut h = Harness::start(vec![Reply::body(200, "text/plain", &stream)]).await;
    h.prompt("hi");
    assert_eq!(end_of(&h.until_end().await).0, "completed");
    assert_eq!(
        h.agent.messages()[1].as_assistant().unwrap().text(),
        "streamed"
    );

    let json = json!({"choices": [{"index": 0, "finish_reason": "stop",
        "message": {"role": "assistant", "content": "whole"}}]});
    let mut h = Harness::start(vec![Reply::body(200, "text/plain", &format!("\n  {json}"))]).await;
    h.prompt("hi");
    assert_eq!(end_of(&h.until_end().await).0, "completed");
    assert_eq!(
        h.agent.messages()[1].as_assistant().unwrap().text(),
        "whole"
    );

    let mut h = Harness::start(vec![Reply::body(200, "application/json", &stream)]).await;
    h.prompt("hi");
    assert_eq!(end_of(&h.until_end().await).0, "completed");
    assert_eq!(
        h.agent.messages()[1].as_assistant().unwrap().text(),
        "streamed"
    );

    let mut h = Harness::start(vec![Reply::body(200, "text/plain", "Service is up.")]).await;
    h.prompt("hi");
    let (status, error) = end_of(&h.until_end().await);
    assert_eq!(status, "failed");
    assert!(
        error.as_deref().unwrap_or("").contains("Service is up."),
        "{error:?}"
    );
}
