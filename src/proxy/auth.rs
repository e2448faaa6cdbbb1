//! Who may use `agent proxy`: the bearer tokens it accepts (from `AGENT_PROXY_TOKENS` or the
//! variable `[proxy] tokens_env` names), checked in constant time, and how many streams
//! each token has open.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError};

pub const DEFAULT_TOKENS_ENV: &str = "AGENT_PROXY_TOKENS";

/// The accepted tokens. A token is known in logs only by its position in the list.
pub struct Tokens {
    tokens: Vec<String>,
}

impl Tokens {
    /// The tokens in `var` (comma-separated, blanks ignored), read from `lookup`.
    pub fn from_env(var: &str, lookup: impl Fn(&str) -> Option<String>) -> Tokens {
        let tokens = lookup(var)
            .unwrap_or_default()
            .split(',')
            .map(str::trim)
            .filter(|t| !t.is_empty())
            .map(str::to_string)
            .collect();
        Tokens { tokens }
    }

    pub fn is_empty(&self) -> bool {
        self.tokens.is_empty()
    }

    /// The index of the token an `Authorization` header carries, if it is accepted.
    pub fn check(&self, authorization: Option<&str>) -> Option<usize> {
        let given = authorization?.strip_prefix("Bearer ")?.trim();
        // Every token is compared, whatever matched, so timing says nothing about which.
        let mut found = None;
        for (index, token) in self.tokens.iter().enumerate() {
            if same(given.as_bytes(), token.as_bytes()) && found.is_none() {
                found = Some(index);
            }
        }
        found
    }
}

/// Byte equality in time that depends only on the lengths (hand-written: one loop does not
/// justify a crate).
fn same(a: &[u8], b: &[u8]) -> bool {
    if a.len() != b.len() {
        return false;
    }
    a.iter().zip(b).fold(0u8, |diff, (x, y)| diff | (x ^ y)) == 0
}

/// Streams open per token, with a cap.
#[derive(Clone)]
pub struct StreamCounts {
    open: Arc<Mutex<HashMap<usize, usize>>>,
    limit: usize,
}

/// One open stream; closing it (dropping this) frees its place.
pub struct StreamPlace {
    counts: StreamCounts,
    token: usize,
}

impl StreamCounts {
    pub fn new(limit: usize) -> Self {
        StreamCounts {
            open: Arc::default(),
            limit,
        }
    }

    /// A place for one more stream of `token`, unless it has `limit` open already.
    pub fn take(&self, token: usize) -> Option<StreamPlace> {
        let mut open = self.open.lock().unwrap_or_else(PoisonError::into_inner);
        let count = open.entry(token).or_default();
        if *count >= self.limit {
            return None;
        }
        *count += 1;
        Some(StreamPlace {
            counts: self.clone(),
            token,
        })
    }

    pub fn limit(&self) -> usize {
        self.limit
    }
}

impl Drop for StreamPlace {
    fn drop(&mut self) {
        let mut open = self
            .counts
            .open
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        if let Some(count) = open.get_mut(&self.token) {
            *count = count.saturating_sub(1);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tokens_are_read_and_checked() {
        let tokens = Tokens::from_env("T", |_| Some(" a1 , ,b2".into()));
        assert_eq!(tokens.check(Some("Bearer b2")), Some(1));
        assert_eq!(tokens.check(Some("Bearer a1")), Some(0));
        assert_eq!(tokens.check(Some("Bearer a")), None);
        assert_eq!(tokens.check(Some("b2")), None);
        assert_eq!(tokens.check(None), None);
        assert!(Tokens::from_env("T", |_| None).is_empty());
        assert!(Tokens::from_env("T", |_| Some(" , ".into())).is_empty());
    }

    #[test]
    fn streams_are_capped_per_token() {
        let counts = StreamCounts::new(1);
        let first = counts.take(0).unwrap();
        assert!(counts.take(0).is_none());
        assert!(counts.take(1).is_some(), "another token has its own places");
        drop(first);
        assert!(counts.take(0).is_some());
    }
}
