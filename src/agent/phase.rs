//! The agent's state machine as the outside sees it: the current `RunState` and since when.
//! Every transition is logged with how long the previous state lasted and announced as a
//! `state` event; `get_state` and status lines read the current state.

use super::state::{Emitter, lock};
use crate::protocol::event::{AgentEvent, RunState};
use std::sync::Mutex;
use std::time::{Duration, Instant};

pub(crate) struct StateClock {
    current: Mutex<(RunState, Instant)>,
}

impl StateClock {
    pub fn new() -> Self {
        StateClock {
            current: Mutex::new((RunState::Idle, Instant::now())),
        }
    }

    /// Move to `next` and announce it; staying in the same state is no transition (a
    /// second tool batch of one round is still `tool_running`). The event is emitted under
    /// the clock's lock, so events come in the order of the transitions.
    pub fn enter(&self, next: RunState, emitter: &Emitter) {
        let mut current = lock(&self.current);
        let (previous, since) = *current;
        if previous == next {
            return;
        }
        let now = Instant::now();
        let elapsed_ms = crate::time::millis(now.duration_since(since));
        tracing::info!(
            from = previous.as_str(),
            to = next.as_str(),
            duration_ms = elapsed_ms,
            "agent state"
        );
        *current = (next, now);
        emitter.emit(AgentEvent::State {
            state: next,
            previous,
            elapsed_ms,
        });
    }

    /// The current state and how long it has lasted.
    pub fn current(&self) -> (RunState, Duration) {
        let (state, since) = *lock(&self.current);
        (state, since.elapsed())
    }
}
