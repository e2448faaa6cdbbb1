//! `/copy`: the last answer onto the clipboard with OSC 52, which the terminal itself
//! carries out — so it works over SSH and inside containers, with no clipboard program.

use super::app::App;
use crate::protocol::message::Message;
use base64::Engine;
use std::io::Write;

/// Terminals cap what OSC 52 may carry; past this the copy is refused with a note.
const MAX_BYTES: usize = 100_000;

/// The escape sequence that puts `text` on the clipboard.
pub fn osc52(text: &str) -> String {
    let encoded = base64::engine::general_purpose::STANDARD.encode(text.as_bytes());
    format!("\x1b]52;c;{encoded}\x07")
}

impl App {
    pub fn copy_command(&mut self) {
        let last = self
            .agent
            .message_entries()
            .into_iter()
            .rev()
            .find_map(|(_, message)| match message.as_ref() {
                Message::Assistant(answer) if !answer.text().trim().is_empty() => {
                    Some(answer.text())
                }
                _ => None,
            });
        let Some(text) = last else {
            return self.notice("Nothing to copy yet: no answer in this conversation.");
        };
        if text.len() > MAX_BYTES {
            return self.warning(&format!(
                "The last answer is {} KB, more than a terminal takes through OSC 52 ({} KB).",
                text.len() / 1024,
                MAX_BYTES / 1024
            ));
        }
        let mut out = std::io::stdout();
        let written = out
            .write_all(osc52(&text).as_bytes())
            .and_then(|()| out.flush());
        match written {
            Ok(()) => self.notice(&format!(
                "Copied the last answer ({} characters) to the clipboard.",
                text.chars().count()
            )),
            Err(e) => self.warning(&format!("Could not copy: {e}")),
        }
    }
}
