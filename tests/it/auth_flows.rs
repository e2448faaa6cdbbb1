//! The sign-in flows against a loopback authorization server (tests/support/auth_server):
//! PKCE with state and verifier checked, the device code's pending / slow-down / expiry,
//! the ChatGPT and Copilot flows, and renewal — before expiry, after a refusal, and the
//! clear "sign in again" when the server refuses the refresh token.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // test code fails loudly

use crate::support::auth_server::AuthServer;
use agent::auth::credential::{Credential, Renewal, Tokens, now_secs};
use agent::auth::error::AuthError;
use agent::auth::oauth;
use agent::auth::refresh::{self, Subject};
use agent::auth::store::{Store, provider_id};
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// A browser: follows the authorization URL to its redirect and delivers it to the
/// loopback, optionally with another `state`.
fn browser(forged_state: Option<&'static str>) -> impl FnOnce(String) -> std::future::Ready<()> {
    move |url: String| {
        tokio::spawn(async move {
            let _ = rustls::crypto::ring::default_provider().install_default();
            let client = reqwest::Client::builder()
                .redirect(reqwest::redirect::Policy::none())
                .build()
                .unwrap();
            let answer = client.get(&url).send().await.unwrap();
            let mut location = answer.headers()["location"].to_str().unwrap().to_string();
            if let Some(forged) = forged_state {
                let (before, _) = location.split_once("&state=").unwrap();
                location = format!("{before}&state={forged}");
            }
            let _ = client.get(&location).send().await;
        });
        std::future::ready(())
    }
}

#[tokio::test]
async fn pkce_round_trip_checks_state_and_verifier() {
    let server = AuthServer::start().await;
    let granted =
        oauth::authorization_code(&server.server(), 0, "/callback", "127.0.0.1", browser(None))
            .await
            .unwrap();
    assert_eq!(granted.access_token, "at-minted-1-abcdef");
    assert_eq!(granted.refresh_token.as_deref(), Some("rt-minted-1-abcdef"));
    server.with(|s| {
        assert_eq!(s.verified, 1, "the verifier matched the S256 challenge");
        assert_eq!(s.unverified, 0);
    });
}

#[tokio::test]
async fn a_redirect_with_another_state_is_not_exchanged() {
    let server = AuthServer::start().await;
    let err = oauth::authorization_code(
        &server.server(),
        0,
        "/callback",
        "127.0.0.1",
        browser(Some("forged-state")),
    )
    .await
    .err()
    .unwrap()
    .to_string();
    assert!(err.contains("wrong state"), "{err}");
    server.with(|s| assert!(s.grants.is_empty(), "no code was exchanged: {:?}", s.grants));
}

#[tokio::test]
async fn device_code_waits_out_pending_and_slows_down() {
    let server = AuthServer::start().await;
    server.with(|s| {
        s.device_script = [
            "authorization_pending",
            "slow_down",
            "authorization_pending",
        ]
        .into()
    });
    let pauses = Arc::new(Mutex::new(Vec::new()));
    let recorded = pauses.clone();
    let shown = Arc::new(Mutex::new(String::new()));
    let code = shown.clone();
    let granted = oauth::device_code(
        &server.server(),
        |device| *code.lock().unwrap() = device.user_code.clone(),
        move |pause| {
            recorded.lock().unwrap().push(pause);
            std::future::ready(())
        },
    )
    .await
    .unwrap();
    assert_eq!(granted.access_token, "at-minted-1-abcdef");
    assert_eq!(*shown.lock().unwrap(), "WDJB-MJHT");
    server.with(|s| assert_eq!(s.device_polls, 4));
    let pauses = pauses.lock().unwrap().clone();
    // The interval (1 s) at first; 5 s more after `slow_down`, from then on.
    assert_eq!(pauses.first(), Some(&Duration::from_secs(1)), "{pauses:?}");
    assert!(
        pauses.iter().skip(2).all(|p| *p >= Duration::from_secs(6)),
        "{pauses:?}"
    );
}

#[tokio::test]
async fn a_device_code_that_expires_says_so() {
    let server = AuthServer::start().await;
    server.with(|s| s.device_script = ["authorization_pending", "expired_token"].into());
    let err = oauth::device_code(&server.server(), |_| {}, |_| std::future::ready(()))
        .await
        .err()
        .unwrap()
        .to_string();
    assert!(err.contains("device code expired"), "{err}");
    assert!(err.contains("sign-in again"), "{err}");
}

fn stored(server: &AuthServer, expires_in: i64) -> (tempfile::TempDir, Arc<Store>) {
    let home = tempfile::tempdir().unwrap();
    let store = Arc::new(Store::file_only(home.path()));
    let tokens = Tokens {
        access_token: "at-original-abcdef".into(),
        refresh_token: Some("rt-original-abcdef".into()),
        expires_at: Some(now_secs().saturating_add_signed(expires_in)),
        account: Some("me@example.com".into()),
        renewal: Renewal::RefreshToken,
        token_url: Some(format!("{}/token", server.url)),
        client_id: Some("test-client".into()),
        headers: Default::default(),
    };
    let lock = store.lock().unwrap();
    store
        .save(&lock, &provider_id("acme"), &Credential::Oauth(tokens))
        .unwrap();
    (home, store)
}

fn access(credential: Option<Credential>) -> String {
    match credential {
        Some(Credential::Oauth(tokens)) => tokens.access_token,
        other => panic!("not tokens: {other:?}"),
    }
}

#[tokio::test]
async fn a_token_about_to_expire_is_renewed_first_and_a_fresh_one_is_not() {
    let server = AuthServer::start().await;
    let subject = Subject::account("acme", None);
    let (_home, store) = stored(&server, 3600);
    let token = refresh::usable(store.clone(), &provider_id("acme"), &subject, None)
        .await
        .unwrap();
    assert_eq!(access(token), "at-original-abcdef");
    server.with(|s| assert_eq!(s.refreshes, 0));

    let (_home, store) = stored(&server, 30);
    let token = refresh::usable(store.clone(), &provider_id("acme"), &subject, None)
        .await
        .unwrap();
    assert_eq!(access(token), "at-minted-1-abcdef");
    server.with(|s| assert_eq!(s.refreshes, 1));
    // Saved: the next read finds the renewed token (and its new refresh token).
    let (saved, _) = store.load(&provider_id("acme")).unwrap().unwrap();
    let Credential::Oauth(saved) = saved else {
        panic!()
    };
    assert_eq!(saved.access_token, "at-minted-1-abcdef");
    assert_eq!(saved.refresh_token.as_deref(), Some("rt-minted-1-abcdef"));
    assert_eq!(saved.account.as_deref(), Some("me@example.com"));
}

#[tokio::test]
async fn a_refused_refresh_asks_to_sign_in_again() {
    let server = AuthServer::start().await;
    server.with(|s| s.refuse_refresh = true);
    let (_home, store) = stored(&server, -10);
    let err = refresh::usable(
        store,
        &provider_id("acme"),
        &Subject::account("acme", None),
        None,
    )
    .await
    .err()
    .unwrap();
    assert!(matches!(err, AuthError::SignInAgain { .. }), "{err:?}");
    let text = err.to_string();
    assert!(
        text.contains("sign in again: agent login --provider acme"),
        "{text}"
    );
    assert!(text.contains("revoked"), "{text}");
}

#[tokio::test]
async fn a_revoked_token_is_renewed_once() {
    let server = AuthServer::start().await;
    let subject = Subject::account("acme", None);
    let (_home, store) = stored(&server, 3600);
    // The server refused the (unexpired) token: it is renewed...
    let token = refresh::usable(
        store.clone(),
        &provider_id("acme"),
        &subject,
        Some("at-original-abcdef"),
    )
    .await
    .unwrap();
    assert_eq!(access(token), "at-minted-1-abcdef");
    // ...and a second refusal of the same old token (another request that was in flight)
    // finds the renewed one without asking the server again.
    let token = refresh::usable(
        store.clone(),
        &provider_id("acme"),
        &subject,
        Some("at-original-abcdef"),
    )
    .await
    .unwrap();
    assert_eq!(access(token), "at-minted-1-abcdef");
    server.with(|s| assert_eq!(s.refreshes, 1));
}

#[tokio::test]
async fn copilot_signs_in_by_device_code_and_renews_by_exchange() {
    let server = AuthServer::start().await;
    server.with(|s| s.device_script = ["authorization_pending"].into());
    let endpoints = agent::auth::copilot::Endpoints {
        github: server.url.clone(),
        api: server.url.clone(),
    };
    let tokens = agent::auth::copilot::sign_in(&endpoints, |_| {}, |_| std::future::ready(()))
        .await
        .unwrap();
    // The Copilot token is used; the GitHub token is kept to exchange again.
    assert_eq!(tokens.access_token, "copilot-token-1-abcdef");
    assert_eq!(tokens.refresh_token.as_deref(), Some("at-minted-1-abcdef"));
    assert_eq!(tokens.account.as_deref(), Some("octo-tester"));
    assert_eq!(tokens.renewal, Renewal::CopilotExchange);
    assert_eq!(tokens.headers["Copilot-Integration-Id"], "vscode-chat");
    // Renewal exchanges the GitHub token again.
    let home = tempfile::tempdir().unwrap();
    let store = Arc::new(Store::file_only(home.path()));
    let expiring = Tokens {
        expires_at: Some(now_secs() + 5),
        ..tokens
    };
    let lock = store.lock().unwrap();
    store
        .save(&lock, &provider_id("copilot"), &Credential::Oauth(expiring))
        .unwrap();
    drop(lock);
    let renewed = refresh::usable(
        store,
        &provider_id("copilot"),
        &Subject::account("copilot", None),
        None,
    )
    .await
    .unwrap();
    assert_eq!(access(renewed), "copilot-token-2-abcdef");
    server.with(|s| assert_eq!(s.copilot_exchanges, 2));
}

#[tokio::test]
async fn chatgpt_device_sign_in_exchanges_the_code_with_the_servers_verifier() {
    let server = AuthServer::start().await;
    // An ID token with the account id claim, as OpenAI's carries it.
    let claims = serde_json::json!({
        "email": "dev@example.com",
        "https://api.openai.com/auth": {"chatgpt_account_id": "acct-42"}
    });
    let payload = base64::Engine::encode(
        &base64::engine::general_purpose::URL_SAFE_NO_PAD,
        claims.to_string(),
    );
    server.with(|s| s.id_token = Some(format!("e30.{payload}.sig")));
    let shown = Arc::new(Mutex::new((String::new(), String::new())));
    let into = shown.clone();
    let tokens = agent::auth::chatgpt::sign_in_device(
        &server.url,
        |url, code| *into.lock().unwrap() = (url.to_string(), code.to_string()),
        |_| std::future::ready(()),
    )
    .await
    .unwrap();
    assert_eq!(shown.lock().unwrap().1, "ABCD-1234");
    assert!(shown.lock().unwrap().0.ends_with("/codex/device"));
    assert_eq!(tokens.access_token, "at-minted-1-abcdef");
    assert_eq!(tokens.account.as_deref(), Some("dev@example.com"));
    assert_eq!(tokens.headers["chatgpt-account-id"], "acct-42");
    assert_eq!(
        tokens.token_url,
        Some(format!("{}/oauth/token", server.url))
    );
    server.with(|s| {
        assert_eq!(s.verified, 1, "the server's verifier was sent back");
        assert_eq!(s.device_polls, 2, "one pending answer, then approval");
    });
}
