//! The conversation as the model sees it: messages in order, each with the id of its
//! session entry (so a compaction can say where it cut), and the size of that context in
//! tokens, kept up to date as messages arrive (the status line reads it every frame).

use super::compaction::{content_tokens, estimate_tokens, reported_tokens, usage_counts};
use crate::protocol::message::Message;
use std::sync::Arc;

#[derive(Default)]
pub(crate) struct History {
    ids: Vec<String>,
    messages: Vec<Arc<Message>>,
    /// The last reported usage plus estimates after it (`compaction::reported_tokens`)…
    reported_tokens: u64,
    /// …and the estimate of all content (`compaction::content_tokens`): the larger counts.
    content_tokens: u64,
}

impl History {
    pub fn new(entries: Vec<(String, Arc<Message>)>) -> Self {
        let (ids, messages): (Vec<_>, Vec<_>) = entries.into_iter().unzip();
        History {
            reported_tokens: reported_tokens(&messages),
            content_tokens: content_tokens(&messages),
            ids,
            messages,
        }
    }

    pub fn push(&mut self, id: String, message: Arc<Message>) {
        let since = self
            .messages
            .first()
            .map_or(message.timestamp(), |m| m.timestamp());
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
    pub fn context_tokens(&self) -> u64 {
        self.reported_tokens.max(self.content_tokens)
    }

    fn recount(&mut self) {
        self.reported_tokens = reported_tokens(&self.messages);
        self.content_tokens = content_tokens(&self.messages);
    }

    pub fn messages(&self) -> &[Arc<Message>] {
        &self.messages
    }

    pub fn ids(&self) -> &[String] {
        &self.ids
    }

    pub fn len(&self) -> usize {
        self.messages.len()
    }

    /// The entry id of the latest user message.
    pub fn last_user_id(&self) -> Option<String> {
        self.messages
            .iter()
            .rposition(|m| matches!(m.as_ref(), Message::User(_)))
            .and_then(|i| self.ids.get(i).cloned())
            .filter(|id| !id.is_empty())
    }

    /// Where entry `id` is in the context.
    pub fn position(&self, id: &str) -> Option<usize> {
        self.ids.iter().position(|i| i == id)
    }

    /// Keep only the first `len` messages (a rewind).
    pub fn truncate(&mut self, len: usize) {
        self.ids.truncate(len);
        self.messages.truncate(len);
        self.recount();
    }

    /// Replace everything before `index` with one message (a compaction summary).
    pub fn replace_prefix(&mut self, index: usize, id: String, message: Arc<Message>) {
        let index = index.min(self.messages.len());
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
        assert_eq!(history.len(), 2);
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
