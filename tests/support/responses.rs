//! Builders for OpenAI Responses SSE streams, as api.openai.com sends them: `event:` lines,
//! one output item per reasoning / message / function call, `.done` events that repeat the
//! full content, and a terminal `response.completed` (or `.incomplete` / `.failed`).

use serde_json::{Value, json};

pub fn event(data: Value) -> String {
    let kind = data["type"].as_str().unwrap_or("message").to_string();
    format!("event: {kind}\ndata: {data}\n\n")
}

/// A response under construction; `finish` (or another ending) returns its frames.
pub struct Stream {
    frames: Vec<String>,
    output_index: usize,
}

impl Default for Stream {
    fn default() -> Self {
        Stream::new()
    }
}

fn response(status: &str, extra: Value) -> Value {
    let mut response = json!({
        "id": "resp_test", "object": "response", "status": status, "model": "test-model",
        "output": [], "usage": null, "error": null, "incomplete_details": null
    });
    if let (Some(fields), Some(extra)) = (response.as_object_mut(), extra.as_object()) {
        for (key, value) in extra {
            fields.insert(key.clone(), value.clone());
        }
    }
    response
}

fn usage() -> Value {
    json!({"input_tokens": 30, "input_tokens_details": {"cached_tokens": 20},
           "output_tokens": 12, "output_tokens_details": {"reasoning_tokens": 4},
           "total_tokens": 42})
}

impl Stream {
    pub fn new() -> Stream {
        Stream {
            frames: vec![
                event(
                    json!({"type": "response.created", "response": response("in_progress", json!({}))}),
                ),
                event(
                    json!({"type": "response.in_progress", "response": response("in_progress", json!({}))}),
                ),
            ],
            output_index: 0,
        }
    }

    fn next_index(&mut self) -> usize {
        self.output_index += 1;
        self.output_index - 1
    }

    /// A reasoning item with a summary and encrypted content.
    pub fn reasoning(mut self, summary: &str, encrypted: &str) -> Stream {
        let index = self.next_index();
        let id = format!("rs_{index}");
        self.frames.push(event(
            json!({"type": "response.output_item.added", "output_index": index,
            "item": {"id": id, "type": "reasoning", "summary": []}}),
        ));
        self.frames.push(event(
            json!({"type": "response.reasoning_summary_part.added",
            "item_id": id, "output_index": index, "summary_index": 0,
            "part": {"type": "summary_text", "text": ""}}),
        ));
        for word in summary.split_inclusive(' ') {
            self.frames.push(event(
                json!({"type": "response.reasoning_summary_text.delta",
                "item_id": id, "output_index": index, "summary_index": 0, "delta": word}),
            ));
        }
        self.frames.push(event(
            json!({"type": "response.output_item.done", "output_index": index,
            "item": {"id": id, "type": "reasoning", "encrypted_content": encrypted,
                     "summary": [{"type": "summary_text", "text": summary}]}}),
        ));
        self
    }

    /// A message item whose text streams word by word.
    pub fn text(mut self, answer: &str) -> Stream {
        let index = self.next_index();
        let id = format!("msg_{index}");
        self.frames.push(event(json!({"type": "response.output_item.added", "output_index": index,
            "item": {"id": id, "type": "message", "role": "assistant", "status": "in_progress", "content": []}})));
        self.frames.push(event(
            json!({"type": "response.content_part.added", "item_id": id,
            "output_index": index, "content_index": 0,
            "part": {"type": "output_text", "text": "", "annotations": []}}),
        ));
        for word in answer.split_inclusive(' ') {
            self.frames.push(event(
                json!({"type": "response.output_text.delta", "item_id": id,
                "output_index": index, "content_index": 0, "delta": word}),
            ));
        }
        self.frames.push(event(
            json!({"type": "response.output_text.done", "item_id": id,
            "output_index": index, "content_index": 0, "text": answer}),
        ));
        self.frames.push(event(
            json!({"type": "response.output_item.done", "output_index": index,
            "item": {"id": id, "type": "message", "role": "assistant", "status": "completed",
                     "content": [{"type": "output_text", "text": answer, "annotations": []}]}}),
        ));
        self
    }

    /// A function call whose arguments stream in two deltas, then arrive whole in `.done`.
    pub fn tool_call(mut self, call_id: &str, name: &str, args: Value) -> Stream {
        let index = self.next_index();
        let id = format!("fc_{index}");
        let text = args.to_string();
        let mid = text
            .char_indices()
            .nth(text.chars().count() / 2)
            .map(|(i, _)| i)
            .unwrap_or(0);
        self.frames.push(event(
            json!({"type": "response.output_item.added", "output_index": index,
            "item": {"id": id, "type": "function_call", "status": "in_progress",
                     "arguments": "", "call_id": call_id, "name": name}}),
        ));
        for part in [&text[..mid], &text[mid..]] {
            self.frames.push(event(
                json!({"type": "response.function_call_arguments.delta",
                "item_id": id, "output_index": index, "delta": part}),
            ));
        }
        self.frames.push(event(
            json!({"type": "response.function_call_arguments.done",
            "item_id": id, "output_index": index, "arguments": text}),
        ));
        self.frames.push(event(
            json!({"type": "response.output_item.done", "output_index": index,
            "item": {"id": id, "type": "function_call", "status": "completed",
                     "arguments": text, "call_id": call_id, "name": name}}),
        ));
        self
    }

    pub fn finish(mut self) -> Vec<String> {
        self.frames.push(event(json!({"type": "response.completed",
            "response": response("completed", json!({"usage": usage()}))})));
        self.frames
    }

    /// Stopped by `max_output_tokens`.
    pub fn incomplete(mut self) -> Vec<String> {
        self.frames.push(event(json!({"type": "response.incomplete",
            "response": response("incomplete", json!({"usage": usage(),
                "incomplete_details": {"reason": "max_output_tokens"}}))})));
        self.frames
    }

    /// An `error` event followed by `response.failed`, as OpenAI sends them.
    pub fn fail(mut self, code: &str, message: &str) -> Vec<String> {
        self.frames.push(event(json!({"type": "error",
            "error": {"type": code, "code": code, "message": message, "param": null}})));
        self.frames.push(event(json!({"type": "response.failed",
            "response": response("failed", json!({"error": {"code": code, "message": message}}))})));
        self.frames
    }

    /// `response.failed` alone, with no `error` event before it (as LiteLLM sends it).
    pub fn failed(mut self, code: &str, message: &str) -> Vec<String> {
        self.frames.push(event(json!({"type": "response.failed",
            "response": response("failed", json!({"error": {"code": code, "message": message}}))})));
        self.frames
    }

    /// The frames so far, with no terminal event: a stream cut short.
    pub fn unfinished(self) -> Vec<String> {
        self.frames
    }
}

pub fn text(answer: &str) -> Vec<String> {
    Stream::new().text(answer).finish()
}

pub fn tool_call(call_id: &str, name: &str, args: Value) -> Vec<String> {
    Stream::new().tool_call(call_id, name, args).finish()
}

pub fn tool_calls(calls: &[(&str, &str, Value)]) -> Vec<String> {
    let mut stream = Stream::new();
    for (call_id, name, args) in calls {
        stream = stream.tool_call(call_id, name, args.clone());
    }
    stream.finish()
}
