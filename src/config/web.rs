//! `[web]`: what `web_fetch` may reach (host allow and deny lists), its time limit and body
//! cap, and whether the provider's own web search is offered (`search`, `search_max_uses`).

use crate::tools::web::WebSettings;
use serde::Deserialize;
use std::time::Duration;

#[derive(Clone, Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct WebConfig {
    /// Hosts (`name` or `*.domain`) that may be fetched even at private or loopback
    /// addresses.
    #[serde(default)]
    pub allow_hosts: Vec<String>,
    /// Hosts never fetched.
    #[serde(default)]
    pub deny_hosts: Vec<String>,
    pub timeout_secs: Option<f64>,
    pub max_bytes: Option<u64>,
    /// Offer the provider's native web search (Anthropic, OpenAI Responses). Off by default.
    #[serde(default)]
    pub search: bool,
    /// Searches per request at most (Anthropic's `max_uses`).
    pub search_max_uses: Option<u32>,
}

/// Searches per request when `search_max_uses` is not set.
pub const DEFAULT_SEARCH_MAX_USES: u32 = 5;

/// `[web]` over the defaults: `Err((key, why))` for a value that makes no sense.
pub fn settings(config: &WebConfig) -> Result<WebSettings, (&'static str, String)> {
    let defaults = WebSettings::default();
    let timeout = match config.timeout_secs {
        None => defaults.timeout,
        Some(secs) if secs > 0.0 => Duration::try_from_secs_f64(secs).map_err(|_| {
            (
                "web.timeout_secs",
                format!("{secs} is not a number of seconds"),
            )
        })?,
        Some(secs) => {
            return Err((
                "web.timeout_secs",
                format!("must be more than 0 seconds, not {secs}"),
            ));
        }
    };
    let max_bytes = match config.max_bytes {
        None => defaults.max_bytes,
        Some(0) => return Err(("web.max_bytes", "must be at least 1".to_string())),
        Some(n) => usize::try_from(n).unwrap_or(usize::MAX),
    };
    let lists = [
        ("web.allow_hosts", &config.allow_hosts),
        ("web.deny_hosts", &config.deny_hosts),
    ];
    for (key, host) in lists
        .into_iter()
        .flat_map(|(key, hosts)| hosts.iter().map(move |host| (key, host)))
    {
        if host.trim().is_empty() || host.contains('/') {
            return Err((
                key,
                format!("`{host}` is not a host name (write `example.com` or `*.example.com`)"),
            ));
        }
    }
    let max_uses = match config.search_max_uses {
        Some(0) => return Err(("web.search_max_uses", "must be at least 1".to_string())),
        Some(n) => n,
        None => DEFAULT_SEARCH_MAX_USES,
    };
    Ok(WebSettings {
        allow_hosts: config.allow_hosts.clone(),
        deny_hosts: config.deny_hosts.clone(),
        timeout,
        max_bytes,
        search: config.search.then_some(max_uses),
    })
}
