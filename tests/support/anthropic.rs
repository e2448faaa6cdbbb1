//! Builders for Anthropic Messages SSE streams, as api.anthropic.com sends them: named
//! events, one content block per thinking / text / tool-use part, `message_delta` with the
//! stop reason and final usage, then `message_stop`.

use serde_json::{Value, json};

pub fn event(kind: &str, data: Value) -> String {
    format!("event: {kind}\ndata: {data}\n\n")
}

/// A response under construction; `finish` or `fail` returns its frames.
pub struct Stream {
    frames: Vec<String>,
    index: usize,
}

impl Default for Stream {
    fn default() -> Self {
        Stream::new()
    }
}

impl Stream {
    pub fn new() -> Stream {
        let start = event(
            "message_start",
            json!({"type": "message_start", "message": {
                "id": "msg_test", "type": "message", "role": "assistant", "model": "test-model",
                "content": [], "stop_reason": null, "stop_sequence": null,
                "usage": {"input_tokens": 10, "cache_creation_input_tokens": 0,
                          "cache_read_input_tokens": 0, "output_tokens": 1}}}),
        );
        Stream {
            frames: vec![start, event("ping", json!({"type": "ping"}))],
            index: 0,
        }
    }

    fn block(&mut self, start: Value, deltas: Vec<Value>) {
        let index = self.index;
        self.index += 1;
        self.frames.push(event(
            "content_block_start",
            json!({"type": "content_block_start", "index": index, "content_block": start}),
        ));
        for delta in deltas {
            self.frames.push(event(
                "content_block_delta",
                json!({"type": "content_block_delta", "index": index, "delta": delta}),
            ));
        }
        self.frames.push(event(
            "content_block_stop",
            json!({"type": "content_block_stop", "index": index}),
        ));
    }

    pub fn thinking(mut self, text: &str, signature: &str) -> Stream {
        self.block(
            json!({"type": "thinking", "thinking": "", "signature": ""}),
            vec![
                json!({"type": "thinking_delta", "thinking": text}),
                json!({"type": "signature_delta", "signature": signature}),
            ],
        );
        self
    }

    pub fn redacted_thinking(mut self, data: &str) -> Stream {
        self.block(json!({"type": "redacted_thinking", "data": data}), vec![]);
        self
    }

    /// Text streamed word by word.
    pub fn text(mut self, answer: &str) -> Stream {
        let deltas = answer
            .split_inclusive(' ')
            .map(|word| json!({"type": "text_delta", "text": word}))
            .collect();
        self.block(json!({"type": "text", "text": ""}), deltas);
        self
    }

    /// A tool call whose input streams in two pieces (after the usual empty first one).
    pub fn tool_call(mut self, id: &str, name: &str, args: Value) -> Stream {
        let text = args.to_string();
        let mid = text
            .char_indices()
            .nth(text.chars().count() / 2)
            .map(|(i, _)| i)
            .unwrap_or(0);
        self.block(
            json!({"type": "tool_use", "id": id, "name": name, "input": {}}),
            [&text[..0], &text[..mid], &text[mid..]]
                .iter()
                .map(|part| json!({"type": "input_json_delta", "partial_json": part}))
                .collect(),
        );
        self
    }

    /// Ends normally: `end_turn`, `tool_use` or `max_tokens`.
    pub fn finish(mut self, stop_reason: &str) -> Vec<String> {
        self.frames.push(event(
            "message_delta",
            json!({"type": "message_delta",
                   "delta": {"stop_reason": stop_reason, "stop_sequence": null},
                   "usage": {"output_tokens": 20}}),
        ));
        self.frames
            .push(event("message_stop", json!({"type": "message_stop"})));
        self.frames
    }

    /// Ends with an in-stream `error` event, e.g. `overloaded_error`.
    pub fn fail(mut self, kind: &str, message: &str) -> Vec<String> {
        self.frames.push(event(
            "error",
            json!({"type": "error", "error": {"type": kind, "message": message}}),
        ));
        self.frames
    }

    /// The frames so far, with no end: a stream cut short.
    pub fn unfinished(self) -> Vec<String> {
        self.frames
    }
}

pub fn text(answer: &str) -> Vec<String> {
    Stream::new().text(answer).finish("end_turn")
}

pub fn tool_call(id: &str, name: &str, args: Value) -> Vec<String> {
    Stream::new().tool_call(id, name, args).finish("tool_use")
}

pub fn tool_calls(calls: &[(&str, &str, Value)]) -> Vec<String> {
    let mut stream = Stream::new();
    for (id, name, args) in calls {
        stream = stream.tool_call(id, name, args.clone());
    }
    stream.finish("tool_use")
}
