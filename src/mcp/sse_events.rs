//! The event stream of a streamable-HTTP server's answer, read one event at a time with a
//! bound: an event up to the size one MCP message may hold (`LINE_LIMIT`) is passed on as
//! it came; a larger one is read to its end without being kept whole, its `data` lines fed
//! to `Oversized`, and passed on as the bounded message that makes (a cut tool result, or an
//! error that names the limit) — rmcp's own reader ends the whole stream with an error
//! there, losing the answer and taking the connection down with it. A response to another
//! request than the one the stream answers (a request never sent) is dropped and logged:
//! rmcp takes the first response on the stream for its end, and the real answer would be
//! lost.
//!
//! Hand-written: the event boundaries and the `data:` field are all that is looked at here
//! (SSE parsing proper stays with the `sse-stream` crate rmcp uses, which runs after this
//! filter), and no crate streams an event's data without buffering it.

use super::oversized::{LINE_LIMIT, Oversized};
use bytes::Bytes;
use serde::Deserialize;
use serde::de::IgnoredAny;
use serde_json::Value;

/// How many data bytes are gathered before they are fed to `Oversized` in one piece.
const FEED_BATCH: usize = 64 * 1024;

/// Splits a byte stream into SSE events and bounds each one.
pub struct EventFilter {
    server: String,
    /// The id of the request the stream answers, when it answers one.
    answers: Option<Value>,
    /// The current event as it came, while it is within the limit.
    raw: Vec<u8>,
    /// The current event once it is over the limit.
    oversized: Option<LongEvent>,
    /// No byte of the current line yet.
    at_line_start: bool,
    /// The last byte was a `\r` (a `\n` right after it ends no second line).
    after_cr: bool,
    /// The last byte ended an event.
    just_ended: bool,
}

/// An event over the limit, being read.
struct LongEvent {
    message: Oversized,
    line: Line,
    /// Data lines seen so far (the second and later ones are joined with a newline).
    data_lines: usize,
    batch: Vec<u8>,
}

enum Line {
    /// The first bytes of a line, until they tell whether it is a `data:` one.
    Start(Vec<u8>),
    /// Inside a `data:` line; `true` while the one space after the colon may come.
    Data(bool),
    Other,
}

impl EventFilter {
    pub fn new(server: &str, answers: Option<Value>) -> EventFilter {
        EventFilter {
            server: server.to_string(),
            answers,
            raw: Vec::new(),
            oversized: None,
            at_line_start: true,
            after_cr: false,
            just_ended: false,
        }
    }

    /// Take the next piece of the stream; what may be passed on goes to `out`.
    pub fn feed(&mut self, piece: &[u8], out: &mut Vec<Bytes>) {
        let mut from = 0;
        for (at, &byte) in piece.iter().enumerate() {
            let after_cr = std::mem::replace(&mut self.after_cr, byte == b'\r');
            let just_ended = std::mem::take(&mut self.just_ended);
            if byte == b'\n' && after_cr {
                if just_ended {
                    // The rest of the `\r\n` that ended the event passed on.
                    self.take(&piece[from..at]);
                    from = at + 1;
                }
                continue;
            }
            if byte != b'\n' && byte != b'\r' {
                self.at_line_start = false;
                continue;
            }
            let event_ends = std::mem::replace(&mut self.at_line_start, true);
            if event_ends {
                self.take(&piece[from..=at]);
                from = at + 1;
                self.end_event(out);
                self.just_ended = true;
            }
        }
        self.take(&piece[from..]);
    }

    /// The stream ended: an event cut off without its blank line is passed on as it is
    /// (the SSE parser drops it), or, over the limit, as `Oversized` makes it.
    pub fn finish(&mut self, out: &mut Vec<Bytes>) {
        if self.oversized.is_some() {
            self.end_event(out);
        } else if !self.raw.is_empty() {
            out.push(Bytes::from(std::mem::take(&mut self.raw)));
        }
    }

    /// Bytes of the current event (up to and including its end).
    fn take(&mut self, bytes: &[u8]) {
        if bytes.is_empty() {
            return;
        }
        if let Some(long) = &mut self.oversized {
            long.feed(bytes);
            return;
        }
        if self.raw.len() + bytes.len() <= LINE_LIMIT {
            self.raw.extend_from_slice(bytes);
            return;
        }
        let mut long = LongEvent {
            message: Oversized::start(&[]),
            line: Line::Start(Vec::new()),
            data_lines: 0,
            batch: Vec::with_capacity(FEED_BATCH),
        };
        long.feed(&std::mem::take(&mut self.raw));
        long.feed(bytes);
        self.raw = Vec::new();
        self.oversized = Some(long);
    }

    fn end_event(&mut self, out: &mut Vec<Bytes>) {
        let Some(mut long) = self.oversized.take() else {
            let event = std::mem::take(&mut self.raw);
            if !event.is_empty() && !self.stray(&data_of(&event)) {
                out.push(Bytes::from(event));
            }
            return;
        };
        long.flush();
        match long.message.finish() {
            Some(message) if self.stray(&message) => {}
            Some(message) => {
                tracing::warn!(
                    target: "mcp",
                    server = %self.server,
                    limit = LINE_LIMIT,
                    "a message over the size limit was cut"
                );
                let mut event = b"data: ".to_vec();
                event.extend_from_slice(&message);
                event.extend_from_slice(b"\n\n");
                out.push(Bytes::from(event));
            }
            None => tracing::warn!(
                target: "mcp",
                server = %self.server,
                limit = LINE_LIMIT,
                "a message over the size limit that answers nothing was dropped"
            ),
        }
    }
}

impl EventFilter {
    /// Whether `data` is a response to another request than the one this stream answers
    /// (then it is logged).
    fn stray(&self, data: &[u8]) -> bool {
        /// Only what tells a response and its id; the rest is skipped, not kept.
        #[derive(Deserialize)]
        struct Head {
            id: Option<Value>,
            method: Option<IgnoredAny>,
        }
        let Some(answers) = &self.answers else {
            return false;
        };
        let Ok(Head {
            id: Some(id),
            method: None,
        }) = serde_json::from_slice::<Head>(data)
        else {
            return false;
        };
        // As rmcp: a server may write a number id as a string.
        let text = |id: &Value| match id {
            Value::String(text) => text.clone(),
            other => other.to_string(),
        };
        if text(&id) == text(answers) {
            return false;
        }
        tracing::warn!(
            target: "mcp",
            server = %self.server,
            %id,
            "ignored a response to a request that was never sent"
        );
        true
    }
}

/// The data of an event: its `data:` lines, joined with newlines.
fn data_of(event: &[u8]) -> Vec<u8> {
    let mut data = Vec::new();
    let mut lines = 0;
    for line in event.split(|b| *b == b'\n' || *b == b'\r') {
        let Some(value) = line.strip_prefix(b"data:") else {
            continue;
        };
        if lines > 0 {
            data.push(b'\n');
        }
        lines += 1;
        data.extend_from_slice(value.strip_prefix(b" ").unwrap_or(value));
    }
    data
}

impl LongEvent {
    fn feed(&mut self, bytes: &[u8]) {
        for &byte in bytes {
            if byte == b'\n' || byte == b'\r' {
                self.line = Line::Start(Vec::new());
                continue;
            }
            match &mut self.line {
                Line::Data(space_may_come) => {
                    if std::mem::take(space_may_come) && byte == b' ' {
                        continue;
                    }
                    self.batch.push(byte);
                    if self.batch.len() >= FEED_BATCH {
                        self.flush();
                    }
                }
                Line::Start(first) => {
                    first.push(byte);
                    if first.as_slice() == b"data:" {
                        if self.data_lines > 0 {
                            self.batch.push(b'\n');
                        }
                        self.data_lines += 1;
                        self.line = Line::Data(true);
                    } else if !b"data:".starts_with(first) {
                        self.line = Line::Other;
                    }
                }
                Line::Other => {}
            }
        }
    }

    fn flush(&mut self) {
        self.message.feed(&self.batch);
        self.batch.clear();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(pieces: &[&[u8]]) -> Vec<u8> {
        let mut filter = EventFilter::new("t", Some(serde_json::json!(3)));
        let mut out = Vec::new();
        for piece in pieces {
            filter.feed(piece, &mut out);
        }
        filter.finish(&mut out);
        out.concat()
    }

    #[test]
    fn events_within_the_limit_pass_as_they_came_in_any_pieces() {
        let stream = b"id: 1\r\ndata: {\"a\":1}\r\n\r\n: keep-alive\n\ndata: x\ndata: y\n\n";
        for split in [1, 7, 20, stream.len()] {
            let (a, b) = stream.split_at(split.min(stream.len()));
            // The `\n` of the `\r\n` that ends an event goes (a `\r` alone ends it too).
            let expected = String::from_utf8_lossy(stream).replace("\r\n\r\n", "\r\n\r");
            assert_eq!(String::from_utf8(run(&[a, b])).unwrap(), expected);
        }
    }

    #[test]
    fn a_response_to_another_request_is_dropped() {
        let stream = b"data: {\"jsonrpc\":\"2.0\",\"id\":999,\"result\":{}}\n\n\
                       data: {\"method\":\"notifications/progress\",\"params\":{}}\n\n\
                       data: {\"jsonrpc\":\"2.0\",\"id\":\"3\",\"result\":{}}\n\n";
        let out = String::from_utf8(run(&[stream])).unwrap();
        assert!(!out.contains("999"), "{out}");
        assert!(out.contains("progress") && out.contains("\"3\""), "{out}");
    }

    #[test]
    fn an_event_over_the_limit_becomes_the_bounded_message() {
        let text = "q".repeat(LINE_LIMIT + 10);
        let message = format!(
            r#"{{"jsonrpc":"2.0","id":3,"result":{{"content":[{{"type":"text","text":"{text}"}}]}}}}"#
        );
        let event = format!("id: 0\r\ndata: {message}\r\n\r\ndata: {{\"after\":1}}\n\n");
        let bytes = event.as_bytes();
        let out = run(&[&bytes[..100], &bytes[100..LINE_LIMIT], &bytes[LINE_LIMIT..]]);
        let out = String::from_utf8(out).unwrap();
        let (first, rest) = out.split_once("\n\n").unwrap();
        assert_eq!(rest, "data: {\"after\":1}\n\n");
        let cut: Value = serde_json::from_str(first.strip_prefix("data: ").unwrap()).unwrap();
        assert_eq!(cut["id"], 3);
        let meta = &cut["result"]["_meta"][super::super::oversized::OVERSIZED_META];
        assert_eq!(meta["bytes"], message.len());
        let kept = cut["result"]["content"][0]["text"].as_str().unwrap();
        assert!(kept.starts_with("qqq") && kept.len() < LINE_LIMIT / 2);
    }
}
