//! Builders for OpenAI Chat Completions SSE streams, as a real server sends them.

use serde_json::{Value, json};

pub fn frame(chunk: Value) -> String {
    format!("data: {chunk}\n\n")
}

fn chunk(delta: Value, finish: Option<&str>) -> String {
    frame(json!({
        "id": "chatcmpl-test",
        "object": "chat.completion.chunk",
        "created": 1,
        "model": "test-model",
        "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]
    }))
}

fn usage(input: u64, output: u64) -> String {
    frame(json!({
        "id": "chatcmpl-test",
        "object": "chat.completion.chunk",
        "choices": [],
        "usage": {"prompt_tokens": input, "completion_tokens": output, "total_tokens": input + output}
    }))
}

/// An answer streamed as the given deltas.
pub fn text_deltas(deltas: &[&str]) -> Vec<String> {
    let mut frames = vec![chunk(json!({"role": "assistant", "content": ""}), None)];
    frames.extend(deltas.iter().map(|d| chunk(json!({"content": d}), None)));
    frames.push(chunk(json!({}), Some("stop")));
    frames.push(usage(10, deltas.len() as u64));
    frames.push("data: [DONE]\n\n".to_string());
    frames
}

/// Reasoning (as `reasoning_content`, the way DeepSeek and vLLM send it), then an answer.
pub fn thinking_then_text(thinking: &str, answer: &str) -> Vec<String> {
    let mut frames = vec![chunk(json!({"role": "assistant", "content": ""}), None)];
    frames.push(chunk(json!({"reasoning_content": thinking}), None));
    frames.push(chunk(json!({"content": answer}), None));
    frames.push(chunk(json!({}), Some("stop")));
    frames.push(usage(10, 5));
    frames.push("data: [DONE]\n\n".to_string());
    frames
}

/// An answer streamed word by word.
pub fn text(answer: &str) -> Vec<String> {
    let words: Vec<String> = answer.split_inclusive(' ').map(String::from).collect();
    let refs: Vec<&str> = words.iter().map(String::as_str).collect();
    text_deltas(&refs)
}

/// Tool calls (id, name, arguments JSON text), each streamed in two argument pieces.
pub fn tool_calls_raw(calls: &[(&str, &str, &str)]) -> Vec<String> {
    let mut frames = vec![chunk(json!({"role": "assistant", "content": null}), None)];
    for (index, (id, name, args)) in calls.iter().enumerate() {
        let mid = args
            .char_indices()
            .nth(args.chars().count() / 2)
            .map(|(i, _)| i)
            .unwrap_or(0);
        frames.push(chunk(
            json!({"tool_calls": [{"index": index, "id": id, "type": "function",
                    "function": {"name": name, "arguments": &args[..mid]}}]}),
            None,
        ));
        frames.push(chunk(
            json!({"tool_calls": [{"index": index, "function": {"arguments": &args[mid..]}}]}),
            None,
        ));
    }
    frames.push(chunk(json!({}), Some("tool_calls")));
    frames.push(usage(20, 10));
    frames.push("data: [DONE]\n\n".to_string());
    frames
}

pub fn tool_calls(calls: &[(&str, &str, Value)]) -> Vec<String> {
    let texts: Vec<(String, String, String)> = calls
        .iter()
        .map(|(id, name, args)| (id.to_string(), name.to_string(), args.to_string()))
        .collect();
    let refs: Vec<(&str, &str, &str)> = texts
        .iter()
        .map(|(a, b, c)| (a.as_str(), b.as_str(), c.as_str()))
        .collect();
    tool_calls_raw(&refs)
}

pub fn tool_call(id: &str, name: &str, args: Value) -> Vec<String> {
    tool_calls(&[(id, name, args)])
}

/// An answer with the usage a real server would report.
pub fn text_with_usage(answer: &str, input: u64, output: u64) -> Vec<String> {
    let mut frames = vec![chunk(json!({"role": "assistant", "content": ""}), None)];
    frames.push(chunk(json!({"content": answer}), None));
    frames.push(chunk(json!({}), Some("stop")));
    frames.push(usage(input, output));
    frames.push("data: [DONE]\n\n".to_string());
    frames
}

/// A model server whose replies are these plain answers, in order.
pub async fn answering(answers: &[&str]) -> super::server::FakeServer {
    let replies = answers
        .iter()
        .map(|answer| super::server::Reply::sse(text(answer)))
        .collect();
    super::server::FakeServer::start(replies).await
}

/// Two bash calls in one answer: `c1` waits until the file `go` exists in the working
/// directory (the run is busy until the test says so) and prints `one`; `c2` prints `two`
/// (a call left for steering to skip).
pub fn busy_until_go_then_another() -> Vec<String> {
    tool_calls(&[
        (
            "c1",
            "bash",
            // As `harness::after_file("go", "echo one")` (this file is also the benches').
            serde_json::json!({"command": "until [ -e go ]; do sleep 0.01; done; echo one"}),
        ),
        ("c2", "bash", serde_json::json!({"command": "echo two"})),
    ])
}
