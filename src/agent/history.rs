//! The conversation as the model sees it: messages in order, each with the id of its
//! session entry (so a compaction can say where it cut), and the size of that context in
//! tokens, kept up to date as messages arrive (the status line reads it every frame).
//!
//! A resumed context far larger than any window may start with a cold part
//! (`session::cold`): its older messages as places in the session file. Positions and
//! `len` count them; `messages` and `ids` are the part held as values, after them. What
//! needs every message as a value (a request, a compaction, `get_messages`) reads the
//! cold part back first (`warm_all`).

use super::compaction::{content_tokens, estimate_tokens, reported_tokens, usage_counts};
use crate::protocol::message::Message;
use crate::session::cold::ColdPart;
use std::sync::Arc;

#[derive(Default)]
pub(crate) struct History {
    /// The older messages, not read yet; never empty when present.
    cold: Option<ColdPart>,
    ids: Vec<String>,
    messages: Vec<Arc<Message>>,
    /// The last reported usage plus estimates after it (`compaction::reported_tokens`)…
    reported_tokens: u64,
    /// …and the estimate of all content (`compaction::content_tokens`): the larger counts.
    content_tokens: u64,
}

impl History {
    #[cfg(test)]
    pub fn new(entries: Vec<(String, Arc<Message>)>) -> Self {
        Self::with_cold(None, entries)
    }

    /// A context whose messages before `entries` are `cold`.
    pub fn with_cold(cold: Option<ColdPart>, entries: Vec<(String, Arc<Message>)>) -> Self {
        let (ids, messages): (Vec<_>, Vec<_>) = entries.into_iter().unzip();
        History {
            // A part not found yet is kept as it is: finding it reads the file.
            cold: cold.filter(|c| !c.is_found() || !c.is_empty()),
            reported_tokens: reported_tokens(&messages),
            content_tokens: content_tokens(&messages),
            ids,
            messages,
        }
    }

    pub fn push(&mut self, id: String, message: Arc<Message>) {
        // A cold part holds no compaction: every usage after its first message counts.
        let since = match (&self.cold, self.messages.first()) {
            (Some(_), _) => i64::MIN,
            (None, first) => first.map_or(message.timestamp(), |m| m.timestamp()),
        };
        let estimate = estimate_tokens(&message);
        self.reported_tokens = match usage_counts(&message, since) {
            Some(reported) => reported,
            None => self.reported_tokens.saturating_add(estimate),
        };
        self.content_tokens = self.content_tokens.saturating_add(estimate);
        self.ids.push(id);
        self.messages.push(message);
    }

    /// What the next request would send, in tokens (`compaction::context_tokens`).
    /// A cold part counts its estimate (`ColdPart::tokens`) on top of the rest.
    pub fn context_tokens(&self) -> u64 {
        let cold = self.cold.as_ref().map_or(0, ColdPart::tokens);
        self.reported_tokens
            .max(self.content_tokens.saturating_add(cold))
    }

    fn recount(&mut self) {
        self.reported_tokens = reported_tokens(&self.messages);
        self.content_tokens = content_tokens(&self.messages);
    }

    /// The messages held as values: all of them unless a cold part comes first.
    pub fn messages(&self) -> &[Arc<Message>] {
        &self.messages
    }

    /// The entry ids of `messages`.
    pub fn ids(&self) -> &[String] {
        &self.ids
    }

    /// The messages of the cold part, not read yet (0: none).
    pub fn cold_len(&self) -> usize {
        self.cold.as_ref().map_or(0, ColdPart::len)
    }

    pub fn cold(&self) -> Option<&ColdPart> {
        self.cold.as_ref()
    }

    /// The messages counted so far, without reading the file: a cold part not found yet
    /// counts none of its messages (`earlier_pending`).
    pub fn counted_len(&self) -> usize {
        let cold = match &self.cold {
            Some(part) if part.is_found() => part.len(),
            _ => 0,
        };
        cold + self.messages.len()
    }

    /// Whether older messages exist that are not counted yet (a cold part not found).
    pub fn earlier_pending(&self) -> bool {
        self.cold.as_ref().is_some_and(|part| !part.is_found())
    }

    /// No message at all (nothing is read to tell).
    pub fn is_empty(&self) -> bool {
        self.messages.is_empty() && self.counted_len() == 0 && !self.earlier_pending()
    }

    /// The entry id of the latest user message.
    pub fn last_user_id(&self) -> Option<String> {
        match self
            .messages
            .iter()
            .rposition(|m| matches!(m.as_ref(), Message::User(_)))
        {
            Some(i) => self.ids.get(i).cloned().filter(|id| !id.is_empty()),
            None => self
                .cold
                .as_ref()
                .and_then(|c| c.last_user_id())
                .map(str::to_string),
        }
    }

    /// The entry id of the last message kept on disk (the head of the context).
    pub fn last_id(&self) -> Option<String> {
        match self.ids.iter().rev().find(|id| !id.is_empty()) {
            Some(id) => Some(id.clone()),
            None => self
                .cold
                .as_ref()
                .and_then(|c| c.entries().last())
                .map(|e| e.id.clone()),
        }
    }

    /// Where entry `id` is in the context (cold part included).
    pub fn position(&self, id: &str) -> Option<usize> {
        match self.ids.iter().position(|i| i == id) {
            Some(i) => Some(self.cold_len() + i),
            None => self.cold.as_ref().and_then(|c| c.position(id)),
        }
    }

    /// The message at `index` (read back from the file when it is in the cold part).
    pub fn message(&self, index: usize) -> Option<std::io::Result<Arc<Message>>> {
        let cold = self.cold_len();
        if index >= cold {
            return self.messages.get(index - cold).cloned().map(Ok);
        }
        let part = self.cold.as_ref()?;
        Some(part.load(index..index + 1).and_then(|mut read| {
            read.pop().map(|(_, m)| m).ok_or_else(|| {
                std::io::Error::new(std::io::ErrorKind::InvalidData, "message not found")
            })
        }))
    }

    /// Keep only the first `len` messages (a rewind).
    pub fn truncate(&mut self, len: usize) {
        let cold = self.cold_len();
        if len < cold {
            if let Some(part) = &mut self.cold {
                part.truncate(len);
            }
            if len == 0 {
                self.cold = None;
            }
            self.ids.clear();
            self.messages.clear();
        } else {
            self.ids.truncate(len - cold);
            self.messages.truncate(len - cold);
        }
        self.recount();
    }

    /// Read back the newest `count` messages of the cold part and hold them as values.
    pub fn warm(&mut self, count: usize) -> std::io::Result<()> {
        let Some(part) = &mut self.cold else {
            return Ok(());
        };
        let newest = part.split_off_last(count);
        let read = match newest.load_all() {
            Ok(read) => read,
            Err(error) => {
                // Nothing lost: the places go back.
                part.rejoin(&newest);
                return Err(error);
            }
        };
        if part.is_empty() {
            self.cold = None;
        }
        let (ids, messages): (Vec<_>, Vec<_>) = read.into_iter().unzip();
        self.ids.splice(0..0, ids);
        self.messages.splice(0..0, messages);
        self.recount();
        Ok(())
    }

    /// Read back the whole cold part.
    pub fn warm_all(&mut self) -> std::io::Result<()> {
        self.warm(self.cold_len())
    }

    /// Replace everything before `index` with one message (a compaction summary). The
    /// cold part, if any, must be before `index`: it is summarised.
    pub fn replace_prefix(&mut self, index: usize, id: String, message: Arc<Message>) {
        let index = index
            .saturating_sub(self.cold_len())
            .min(self.messages.len());
        self.cold = None;
        self.ids.splice(..index, [id]);
        self.messages.splice(..index, [message]);
        self.recount();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::agent::compaction::context_tokens;
    use crate::protocol::message::UserMessage;

    #[test]
    fn replacing_a_prefix_keeps_the_rest() {
        let msg = |t: &str| Arc::new(Message::User(UserMessage::text(t)));
        let mut history = History::new(vec![
            ("a".into(), msg("1")),
            ("b".into(), msg("2")),
            ("c".into(), msg("3")),
        ]);
        history.replace_prefix(2, "s".into(), msg("summary"));
        assert_eq!(history.ids(), ["s", "c"]);
        assert_eq!(history.counted_len(), 2);
    }

    #[test]
    fn the_context_size_follows_every_push() {
        use crate::protocol::message::AssistantMessage;
        let msg = |t: &str| Arc::new(Message::User(UserMessage::text(t)));
        let mut history = History::default();
        history.push("a".into(), msg(&"x".repeat(400)));
        assert_eq!(history.context_tokens(), context_tokens(history.messages()));
        let mut answer = AssistantMessage::empty("p", "m");
        answer.usage.total_tokens = 5_000;
        history.push("b".into(), Arc::new(Message::Assistant(answer)));
        history.push("c".into(), msg(&"y".repeat(40)));
        assert_eq!(history.context_tokens(), 5_010);
        assert_eq!(history.context_tokens(), context_tokens(history.messages()));
        // Content far beyond the reported usage counts as what it is.
        history.push("d".into(), msg(&"z".repeat(40_000)));
        assert_eq!(history.context_tokens(), 15_010);
        let mut small = AssistantMessage::empty("p", "m");
        small.usage.total_tokens = 100;
        history.push("e".into(), Arc::new(Message::Assistant(small)));
        assert_eq!(history.context_tokens(), 10_110);
        assert_eq!(history.context_tokens(), context_tokens(history.messages()));
    }
}
