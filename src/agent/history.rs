//! The conversation as the model sees it: messages in order, each with the id of its
//! session entry (so a compaction can say where it cut).

use super::message::Message;
use std::sync::Arc;

#[derive(Default)]
pub(crate) struct History {
    ids: Vec<String>,
    messages: Vec<Arc<Message>>,
}

impl History {
    pub fn new(entries: Vec<(String, Arc<Message>)>) -> Self {
        let (ids, messages) = entries.into_iter().unzip();
        History { ids, messages }
    }

    pub fn push(&mut self, id: String, message: Arc<Message>) {
        self.ids.push(id);
        self.messages.push(message);
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

    /// Replace everything before `index` with one message (a compaction summary).
    pub fn replace_prefix(&mut self, index: usize, id: String, message: Arc<Message>) {
        let index = index.min(self.messages.len());
        self.ids.splice(..index, [id]);
        self.messages.splice(..index, [message]);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::agent::message::UserMessage;

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
}
