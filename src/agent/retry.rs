//! The retry policy applied to one model request, whoever makes it (the run's model call,
//! a compaction's summary request): which failures another attempt could fix, how many
//! attempts there are, and how long to wait before each.

use super::limits::RetryPolicy;
use crate::llm::error::{ProviderError, Retry};
use std::time::Duration;

/// What to do after a failed attempt.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Next {
    /// Try again after `delay`; this is retry number `attempt` (1-based).
    Retry { attempt: u32, delay: Duration },
    /// The server asks to wait this long, more than `max_retry_delay` allows: give up now.
    TooLong(Duration),
    /// Not worth another attempt (or none are left).
    GiveUp,
}

/// The retries of one request so far.
#[derive(Debug, Default)]
pub(crate) struct Attempts {
    retries: u32,
    /// A server fault that may be deterministic (HTTP 500) is retried once per request.
    retried_server_fault: bool,
}

impl Attempts {
    /// How many retries were made.
    pub(crate) fn retries(&self) -> u32 {
        self.retries
    }

    /// Decide about `error` (and count the retry, when there is one).
    pub(crate) fn after(&mut self, policy: &RetryPolicy, error: &ProviderError) -> Next {
        let worth_it = match error.retry() {
            Retry::Transient => true,
            Retry::Once => !self.retried_server_fault,
            Retry::Never => false,
        };
        if !worth_it || self.retries >= policy.max_retries {
            return Next::GiveUp;
        }
        match policy.delay(self.retries + 1, error.retry_after()) {
            Err(requested) => Next::TooLong(requested),
            Ok(delay) => {
                if error.retry() == Retry::Once {
                    self.retried_server_fault = true;
                }
                self.retries += 1;
                Next::Retry {
                    attempt: self.retries,
                    delay,
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn policy() -> RetryPolicy {
        RetryPolicy {
            max_retries: 3,
            initial_delay: Duration::from_millis(1),
            max_delay: Duration::from_millis(2),
            max_retry_delay: Duration::from_secs(1),
        }
    }

    fn http(status: u16) -> ProviderError {
        ProviderError::Http {
            status,
            message: String::new(),
            retry_after: None,
            hint: None,
        }
    }

    #[test]
    fn transient_failures_use_every_retry_a_server_fault_one() {
        let mut attempts = Attempts::default();
        for n in 1..=3 {
            assert!(matches!(
                attempts.after(&policy(), &http(503)),
                Next::Retry { attempt, .. } if attempt == n
            ));
        }
        assert_eq!(attempts.after(&policy(), &http(503)), Next::GiveUp);

        let mut attempts = Attempts::default();
        assert!(matches!(
            attempts.after(&policy(), &http(500)),
            Next::Retry { .. }
        ));
        assert_eq!(attempts.after(&policy(), &http(500)), Next::GiveUp);
        assert_eq!(
            Attempts::default().after(&policy(), &http(400)),
            Next::GiveUp
        );
        let long = ProviderError::Http {
            status: 429,
            message: String::new(),
            retry_after: Some(Duration::from_secs(5)),
            hint: None,
        };
        assert_eq!(
            Attempts::default().after(&policy(), &long),
            Next::TooLong(Duration::from_secs(5))
        );
    }
}
