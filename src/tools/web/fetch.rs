//! `web_fetch {url, prompt?}`: an HTTP(S) GET for the model. Redirects are followed by hand
//! (at most `MAX_REDIRECTS`) so every hop is checked like the first: the scheme, the
//! `[web]` deny list, and the addresses the host resolves to (`address`: private and
//! loopback ones refused unless the allow list names the host); the connection goes to the
//! addresses checked, not to a second lookup. The whole fetch has a time limit (10 s by
//! default) and the body a size cap (5 MB); HTML arrives as Markdown (`convert`).
//! The call only reads, but what it reads comes from outside: in ask mode it asks first,
//! with the host shown.

use super::MAX_REDIRECTS;
use super::WebSettings;
use super::{address, convert};
use crate::tools::truncate::MAX_BYTES;
use crate::tools::{Tool, ToolContext, ToolOutput, parse_args};
use futures_util::future::BoxFuture;
use reqwest::Url;
use serde::Deserialize;
use serde_json::{Value, json};
use std::net::SocketAddr;

pub struct WebFetchTool;

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Args {
    url: String,
    #[serde(default)]
    prompt: Option<String>,
}

impl Tool for WebFetchTool {
    fn name(&self) -> &'static str {
        "web_fetch"
    }

    fn description(&self) -> &'static str {
        "Fetch a web page (http or https GET) and return its text; HTML is converted to \
         Markdown. At most 5 MB; long pages are cut. prompt says what you are looking for on \
         the page. Private and local network addresses are refused."
    }

    fn parameters(&self) -> Value {
        json!({
            "type": "object",
            "properties": {
                "url": {"type": "string", "description": "The http:// or https:// URL"},
                "prompt": {"type": "string", "description": "What to look for on the page"}
            },
            "required": ["url"],
            "additionalProperties": false
        })
    }

    fn read_only(&self) -> bool {
        true
    }

    /// What comes from the web is the user's call: it asks in ask mode (unless a rule
    /// allows `web_fetch`), like a tool whose read-only claim is not ours to trust.
    fn read_only_is_claimed(&self) -> bool {
        true
    }

    fn ask_reason(&self, args: &Value) -> Option<String> {
        let url = args.get("url").and_then(Value::as_str).unwrap_or("");
        let host = Url::parse(url)
            .ok()
            .and_then(|u| u.host_str().map(str::to_string))
            .unwrap_or_else(|| "an unreadable address".to_string());
        Some(format!("it fetches a page from the web host {host}"))
    }

    fn summarize(&self, args: &Value) -> String {
        args.get("url")
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_string()
    }

    fn execute(&self, args: Value, ctx: ToolContext) -> BoxFuture<'static, ToolOutput> {
        Box::pin(async move {
            let args: Args = match parse_args("web_fetch", args) {
                Ok(args) => args,
                Err(output) => return output,
            };
            let settings = ctx.settings.web.clone();
            let fetch = fetch(&args.url, &settings);
            let fetched = tokio::select! {
                _ = ctx.cancel.cancelled() => return ToolOutput::error(crate::tools::CANCELLED_TEXT),
                fetched = tokio::time::timeout(settings.timeout, fetch) => fetched,
            };
            match fetched {
                Err(_) => ToolOutput::error(format!(
                    "Could not fetch {}: no complete answer within {} s.",
                    args.url,
                    settings.timeout.as_secs_f64()
                )),
                Ok(Err(why)) => ToolOutput::error(format!("Could not fetch {}: {why}", args.url)),
                Ok(Ok(page)) => page.into_output(args.prompt.as_deref()),
            }
        })
    }
}

struct Page {
    url: Url,
    status: u16,
    content_type: String,
    text: String,
}

impl Page {
    fn into_output(self, prompt: Option<&str>) -> ToolOutput {
        let mut text = format!("URL: {}\n", self.url);
        if let Some(prompt) = prompt.filter(|p| !p.trim().is_empty()) {
            text.push_str(&format!("Looking for: {}\n", prompt.trim()));
        }
        text.push('\n');
        let body = crate::tools::truncate::clip(&self.text, MAX_BYTES);
        text.push_str(body);
        let cut = body.len() < self.text.len();
        if cut {
            text.push_str(&format!(
                "\n\n[the page is cut here: {} of {} bytes shown]",
                body.len(),
                self.text.len()
            ));
        }
        ToolOutput {
            is_error: self.status >= 400,
            ..ToolOutput::text(text)
        }
        .with_details(json!({
            "url": self.url.as_str(),
            "status": self.status,
            "contentType": self.content_type,
            "truncated": cut,
        }))
    }
}

/// GET `url`, following redirects, every hop checked.
async fn fetch(url: &str, settings: &WebSettings) -> Result<Page, String> {
    let mut url = Url::parse(url).map_err(|e| format!("not a valid URL ({e})"))?;
    let mut visited: Vec<String> = Vec::new();
    loop {
        let addresses = check(&url, settings).await?;
        let response = get(&url, &addresses, settings).await?;
        let status = response.status();
        if status.is_redirection()
            && let Some(location) = response.headers().get(reqwest::header::LOCATION)
        {
            let location = location
                .to_str()
                .map_err(|_| "a redirect to an unreadable location".to_string())?;
            let next = url
                .join(location)
                .map_err(|e| format!("a redirect to an invalid URL `{location}` ({e})"))?;
            // A redirect to another host is not followed: the user (or a rule) approved
            // this host, and an open redirect must not carry the request elsewhere.
            if next.host_str() != url.host_str() {
                return Err(format!(
                    "{url} redirects to another host: {next}. It was not followed; call \
                     web_fetch again with that URL if it should be read (it is judged on its own)"
                ));
            }
            visited.push(url.to_string());
            if visited.len() > MAX_REDIRECTS {
                return Err(format!(
                    "too many redirects (more than {MAX_REDIRECTS}): {} → {next}",
                    visited.join(" → ")
                ));
            }
            url = next;
            continue;
        }
        let content_type = response
            .headers()
            .get(reqwest::header::CONTENT_TYPE)
            .and_then(|v| v.to_str().ok())
            .unwrap_or("")
            .to_string();
        let body = read_capped(response, settings.max_bytes).await?;
        // Converting is CPU work: off the async workers, so the timeout and an abort act at
        // once.
        let kind = content_type.clone();
        let text = crate::tasks::spawn_blocking(move || convert::to_text(&kind, &body))
            .await
            .map_err(|e| format!("the page could not be converted: {e}"))??;
        return Ok(Page {
            url,
            status: status.as_u16(),
            content_type,
            text,
        });
    }
}

/// The scheme, the deny list and the resolved addresses of `url`'s host; the addresses
/// the request may go to.
async fn check(url: &Url, settings: &WebSettings) -> Result<Vec<SocketAddr>, String> {
    if !matches!(url.scheme(), "http" | "https") {
        return Err(format!(
            "only http and https URLs are fetched, not `{}:`",
            url.scheme()
        ));
    }
    let host = url
        .host_str()
        .ok_or_else(|| "the URL names no host".to_string())?;
    // `[::1]` as the URL writes it; `::1` as the lists and the resolver want it.
    let bare = host.trim_start_matches('[').trim_end_matches(']');
    if address::host_listed(bare, &settings.deny_hosts) {
        return Err(format!("the host {bare} is in [web] deny_hosts"));
    }
    let port = url
        .port_or_known_default()
        .ok_or_else(|| "the URL has no port".to_string())?;
    let addresses: Vec<SocketAddr> = tokio::net::lookup_host((bare, port))
        .await
        .map_err(|e| format!("the host {bare} could not be resolved ({e})"))?
        .collect();
    if addresses.is_empty() {
        return Err(format!("the host {bare} has no address"));
    }
    if !address::host_listed(bare, &settings.allow_hosts)
        && let Some((ip, kind)) = addresses
            .iter()
            .find_map(|a| address::non_public(a.ip()).map(|kind| (a.ip(), kind)))
    {
        return Err(format!(
            "refused: {bare} is a {kind} address ({ip}), which web_fetch does not reach unless \
             [web] allow_hosts names the host"
        ));
    }
    Ok(addresses)
}

/// One GET to `url`, connecting only to `addresses`; redirects are the caller's.
async fn get(
    url: &Url,
    addresses: &[SocketAddr],
    settings: &WebSettings,
) -> Result<reqwest::Response, String> {
    crate::llm::client::install_crypto_provider();
    let mut builder = reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .no_proxy()
        .timeout(settings.timeout)
        .user_agent(crate::llm::transport::USER_AGENT);
    if let Some(domain) = url.domain() {
        builder = builder.resolve_to_addrs(domain, addresses);
    }
    let client = builder
        .build()
        .map_err(|e| format!("the HTTP client could not be set up ({e})"))?;
    client
        .get(url.clone())
        .header(
            reqwest::header::ACCEPT,
            "text/html, text/markdown;q=0.9, text/plain;q=0.8, */*;q=0.5",
        )
        .send()
        .await
        .map_err(|e| format!("the request failed ({})", error_chain(&e)))
}

/// The body, refused once it passes `max` bytes.
async fn read_capped(mut response: reqwest::Response, max: usize) -> Result<Vec<u8>, String> {
    if let Some(length) = response.content_length()
        && usize::try_from(length).map_or(true, |l| l > max)
    {
        return Err(format!(
            "the page is {length} bytes, more than the {max}-byte limit"
        ));
    }
    let mut body = Vec::new();
    while let Some(chunk) = response.chunk().await.map_err(|e| {
        format!(
            "the page could not be read to its end ({})",
            error_chain(&e)
        )
    })? {
        if body.len().saturating_add(chunk.len()) > max {
            return Err(format!(
                "the page is more than the {max}-byte limit (stopped reading there)"
            ));
        }
        body.extend_from_slice(&chunk);
    }
    Ok(body)
}

fn error_chain(error: &dyn std::error::Error) -> String {
    let mut text = error.to_string();
    let mut source = error.source();
    while let Some(cause) = source {
        text.push_str(": ");
        text.push_str(&cause.to_string());
        source = cause.source();
    }
    text
}
