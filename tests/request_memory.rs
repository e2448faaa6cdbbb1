//! Building a request body copies no message text: while a body is built from a ~10 MB
//! history — for Chat Completions, Anthropic Messages and Responses alike — the memory
//! allocated beyond that history stays within 1.2× the body: the body itself, sized once,
//! and nothing the size of the history besides. Counted with a global allocator that
//! tracks the bytes in use (one test in this binary, so no other test allocates meanwhile).
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // test code fails loudly
#![allow(clippy::disallowed_methods)] // test code starts tasks plainly

use agent::llm::model::ModelInfo;
use agent::llm::openai_chat::OutputLimit;
use agent::llm::request::{ModelRequest, ThinkingLevel};
use agent::protocol::message::{
    AssistantContent, AssistantMessage, Content, Message, ToolCall, ToolResultMessage, UserMessage,
};
use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

struct Counting;

static IN_USE: AtomicUsize = AtomicUsize::new(0);
static PEAK: AtomicUsize = AtomicUsize::new(0);

fn grew(bytes: usize) {
    let now = IN_USE.fetch_add(bytes, Ordering::SeqCst) + bytes;
    PEAK.fetch_max(now, Ordering::SeqCst);
}

// SAFETY: every call is passed on to the system allocator unchanged; only counts are kept.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        let pointer = unsafe { System.alloc(layout) };
        if !pointer.is_null() {
            grew(layout.size());
        }
        pointer
    }

    unsafe fn dealloc(&self, pointer: *mut u8, layout: Layout) {
        unsafe { System.dealloc(pointer, layout) };
        IN_USE.fetch_sub(layout.size(), Ordering::SeqCst);
    }

    unsafe fn realloc(&self, pointer: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        // A moving realloc holds both blocks for a moment: count the new one first.
        grew(new_size);
        let moved = unsafe { System.realloc(pointer, layout, new_size) };
        if moved.is_null() {
            IN_USE.fetch_sub(new_size, Ordering::SeqCst);
        } else {
            IN_USE.fetch_sub(layout.size(), Ordering::SeqCst);
        }
        moved
    }
}

#[global_allocator]
static ALLOCATOR: Counting = Counting;

fn history() -> Vec<Arc<Message>> {
    let text = |turn: usize, what: &str| format!("{what} {turn}: {}", "lorem ipsum ".repeat(1_000));
    let mut messages = Vec::new();
    for turn in 0..300 {
        messages.push(Arc::new(Message::User(UserMessage::text(text(
            turn, "question",
        )))));
        let mut call = AssistantMessage::empty("p", "m");
        call.content.push(AssistantContent::Text {
            text: text(turn, "answer"),
        });
        call.content.push(AssistantContent::ToolCall(ToolCall {
            id: format!("c{turn}"),
            name: "read".into(),
            arguments: serde_json::json!({"path": format!("src/file{turn}.rs")}),
            invalid_arguments: None,
        }));
        messages.push(Arc::new(Message::Assistant(call)));
        messages.push(Arc::new(Message::ToolResult(ToolResultMessage {
            tool_call_id: format!("c{turn}"),
            tool_name: "read".into(),
            content: vec![
                Content::text(text(turn, "first part")),
                Content::text(text(turn, "second part")),
            ],
            details: None,
            is_error: false,
            timestamp: 0,
        })));
    }
    messages
}

/// Build a body with `build`, checking the memory it took at its peak.
fn measured(api: &str, build: impl FnOnce() -> Vec<u8>) -> serde_json::Value {
    let before = IN_USE.load(Ordering::SeqCst);
    PEAK.store(before, Ordering::SeqCst);
    let body = build();
    let extra = PEAK.load(Ordering::SeqCst) - before;
    assert!(
        body.len() > 10_000_000,
        "{api}: a ~10 MB body: {}",
        body.len()
    );
    assert!(
        extra * 10 <= body.len() * 12,
        "{api}: building a {} byte body took {extra} bytes at its peak",
        body.len()
    );
    serde_json::from_slice(&body).unwrap()
}

#[test]
fn building_a_body_copies_no_message_text() {
    let messages = history();
    let model = ModelInfo::unknown("m");
    let request = ModelRequest {
        model: &model,
        system_prompt: "You are a test.",
        messages: &messages,
        tools: &[],
        thinking: ThinkingLevel::Off,
        web_search: None,
        cache_key: None,
    };
    let question = "question 1: ".len() + 12_000;
    let result = "first part 0: ".len() + 12_000 + 1 + "second part 0: ".len() + 12_000;

    let chat = measured("chat", || {
        agent::llm::openai_chat::build_body(&request, OutputLimit::MaxTokens).unwrap()
    });
    // It is the body the history makes.
    assert_eq!(chat["messages"].as_array().unwrap().len(), 901);
    assert_eq!(
        chat["messages"][4]["content"].as_str().unwrap().len(),
        question
    );

    let anthropic = measured("anthropic", || {
        agent::llm::anthropic::build_body(&request, "p").unwrap()
    });
    // user, then assistant and user (a round's results and the next question) alternating.
    assert_eq!(anthropic["messages"].as_array().unwrap().len(), 601);
    let turn = &anthropic["messages"][2]["content"];
    assert_eq!(turn[0]["type"], "tool_result");
    assert_eq!(turn[1]["text"].as_str().unwrap().len(), question);

    let responses = measured("responses", || {
        agent::llm::openai_responses::build_body(&request, "p").unwrap()
    });
    let input = responses["input"].as_array().unwrap();
    assert_eq!(input.len(), 1200);
    assert_eq!(input[3]["type"], "function_call_output");
    assert_eq!(input[3]["output"].as_str().unwrap().len(), result);
    assert_eq!(input[2]["arguments"], r#"{"path":"src/file0.rs"}"#);
}
