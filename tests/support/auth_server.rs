//! A loopback OAuth 2 authorization server for the sign-in tests: `/authorize` records the
//! PKCE challenge and redirects back with a code and the state it was given; `/token`
//! checks the verifier against that challenge, renews refresh tokens (or refuses them, as
//! the test says), and answers device-code polls from a script (`authorization_pending`,
//! `slow_down`, `expired_token`, approval); `/device` starts a device sign-in;
//! `/copilot_internal/v2/token` exchanges a GitHub token as Copilot's endpoint does.
//! Everything it saw is counted for the test to assert.

use base64::Engine;
use http_body_util::{BodyExt, Full};
use hyper::body::Incoming;
use hyper_util::rt::TokioIo;
use serde_json::{Value, json};
use std::collections::{HashMap, VecDeque};
use std::sync::{Arc, Mutex};
use std::time::Duration;

#[derive(Default)]
pub struct State {
    /// code → (PKCE challenge, redirect URI) of each authorization.
    pub codes: HashMap<String, (String, String)>,
    /// Token requests of each grant type.
    pub grants: Vec<String>,
    /// Code exchanges whose verifier matched the challenge.
    pub verified: usize,
    /// Code exchanges whose verifier did not.
    pub unverified: usize,
    /// Refresh grants received.
    pub refreshes: usize,
    /// Refuse refresh tokens (`invalid_grant`), as for a revoked sign-in.
    pub refuse_refresh: bool,
    /// How long access tokens live.
    pub expires_in: u64,
    /// Hold each refresh this long before answering (widens the window two agents would
    /// both refresh in, were they not coordinated).
    pub refresh_delay: Option<Duration>,
    /// Answers to device-code polls, in order; when empty, approval.
    pub device_script: VecDeque<&'static str>,
    pub device_polls: usize,
    pub copilot_exchanges: usize,
    pub minted: usize,
    /// This server's own URL (the ChatGPT device flow's redirect names it).
    pub issuer: String,
    /// An `id_token` to add to minted tokens.
    pub id_token: Option<String>,
    /// Access tokens a resource server should refuse from now on.
    pub revoked: Vec<String>,
    /// The protected resource (an MCP server's URL) whose metadata this server publishes.
    pub resource: String,
    /// Offer no dynamic client registration (clients come configured).
    pub no_registration: bool,
    /// The client ids authorizations were asked for.
    pub authorized_clients: Vec<String>,
    /// Dynamic client registrations received.
    pub registrations: usize,
}

#[derive(Clone)]
pub struct AuthServer {
    pub url: String,
    pub state: Arc<Mutex<State>>,
}

impl AuthServer {
    pub async fn start() -> AuthServer {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!("http://{}", listener.local_addr().unwrap());
        let state = Arc::new(Mutex::new(State {
            expires_in: 3600,
            issuer: url.clone(),
            ..State::default()
        }));
        let shared = state.clone();
        tokio::spawn(async move {
            loop {
                let Ok((stream, _)) = listener.accept().await else {
                    return;
                };
                let state = shared.clone();
                let service = hyper::service::service_fn(
                    move |request: hyper::Request<Incoming>| {
                        let state = state.clone();
                        async move { Ok::<_, std::convert::Infallible>(answer(&state, request).await) }
                    },
                );
                tokio::spawn(async move {
                    let _ = hyper::server::conn::http1::Builder::new()
                        .serve_connection(TokioIo::new(stream), service)
                        .await;
                });
            }
        });
        AuthServer { url, state }
    }

    /// Whether `token` is an access token this server minted and still honours: the last
    /// one minted, unless `revoked` says otherwise.
    pub fn honours(&self, token: &str) -> bool {
        self.with(|s| {
            token == format!("at-minted-{}-abcdef", s.minted)
                && !s.revoked.contains(&token.to_string())
        })
    }

    /// The `WWW-Authenticate` challenge a resource server of this authorization server
    /// answers with.
    pub fn challenge(&self) -> String {
        format!(
            r#"Bearer resource_metadata="{}/.well-known/oauth-protected-resource""#,
            self.url
        )
    }

    pub fn with<T>(&self, f: impl FnOnce(&mut State) -> T) -> T {
        f(&mut self.state.lock().unwrap())
    }

    pub fn server(&self) -> agent::auth::oauth::Server {
        agent::auth::oauth::Server {
            client_id: "test-client".into(),
            authorize_url: format!("{}/authorize", self.url),
            token_url: format!("{}/token", self.url),
            device_url: Some(format!("{}/device", self.url)),
            scopes: vec!["models".into()],
            authorize_params: vec![],
        }
    }
}

fn reply(status: u16, body: Value) -> hyper::Response<Full<bytes::Bytes>> {
    hyper::Response::builder()
        .status(status)
        .header("content-type", "application/json")
        .body(Full::new(bytes::Bytes::from(body.to_string())))
        .unwrap()
}

fn mint(state: &mut State) -> Value {
    state.minted += 1;
    let n = state.minted;
    let mut tokens = json!({
        "access_token": format!("at-minted-{n}-abcdef"),
        "refresh_token": format!("rt-minted-{n}-abcdef"),
        "token_type": "Bearer",
        "expires_in": state.expires_in,
    });
    if let Some(id_token) = &state.id_token {
        tokens["id_token"] = json!(id_token);
    }
    tokens
}

pub fn challenge_of(verifier: &str) -> String {
    let digest = ring::digest::digest(&ring::digest::SHA256, verifier.as_bytes());
    base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(digest.as_ref())
}

async fn answer(
    state: &Mutex<State>,
    request: hyper::Request<Incoming>,
) -> hyper::Response<Full<bytes::Bytes>> {
    let path = request.uri().path().to_string();
    let query: HashMap<String, String> =
        url::form_urlencoded::parse(request.uri().query().unwrap_or("").as_bytes())
            .into_owned()
            .collect();
    let authorization = request
        .headers()
        .get("authorization")
        .and_then(|v| v.to_str().ok())
        .unwrap_or("")
        .to_string();
    let body = request.into_body().collect().await.unwrap().to_bytes();
    let form: HashMap<String, String> = url::form_urlencoded::parse(&body).into_owned().collect();
    match path.as_str() {
        "/authorize" => {
            assert_eq!(
                query.get("code_challenge_method").map(String::as_str),
                Some("S256")
            );
            let mut state = state.lock().unwrap();
            state
                .authorized_clients
                .push(query.get("client_id").cloned().unwrap_or_default());
            let code = format!("code-{}", state.codes.len() + 1);
            let redirect = query["redirect_uri"].clone();
            state.codes.insert(
                code.clone(),
                (query["code_challenge"].clone(), redirect.clone()),
            );
            let location = format!("{redirect}?code={code}&state={}", query["state"]);
            hyper::Response::builder()
                .status(302)
                .header("location", location)
                .body(Full::new(bytes::Bytes::new()))
                .unwrap()
        }
        "/device" | "/login/device/code" => reply(
            200,
            json!({
                "device_code": "device-code-1",
                "user_code": "WDJB-MJHT",
                "verification_uri": "http://127.0.0.1/activate",
                "expires_in": 900,
                "interval": 1,
            }),
        ),
        "/api/accounts/deviceauth/usercode" => reply(
            200,
            json!({"device_auth_id": "dev-auth-1", "usercode": "ABCD-1234", "interval": "1"}),
        ),
        "/api/accounts/deviceauth/token" => {
            let mut state = state.lock().unwrap();
            state.device_polls += 1;
            if state.device_polls < 2 {
                return reply(403, json!({"error": "pending"}));
            }
            let verifier = "device-verifier-0123456789-0123456789-0123456789";
            let host = state.issuer.clone();
            state.codes.insert(
                "code-device".into(),
                (
                    challenge_of(verifier),
                    format!("{host}/deviceauth/callback"),
                ),
            );
            reply(
                200,
                json!({"authorization_code": "code-device", "code_verifier": verifier}),
            )
        }
        "/token" | "/oauth/token" | "/login/oauth/access_token" => {
            let grant = form.get("grant_type").cloned().unwrap_or_default();
            let delay = {
                let mut state = state.lock().unwrap();
                state.grants.push(grant.clone());
                if grant == "refresh_token" {
                    state.refreshes += 1;
                    state.refresh_delay
                } else {
                    None
                }
            };
            if let Some(delay) = delay {
                tokio::time::sleep(delay).await;
            }
            let mut state = state.lock().unwrap();
            match grant.as_str() {
                "authorization_code" => {
                    let Some((challenge, redirect)) = state.codes.get(&form["code"]).cloned()
                    else {
                        return reply(400, json!({"error": "invalid_grant"}));
                    };
                    let verifier = form.get("code_verifier").cloned().unwrap_or_default();
                    if challenge_of(&verifier) != challenge
                        || form.get("redirect_uri") != Some(&redirect)
                    {
                        state.unverified += 1;
                        return reply(
                            400,
                            json!({"error": "invalid_grant", "error_description": "PKCE verification failed"}),
                        );
                    }
                    state.verified += 1;
                    let tokens = mint(&mut state);
                    reply(200, tokens)
                }
                "refresh_token" => {
                    if state.refuse_refresh {
                        return reply(
                            400,
                            json!({"error": "invalid_grant", "error_description": "the refresh token was revoked"}),
                        );
                    }
                    let tokens = mint(&mut state);
                    reply(200, tokens)
                }
                "urn:ietf:params:oauth:grant-type:device_code" => {
                    state.device_polls += 1;
                    match state.device_script.pop_front() {
                        Some(error) => reply(400, json!({"error": error})),
                        None => {
                            let tokens = mint(&mut state);
                            reply(200, tokens)
                        }
                    }
                }
                _ => reply(400, json!({"error": "unsupported_grant_type"})),
            }
        }
        "/copilot_internal/v2/token" => {
            let mut state = state.lock().unwrap();
            if !authorization.starts_with("token at-minted-") || state.refuse_refresh {
                return reply(401, json!({"message": "bad credentials"}));
            }
            state.copilot_exchanges += 1;
            let n = state.copilot_exchanges;
            let expires_at = std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .unwrap()
                .as_secs()
                + state.expires_in;
            reply(
                200,
                json!({"token": format!("copilot-token-{n}-abcdef"), "expires_at": expires_at}),
            )
        }
        "/user" => reply(200, json!({"login": "octo-tester"})),
        p if p.starts_with("/.well-known/oauth-protected-resource") => {
            let state = state.lock().unwrap();
            reply(
                200,
                json!({
                    "resource": state.resource,
                    "authorization_servers": [state.issuer],
                    "bearer_methods_supported": ["header"],
                }),
            )
        }
        "/.well-known/oauth-authorization-server" => {
            let (issuer, no_registration) = {
                let state = state.lock().unwrap();
                (state.issuer.clone(), state.no_registration)
            };
            reply(
                200,
                json!({
                    "issuer": issuer,
                    "authorization_endpoint": format!("{issuer}/authorize"),
                    "token_endpoint": format!("{issuer}/token"),
                    "registration_endpoint": (!no_registration).then(|| format!("{issuer}/register")),
                    "response_types_supported": ["code"],
                    "grant_types_supported": ["authorization_code", "refresh_token"],
                    "code_challenge_methods_supported": ["S256"],
                    "token_endpoint_auth_methods_supported": ["none"],
                }),
            )
        }
        "/register" => {
            let mut state = state.lock().unwrap();
            state.registrations += 1;
            let registered: Value = serde_json::from_slice(&body).unwrap_or(Value::Null);
            reply(
                201,
                json!({
                    "client_id": format!("registered-{}", state.registrations),
                    "redirect_uris": registered["redirect_uris"],
                    "token_endpoint_auth_method": "none",
                    "grant_types": ["authorization_code", "refresh_token"],
                    "response_types": ["code"],
                }),
            )
        }
        _ => reply(404, json!({"error": "not_found"})),
    }
}
