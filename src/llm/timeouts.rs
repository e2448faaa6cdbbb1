//! How long a request may wait on the provider at each stage, and the watchdog that enforces
//! it while a response streams. Silence is measured twice: on bytes (a live stream trickling
//! bytes is never idle) and on content events (keep-alive comments, pings and empty events
//! forever must not keep a dead answer open).

use super::error::ProviderError;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;
use tokio::time::{Instant, Sleep};
use tokio_util::sync::CancellationToken;

#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Timeouts {
    /// Setting up the connection (TCP and TLS).
    pub connect: Duration,
    /// From sending the request to the response headers.
    pub response: Duration,
    /// Longest stretch without a single byte of the response body.
    pub idle: Duration,
    /// Longest stretch without a content event (text, reasoning, a tool call, the end).
    pub content: Duration,
}

impl Default for Timeouts {
    fn default() -> Self {
        Timeouts {
            connect: Duration::from_secs(30),
            response: Duration::from_secs(120),
            idle: Duration::from_secs(120),
            content: Duration::from_secs(600),
        }
    }
}

impl Timeouts {
    /// The same limit everywhere (tests, and callers that only know one number).
    pub fn all(limit: Duration) -> Self {
        Timeouts {
            connect: limit,
            response: limit,
            idle: limit,
            content: limit,
        }
    }
}

/// `1 s`, `2.5 s`, `300 ms`: a duration as a person reads it, for error messages.
pub fn describe(duration: Duration) -> String {
    let millis = duration.as_millis();
    if millis < 1000 {
        format!("{millis} ms")
    } else if millis.is_multiple_of(1000) {
        format!("{} s", duration.as_secs())
    } else {
        format!("{:.1} s", duration.as_secs_f64())
    }
}

/// Watches one response for silence. Bytes are noted by the body stream (through
/// `ByteClock`, which the stream owns), content events by the caller.
pub struct Watchdog {
    idle: Duration,
    content: Duration,
    start: Instant,
    last_byte: ByteClock,
    last_content: Instant,
    /// Fires at the earliest moment the response could be too silent. It is moved only
    /// when it fires (not per byte or event), so watching costs nothing per event.
    timer: Pin<Box<Sleep>>,
}

/// When the last byte arrived, shareable with the stream that receives them.
#[derive(Clone)]
pub struct ByteClock {
    start: Instant,
    /// Nanoseconds from `start` to the newest byte.
    nanos: Arc<AtomicU64>,
}

impl ByteClock {
    pub fn tick(&self) {
        self.tick_at(Instant::now());
    }

    fn tick_at(&self, now: Instant) {
        let since = now.saturating_duration_since(self.start);
        let nanos = u64::try_from(since.as_nanos()).unwrap_or(u64::MAX);
        self.nanos.store(nanos, Ordering::Relaxed);
    }

    fn last(&self) -> Instant {
        self.start + Duration::from_nanos(self.nanos.load(Ordering::Relaxed))
    }
}

impl Watchdog {
    pub fn new(timeouts: &Timeouts) -> Self {
        let start = Instant::now();
        Watchdog {
            idle: timeouts.idle,
            content: timeouts.content,
            start,
            last_byte: ByteClock {
                start,
                nanos: Arc::new(AtomicU64::new(0)),
            },
            last_content: start,
            timer: Box::pin(tokio::time::sleep_until(
                start + timeouts.idle.min(timeouts.content),
            )),
        }
    }

    /// Wait for `work` unless the request is cancelled or the response goes silent first.
    pub async fn guard<F: Future>(
        &mut self,
        cancel: &CancellationToken,
        work: F,
    ) -> Result<F::Output, ProviderError> {
        tokio::pin!(work);
        loop {
            tokio::select! {
                biased;
                _ = cancel.cancelled() => return Err(ProviderError::Aborted),
                _ = self.timer.as_mut() => {
                    let next = self.check()?;
                    self.timer.as_mut().reset(next);
                }
                output = &mut work => return Ok(output),
            }
        }
    }

    pub fn clock(&self) -> ByteClock {
        self.last_byte.clone()
    }

    /// A content event arrived.
    pub fn content(&mut self) {
        self.last_content = Instant::now();
    }

    /// The first moment the response could be too silent; check again then.
    pub fn deadline(&self) -> Instant {
        (self.last_byte.last() + self.idle).min(self.last_content + self.content)
    }

    /// At a deadline: the error if the response has been silent too long, else the next
    /// deadline (bytes or content arrived meanwhile).
    pub fn check(&self) -> Result<Instant, ProviderError> {
        self.check_at(Instant::now())
    }

    fn check_at(&self, now: Instant) -> Result<Instant, ProviderError> {
        if now >= self.last_byte.last() + self.idle {
            return Err(ProviderError::Idle(self.idle));
        }
        if now >= self.last_content + self.content {
            return Err(ProviderError::NoContent(self.content));
        }
        Ok(self.deadline())
    }

    /// How long the response has run, for logs.
    pub fn elapsed(&self) -> Duration {
        self.start.elapsed()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations_read_well() {
        assert_eq!(describe(Duration::from_secs(120)), "120 s");
        assert_eq!(describe(Duration::from_millis(2500)), "2.5 s");
        assert_eq!(describe(Duration::from_millis(300)), "300 ms");
    }

    fn watchdog() -> Watchdog {
        Watchdog::new(&Timeouts {
            idle: Duration::from_secs(10),
            content: Duration::from_secs(30),
            ..Timeouts::default()
        })
    }

    #[tokio::test]
    async fn bytes_keep_a_stream_alive_only_until_the_content_limit() {
        let watchdog = watchdog();
        let at = |secs| watchdog.start + Duration::from_secs(secs);
        // A byte every 5 s: never idle, but after 30 s without content it is dead.
        for secs in [5, 10, 15, 20, 25] {
            watchdog.last_byte.tick_at(at(secs));
            let next = at(secs + 10).min(at(30));
            assert_eq!(watchdog.check_at(at(secs)).ok(), Some(next), "{secs}");
        }
        watchdog.last_byte.tick_at(at(30));
        assert!(matches!(
            watchdog.check_at(at(30)),
            Err(ProviderError::NoContent(_))
        ));
    }

    #[tokio::test]
    async fn silence_on_the_wire_is_idle_whatever_came_before() {
        let mut watchdog = watchdog();
        let at = |secs| watchdog.start + Duration::from_secs(secs);
        assert_eq!(watchdog.check_at(at(9)).ok(), Some(at(10)));
        assert!(matches!(
            watchdog.check_at(at(10)),
            Err(ProviderError::Idle(_))
        ));
        watchdog.last_byte.tick_at(at(8));
        watchdog.last_content = at(8);
        assert_eq!(watchdog.check_at(at(17)).ok(), Some(at(18)));
        assert!(matches!(
            watchdog.check_at(at(18)),
            Err(ProviderError::Idle(_))
        ));
    }
}
