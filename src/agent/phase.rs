//! Logs a run's state transitions (preparing, model_running, tool_running, awaiting_human,
//! retrying, compacting, completed, failed, aborted) with how long each state lasted.

use std::time::Instant;

pub(crate) struct PhaseLog {
    current: &'static str,
    since: Instant,
}

impl PhaseLog {
    pub fn new() -> Self {
        tracing::info!(state = "preparing", "run started");
        PhaseLog {
            current: "preparing",
            since: Instant::now(),
        }
    }

    pub fn enter(&mut self, next: &'static str) {
        let now = Instant::now();
        tracing::info!(
            from = self.current,
            to = next,
            duration_ms = crate::time::millis(now.duration_since(self.since)),
            "run state"
        );
        self.current = next;
        self.since = now;
    }
}
