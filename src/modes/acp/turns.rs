//! Which editor prompt the agent is working on, so each `session/prompt` is answered when
//! its own turn ends. A prompt sent while a run is going is a follow-up: it waits in the
//! engine's queue, and its turn begins when its message enters the conversation — which is
//! also when the turn before it ends. The last turn ends with the run (`agent_end`).
//!
//! Prompts are recognised by their user message's timestamp (the session stamps each message
//! it hands the engine with a distinct one; the engine builds the message), so a steering
//! message, which enters the conversation the same way, never ends a turn.

use crate::protocol::message::{AssistantMessage, StopReason as OurStop, UserMessage};
use agent_client_protocol::v1::Responder;
use agent_client_protocol::v1::schema::{PromptResponse, StopReason};
use std::collections::VecDeque;

/// A prompt waiting for its answer.
pub struct Ticket {
    pub responder: Responder<PromptResponse>,
    /// Watches for the client cancelling the request; stopped once it is answered.
    pub watcher: Option<tokio::task::JoinHandle<()>>,
}

impl Ticket {
    /// Answer the prompt (the client may be gone: nothing to do then).
    pub fn answer(self, result: Result<PromptResponse, agent_client_protocol::Error>) {
        if let Some(watcher) = &self.watcher {
            watcher.abort();
        }
        if let Err(error) = self.responder.respond_with_result(result) {
            tracing::debug!(%error, "a prompt answer could not be sent");
        }
    }
}

/// The prompts of one session: the one being worked on, and those waiting in the queue,
/// each with what answers it (`T`).
pub struct Turns<T> {
    active: Option<T>,
    waiting: VecDeque<(i64, T)>,
    /// How the active turn's last model call ended.
    stop: Option<StopReason>,
}

impl<T> Default for Turns<T> {
    fn default() -> Self {
        Turns {
            active: None,
            waiting: VecDeque::new(),
            stop: None,
        }
    }
}

impl<T> Turns<T> {
    /// A prompt whose message was handed to the engine.
    pub fn wait(&mut self, timestamp: i64, reply: T) {
        self.waiting.push_back((timestamp, reply));
    }

    /// A user message entered the conversation. If it is a waiting prompt's, that prompt's
    /// turn begins, and the turn it follows is returned to be answered with its stop reason.
    pub fn user_message(&mut self, message: &UserMessage) -> Option<(T, StopReason)> {
        let index = self
            .waiting
            .iter()
            .position(|(stamp, _)| *stamp == message.timestamp)?;
        let (_, starting) = self.waiting.remove(index)?;
        let ended = self.active.replace(starting);
        let stop = self.stop.take().unwrap_or(StopReason::EndTurn);
        ended.map(|reply| (reply, stop))
    }

    /// A model call ended: remembered as how the active turn stops if nothing follows.
    pub fn model_stopped(&mut self, message: &AssistantMessage) {
        self.stop = Some(if message.refusal.is_some() {
            StopReason::Refusal
        } else if message.stop_reason == OurStop::Length {
            StopReason::MaxTokens
        } else {
            StopReason::EndTurn
        });
    }

    /// The run ended: the active turn, with how its last model call stopped.
    pub fn run_ended(&mut self) -> Option<(T, StopReason)> {
        let stop = self.stop.take().unwrap_or(StopReason::EndTurn);
        self.active.take().map(|reply| (reply, stop))
    }

    /// The waiting prompts whose messages were taken out of the queue (an abort drops them).
    pub fn dropped(&mut self, messages: &[UserMessage]) -> Vec<T> {
        let mut dropped = Vec::new();
        let mut kept = VecDeque::new();
        for (stamp, reply) in self.waiting.drain(..) {
            if messages.iter().any(|m| m.timestamp == stamp) {
                dropped.push(reply);
            } else {
                kept.push_back((stamp, reply));
            }
        }
        self.waiting = kept;
        dropped
    }

    /// Every prompt not yet answered (the session is closing).
    pub fn take_all(&mut self) -> Vec<T> {
        self.active
            .take()
            .into_iter()
            .chain(self.waiting.drain(..).map(|(_, reply)| reply))
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn message(text: &str, timestamp: i64) -> UserMessage {
        UserMessage {
            timestamp,
            ..UserMessage::text(text)
        }
    }

    fn stopped(reason: OurStop, refusal: bool) -> AssistantMessage {
        let mut message = AssistantMessage::empty("p", "m");
        message.stop_reason = reason;
        message.refusal = refusal.then(|| "no".to_string());
        message
    }

    #[test]
    fn a_follow_up_ends_the_turn_before_it_and_the_run_ends_the_last() {
        let mut turns = Turns::default();
        let (first, second) = (message("first", 1), message("second", 2));
        turns.wait(first.timestamp, "first");
        assert!(turns.user_message(&first).is_none(), "nothing was active");
        turns.wait(second.timestamp, "second");
        turns.model_stopped(&stopped(OurStop::Length, false));
        assert!(turns.user_message(&message("a steer", 3)).is_none());
        assert_eq!(
            turns.user_message(&second),
            Some(("first", StopReason::MaxTokens))
        );
        turns.model_stopped(&stopped(OurStop::Stop, true));
        assert_eq!(turns.run_ended(), Some(("second", StopReason::Refusal)));
        assert_eq!(turns.run_ended(), None);
    }

    #[test]
    fn the_same_text_sent_twice_is_told_apart_by_its_timestamp() {
        let mut turns = Turns::default();
        let (a, b) = (message("go", 1), message("go", 2));
        turns.wait(a.timestamp, 'a');
        turns.wait(b.timestamp, 'b');
        turns.user_message(&a);
        assert_eq!(turns.dropped(&[b]), vec!['b']);
        assert_eq!(turns.take_all(), vec!['a']);
    }
}
