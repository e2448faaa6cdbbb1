//! What a model request asks of the credential store: the key of a provider nobody gave a
//! key by flag, variable or command (`llm::provider` asks here last), the headers that go
//! with a signed-in account, and a fresh token after a server refused one. The store is
//! opened once per process, under the agent's home (`config::paths`).

use super::credential::Credential;
use super::error::AuthError;
use super::refresh::{self, Subject};
use super::store::{Store, account_id};
use std::collections::HashMap;
use std::sync::{Arc, OnceLock, PoisonError, RwLock};

static STORE: OnceLock<Option<Arc<Store>>> = OnceLock::new();
/// Header names and values.
type Headers = Vec<(String, String)>;
/// The headers of each credential (by its id) as last handed out (non-secret).
static HEADERS: RwLock<Option<HashMap<String, Headers>>> = RwLock::new(None);

/// The process's credential store, if the agent has a home. The library's own unit tests
/// have none: they must not depend on what the developer running them signed in to (the
/// integration tests reach the store through the binary, with an `AGENT_HOME` of their own).
pub fn store() -> Option<Arc<Store>> {
    if cfg!(test) {
        return None;
    }
    STORE
        .get_or_init(|| {
            crate::config::paths()
                .ok()
                .map(|paths| Arc::new(Store::open(&paths.home)))
        })
        .clone()
}

/// Whether a credential is stored for `provider`'s `account` (`None`: the default one) — a
/// cheap check for "is a key missing".
pub fn has_stored_for(provider: &str, account: Option<&str>) -> bool {
    store().is_some_and(|store| matches!(store.load(&account_id(provider, account)), Ok(Some(_))))
}

/// The stored key or access token of `provider`'s `account`, renewed first when it is
/// about to expire; `None` when nothing is stored.
pub async fn provider_key(
    provider: &str,
    account: Option<&str>,
) -> Result<Option<String>, AuthError> {
    key_for(provider, account, None).await
}

/// A server refused `key`: renew it (once across agents) and return the new one, or say
/// to sign in again. `None` when `key` did not come from the store.
pub async fn after_rejection(
    provider: &str,
    account: Option<&str>,
    key: &str,
) -> Result<Option<String>, AuthError> {
    let Some(store) = store() else {
        return Ok(None);
    };
    let id = account_id(provider, account);
    let loaded = {
        let (store, id) = (store.clone(), id.clone());
        crate::tasks::spawn_blocking(move || store.load(&id))
            .await
            .map_err(|e| AuthError::store(e.to_string()))??
    };
    match loaded {
        Some((Credential::Oauth(tokens), _)) if tokens.access_token == key => {
            key_for(provider, account, Some(key)).await
        }
        Some((Credential::ApiKey { key: stored }, _)) if stored == key => {
            let subject = Subject::account(provider, account);
            Err(AuthError::SignInAgain {
                what: subject.what,
                why: "the server refused the stored API key".to_string(),
                command: subject.command,
            })
        }
        _ => Ok(None),
    }
}

async fn key_for(
    provider: &str,
    account: Option<&str>,
    rejected: Option<&str>,
) -> Result<Option<String>, AuthError> {
    let Some(store) = store() else {
        return Ok(None);
    };
    let subject = Subject::account(provider, account);
    let id = account_id(provider, account);
    let credential = refresh::usable(store, &id, &subject, rejected).await?;
    let (key, headers) = match credential {
        Some(Credential::ApiKey { key }) => (Some(key), Vec::new()),
        Some(Credential::Oauth(tokens)) => (
            Some(tokens.access_token),
            tokens.headers.into_iter().collect(),
        ),
        _ => (None, Vec::new()),
    };
    HEADERS
        .write()
        .unwrap_or_else(PoisonError::into_inner)
        .get_or_insert_with(HashMap::new)
        .insert(id, headers);
    Ok(key)
}

/// The headers that go with the stored sign-in of `provider`'s `account` (an account id,
/// an integration id), as of the last key handed out.
pub fn credential_headers(provider: &str, account: Option<&str>) -> Vec<(String, String)> {
    let id = account_id(provider, account);
    HEADERS
        .read()
        .unwrap_or_else(PoisonError::into_inner)
        .as_ref()
        .and_then(|headers| headers.get(&id).cloned())
        .unwrap_or_default()
}
