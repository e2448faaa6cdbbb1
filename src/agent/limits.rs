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
    /// What a run (and the session) may spend (`agent::budget`).
    pub budgets: super::budget::Budgets,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            max_turns: Some(200),
            max_tool_calls: Some(1000),
            timeout: Some(Duration::from_secs(3600)),
            loop_guard: GuardSettings::default(),
            budgets: Default::default(),
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
    /// The wait before retry number `attempt` (1-based): exponential backoff with ±20 %
    /// jitter, or longer if the server asked for longer (`Retry-After`, "try again in 20s").
    /// The backoff is a floor, so `Retry-After: 0` still waits a little. `Err` carries the
    /// server's wish when it exceeds `max_retry_delay`: waiting that long is not worth it.
    pub fn delay(&self, attempt: u32, requested: Option<Duration>) -> Result<Duration, Duration> {
        let exponent = attempt.saturating_sub(1).min(16);
        let base = self
            .initial_delay
            .saturating_mul(1 << exponent)
            .min(self.max_delay);
        let jitter = 0.8 + fastrand::f64() * 0.4;
        let backoff = base.mul_f64(jitter).min(self.max_delay);
        match requested {
            Some(requested) if requested > self.max_retry_delay => Err(requested),
            Some(requested) => Ok(requested.max(backoff)),
            None => Ok(backoff),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn backoff_doubles_up_to_the_cap_and_honours_requests_within_the_cap() {
        let policy = RetryPolicy::default();
        let d1 = policy.delay(1, None).unwrap();
        assert!(d1 >= Duration::from_millis(800) && d1 <= Duration::from_millis(1200));
        let d3 = policy.delay(3, None).unwrap();
        assert!(d3 >= Duration::from_millis(3200) && d3 <= Duration::from_millis(4800));
        assert!(policy.delay(10, None).unwrap() <= Duration::from_secs(10));
        assert_eq!(
            policy.delay(1, Some(Duration::from_secs(5))),
            Ok(Duration::from_secs(5))
        );
        assert_eq!(
            policy.delay(1, Some(Duration::from_secs(600))),
            Err(Duration::from_secs(600)),
            "a wait beyond max_retry_delay is not waited"
        );
        let immediate = policy.delay(1, Some(Duration::ZERO)).unwrap();
        assert!(
            immediate >= Duration::from_millis(800),
            "Retry-After: 0 still backs off: {immediate:?}"
        );
    }
}
