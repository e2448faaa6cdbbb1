//! The HTTP client under a provider, built on its first request: only an `https` endpoint
//! loads the system's root certificates (tens of milliseconds of start-up for nothing when
//! the endpoint is a local `http://` server). Also what every request carries (the
//! `User-Agent`, the key, the provider's headers), the wait for the response headers, and
//! how transport failures read.

use super::error::ProviderError;
use super::provider::ProviderSettings;
use super::timeouts::Timeouts;
use reqwest::header::{HeaderMap, HeaderName, HeaderValue};
use std::sync::Once;
use std::time::{Duration, SystemTime};
use tokio::sync::OnceCell;
use tokio_util::sync::CancellationToken;

pub const USER_AGENT: &str = concat!("agent/", env!("CARGO_PKG_VERSION"));

/// rustls needs its crypto provider chosen once per process, before the first client.
pub fn install_crypto_provider() {
    static ONCE: Once = Once::new();
    ONCE.call_once(|| {
        // Fails only if another provider was installed first, which is just as good.
        let _ = rustls::crypto::ring::default_provider().install_default();
    });
}

/// A client for plain `http://` URLs: it trusts no certificate authority, so building it
/// reads nothing from disk, and it refuses redirects to `https://` (which it could not
/// verify) with an error that names the URL to use instead.
pub fn plain_http_client() -> reqwest::ClientBuilder {
    install_crypto_provider();
    reqwest::Client::builder()
        .tls_certs_only(Vec::new())
        .redirect(reqwest::redirect::Policy::custom(|attempt| {
            if attempt.url().scheme() == "https" {
                let target = attempt.url().to_string();
                attempt.error(format!(
                    "the server redirects to {target}: use an https:// base URL"
                ))
            } else if attempt.previous().len() >= 10 {
                attempt.error("too many redirects")
            } else {
                attempt.follow()
            }
        }))
}

pub struct Transport {
    client: OnceCell<reqwest::Client>,
    connect_timeout: Duration,
    https: bool,
}

impl Transport {
    pub fn new(base_url: &str, timeouts: &Timeouts) -> Self {
        Transport {
            client: OnceCell::new(),
            connect_timeout: timeouts.connect,
            https: !base_url.starts_with("http://"),
        }
    }

    /// The client, built on first use (off the runtime's threads: loading the certificate
    /// store reads files).
    async fn client(&self) -> Result<&reqwest::Client, ProviderError> {
        self.client
            .get_or_try_init(|| async {
                let https = self.https;
                let connect_timeout = self.connect_timeout;
                crate::tasks::spawn_blocking(move || build_client(https, connect_timeout))
                    .await
                    .map_err(|e| ProviderError::Setup(e.to_string()))?
            })
            .await
    }

    /// Send `body` and wait for the response headers, at most `timeout`.
    pub async fn send(
        &self,
        url: &str,
        headers: HeaderMap,
        body: Vec<u8>,
        timeout: Duration,
        cancel: &CancellationToken,
    ) -> Result<reqwest::Response, ProviderError> {
        let client = tokio::select! {
            _ = cancel.cancelled() => return Err(ProviderError::Aborted),
            client = self.client() => client?,
        };
        let request = client.post(url).headers(headers).body(body).send();
        tokio::select! {
            _ = cancel.cancelled() => Err(ProviderError::Aborted),
            response = tokio::time::timeout(timeout, request) => match response {
                Err(_) => Err(ProviderError::NoResponse(timeout)),
                Ok(response) => response.map_err(|e| send_error(url, &e)),
            },
        }
    }
}

fn build_client(https: bool, connect_timeout: Duration) -> Result<reqwest::Client, ProviderError> {
    let builder = if https {
        install_crypto_provider();
        reqwest::Client::builder()
    } else {
        plain_http_client()
    };
    builder
        .connect_timeout(connect_timeout)
        .user_agent(USER_AGENT)
        .build()
        .map_err(|e| ProviderError::Setup(error_chain(&e)))
}

/// The headers of every request to `settings`' endpoint.
pub fn headers(settings: &ProviderSettings, key: Option<&str>) -> Result<HeaderMap, ProviderError> {
    let mut headers = HeaderMap::new();
    headers.insert("content-type", HeaderValue::from_static("application/json"));
    headers.insert("accept", HeaderValue::from_static("text/event-stream"));
    let bad_header = |name: &str| {
        ProviderError::Decode(format!(
            "the `{name}` header of provider `{}` is not a valid HTTP header",
            settings.name
        ))
    };
    let wire = settings.api.wire();
    if let Some(key) = key {
        let (name, value) = wire.auth_header(key);
        let mut value = HeaderValue::from_str(&value).map_err(|_| bad_header("API key"))?;
        value.set_sensitive(true);
        headers.insert(name, value);
    }
    for (name, value) in wire.extra_headers() {
        headers.insert(*name, HeaderValue::from_static(value));
    }
    // The headers that go with an account `agent login` stored (only once its token was
    // handed out for this provider).
    let signed_in =
        crate::auth::requests::credential_headers(&settings.name, settings.account.as_deref());
    for (name, value) in signed_in.iter().chain(&settings.headers) {
        let header_name = HeaderName::from_bytes(name.as_bytes()).map_err(|_| bad_header(name))?;
        let mut header_value = HeaderValue::from_str(value).map_err(|_| bad_header(name))?;
        header_value.set_sensitive(true);
        headers.insert(header_name, header_value);
    }
    Ok(headers)
}

/// `retry-after-ms`, or `retry-after` as seconds or an HTTP date; behind LiteLLM, which
/// forwards the provider's headers under its own prefix, `llm_provider-retry-after-ms` and
/// `llm_provider-retry-after` when the plain ones are missing.
pub fn retry_after(headers: &HeaderMap) -> Option<Duration> {
    retry_after_named(headers, "").or_else(|| retry_after_named(headers, "llm_provider-"))
}

fn retry_after_named(headers: &HeaderMap, prefix: &str) -> Option<Duration> {
    let text = |name: &str| {
        headers
            .get(format!("{prefix}{name}"))
            .and_then(|v| v.to_str().ok())
            .map(str::trim)
    };
    if let Some(ms) = text("retry-after-ms").and_then(|v| v.parse::<f64>().ok()) {
        return Duration::try_from_secs_f64(ms / 1000.0).ok();
    }
    let value = text("retry-after")?;
    if let Ok(seconds) = value.parse::<f64>() {
        return Duration::try_from_secs_f64(seconds).ok();
    }
    let when = httpdate::parse_http_date(value).ok()?;
    Some(
        when.duration_since(SystemTime::now())
            .unwrap_or(Duration::ZERO),
    )
}

fn send_error(url: &str, error: &reqwest::Error) -> ProviderError {
    if error.is_connect() {
        ProviderError::Connect {
            url: url.to_string(),
            detail: root_cause(error),
        }
    } else if error.is_redirect() {
        ProviderError::Setup(root_cause(error))
    } else {
        ProviderError::Network(error_chain(error))
    }
}

/// An error and its sources on one line (reqwest's own message omits the cause).
pub fn error_chain(error: &dyn std::error::Error) -> String {
    let mut text = error.to_string();
    let mut source = error.source();
    while let Some(cause) = source {
        let cause_text = cause.to_string();
        if !text.contains(&cause_text) {
            text.push_str(": ");
            text.push_str(&cause_text);
        }
        source = cause.source();
    }
    text
}

fn root_cause(error: &dyn std::error::Error) -> String {
    let mut cause: &dyn std::error::Error = error;
    while let Some(next) = cause.source() {
        cause = next;
    }
    cause.to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn headers(pairs: &[(&'static str, &str)]) -> HeaderMap {
        let mut map = HeaderMap::new();
        for (name, value) in pairs {
            map.insert(*name, HeaderValue::from_str(value).unwrap());
        }
        map
    }

    #[test]
    fn retry_after_reads_seconds_milliseconds_and_dates() {
        assert_eq!(
            retry_after(&headers(&[("retry-after", "7")])),
            Some(Duration::from_secs(7))
        );
        assert_eq!(
            retry_after(&headers(&[("retry-after", "7"), ("retry-after-ms", "250")])),
            Some(Duration::from_millis(250))
        );
        let in_a_minute = httpdate::fmt_http_date(SystemTime::now() + Duration::from_secs(60));
        let delay = retry_after(&headers(&[("retry-after", &in_a_minute)])).unwrap();
        assert!(delay > Duration::from_secs(50) && delay <= Duration::from_secs(60));
        let past = httpdate::fmt_http_date(SystemTime::now() - Duration::from_secs(60));
        assert_eq!(
            retry_after(&headers(&[("retry-after", &past)])),
            Some(Duration::ZERO)
        );
        assert_eq!(retry_after(&headers(&[("retry-after", "soon")])), None);
        // LiteLLM's names, only when the plain ones are missing.
        assert_eq!(
            retry_after(&headers(&[("llm_provider-retry-after", "3")])),
            Some(Duration::from_secs(3))
        );
        assert_eq!(
            retry_after(&headers(&[
                ("llm_provider-retry-after", "3"),
                ("retry-after", "5")
            ])),
            Some(Duration::from_secs(5))
        );
    }

    #[test]
    fn the_user_agent_names_the_agent_and_its_version() {
        assert_eq!(USER_AGENT, format!("agent/{}", env!("CARGO_PKG_VERSION")));
    }
}
