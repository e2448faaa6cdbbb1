//! What a front end changes on a live agent beside the model: which reasoning levels the
//! model offers (`SetThinking` and `CycleThinking` keep within them), automatic compaction
//! and automatic retries on or off, ending a retry's wait, and the session's name. Each
//! takes effect from the next model call on; the name is noted in the session.

use super::state::lock;
use super::{Agent, AgentError};
use crate::llm::request::ThinkingLevel;
use crate::session::format::NewEntry;

/// Every reasoning level, from none to the most.
const LEVELS: [ThinkingLevel; 5] = [
    ThinkingLevel::Off,
    ThinkingLevel::Minimal,
    ThinkingLevel::Low,
    ThinkingLevel::Medium,
    ThinkingLevel::High,
];

impl Agent {
    /// The reasoning levels the current model offers: all of them for a model that
    /// reasons, only `off` for one that does not.
    pub fn thinking_levels(&self) -> Vec<ThinkingLevel> {
        if self.shared.settings().model.reasoning {
            LEVELS.to_vec()
        } else {
            vec![ThinkingLevel::Off]
        }
    }

    /// Compact on its own when the context nears the window, or after an overflow.
    pub fn set_auto_compaction(&self, enabled: bool) {
        self.change_settings(|settings, _| settings.compaction.enabled = enabled);
    }

    /// Retry failed model calls as the retry policy says (`false`: every failure ends the
    /// model call at once).
    pub fn set_auto_retry(&self, enabled: bool) {
        self.change_settings(|settings, _| settings.auto_retry = enabled);
    }

    /// End the wait before a retry now: the model call ends with the failure it was
    /// waiting to retry, and so does the run. Returns whether a wait was ended (with none
    /// in progress there is nothing to do).
    pub fn abort_retry(&self) -> bool {
        match lock(&self.shared.state).retry_wait.take() {
            Some(wait) => {
                wait.cancel();
                true
            }
            None => false,
        }
    }

    /// Name the session (surrounding blanks dropped); noted in the session file, so a
    /// resumed session has it again. An empty name is refused.
    pub async fn set_session_name(&self, name: &str) -> Result<String, AgentError> {
        let name = name.trim();
        if name.is_empty() {
            return Err(AgentError::EmptyName);
        }
        lock(&self.shared.state).session_name = Some(name.to_string());
        self.shared.persist(NewEntry::SessionInfo { name }).await;
        Ok(name.to_string())
    }
}
