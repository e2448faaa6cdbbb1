//! What a client attaching to a live session is shown first: the conversation's completed
//! messages, then the lines of the turn in progress (the partial message's `message_start`
//! and deltas, tool executions, approval requests and their resolution), then the last
//! todo list and queue. It is a fold over the very event stream the hub fans out, so a
//! replay taken between two events, followed by the events after it, has no gap and no
//! duplicate (docs/protocol.md §4.5).

use crate::protocol::event::AgentEvent;
use crate::protocol::message::Message;
use std::sync::Arc;

/// One serialized line of the turn in progress, and whether it belongs to the message
/// being streamed (dropped from the tail when that message is complete).
struct TailLine {
    streaming: bool,
    line: Arc<str>,
}

/// A message of the conversation and its session entry id.
pub(super) type Entry = (Option<String>, Arc<Message>);

#[derive(Default)]
pub(super) struct Journal {
    /// The completed messages of the conversation (the engine's context), each with its
    /// session entry id (`None`: not kept on disk).
    messages: Vec<Entry>,
    /// The lines since the current turn began.
    tail: Vec<TailLine>,
    /// The last `todo_update` and `queue_update`: whole states, replayed once.
    todos: Option<Arc<str>>,
    queue: Option<Arc<str>>,
    /// Whether a run is in progress (between `agent_start` and `agent_end`).
    running: bool,
}

/// What `Journal::note` wants done with an event.
pub(super) enum Noted {
    /// Nothing more.
    Kept,
    /// The conversation was replaced (another session, a branch, a rewind, a compaction):
    /// read it again from the engine with `reset`.
    Reread,
}

impl Journal {
    pub(super) fn new(messages: Vec<Entry>) -> Journal {
        Journal {
            messages,
            ..Journal::default()
        }
    }

    /// Fold in `event`, which went out as `line`.
    pub(super) fn note(&mut self, event: &AgentEvent, line: &Arc<str>) -> Noted {
        match event {
            AgentEvent::AgentStart => {
                self.running = true;
                self.tail.clear();
            }
            AgentEvent::AgentEnd { .. } => {
                self.running = false;
                self.tail.clear();
            }
            AgentEvent::TurnEnd { .. } => self.tail.clear(),
            AgentEvent::MessageStart { .. } | AgentEvent::MessageUpdate { .. } => {
                self.push(true, line);
            }
            // The message itself is `add`ed when the context holds it.
            AgentEvent::MessageEnd { .. } => self.tail.retain(|l| !l.streaming),
            AgentEvent::TodoUpdate { .. } => self.todos = Some(line.clone()),
            AgentEvent::QueueUpdate { .. } => self.queue = Some(line.clone()),
            AgentEvent::SessionChanged { .. } => return Noted::Reread,
            AgentEvent::AutoCompactionEnd { aborted: false, .. } => {
                self.push(false, line);
                return Noted::Reread;
            }
            _ => self.push(false, line),
        }
        Noted::Kept
    }

    /// A completed message of the context (`message_end`).
    pub(super) fn add(&mut self, entry: Option<String>, message: &Arc<Message>) {
        // After a reread the engine's context may hold it already.
        let known = self
            .messages
            .iter()
            .rev()
            .take(16)
            .any(|(_, m)| Arc::ptr_eq(m, message));
        if !known {
            self.messages.push((entry, message.clone()));
        }
    }

    /// A line of the live protocol's own (`approval_resolved`) in the turn in progress.
    pub(super) fn note_line(&mut self, line: &Arc<str>) {
        self.push(false, line);
    }

    /// The engine's context replaced the conversation.
    pub(super) fn reset(&mut self, messages: Vec<Entry>) {
        self.messages = messages;
        self.tail.retain(|l| !l.streaming);
    }

    fn push(&mut self, streaming: bool, line: &Arc<str>) {
        self.tail.push(TailLine {
            streaming,
            line: line.clone(),
        });
    }

    pub(super) fn messages(&self) -> &[Entry] {
        &self.messages
    }

    pub(super) fn running(&self) -> bool {
        self.running
    }

    /// The lines replayed after the messages: the todo list, the queue, the turn so far.
    pub(super) fn replay_lines(&self) -> impl Iterator<Item = &Arc<str>> {
        self.todos
            .iter()
            .chain(self.queue.iter())
            .chain(self.tail.iter().map(|l| &l.line))
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use crate::protocol::event::AssistantMessageEvent;
    use crate::protocol::message::UserMessage;

    fn line(text: &str) -> Arc<str> {
        Arc::from(text)
    }

    #[test]
    fn the_partial_message_leaves_the_tail_when_it_is_complete() {
        let mut journal = Journal::new(Vec::new());
        let user = Arc::new(Message::User(UserMessage::text("hi")));
        journal.note(&AgentEvent::AgentStart, &line("start"));
        journal.note(
            &AgentEvent::MessageEnd {
                message: user.clone(),
            },
            &line("user end"),
        );
        journal.add(Some("e1".into()), &user);
        journal.note(
            &AgentEvent::MessageStart {
                message: user.clone(),
            },
            &line("a start"),
        );
        let delta = AgentEvent::MessageUpdate {
            assistant_message_event: AssistantMessageEvent::TextDelta {
                content_index: 0,
                delta: "x".into(),
            },
        };
        journal.note(&delta, &line("delta"));
        let tail: Vec<&str> = journal.replay_lines().map(|l| l.as_ref()).collect();
        assert_eq!(tail, vec!["a start", "delta"]);
        journal.note(
            &AgentEvent::MessageEnd {
                message: user.clone(),
            },
            &line("a end"),
        );
        journal.add(Some("e1".into()), &user);
        // The same message object twice (a reread raced it) is kept once.
        assert_eq!(journal.messages().len(), 1);
        assert_eq!(journal.replay_lines().count(), 0);
        assert!(journal.running());
    }
}
