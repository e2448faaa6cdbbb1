//! MCP servers behind OAuth (the MCP authorization spec), on rmcp's `auth` support: a
//! streamable-HTTP server that answers 401 with `WWW-Authenticate` is signed in to with
//! `agent mcp login NAME` — protected-resource metadata, authorization-server metadata,
//! dynamic client registration (or the server's configured `oauth_client_id`), PKCE and a
//! loopback redirect, all rmcp's; its tokens are kept here per server (`mcp/NAME` in the
//! credential store), renewed by rmcp under the store's lock, and used by every connection
//! to the server (`authorized`). `agent mcp logout NAME` forgets them.

use super::credential::Credential;
use super::error::AuthError;
use super::loopback::Loopback;
use super::store::{Store, StoreLock, mcp_id};
use rmcp::transport::auth::{
    AuthError as RmcpError, AuthorizationManager, AuthorizationRequest, AuthorizationSession,
    CredentialRefreshGuard, CredentialStore, StoredCredentials,
};
use std::future::Future;
use std::sync::{Arc, Mutex, PoisonError};

/// One server's tokens in our store, as rmcp's `CredentialStore`.
pub struct ServerCredentials {
    store: Arc<Store>,
    id: String,
    /// The store's lock while rmcp renews a token (its refresh guard): a save meanwhile
    /// must not take the lock again.
    held: Arc<Mutex<Option<Arc<StoreLock>>>>,
}

impl ServerCredentials {
    pub fn new(store: Arc<Store>, server: &str) -> ServerCredentials {
        ServerCredentials {
            store,
            id: mcp_id(server),
            held: Arc::new(Mutex::new(None)),
        }
    }

    fn held(&self) -> Option<Arc<StoreLock>> {
        self.held
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }
}

fn store_error(e: impl std::fmt::Display) -> RmcpError {
    RmcpError::CredentialStoreError(e.to_string())
}

async fn blocking<T: Send + 'static>(
    work: impl FnOnce() -> Result<T, AuthError> + Send + 'static,
) -> Result<T, RmcpError> {
    crate::tasks::spawn_blocking(work)
        .await
        .map_err(store_error)?
        .map_err(store_error)
}

/// Releases the store's lock (and forgets it as held) when rmcp is done renewing.
struct HeldLock(Arc<Mutex<Option<Arc<StoreLock>>>>);

impl Drop for HeldLock {
    fn drop(&mut self) {
        self.0.lock().unwrap_or_else(PoisonError::into_inner).take();
    }
}

#[async_trait::async_trait]
impl CredentialStore for ServerCredentials {
    async fn load(&self) -> Result<Option<StoredCredentials>, RmcpError> {
        let (store, id) = (self.store.clone(), self.id.clone());
        match blocking(move || store.load(&id)).await? {
            Some((Credential::Mcp(value), _)) => {
                serde_json::from_value(value).map(Some).map_err(store_error)
            }
            _ => Ok(None),
        }
    }

    async fn save(&self, credentials: StoredCredentials) -> Result<(), RmcpError> {
        let value = serde_json::to_value(&credentials).map_err(store_error)?;
        let (store, id, held) = (self.store.clone(), self.id.clone(), self.held());
        blocking(move || {
            let lock = match held {
                Some(lock) => lock,
                None => Arc::new(store.lock()?),
            };
            store.save(&lock, &id, &Credential::Mcp(value)).map(|_| ())
        })
        .await
    }

    async fn clear(&self) -> Result<(), RmcpError> {
        let (store, id, held) = (self.store.clone(), self.id.clone(), self.held());
        blocking(move || {
            let lock = match held {
                Some(lock) => lock,
                None => Arc::new(store.lock()?),
            };
            store.remove(&lock, &id).map(|_| ())
        })
        .await
    }

    async fn acquire_refresh_guard(&self) -> Result<Option<CredentialRefreshGuard>, RmcpError> {
        let lock = Store::lock_async(self.store.home().to_path_buf())
            .await
            .map_err(store_error)?;
        *self.held.lock().unwrap_or_else(PoisonError::into_inner) = Some(Arc::new(lock));
        Ok(Some(CredentialRefreshGuard::new(HeldLock(
            self.held.clone(),
        ))))
    }
}

/// An authorization manager for the server at `url`. Metadata at loopback or private
/// addresses is accepted only for a server at such an address (rmcp's rule); a server the
/// user configured on a private network may name an authorization server there.
async fn manager(url: &str) -> Result<AuthorizationManager, AuthError> {
    let host = url::Url::parse(url)
        .ok()
        .and_then(|u| u.host_str().map(str::to_string))
        .unwrap_or_default();
    let private = host == "localhost"
        || host
            .trim_matches(['[', ']'])
            .parse::<std::net::IpAddr>()
            .is_ok_and(|ip| match ip {
                std::net::IpAddr::V4(v4) => v4.is_loopback() || v4.is_private(),
                std::net::IpAddr::V6(v6) => v6.is_loopback(),
            });
    let made = if private {
        AuthorizationManager::new_allowing_private_addresses(url).await
    } else {
        AuthorizationManager::new(url).await
    };
    made.map_err(|e| AuthError::flow(format!("cannot sign in to {url}: {e}")))
}

/// The `WWW-Authenticate` challenge the server answers an unauthenticated `initialize`
/// with; `None` when it does not ask for authorization.
pub async fn challenge(url: &str) -> Result<Option<String>, AuthError> {
    let client = super::http::client()?;
    let initialize = serde_json::json!({
        "jsonrpc": "2.0", "id": 0, "method": "initialize",
        "params": {"protocolVersion": "2025-06-18", "capabilities": {},
                   "clientInfo": {"name": "agent", "version": env!("CARGO_PKG_VERSION")}}
    });
    let answer = client
        .post(url)
        .header("content-type", "application/json")
        .header("accept", "application/json, text/event-stream")
        .body(initialize.to_string())
        .send()
        .await
        .map_err(|e| {
            AuthError::Network(format!("cannot reach {url}: {}", super::http::describe(&e)))
        })?;
    if answer.status().as_u16() != 401 {
        return Ok(None);
    }
    Ok(Some(
        answer
            .headers()
            .get("www-authenticate")
            .and_then(|v| v.to_str().ok())
            .unwrap_or("Bearer")
            .to_string(),
    ))
}

/// Sign in to the MCP server `name` at `url`: discovery from its 401 challenge,
/// registration (or `client_id`), the browser (`open`) and the loopback redirect. The
/// tokens are saved by rmcp through `ServerCredentials`.
pub async fn login<F, Fut>(
    store: Arc<Store>,
    name: &str,
    url: &str,
    client_id: Option<&str>,
    open: F,
) -> Result<(), AuthError>
where
    F: FnOnce(String) -> Fut,
    Fut: Future<Output = ()>,
{
    let fail =
        |e: RmcpError| AuthError::flow(format!("signing in to MCP server `{name}` failed: {e}"));
    let challenge = challenge(url).await?;
    let mut manager = manager(url).await?;
    manager.set_credential_store(ServerCredentials::new(store, name));
    let resolution = manager
        .resolve_metadata_from_challenge(challenge.as_deref())
        .await
        .map_err(fail)?;
    manager.set_metadata(resolution.metadata);
    let loopback = Loopback::bind(0, "/callback", "127.0.0.1").await?;
    let mut request =
        AuthorizationRequest::new(loopback.redirect_uri.clone()).with_client_name("agent");
    if let Some(client_id) = client_id {
        request = request.with_preregistered_client(client_id);
    }
    let session = AuthorizationSession::new(manager, request)
        .await
        .map_err(|(_, e)| fail(e))?;
    open(session.get_authorization_url().to_string()).await;
    let query = loopback.wait().await?;
    if let Some(error) = query.get("error") {
        return Err(AuthError::flow(format!(
            "MCP server `{name}`'s authorization server refused the sign-in ({error})"
        )));
    }
    let (Some(code), Some(state)) = (query.get("code"), query.get("state")) else {
        return Err(AuthError::flow("the sign-in's redirect carried no code"));
    };
    // rmcp finds the PKCE verifier by the state: a redirect with another state fails here.
    session.handle_callback(code, state).await.map_err(fail)?;
    Ok(())
}

/// Whether tokens are stored for MCP server `name`.
pub fn has_tokens(store: &Store, name: &str) -> bool {
    matches!(store.load(&mcp_id(name)), Ok(Some((Credential::Mcp(_), _))))
}

/// A manager holding the stored tokens of server `name` (renewed by rmcp as needed), for
/// `rmcp::transport::auth::AuthClient`; `None` when nobody signed in to it.
pub async fn authorized(
    store: Arc<Store>,
    name: &str,
    url: &str,
) -> Result<Option<AuthorizationManager>, String> {
    let stored = {
        let store = store.clone();
        let name = name.to_string();
        crate::tasks::spawn_blocking(move || has_tokens(&store, &name))
            .await
            .unwrap_or(false)
    };
    if !stored {
        return Ok(None);
    }
    let mut manager = manager(url).await.map_err(|e| e.to_string())?;
    manager.set_credential_store(ServerCredentials::new(store, name));
    match manager.initialize_from_store().await {
        Ok(true) => Ok(Some(manager)),
        Ok(false) => Ok(None),
        Err(e) => Err(format!("cannot use the stored sign-in: {e}")),
    }
}

/// The error of a connection the server refused for want of a sign-in.
pub fn needs_login(name: &str) -> String {
    format!("needs login: run `agent mcp login {name}`")
}
