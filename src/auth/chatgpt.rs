//! Signing in with a ChatGPT account (the flow OpenAI's Codex CLI uses, which OpenAI lets
//! other tools use with the account's plan): OAuth 2 with PKCE and a loopback redirect on
//! `localhost:1455/auth/callback` (the one redirect registered for this client), or, on a
//! machine without a browser, OpenAI's device sign-in (not RFC 8628: the user enters a
//! code at `{issuer}/codex/device`; polling returns an authorization code and the PKCE
//! verifier, exchanged as in the browser flow). Requests then go to the ChatGPT backend's
//! Responses endpoint with the account id from the ID token.
//!
//! Learned from openai/codex (codex-rs/login) and pi; not verified against the real
//! service from here (no network), see docs/auth.md.

use super::credential::{Renewal, Tokens, now_secs};
use super::error::AuthError;
use super::http;
use super::oauth::{self, Granted, Server};
use base64::Engine;
use serde::Deserialize;
use std::collections::BTreeMap;
use std::future::Future;
use std::time::Duration;

pub const ISSUER: &str = "https://auth.openai.com";
/// The public client id of the Codex CLI's sign-in.
pub const CLIENT_ID: &str = "app_EMoamEEZ73f0CkXaXp7hrann";
const PORT: u16 = 1455;
const CALLBACK: &str = "/auth/callback";

pub fn server(issuer: &str) -> Server {
    Server {
        client_id: CLIENT_ID.to_string(),
        authorize_url: format!("{issuer}/oauth/authorize"),
        token_url: format!("{issuer}/oauth/token"),
        device_url: None,
        scopes: ["openid", "profile", "email", "offline_access"]
            .map(String::from)
            .to_vec(),
        authorize_params: vec![
            ("id_token_add_organizations".into(), "true".into()),
            ("codex_cli_simplified_flow".into(), "true".into()),
            ("originator".into(), "agent".into()),
        ],
    }
}

/// The browser sign-in.
pub async fn sign_in_browser<F, Fut>(issuer: &str, open: F) -> Result<Tokens, AuthError>
where
    F: FnOnce(String) -> Fut,
    Fut: Future<Output = ()>,
{
    let server = server(issuer);
    let granted = oauth::authorization_code(&server, PORT, CALLBACK, "localhost", open).await?;
    tokens(issuer, granted)
}

#[derive(Deserialize)]
struct UserCode {
    device_auth_id: String,
    #[serde(alias = "usercode")]
    user_code: String,
    #[serde(default)]
    interval: Option<serde_json::Value>,
}

#[derive(Deserialize)]
struct Approved {
    authorization_code: String,
    code_verifier: String,
}

/// How long a device sign-in waits for the user.
const DEVICE_WAIT: Duration = Duration::from_secs(15 * 60);

/// The device sign-in: `show(url, code)`, then poll through `sleep` until approved.
pub async fn sign_in_device<S, SF>(
    issuer: &str,
    show: impl FnOnce(&str, &str),
    sleep: S,
) -> Result<Tokens, AuthError>
where
    S: Fn(Duration) -> SF,
    SF: Future<Output = ()>,
{
    let client = http::client()?;
    let network = |e: reqwest::Error| {
        AuthError::Network(format!("the device sign-in failed: {}", http::describe(&e)))
    };
    let (status, body) = http::post_json(
        &client,
        &format!("{issuer}/api/accounts/deviceauth/usercode"),
        &serde_json::json!({ "client_id": CLIENT_ID }),
    )
    .await
    .map_err(network)?;
    if !(200..300).contains(&status) {
        return Err(AuthError::flow(format!(
            "the device sign-in was refused (HTTP {status}); use the browser sign-in"
        )));
    }
    let code: UserCode = http::parse(&body, "the device sign-in's answer")?;
    let interval = code
        .interval
        .as_ref()
        .and_then(|v| {
            v.as_u64()
                .or_else(|| v.as_str().and_then(|s| s.trim().parse().ok()))
        })
        .unwrap_or(5);
    show(&format!("{issuer}/codex/device"), &code.user_code);
    let mut waited = Duration::ZERO;
    let approved: Approved = loop {
        let (status, body) = http::post_json(
            &client,
            &format!("{issuer}/api/accounts/deviceauth/token"),
            &serde_json::json!({ "device_auth_id": code.device_auth_id, "user_code": code.user_code }),
        )
        .await
        .map_err(network)?;
        if (200..300).contains(&status) {
            break http::parse(&body, "the device sign-in's answer")?;
        }
        // Not approved yet.
        if status != 403 && status != 404 {
            return Err(AuthError::flow(format!(
                "the device sign-in failed (HTTP {status})"
            )));
        }
        if waited >= DEVICE_WAIT {
            return Err(AuthError::flow(
                "the device code expired before the sign-in was approved; run the sign-in again",
            ));
        }
        let pause = Duration::from_secs(interval.max(1));
        sleep(pause).await;
        waited += pause;
    };
    let granted = exchange(&client, issuer, &approved).await?;
    tokens(issuer, granted)
}

async fn exchange(
    client: &reqwest::Client,
    issuer: &str,
    approved: &Approved,
) -> Result<Granted, AuthError> {
    #[derive(Deserialize)]
    struct Answer {
        access_token: String,
        refresh_token: Option<String>,
        id_token: Option<String>,
        expires_in: Option<u64>,
    }
    let redirect_uri = format!("{issuer}/deviceauth/callback");
    let form = [
        ("grant_type", "authorization_code"),
        ("code", approved.authorization_code.as_str()),
        ("redirect_uri", redirect_uri.as_str()),
        ("client_id", CLIENT_ID),
        ("code_verifier", approved.code_verifier.as_str()),
    ];
    let body = url::form_urlencoded::Serializer::new(String::new())
        .extend_pairs(form)
        .finish();
    let answer = client
        .post(format!("{issuer}/oauth/token"))
        .header("content-type", "application/x-www-form-urlencoded")
        .body(body)
        .send()
        .await
        .map_err(|e| AuthError::Network(http::describe(&e)))?;
    if !answer.status().is_success() {
        return Err(AuthError::flow(format!(
            "the authorization server refused the code exchange (HTTP {})",
            answer.status().as_u16()
        )));
    }
    let body = answer
        .bytes()
        .await
        .map_err(|e| AuthError::Network(http::describe(&e)))?;
    let answer: Answer = http::parse(&body, "the token answer")?;
    Ok(Granted {
        access_token: answer.access_token,
        refresh_token: answer.refresh_token,
        expires_in: answer.expires_in.map(Duration::from_secs),
        id_token: answer.id_token,
    })
}

/// What is kept of a sign-in: the tokens, who, and the account header requests carry.
fn tokens(issuer: &str, granted: Granted) -> Result<Tokens, AuthError> {
    let claims = granted
        .id_token
        .as_deref()
        .and_then(claims)
        .unwrap_or(serde_json::Value::Null);
    let account_id = claims
        .pointer("/https:~1~1api.openai.com~1auth/chatgpt_account_id")
        .and_then(|v| v.as_str());
    let mut headers = BTreeMap::new();
    if let Some(id) = account_id {
        headers.insert("chatgpt-account-id".to_string(), id.to_string());
    }
    headers.insert(
        "OpenAI-Beta".to_string(),
        "responses=experimental".to_string(),
    );
    headers.insert("originator".to_string(), "agent".to_string());
    Ok(Tokens {
        access_token: granted.access_token,
        refresh_token: granted.refresh_token,
        expires_at: granted
            .expires_in
            .map(|within| now_secs() + within.as_secs()),
        account: claims
            .get("email")
            .and_then(|v| v.as_str())
            .map(String::from),
        renewal: Renewal::RefreshToken,
        token_url: Some(format!("{issuer}/oauth/token")),
        client_id: Some(CLIENT_ID.to_string()),
        headers,
    })
}

/// The claims of a JWT, unverified: only read for who signed in and the account id,
/// never trusted for access (the server checks the token itself).
pub fn claims(jwt: &str) -> Option<serde_json::Value> {
    let payload = jwt.split('.').nth(1)?;
    let bytes = base64::engine::general_purpose::URL_SAFE_NO_PAD
        .decode(payload.trim_end_matches('='))
        .ok()?;
    serde_json::from_slice(&bytes).ok()
}
