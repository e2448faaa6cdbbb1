//! `[web]`: the settings of the `web_fetch` tool and of the provider's own web search. The
//! tool itself (`fetch`) is built with the `web` feature (on by default).

#[cfg(feature = "web")]
mod address;
#[cfg(feature = "web")]
mod convert;
#[cfg(feature = "web")]
mod fetch;

#[cfg(feature = "web")]
pub use fetch::WebFetchTool;
use std::time::Duration;

/// `[web]` in config.
#[derive(Clone, Debug)]
pub struct WebSettings {
    /// Hosts that may be fetched even when they resolve to private or loopback addresses.
    pub allow_hosts: Vec<String>,
    /// Hosts never fetched.
    pub deny_hosts: Vec<String>,
    /// The whole fetch, redirects included.
    pub timeout: Duration,
    /// Bytes of body read at most.
    pub max_bytes: usize,
    /// `[web] search`: the provider's own web search is offered, with at most this many
    /// searches per request; `None` (the default) offers none.
    pub search: Option<u32>,
}

impl Default for WebSettings {
    fn default() -> Self {
        WebSettings {
            allow_hosts: Vec::new(),
            deny_hosts: Vec::new(),
            timeout: Duration::from_secs(10),
            max_bytes: 5 * 1024 * 1024,
            search: None,
        }
    }
}

/// Redirects followed at most.
pub const MAX_REDIRECTS: usize = 5;
