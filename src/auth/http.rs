//! The HTTP client of the sign-in flows: our reqwest client behind the `oauth2` crate's
//! `AsyncHttpClient` (the crate is built without a client of its own). Redirects are not
//! followed (an authorization server that redirects a token request is refused, as the
//! `oauth2` crate advises) and answers are read up to `MAX_ANSWER`.

use oauth2::{HttpRequest, HttpResponse};

/// An authorization server's answer is a small JSON document.
const MAX_ANSWER: usize = 1024 * 1024;

#[derive(Debug, thiserror::Error)]
pub enum HttpError {
    #[error("{0}")]
    Request(String),
    #[error("the answer is larger than {MAX_ANSWER} bytes")]
    TooLarge,
}

/// A client for authorization servers.
pub fn client() -> Result<reqwest::Client, super::error::AuthError> {
    // rustls's crypto provider, chosen once per process (as `llm::transport` does; fails
    // only when one is already installed, which is as good).
    let _ = rustls::crypto::ring::default_provider().install_default();
    reqwest::Client::builder()
        .connect_timeout(std::time::Duration::from_secs(10))
        .timeout(std::time::Duration::from_secs(60))
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .map_err(|e| super::error::AuthError::Network(format!("cannot set up HTTP: {e}")))
}

/// Our client as the `oauth2` crate's HTTP client. A named type with a boxed `Send`
/// future (rather than a closure): the futures of a model request, which may renew a token,
/// must be `Send` for every lifetime, which the compiler cannot prove through a closure.
pub struct OAuthHttp(pub reqwest::Client);

impl<'c> oauth2::AsyncHttpClient<'c> for OAuthHttp {
    type Error = HttpError;
    type Future = std::pin::Pin<
        Box<dyn std::future::Future<Output = Result<HttpResponse, HttpError>> + Send + 'c>,
    >;

    fn call(&'c self, request: HttpRequest) -> Self::Future {
        Box::pin(send(&self.0, request))
    }
}

/// Send one request of a flow.
pub async fn send(
    client: &reqwest::Client,
    request: HttpRequest,
) -> Result<HttpResponse, HttpError> {
    let (parts, body) = request.into_parts();
    let mut response = client
        .request(parts.method, parts.uri.to_string())
        .headers(parts.headers)
        .body(body)
        .send()
        .await
        .map_err(|e| HttpError::Request(describe(&e)))?;
    let mut answer = oauth2::http::Response::builder().status(response.status());
    for (name, value) in response.headers() {
        answer = answer.header(name, value);
    }
    let mut body = Vec::new();
    while let Some(chunk) = response
        .chunk()
        .await
        .map_err(|e| HttpError::Request(describe(&e)))?
    {
        if body.len() + chunk.len() > MAX_ANSWER {
            return Err(HttpError::TooLarge);
        }
        body.extend_from_slice(&chunk);
    }
    answer
        .body(body)
        .map_err(|e| HttpError::Request(e.to_string()))
}

/// A reqwest error with its causes (reqwest's own text omits them).
pub fn describe(error: &reqwest::Error) -> String {
    let mut text = error.to_string();
    let mut source = std::error::Error::source(error);
    while let Some(cause) = source {
        text.push_str(": ");
        text.push_str(&cause.to_string());
        source = cause.source();
    }
    text
}

/// POST a JSON document; the status and the body of the answer (bounded).
pub async fn post_json(
    client: &reqwest::Client,
    url: &str,
    value: &serde_json::Value,
) -> Result<(u16, bytes::Bytes), reqwest::Error> {
    let answer = client
        .post(url)
        .header("content-type", "application/json")
        .header("accept", "application/json")
        .body(value.to_string())
        .send()
        .await?;
    let status = answer.status().as_u16();
    Ok((status, answer.bytes().await?))
}

/// Parse an answer's JSON, naming `what` when it does not parse.
pub fn parse<T: serde::de::DeserializeOwned>(
    body: &[u8],
    what: &str,
) -> Result<T, super::error::AuthError> {
    serde_json::from_slice(body)
        .map_err(|e| super::error::AuthError::flow(format!("{what} could not be read: {e}")))
}
