//! What a sign-in leaves behind: an API key typed in, or OAuth tokens (and how to renew
//! them). `Debug` never shows a secret; `secrets()` lists them for `crate::secrets` to mask.

use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::fmt;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// A stored credential, serialized as JSON into the keyring or `auth.json`.
#[derive(Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum Credential {
    /// A key entered with `agent login --provider NAME`.
    ApiKey { key: String },
    /// Tokens from a sign-in flow (ChatGPT, Copilot, any OAuth 2 server).
    Oauth(Tokens),
    /// An MCP server's OAuth state as rmcp keeps it (client id, tokens, scopes).
    Mcp(serde_json::Value),
}

/// How an access token is renewed.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "snake_case")]
pub enum Renewal {
    /// A standard refresh-token grant at `token_url` (RFC 6749 §6).
    #[default]
    RefreshToken,
    /// GitHub Copilot: the GitHub token (kept as `refresh_token`) is exchanged again at
    /// `token_url` for a short-lived Copilot token.
    CopilotExchange,
}

#[derive(Clone, PartialEq, Serialize, Deserialize, Default)]
pub struct Tokens {
    pub access_token: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub refresh_token: Option<String>,
    /// When the access token expires, in seconds since the Unix epoch.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub expires_at: Option<u64>,
    /// Who signed in (an e-mail address or a login), when the flow says.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub account: Option<String>,
    #[serde(default)]
    pub renewal: Renewal,
    /// Where the token is renewed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub token_url: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub client_id: Option<String>,
    /// Headers every request with this token carries (not secrets: an account id, the
    /// integration id an endpoint asks for).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub headers: BTreeMap<String, String>,
}

/// Renew this long before the token expires, so a request never leaves with a token that
/// expires on the way.
pub const RENEW_BEFORE: Duration = Duration::from_secs(120);

pub fn now_secs() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0)
}

impl Tokens {
    /// Whether the access token is expired or about to be.
    pub fn needs_renewal(&self) -> bool {
        self.expires_at
            .is_some_and(|at| at <= now_secs().saturating_add(RENEW_BEFORE.as_secs()))
    }

    pub fn can_renew(&self) -> bool {
        self.refresh_token.is_some() && self.token_url.is_some()
    }
}

impl Credential {
    /// Every secret this credential holds, to register for masking.
    pub fn secrets(&self) -> Vec<&str> {
        match self {
            Credential::ApiKey { key } => vec![key],
            Credential::Oauth(tokens) => {
                let mut secrets = vec![tokens.access_token.as_str()];
                secrets.extend(tokens.refresh_token.as_deref());
                secrets
            }
            Credential::Mcp(value) => {
                let mut secrets = Vec::new();
                collect_token_strings(value, &mut secrets);
                secrets
            }
        }
    }

    /// One line for `agent auth status`: the kind, who, when it expires; never a secret.
    pub fn describe(&self) -> String {
        match self {
            Credential::ApiKey { .. } => "API key".to_string(),
            Credential::Oauth(tokens) => {
                let mut text = "signed in".to_string();
                if let Some(account) = &tokens.account {
                    text.push_str(&format!(" as {account}"));
                }
                text.push_str(&expiry(tokens.expires_at, tokens.can_renew()));
                text
            }
            Credential::Mcp(value) => {
                let received = value.get("token_received_at").and_then(|v| v.as_u64());
                let expires_in = value
                    .pointer("/token_response/expires_in")
                    .and_then(|v| v.as_u64());
                let renewable = value.pointer("/token_response/refresh_token").is_some();
                let expires_at = received.zip(expires_in).map(|(at, within)| at + within);
                format!("signed in (OAuth){}", expiry(expires_at, renewable))
            }
        }
    }
}

fn expiry(expires_at: Option<u64>, renewable: bool) -> String {
    let renew = if renewable {
        ", renewed automatically"
    } else {
        ""
    };
    match expires_at {
        None => renew.to_string(),
        Some(at) => {
            let now = now_secs();
            if at <= now {
                format!(", access token expired {} ago{renew}", span(now - at))
            } else {
                format!(", access token expires in {}{renew}", span(at - now))
            }
        }
    }
}

fn span(seconds: u64) -> String {
    match seconds {
        0..120 => format!("{seconds} s"),
        120..7200 => format!("{} min", seconds / 60),
        7200..172_800 => format!("{} h", seconds / 3600),
        _ => format!("{} days", seconds / 86_400),
    }
}

/// Values of `access_token`/`refresh_token` anywhere in rmcp's stored state.
fn collect_token_strings<'a>(value: &'a serde_json::Value, into: &mut Vec<&'a str>) {
    match value {
        serde_json::Value::Object(map) => {
            for (name, inner) in map {
                match (name.as_str(), inner) {
                    (
                        "access_token" | "refresh_token" | "client_secret",
                        serde_json::Value::String(s),
                    ) => into.push(s),
                    _ => collect_token_strings(inner, into),
                }
            }
        }
        serde_json::Value::Array(items) => {
            items.iter().for_each(|i| collect_token_strings(i, into))
        }
        _ => {}
    }
}

impl fmt::Debug for Credential {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Credential::ApiKey { .. } => f.write_str("ApiKey(<redacted>)"),
            Credential::Oauth(tokens) => f
                .debug_struct("Oauth")
                .field("account", &tokens.account)
                .field("expires_at", &tokens.expires_at)
                .field("renewal", &tokens.renewal)
                .finish_non_exhaustive(),
            Credential::Mcp(_) => f.write_str("Mcp(<redacted>)"),
        }
    }
}

impl fmt::Debug for Tokens {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(&Credential::Oauth(self.clone()), f)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn debug_and_describe_show_no_secret() {
        let credential = Credential::Oauth(Tokens {
            access_token: "at-secret-123456".into(),
            refresh_token: Some("rt-secret-123456".into()),
            expires_at: Some(now_secs() + 3600),
            account: Some("me@example.com".into()),
            token_url: Some("https://as/token".into()),
            ..Tokens::default()
        });
        for text in [format!("{credential:?}"), credential.describe()] {
            assert!(!text.contains("secret"), "{text}");
        }
        assert!(credential.describe().contains("me@example.com"));
        assert_eq!(
            credential.secrets(),
            ["at-secret-123456", "rt-secret-123456"]
        );
        let mcp = Credential::Mcp(serde_json::json!({
            "client_id": "c", "token_response": {"access_token": "mcp-at-1234567", "refresh_token": "mcp-rt-1234567"}
        }));
        assert_eq!(mcp.secrets().len(), 2);
    }
}
