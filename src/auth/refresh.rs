//! Renewing an access token before it expires — once, however many agents share it. The
//! token is read; when it is about to expire (or a server just refused it), the store's
//! lock is taken and the token read again: if another agent renewed it meanwhile, that
//! token is used; otherwise this agent renews it and saves the result before letting go of
//! the lock. A refresh token the server refuses means the user must sign in again, and the
//! error says how.

use super::copilot;
use super::credential::{Credential, Renewal, Tokens, now_secs};
use super::error::AuthError;
use super::oauth::{self, RefreshFailure};
use super::store::Store;
use futures_util::future::BoxFuture;
use std::sync::Arc;

/// Whom to sign in again, for messages: "provider `chatgpt`" and the command that does it.
#[derive(Clone, Debug)]
pub struct Subject {
    pub what: String,
    pub command: String,
}

impl Subject {
    /// A provider's `account` (`None`: its default one).
    pub fn account(name: &str, account: Option<&str>) -> Subject {
        match account.filter(|a| !a.is_empty()) {
            None => Subject {
                what: format!("provider `{name}`"),
                command: format!("agent login --provider {name}"),
            },
            Some(account) => Subject {
                what: format!("account `{account}` of provider `{name}`"),
                command: format!("agent login --provider {name} --account {account}"),
            },
        }
    }

    fn sign_in_again(&self, why: impl Into<String>) -> AuthError {
        AuthError::SignInAgain {
            what: self.what.clone(),
            why: why.into(),
            command: self.command.clone(),
        }
    }
}

async fn blocking<T: Send + 'static>(
    work: impl FnOnce() -> Result<T, AuthError> + Send + 'static,
) -> Result<T, AuthError> {
    crate::tasks::spawn_blocking(work)
        .await
        .map_err(|e| AuthError::store(format!("the credential store failed: {e}")))?
}

/// The credential stored under `id`, with an OAuth access token renewed first when it is
/// about to expire or is `rejected` (the token a server just refused).
/// Boxed: it is awaited from several places, and an optimised build would otherwise copy
/// this future's code into each codegen unit that awaits it (issue 32).
pub fn usable<'a>(
    store: Arc<Store>,
    id: &'a str,
    subject: &'a Subject,
    rejected: Option<&'a str>,
) -> BoxFuture<'a, Result<Option<Credential>, AuthError>> {
    Box::pin(usable_unboxed(store, id, subject, rejected))
}

async fn usable_unboxed(
    store: Arc<Store>,
    id: &str,
    subject: &Subject,
    rejected: Option<&str>,
) -> Result<Option<Credential>, AuthError> {
    let stale = |tokens: &Tokens| {
        tokens.needs_renewal() || rejected.is_some_and(|r| r == tokens.access_token)
    };
    let loaded = {
        let (store, id) = (store.clone(), id.to_string());
        blocking(move || store.load(&id)).await?
    };
    let tokens = match loaded {
        Some((Credential::Oauth(tokens), _)) if stale(&tokens) => tokens,
        other => return Ok(other.map(|(credential, _)| credential)),
    };
    if !tokens.can_renew() {
        return Err(subject.sign_in_again(if rejected.is_some() {
            "the server refused it and it cannot be renewed"
        } else {
            "it cannot be renewed"
        }));
    }
    let lock = Store::lock_async(store.home().to_path_buf()).await?;
    let current = {
        let (store, id) = (store.clone(), id.to_string());
        blocking(move || store.load(&id)).await?
    };
    let tokens = match current {
        // Another agent renewed it (or signed in again) while this one waited.
        Some((Credential::Oauth(current), _)) if current != tokens && !stale(&current) => {
            return Ok(Some(Credential::Oauth(current)));
        }
        Some((Credential::Oauth(current), _)) => current,
        // Signed out (or replaced by a key) meanwhile.
        other => return Ok(other.map(|(credential, _)| credential)),
    };
    match renew(&tokens).await {
        Ok(renewed) => {
            let credential = Credential::Oauth(renewed);
            let saved = credential.clone();
            let id = id.to_string();
            blocking(move || store.save(&lock, &id, &saved).map(|_| ())).await?;
            tracing::info!(target: "auth", id = %id_for_log(&credential), "renewed an access token");
            Ok(Some(credential))
        }
        Err(RefreshFailure::Rejected(why)) => Err(subject.sign_in_again(why)),
        Err(RefreshFailure::Unreachable(why)) => {
            // Not expired yet (only due for renewal): it still works for now.
            let still_valid = tokens.expires_at.is_some_and(|at| at > now_secs());
            if still_valid && rejected.is_none() {
                tracing::warn!(target: "auth", error = %why, "could not renew a token yet; using it until it expires");
                Ok(Some(Credential::Oauth(tokens)))
            } else {
                Err(AuthError::Network(format!(
                    "the sign-in for {} needs renewing, but {why}",
                    subject.what
                )))
            }
        }
    }
}

fn id_for_log(credential: &Credential) -> String {
    match credential {
        Credential::Oauth(tokens) => tokens.account.clone().unwrap_or_default(),
        _ => String::new(),
    }
}

/// Ask the authorization server for a new access token.
async fn renew(tokens: &Tokens) -> Result<Tokens, RefreshFailure> {
    let (Some(token_url), Some(refresh_token)) = (&tokens.token_url, &tokens.refresh_token) else {
        return Err(RefreshFailure::Rejected("it cannot be renewed".to_string()));
    };
    match tokens.renewal {
        Renewal::RefreshToken => {
            let client_id = tokens.client_id.as_deref().unwrap_or_default();
            let granted = oauth::refresh(token_url, client_id, refresh_token).await?;
            Ok(Tokens {
                access_token: granted.access_token,
                // Servers that rotate refresh tokens send a new one; others keep the old.
                refresh_token: granted
                    .refresh_token
                    .or_else(|| tokens.refresh_token.clone()),
                expires_at: granted
                    .expires_in
                    .map(|within| now_secs() + within.as_secs()),
                ..tokens.clone()
            })
        }
        Renewal::CopilotExchange => {
            copilot::exchange(token_url, refresh_token)
                .await
                .map(|exchanged| Tokens {
                    access_token: exchanged.token,
                    expires_at: Some(exchanged.expires_at),
                    ..tokens.clone()
                })
        }
    }
}
