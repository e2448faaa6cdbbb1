//! Signing in to GitHub Copilot: GitHub's device flow (RFC 8628) gives a GitHub token,
//! which is exchanged for a short-lived Copilot token (`copilot_internal/v2/token`); the
//! GitHub token is kept as the "refresh token" and the exchange repeated before the
//! Copilot token expires. Requests go to Copilot's OpenAI-compatible endpoint with the
//! headers it asks of editor integrations.
//!
//! Learned from pi and other open implementations; not verified against the real service
//! from here (no network), see docs/auth.md.

use super::credential::{Renewal, Tokens};
use super::error::AuthError;
use super::http;
use super::oauth::{self, DeviceCode, RefreshFailure, Server};
use serde::Deserialize;
use std::collections::BTreeMap;
use std::future::Future;
use std::time::Duration;

/// GitHub's public client id for the Copilot editor integrations' device sign-in.
pub const CLIENT_ID: &str = "Iv1.b507a08c87ecfe98";

/// Where each step goes (GitHub's by default; tests point them at a loopback server).
#[derive(Clone, Debug)]
pub struct Endpoints {
    pub github: String,
    pub api: String,
}

impl Default for Endpoints {
    fn default() -> Endpoints {
        Endpoints {
            github: "https://github.com".to_string(),
            api: "https://api.github.com".to_string(),
        }
    }
}

/// The headers Copilot's endpoint asks of an integration.
fn integration_headers() -> BTreeMap<String, String> {
    [
        ("Copilot-Integration-Id", "vscode-chat"),
        (
            "Editor-Version",
            concat!("agent/", env!("CARGO_PKG_VERSION")),
        ),
        (
            "Editor-Plugin-Version",
            concat!("agent/", env!("CARGO_PKG_VERSION")),
        ),
    ]
    .into_iter()
    .map(|(name, value)| (name.to_string(), value.to_string()))
    .collect()
}

/// The device sign-in and the first exchange.
pub async fn sign_in<S, SF>(
    endpoints: &Endpoints,
    show: impl FnOnce(&DeviceCode),
    sleep: S,
) -> Result<Tokens, AuthError>
where
    S: Fn(Duration) -> SF,
    SF: Future<Output = ()>,
{
    let server = Server {
        client_id: CLIENT_ID.to_string(),
        authorize_url: String::new(),
        token_url: format!("{}/login/oauth/access_token", endpoints.github),
        device_url: Some(format!("{}/login/device/code", endpoints.github)),
        scopes: vec!["read:user".to_string()],
        authorize_params: Vec::new(),
    };
    let github = oauth::device_code(&server, show, sleep).await?;
    let token_url = format!("{}/copilot_internal/v2/token", endpoints.api);
    let exchanged = exchange(&token_url, &github.access_token)
        .await
        .map_err(|failure| match failure {
            RefreshFailure::Rejected(why) => AuthError::flow(format!(
                "GitHub signed you in, but Copilot refused the account ({why}); is Copilot enabled for it?"
            )),
            RefreshFailure::Unreachable(why) => AuthError::Network(why),
        })?;
    Ok(Tokens {
        access_token: exchanged.token,
        refresh_token: Some(github.access_token.clone()),
        expires_at: Some(exchanged.expires_at),
        account: login(&endpoints.api, &github.access_token).await,
        renewal: Renewal::CopilotExchange,
        token_url: Some(token_url),
        client_id: Some(CLIENT_ID.to_string()),
        headers: integration_headers(),
    })
}

pub struct Exchanged {
    pub token: String,
    /// Seconds since the Unix epoch.
    pub expires_at: u64,
}

/// Exchange the GitHub token for a Copilot token.
pub async fn exchange(token_url: &str, github_token: &str) -> Result<Exchanged, RefreshFailure> {
    #[derive(Deserialize)]
    struct Answer {
        token: String,
        expires_at: u64,
    }
    let client = http::client().map_err(|e| RefreshFailure::Unreachable(e.to_string()))?;
    let mut request = client
        .get(token_url)
        .header("authorization", format!("token {github_token}"))
        .header("accept", "application/json");
    for (name, value) in integration_headers() {
        request = request.header(name, value);
    }
    let answer = request
        .send()
        .await
        .map_err(|e| RefreshFailure::Unreachable(http::describe(&e)))?;
    let status = answer.status().as_u16();
    let body = answer
        .bytes()
        .await
        .map_err(|e| RefreshFailure::Unreachable(http::describe(&e)))?;
    match status {
        200..300 => {
            let answer: Answer = http::parse(&body, "Copilot's token answer")
                .map_err(|e| RefreshFailure::Rejected(e.to_string()))?;
            crate::secrets::register(&answer.token);
            Ok(Exchanged {
                token: answer.token,
                expires_at: answer.expires_at,
            })
        }
        401 | 403 | 404 => Err(RefreshFailure::Rejected(format!(
            "Copilot refused the GitHub token (HTTP {status})"
        ))),
        _ => Err(RefreshFailure::Unreachable(format!(
            "Copilot's token endpoint answered HTTP {status}"
        ))),
    }
}

/// The GitHub login of the token's owner, for `agent auth status` (best effort).
async fn login(api: &str, github_token: &str) -> Option<String> {
    #[derive(Deserialize)]
    struct User {
        login: String,
    }
    let client = http::client().ok()?;
    let answer = client
        .get(format!("{api}/user"))
        .header("authorization", format!("token {github_token}"))
        .header("accept", "application/json")
        .header("user-agent", concat!("agent/", env!("CARGO_PKG_VERSION")))
        .send()
        .await
        .ok()?;
    if !answer.status().is_success() {
        return None;
    }
    let body = answer.bytes().await.ok()?;
    serde_json::from_slice::<User>(&body)
        .ok()
        .map(|user| user.login)
}
