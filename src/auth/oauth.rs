//! OAuth 2 sign-in, generic over the authorization server: the authorization-code flow
//! with PKCE (S256) and a loopback redirect, the device-authorization flow (RFC 8628: it
//! waits out `authorization_pending`, slows down on `slow_down`, stops at
//! `expired_token`/`access_denied` or the code's lifetime), and the refresh-token grant.
//! The protocol is the `oauth2` crate's; this module chooses the endpoints, checks the
//! returned `state`, and turns its errors into sentences. The vendors' flows
//! (`chatgpt`, `copilot`) are built on it.

use super::error::AuthError;
use super::http::{self, HttpError};
use super::loopback::Loopback;
use oauth2::basic::{
    BasicErrorResponse, BasicRevocationErrorResponse, BasicTokenIntrospectionResponse,
    BasicTokenType,
};
use oauth2::{
    AuthUrl, AuthorizationCode, ClientId, CsrfToken, DeviceAuthorizationUrl, ExtraTokenFields,
    PkceCodeChallenge, RefreshToken, RequestTokenError, Scope, StandardDeviceAuthorizationResponse,
    StandardRevocableToken, StandardTokenResponse, TokenResponse, TokenUrl,
};
use serde::{Deserialize, Serialize};
use std::future::Future;
use std::time::Duration;

/// The `id_token` an OpenID provider adds to a token response.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct IdToken {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub id_token: Option<String>,
}
impl ExtraTokenFields for IdToken {}

type Answer = StandardTokenResponse<IdToken, BasicTokenType>;
type Client = oauth2::Client<
    BasicErrorResponse,
    Answer,
    BasicTokenIntrospectionResponse,
    StandardRevocableToken,
    BasicRevocationErrorResponse,
>;

/// An authorization server and this client's registration with it.
#[derive(Clone, Debug)]
pub struct Server {
    pub client_id: String,
    pub authorize_url: String,
    pub token_url: String,
    pub device_url: Option<String>,
    pub scopes: Vec<String>,
    /// Extra parameters of the authorization URL some servers ask for.
    pub authorize_params: Vec<(String, String)>,
}

/// What a successful sign-in or refresh returns.
#[derive(Clone)]
pub struct Granted {
    pub access_token: String,
    pub refresh_token: Option<String>,
    pub expires_in: Option<Duration>,
    pub id_token: Option<String>,
}

impl From<Answer> for Granted {
    fn from(answer: Answer) -> Granted {
        Granted {
            access_token: answer.access_token().secret().clone(),
            refresh_token: answer.refresh_token().map(|t| t.secret().clone()),
            expires_in: answer.expires_in(),
            id_token: answer.extra_fields().id_token.clone(),
        }
    }
}

fn url_of<T>(
    what: &str,
    url: &str,
    make: fn(String) -> Result<T, url::ParseError>,
) -> Result<T, AuthError> {
    make(url.to_string())
        .map_err(|e| AuthError::flow(format!("the {what} URL `{url}` is not valid: {e}")))
}

/// Where the browser is sent, for the caller to open (or print).
pub struct Prompt<'a> {
    pub url: &'a str,
}

/// The authorization-code flow with PKCE: listen on the loopback, hand the authorization
/// URL to `open` (which opens a browser or prints it), wait for the redirect, check its
/// `state`, and exchange the code with the verifier. `port` 0 takes any free port.
pub async fn authorization_code<F, Fut>(
    server: &Server,
    port: u16,
    path: &str,
    host: &str,
    open: F,
) -> Result<Granted, AuthError>
where
    F: FnOnce(String) -> Fut,
    Fut: Future<Output = ()>,
{
    let loopback = Loopback::bind(port, path, host).await?;
    let client = Client::new(ClientId::new(server.client_id.clone()))
        .set_auth_uri(url_of(
            "authorization",
            &server.authorize_url,
            AuthUrl::new,
        )?)
        .set_token_uri(url_of("token", &server.token_url, TokenUrl::new)?)
        .set_redirect_uri(url_of(
            "redirect",
            &loopback.redirect_uri,
            oauth2::RedirectUrl::new,
        )?);
    let (challenge, verifier) = PkceCodeChallenge::new_random_sha256();
    let mut request = client
        .authorize_url(CsrfToken::new_random)
        .set_pkce_challenge(challenge)
        .add_scopes(server.scopes.iter().cloned().map(Scope::new));
    for (name, value) in &server.authorize_params {
        request = request.add_extra_param(name.clone(), value.clone());
    }
    let (url, state) = request.url();
    open(url.to_string()).await;
    let query = loopback.wait().await?;
    if let Some(error) = query.get("error") {
        let detail = query
            .get("error_description")
            .map(|d| format!(": {d}"))
            .unwrap_or_default();
        return Err(AuthError::flow(format!(
            "the sign-in was refused ({error}{detail})"
        )));
    }
    // A redirect whose state is not ours is someone else's (or forged): never exchanged.
    if query.get("state").map(String::as_str) != Some(state.secret().as_str()) {
        return Err(AuthError::flow(
            "the sign-in's redirect carried the wrong state, so its code was not used; sign in again",
        ));
    }
    let code = query
        .get("code")
        .ok_or_else(|| AuthError::flow("the sign-in's redirect carried no code"))?;
    let send = http::OAuthHttp(http::client()?);
    let answer = client
        .exchange_code(AuthorizationCode::new(code.clone()))
        .set_pkce_verifier(verifier)
        .request_async(&send)
        .await
        .map_err(|e| token_error("the code exchange", e))?;
    Ok(answer.into())
}

/// What the user is told during a device sign-in.
pub struct DeviceCode {
    pub verification_uri: String,
    pub verification_uri_complete: Option<String>,
    pub user_code: String,
}

/// The device-authorization flow: ask for a code, hand it to `show`, poll the token
/// endpoint (through `sleep`, so tests need not wait) until the user approves, refuses
/// or the code expires.
pub async fn device_code<S, SF>(
    server: &Server,
    show: impl FnOnce(&DeviceCode),
    sleep: S,
) -> Result<Granted, AuthError>
where
    S: Fn(Duration) -> SF,
    SF: Future<Output = ()>,
{
    let device_url = server
        .device_url
        .as_deref()
        .ok_or_else(|| AuthError::flow("this authorization server offers no device sign-in"))?;
    let client = Client::new(ClientId::new(server.client_id.clone()))
        .set_token_uri(url_of("token", &server.token_url, TokenUrl::new)?)
        .set_device_authorization_url(url_of(
            "device authorization",
            device_url,
            DeviceAuthorizationUrl::new,
        )?);
    let send = http::OAuthHttp(http::client()?);
    let details: StandardDeviceAuthorizationResponse = client
        .exchange_device_code()
        .add_scopes(server.scopes.iter().cloned().map(Scope::new))
        .request_async(&send)
        .await
        .map_err(|e| token_error("the device sign-in request", e))?;
    show(&DeviceCode {
        verification_uri: details.verification_uri().to_string(),
        verification_uri_complete: details
            .verification_uri_complete()
            .map(|u| u.secret().clone()),
        user_code: details.user_code().secret().clone(),
    });
    let answer = client
        .exchange_device_access_token(&details)
        .request_async(&send, sleep, None)
        .await
        .map_err(|e| match &e {
            RequestTokenError::ServerResponse(response) => {
                use oauth2::DeviceCodeErrorResponseType as Kind;
                match response.error() {
                    Kind::ExpiredToken => AuthError::flow(
                        "the device code expired before the sign-in was approved; run the sign-in again",
                    ),
                    Kind::AccessDenied => AuthError::flow("the sign-in was refused in the browser"),
                    _ => token_error("the device sign-in", e),
                }
            }
            _ => token_error("the device sign-in", e),
        })?;
    Ok(answer.into())
}

/// Why a refresh failed: the server refused the refresh token (sign in again), or it
/// could not be asked (try again later).
#[derive(Debug)]
pub enum RefreshFailure {
    Rejected(String),
    Unreachable(String),
}

/// The refresh-token grant.
pub async fn refresh(
    token_url: &str,
    client_id: &str,
    refresh_token: &str,
) -> Result<Granted, RefreshFailure> {
    let client = Client::new(ClientId::new(client_id.to_string())).set_token_uri(
        url_of("token", token_url, TokenUrl::new)
            .map_err(|e| RefreshFailure::Rejected(e.to_string()))?,
    );
    let send =
        http::OAuthHttp(http::client().map_err(|e| RefreshFailure::Unreachable(e.to_string()))?);
    let result = client
        .exchange_refresh_token(&RefreshToken::new(refresh_token.to_string()))
        .request_async(&send)
        .await;
    match result {
        Ok(answer) => Ok(answer.into()),
        Err(e @ RequestTokenError::ServerResponse(_)) => Err(RefreshFailure::Rejected(
            token_error("the refresh", e).to_string(),
        )),
        Err(e @ RequestTokenError::Parse(..)) => Err(RefreshFailure::Rejected(
            token_error("the refresh", e).to_string(),
        )),
        Err(e) => Err(RefreshFailure::Unreachable(
            token_error("the refresh", e).to_string(),
        )),
    }
}

fn token_error<T: oauth2::ErrorResponse + 'static>(
    what: &str,
    error: RequestTokenError<HttpError, T>,
) -> AuthError {
    match error {
        RequestTokenError::ServerResponse(response) => AuthError::flow(format!(
            "the authorization server refused {what}: {response}"
        )),
        RequestTokenError::Request(e) => AuthError::Network(format!(
            "{what} could not reach the authorization server: {e}"
        )),
        RequestTokenError::Parse(e, _) => AuthError::flow(format!(
            "the authorization server's answer to {what} could not be read: {e}"
        )),
        RequestTokenError::Other(e) => AuthError::flow(format!("{what} failed: {e}")),
    }
}
