//! `agent serve --web`: the web client (docs/protocol.md §4.6) — its page, script and style
//! sheet, hand-written (no build step, no node for `cargo build`) and embedded in the binary
//! from assets/web/ — and the sign-in that trades a token for a cookie. The page reads the
//! token from the URL fragment (which a browser never sends to a server), posts it once to
//! `/v1/web/login` and gets an HttpOnly, SameSite=Strict cookie naming a random sign-in the
//! server keeps in memory (the token itself is never stored in the browser nor logged). A
//! request signed in by cookie that changes anything must also carry this server's own
//! `Origin` (no cross-site request forgery, even from a browser that would send the cookie).

use super::Server;
use super::access::Refusal;
use super::routes::{Body, error, json_response};
use bytes::Bytes;
use http_body_util::{BodyExt, Full, Limited};
use hyper::body::Incoming;
use hyper::header::{HeaderMap, HeaderValue};
use hyper::{Request, Response, StatusCode};
use serde_json::{Value, json};
use std::collections::VecDeque;
use std::sync::{LazyLock, Mutex, PoisonError};

/// The cookie's name.
const COOKIE: &str = "agent_web";

/// Sign-ins kept at most (the oldest is forgotten first: its browser signs in again).
const MAX_SIGN_INS: usize = 256;

/// The largest sign-in body (a token).
const MAX_LOGIN_BYTES: usize = 8 * 1024;

/// One embedded file of the client.
pub(super) struct Asset {
    path: &'static str,
    content_type: &'static str,
    body: &'static [u8],
}

/// The client's files, as served (the page at `/`).
pub(super) const ASSETS: &[Asset] = &[
    Asset {
        path: "/",
        content_type: "text/html; charset=utf-8",
        body: include_bytes!("../../../assets/web/index.html"),
    },
    Asset {
        path: "/app.js",
        content_type: "text/javascript; charset=utf-8",
        body: include_bytes!("../../../assets/web/app.js"),
    },
    Asset {
        path: "/markdown.js",
        content_type: "text/javascript; charset=utf-8",
        body: include_bytes!("../../../assets/web/markdown.js"),
    },
    Asset {
        path: "/app.css",
        content_type: "text/css; charset=utf-8",
        body: include_bytes!("../../../assets/web/app.css"),
    },
    Asset {
        path: "/icon.svg",
        content_type: "image/svg+xml",
        body: include_bytes!("../../../assets/web/icon.svg"),
    },
];

/// The page's rules for the browser: nothing but this server's own files and requests, no
/// inline script, never inside another site's frame.
const CONTENT_SECURITY_POLICY: &str = "default-src 'none'; script-src 'self'; style-src 'self'; \
     img-src 'self' data:; connect-src 'self'; manifest-src 'self'; base-uri 'none'; \
     form-action 'none'; frame-ancestors 'none'";

/// Each asset's entity tag (a digest of its bytes), in `ASSETS`' order.
static ETAGS: LazyLock<Vec<String>> = LazyLock::new(|| {
    ASSETS
        .iter()
        .map(|asset| {
            let digest = ring::digest::digest(&ring::digest::SHA256, asset.body);
            format!("\"{}\"", hex(&digest.as_ref()[..12]))
        })
        .collect()
});

/// The asset served at `path`, if any.
pub(super) fn asset(path: &str) -> Option<(usize, &'static Asset)> {
    ASSETS.iter().enumerate().find(|(_, a)| a.path == path)
}

/// An asset's answer: 304 when the browser has it already.
pub(super) fn asset_response(index: usize, asset: &Asset, headers: &HeaderMap) -> Response<Body> {
    let etag = ETAGS.get(index).map(String::as_str).unwrap_or("\"\"");
    let fresh = headers
        .get(hyper::header::IF_NONE_MATCH)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|tags| tags.split(',').any(|tag| tag.trim() == etag));
    let mut response = if fresh {
        let mut response = Response::new(Full::new(Bytes::new()).boxed());
        *response.status_mut() = StatusCode::NOT_MODIFIED;
        response
    } else {
        let mut response = Response::new(Full::new(Bytes::from_static(asset.body)).boxed());
        response.headers_mut().insert(
            hyper::header::CONTENT_TYPE,
            HeaderValue::from_static(asset.content_type),
        );
        response
    };
    let out = response.headers_mut();
    if let Ok(etag) = HeaderValue::from_str(etag) {
        out.insert(hyper::header::ETAG, etag);
    }
    out.insert(
        hyper::header::CACHE_CONTROL,
        HeaderValue::from_static("no-cache"),
    );
    out.insert(
        hyper::header::CONTENT_SECURITY_POLICY,
        HeaderValue::from_static(CONTENT_SECURITY_POLICY),
    );
    out.insert(
        hyper::header::X_CONTENT_TYPE_OPTIONS,
        HeaderValue::from_static("nosniff"),
    );
    out.insert(
        hyper::header::REFERRER_POLICY,
        HeaderValue::from_static("no-referrer"),
    );
    out.insert(
        hyper::header::X_FRAME_OPTIONS,
        HeaderValue::from_static("DENY"),
    );
    response
}

/// The web client's sign-ins.
pub(super) struct Web {
    /// SHA-256 digests of the cookies handed out, oldest first (a digest, so that looking
    /// one up says nothing through its timing about the others).
    sign_ins: Mutex<VecDeque<[u8; 32]>>,
    /// Over HTTPS the cookie is `Secure`.
    secure: bool,
}

impl Web {
    pub(super) fn new(secure: bool) -> Web {
        Web {
            sign_ins: Mutex::default(),
            secure,
        }
    }

    /// Whether the request's `Cookie` header holds a sign-in of this server's.
    pub(super) fn signed_in(&self, headers: &HeaderMap) -> bool {
        let Some(value) = cookie(headers) else {
            return false;
        };
        let digest = sha256(value.as_bytes());
        self.sign_ins
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .contains(&digest)
    }

    /// `POST /v1/web/login {"token"}`: a cookie for an accepted token. The request must come
    /// from this server's own page (its `Origin`): no other site signs a browser in.
    pub(super) async fn sign_in(
        &self,
        server: &Server,
        request: Request<Incoming>,
    ) -> Response<Body> {
        if request.headers().get(hyper::header::ORIGIN).is_none() {
            return refused(&NO_ORIGIN);
        }
        if !server.access.needs_token() {
            return json_response(
                StatusCode::OK,
                &json!({"signedIn": true, "tokenNeeded": false}),
            );
        }
        let body = match Limited::new(request.into_body(), MAX_LOGIN_BYTES)
            .collect()
            .await
        {
            Ok(body) => body.to_bytes(),
            Err(_) => {
                return error(
                    StatusCode::PAYLOAD_TOO_LARGE,
                    "the body is too large or broken",
                );
            }
        };
        let token = serde_json::from_slice::<Value>(&body)
            .ok()
            .and_then(|v| v.get("token").and_then(Value::as_str).map(str::to_string))
            .unwrap_or_default();
        if !server.access.token_ok(token.trim()) {
            return error(StatusCode::UNAUTHORIZED, "unknown token");
        }
        let mut secret = [0u8; 32];
        if ring::rand::SecureRandom::fill(&ring::rand::SystemRandom::new(), &mut secret).is_err() {
            return error(
                StatusCode::INTERNAL_SERVER_ERROR,
                "no randomness for a sign-in",
            );
        }
        let value = hex(&secret);
        {
            let mut sign_ins = self.sign_ins.lock().unwrap_or_else(PoisonError::into_inner);
            if sign_ins.len() >= MAX_SIGN_INS {
                sign_ins.pop_front();
            }
            sign_ins.push_back(sha256(value.as_bytes()));
        }
        let secure = if self.secure { "; Secure" } else { "" };
        let set = format!("{COOKIE}={value}; Path=/; HttpOnly; SameSite=Strict{secure}");
        let mut response = json_response(
            StatusCode::OK,
            &json!({"signedIn": true, "tokenNeeded": true}),
        );
        if let Ok(set) = HeaderValue::from_str(&set) {
            response
                .headers_mut()
                .insert(hyper::header::SET_COOKIE, set);
        }
        response
    }

    /// `POST /v1/web/logout`: the sign-in is forgotten and the cookie cleared.
    pub(super) fn sign_out(&self, headers: &HeaderMap) -> Response<Body> {
        if let Some(value) = cookie(headers) {
            let digest = sha256(value.as_bytes());
            self.sign_ins
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .retain(|d| *d != digest);
        }
        let secure = if self.secure { "; Secure" } else { "" };
        let set = format!("{COOKIE}=; Path=/; HttpOnly; SameSite=Strict; Max-Age=0{secure}");
        let mut response = json_response(StatusCode::OK, &json!({"signedIn": false}));
        if let Ok(set) = HeaderValue::from_str(&set) {
            response
                .headers_mut()
                .insert(hyper::header::SET_COOKIE, set);
        }
        response
    }
}

/// A request signed in by cookie that changes something came without an `Origin`.
pub(super) const NO_ORIGIN: Refusal = Refusal {
    status: 403,
    message: "a request signed in by cookie that changes anything must carry this server's Origin",
};

pub(super) fn refused(refusal: &Refusal) -> Response<Body> {
    let status = StatusCode::from_u16(refusal.status).unwrap_or(StatusCode::FORBIDDEN);
    error(status, refusal.message)
}

/// The value of this server's cookie in a `Cookie` header.
fn cookie(headers: &HeaderMap) -> Option<String> {
    headers
        .get_all(hyper::header::COOKIE)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(';'))
        .find_map(|pair| {
            let (name, value) = pair.trim().split_once('=')?;
            (name == COOKIE && !value.is_empty()).then(|| value.to_string())
        })
}

fn sha256(bytes: &[u8]) -> [u8; 32] {
    let digest = ring::digest::digest(&ring::digest::SHA256, bytes);
    let mut out = [0u8; 32];
    out.copy_from_slice(digest.as_ref());
    out
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn the_cookie_is_found_among_others() {
        let mut headers = HeaderMap::new();
        headers.insert(
            hyper::header::COOKIE,
            HeaderValue::from_static("a=1; agent_web=abc; b=2"),
        );
        assert_eq!(cookie(&headers).as_deref(), Some("abc"));
        headers.insert(
            hyper::header::COOKIE,
            HeaderValue::from_static("agent_web="),
        );
        assert_eq!(cookie(&headers), None);
    }

    #[test]
    fn every_asset_has_a_tag_and_the_page_loads_only_its_own_files() {
        assert_eq!(ETAGS.len(), ASSETS.len());
        let page = String::from_utf8_lossy(asset("/").unwrap().1.body);
        for src in ["/app.js", "/app.css"] {
            assert!(page.contains(src), "the page does not load {src}");
            assert!(asset(src).is_some());
        }
        assert!(
            !page.contains("<script>"),
            "inline script would be refused by the CSP"
        );
    }
}
