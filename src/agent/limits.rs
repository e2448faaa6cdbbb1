//! Per-run limits and the retry policy for transient provider errors.

use super::guard::GuardSettings;
use std::time::Duration;

/// Bounds on one run; `None` means unbounded.
#[derive(Clone, Debug, PartialEq)]
pub struct Limits {
    pub max_turns: Option<u32>,
    pub max_tool_calls: Option<u32>,
    pub timeout: Option<Duration>,
    /// When a model repeating itself is warned, then stopped.
    pub loop_guard: GuardSettings,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            max_turns: Some(200),
            max_tool_calls: Some(1000),
            timeout: Some(Duration::from_secs(3600)),
            loop_guard: GuardSettings::default(),
        }
    }
}

#[derive(Clone, Debug, PartialEq)]
pub struct RetryPolicy {
    pub max_retries: u32,
    pub initial_delay: Duration,
    pub max_delay: Duration,
    /// Upper bound on a delay the server asks for (`Retry-After`, "try again in 20s").
    pub max_retry_delay: Duration,
}

impl Default for RetryPolicy {
    fn default() -> Self {
        RetryPolicy {
            max_retries: 3,
            initial_delay: Duration::from_secs(1),
            max_delay: Duration::from_secs(10),
            max_retry_delay: Duration::from_secs(60),
        }
    }
}

impl RetryPolicy {
    /// The wait before retry number `attempt` (1-based): the server's request if it made
    /// one, else exponential backoff with ±20 % jitter.
    pub fn delay(&self, attempt: u32, requested: Option<Duration>) -> Duration {
        if let Some(requested) = requested {
            return requested.min(self.max_retry_delay);
        }
        let exponent = attempt.saturating_sub(1).min(16);
        let base = self
            .initial_delay
            .saturating_mul(1 << exponent)
            .min(self.max_delay);
        let jitter = 0.8 + fastrand::f64() * 0.4;
        base.mul_f64(jitter).min(self.max_delay)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn backoff_doubles_up_to_the_cap_and_honours_requests() {
        let policy = RetryPolicy::default();
        let d1 = policy.delay(1, None);
        assert!(d1 >= Duration::from_millis(800) && d1 <= Duration::from_millis(1200));
        let d3 = policy.delay(3, None);
        assert!(d3 >= Duration::from_millis(3200) && d3 <= Duration::from_millis(4800));
        assert!(policy.delay(10, None) <= Duration::from_secs(10));
        assert_eq!(
            policy.delay(1, Some(Duration::from_secs(5))),
            Duration::from_secs(5)
        );
        assert_eq!(
            policy.delay(1, Some(Duration::from_secs(600))),
            Duration::from_secs(60)
        );
    }
}
