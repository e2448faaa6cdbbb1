//! The steering and follow-up queues: messages the user sent while a run was busy. In
//! `one-at-a-time` mode each check delivers the oldest message; in `all` mode, every
//! queued message at once.

use crate::protocol::message::UserMessage;
pub use crate::protocol::rpc::QueueMode;
use std::collections::VecDeque;

#[derive(Debug, Default)]
pub struct MessageQueue {
    pub mode: QueueMode,
    items: VecDeque<UserMessage>,
}

impl MessageQueue {
    pub fn new(mode: QueueMode) -> Self {
        MessageQueue {
            mode,
            items: VecDeque::new(),
        }
    }

    pub fn push(&mut self, message: UserMessage) {
        self.items.push_back(message);
    }

    pub fn is_empty(&self) -> bool {
        self.items.is_empty()
    }

    pub fn len(&self) -> usize {
        self.items.len()
    }

    /// The messages due now, by the queue's mode.
    pub fn take(&mut self) -> Vec<UserMessage> {
        match self.mode {
            QueueMode::OneAtATime => self.items.pop_front().into_iter().collect(),
            QueueMode::All => self.items.drain(..).collect(),
        }
    }

    /// Remove the most recently queued message.
    pub fn pop_last(&mut self) -> Option<UserMessage> {
        self.items.pop_back()
    }

    pub fn take_all(&mut self) -> Vec<UserMessage> {
        self.items.drain(..).collect()
    }

    pub fn texts(&self) -> Vec<String> {
        self.items.iter().map(UserMessage::plain_text).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn modes_deliver_one_or_all() {
        let mut queue = MessageQueue::new(QueueMode::OneAtATime);
        queue.push(UserMessage::text("a"));
        queue.push(UserMessage::text("b"));
        assert_eq!(queue.take().len(), 1);
        assert_eq!(queue.texts(), vec!["b"]);
        queue.mode = QueueMode::All;
        queue.push(UserMessage::text("c"));
        let taken: Vec<_> = queue.take().iter().map(UserMessage::plain_text).collect();
        assert_eq!(taken, vec!["b", "c"]);
        assert!(queue.is_empty());
    }
}
