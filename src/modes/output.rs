//! Buffered JSON-lines output on stdout: lines are collected while events are arriving and
//! written in one go when the event channel is momentarily empty. No configured API key is
//! written (`crate::secrets`).

use serde::Serialize;
use std::io::Write;

#[derive(Default)]
pub struct JsonLines {
    buffer: Vec<u8>,
}

impl JsonLines {
    /// Queue `value` as one line, with every configured API key masked (`--mode json` and
    /// RPC write every event and response through here).
    pub fn push(&mut self, value: &impl Serialize) {
        if let Ok(line) = serde_json::to_vec(value) {
            self.buffer
                .extend_from_slice(&crate::secrets::redact_bytes(line));
            self.buffer.push(b'\n');
        }
    }

    /// Write out what is buffered. An error means stdout is gone (e.g. the reader exited).
    pub fn flush(&mut self) -> std::io::Result<()> {
        if self.buffer.is_empty() {
            return Ok(());
        }
        let mut stdout = std::io::stdout().lock();
        let result = stdout.write_all(&self.buffer).and_then(|()| stdout.flush());
        self.buffer.clear();
        result
    }
}
