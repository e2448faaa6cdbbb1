//! A message from a stdio server larger than one MCP message may be (rmcp's line limit,
//! 16 MiB, which its HTTP client shares). rmcp would drop such a line without a word, and
//! the call it answers would wait for its timeout. Here, it is read through to its end
//! without being kept whole: its first half of the limit is kept, and its top-level `id`
//! found wherever it is (servers put it first or last). It then becomes an answer the
//! call can use: a tool result keeps the text that arrived within what is kept, marked
//! (`_meta`, `OVERSIZED_META`) with the size the answer had, so the call says which limit
//! was hit; any other answer becomes a JSON-RPC error that says so.

use crate::llm::partial_json::parse_partial;
use serde_json::{Value, json};

/// The longest line (one message, its newline included) passed on as it is: rmcp's own
/// limit, so it never drops one of ours.
pub const LINE_LIMIT: usize = rmcp::transport::async_rw::DEFAULT_MAX_LINE_LENGTH;

/// How much of an oversized message is kept.
pub const KEPT: usize = LINE_LIMIT / 2;

/// The `_meta` key of a tool result that was cut: `{"bytes": size of the answer, "limit":
/// LINE_LIMIT, "kept": KEPT}`.
pub const OVERSIZED_META: &str = "agent/oversized";

/// JSON-RPC's "internal error".
const INTERNAL_ERROR: i64 = -32603;

/// An oversized line, being read.
pub struct Oversized {
    kept: Vec<u8>,
    bytes: u64,
    ids: IdScanner,
}

impl Oversized {
    /// Start with what was read of the line so far.
    pub fn start(so_far: &[u8]) -> Oversized {
        let mut line = Oversized {
            kept: Vec::with_capacity(KEPT),
            bytes: 0,
            ids: IdScanner::default(),
        };
        line.feed(so_far);
        line
    }

    /// The next piece of the line.
    pub fn feed(&mut self, piece: &[u8]) {
        self.bytes = self
            .bytes
            .saturating_add(u64::try_from(piece.len()).unwrap_or(u64::MAX));
        self.ids.feed(piece);
        let room = KEPT.saturating_sub(self.kept.len());
        self.kept.extend_from_slice(&piece[..room.min(piece.len())]);
    }

    /// The line ended: the message to pass on instead (without its newline), or `None`
    /// when it answers nothing (no `id`: a notification, which is dropped).
    pub fn finish(self) -> Option<Vec<u8>> {
        let id = self.ids.id()?;
        let text = match std::str::from_utf8(&self.kept) {
            Ok(text) => text,
            Err(e) => std::str::from_utf8(&self.kept[..e.valid_up_to()]).unwrap_or_default(),
        };
        let partial = parse_partial(text).unwrap_or(Value::Null);
        let message = match tool_result(&partial, self.bytes) {
            Some(result) => json!({"jsonrpc": "2.0", "id": id, "result": result}),
            None => json!({"jsonrpc": "2.0", "id": id, "error": {
                "code": INTERNAL_ERROR,
                "message": format!(
                    "the server's answer was {}, more than the {} one MCP message may hold",
                    size(self.bytes),
                    size(u64::try_from(LINE_LIMIT).unwrap_or(u64::MAX))
                ),
            }}),
        };
        serde_json::to_vec(&message).ok()
    }
}

/// The tool result in the kept part of an answer: its text blocks (the last one as far as
/// it came), whether it is an error, and the mark. `None` when it is no tool result.
fn tool_result(partial: &Value, bytes: u64) -> Option<Value> {
    let result = partial.get("result")?;
    let content = result.get("content")?.as_array()?;
    let texts: Vec<Value> = content
        .iter()
        .filter(|block| block.get("type").and_then(Value::as_str) == Some("text"))
        .filter_map(|block| block.get("text").and_then(Value::as_str))
        .map(|text| json!({"type": "text", "text": text}))
        .collect();
    let mut kept = json!({
        "content": texts,
        "_meta": {OVERSIZED_META: {"bytes": bytes, "limit": LINE_LIMIT, "kept": KEPT}},
    });
    if let Some(is_error) = result.get("isError").and_then(Value::as_bool) {
        kept["isError"] = Value::Bool(is_error);
    }
    Some(kept)
}

/// "100.0 MB", "16 MiB".
pub fn size(bytes: u64) -> String {
    const MIB: u64 = 1024 * 1024;
    if bytes.is_multiple_of(MIB) {
        format!("{} MiB", bytes / MIB)
    } else {
        format!("{:.1} MB", bytes as f64 / 1_000_000.0)
    }
}

/// Finds the value of the top-level `"id"` member of a JSON object that streams past in
/// pieces, keeping nothing else. Hand-written: a streaming parser crate would be a second
/// JSON parser for these few states.
#[derive(Default)]
struct IdScanner {
    depth: u32,
    in_string: bool,
    escaped: bool,
    /// The next string at depth 1 is a key.
    expect_key: bool,
    /// Reading a key at depth 1: its first bytes (enough to tell `id` apart).
    key: Option<Vec<u8>>,
    /// The last key at depth 1 was `id`; its value comes after the `:`.
    id_key: bool,
    /// The raw bytes of the id's value, while it is being read.
    value: Option<Vec<u8>>,
    found: Option<Vec<u8>>,
}

impl IdScanner {
    fn feed(&mut self, bytes: &[u8]) {
        for &byte in bytes {
            self.step(byte);
        }
    }

    fn step(&mut self, byte: u8) {
        if let Some(value) = &mut self.value {
            let ends = !self.in_string && matches!(byte, b',' | b'}');
            if !ends {
                if self.in_string {
                    if self.escaped {
                        self.escaped = false;
                    } else if byte == b'\\' {
                        self.escaped = true;
                    } else if byte == b'"' {
                        self.in_string = false;
                    }
                } else if byte == b'"' {
                    self.in_string = true;
                } else if matches!(byte, b'{' | b'[') {
                    // Not an id a response can have: forget it, read on as usual.
                    self.value = None;
                    self.depth += 1;
                    return;
                }
                if value.len() < 256 {
                    value.push(byte);
                }
                return;
            }
            self.found = self.value.take();
        }
        if self.in_string {
            if self.escaped {
                self.escaped = false;
            } else if byte == b'\\' {
                self.escaped = true;
            } else if byte == b'"' {
                self.in_string = false;
                if let Some(key) = self.key.take() {
                    self.id_key = key == b"id";
                }
                return;
            }
            if let Some(key) = &mut self.key
                && key.len() < 3
            {
                key.push(byte);
            }
            return;
        }
        match byte {
            b'"' => {
                self.in_string = true;
                if self.depth == 1 && self.expect_key {
                    self.expect_key = false;
                    self.key = Some(Vec::new());
                }
            }
            b'{' | b'[' => {
                self.depth += 1;
                if self.depth == 1 {
                    self.expect_key = byte == b'{';
                }
            }
            b'}' | b']' => self.depth = self.depth.saturating_sub(1),
            b',' if self.depth == 1 => self.expect_key = true,
            b':' if self.depth == 1 && std::mem::take(&mut self.id_key) && self.found.is_none() => {
                self.value = Some(Vec::new());
            }
            _ => {}
        }
    }

    /// The id, when the object had one a response can have (a number or a string).
    fn id(&self) -> Option<Value> {
        let raw = self.found.as_deref()?;
        match serde_json::from_slice::<Value>(raw) {
            Ok(id @ (Value::Number(_) | Value::String(_))) => Some(id),
            _ => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn id_of(pieces: &[&str]) -> Option<Value> {
        let mut scanner = IdScanner::default();
        for piece in pieces {
            scanner.feed(piece.as_bytes());
        }
        scanner.id()
    }

    #[test]
    fn the_top_level_id_is_found_first_last_or_split() {
        assert_eq!(
            id_of(&[r#"{"jsonrpc":"2.0","id":7,"result":{"id":1}}"#]),
            Some(json!(7))
        );
        assert_eq!(
            id_of(&[
                r#"{"result":{"id":1,"content":[{"text":"a\"id\":3"}]},"jsonrpc":"2.0","i"#,
                r#"d": "r-"#,
                r#"9" }"#
            ]),
            Some(json!("r-9"))
        );
        assert_eq!(id_of(&[r#"{"method":"x","params":{"id":2}}"#]), None);
        assert_eq!(id_of(&[r#"{"idx":1,"id":{"a":1}}"#]), None);
    }

    #[test]
    fn an_oversized_tool_result_keeps_its_start_and_says_how_big_it_was() {
        let text = "y".repeat(KEPT + 100);
        // The id last, as the TypeScript SDK writes it.
        let line = format!(
            r#"{{"result":{{"isError":false,"content":[{{"type":"text","text":"{text}"}}]}},"jsonrpc":"2.0","id":4}}"#
        );
        let mut oversized = Oversized::start(&line.as_bytes()[..1000]);
        oversized.feed(&line.as_bytes()[1000..]);
        let message: Value = serde_json::from_slice(&oversized.finish().unwrap()).unwrap();
        assert_eq!(message["id"], 4);
        let kept = message["result"]["content"][0]["text"].as_str().unwrap();
        assert!(
            kept.len() > KEPT - 100 && kept.len() < KEPT,
            "{}",
            kept.len()
        );
        assert_eq!(
            message["result"]["_meta"][OVERSIZED_META]["bytes"],
            json!(line.len())
        );
        assert_eq!(message["result"]["isError"], false);

        // Not a tool result (the first bytes of a huge `tools/list` answer).
        let other = r#"{"jsonrpc":"2.0","id":5,"result":{"tools":[{"name":"a"},{"na"#;
        let message: Value =
            serde_json::from_slice(&Oversized::start(other.as_bytes()).finish().unwrap()).unwrap();
        assert_eq!(message["id"], 5);
        assert!(
            message["error"]["message"]
                .as_str()
                .unwrap()
                .contains("more than the 16 MiB one MCP message may hold"),
            "{message}"
        );
    }
}
