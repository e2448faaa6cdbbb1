//! The client rmcp's streamable-HTTP transport is built with: our `BoundedHttp` as it is, or
//! wrapped in rmcp's `AuthClient` for a server signed in to (`agent mcp login`). One type
//! for both, so rmcp's HTTP worker (its loop, its streams and the tasks it starts, about
//! 65,000 lines of LLVM IR) is compiled once rather than once per client. Every method
//! passes the call on, unchanged, to the client inside.

use super::http::BoundedHttp;
use reqwest::header::{HeaderName, HeaderValue};
use rmcp::model::ClientJsonRpcMessage;
use rmcp::transport::auth::AuthClient;
use rmcp::transport::common::client_side_sse::BoxedSseResponse;
use rmcp::transport::streamable_http_client::{
    StreamableHttpClient, StreamableHttpError, StreamableHttpPostResponse,
    StreamableHttpResponseLimits,
};
use std::collections::HashMap;
use std::sync::Arc;

type HttpError = StreamableHttpError<reqwest::Error>;

/// `$body` with `$client` bound to the client inside, whichever it is.
macro_rules! each {
    ($self:ident, $client:ident => $body:expr) => {
        match $self {
            McpHttp::Plain($client) => $body,
            McpHttp::SignedIn($client) => $body,
        }
    };
}

/// A streamable-HTTP server's client: plain, or adding (and renewing) a stored token.
#[derive(Clone)]
pub enum McpHttp {
    Plain(BoundedHttp),
    SignedIn(AuthClient<BoundedHttp>),
}

impl StreamableHttpClient for McpHttp {
    type Error = reqwest::Error;

    async fn post_message(
        &self,
        uri: Arc<str>,
        message: ClientJsonRpcMessage,
        session_id: Option<Arc<str>>,
        auth_header: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
    ) -> Result<StreamableHttpPostResponse, HttpError> {
        each!(self, client => {
            client
                .post_message(uri, message, session_id, auth_header, custom_headers)
                .await
        })
    }

    async fn post_message_with_max_sse_event_size(
        &self,
        uri: Arc<str>,
        message: ClientJsonRpcMessage,
        session_id: Option<Arc<str>>,
        auth_header: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
        max_sse_event_size: usize,
    ) -> Result<StreamableHttpPostResponse, HttpError> {
        each!(self, client => {
            client
                .post_message_with_max_sse_event_size(
                    uri,
                    message,
                    session_id,
                    auth_header,
                    custom_headers,
                    max_sse_event_size,
                )
                .await
        })
    }

    async fn post_message_with_response_limits(
        &self,
        uri: Arc<str>,
        message: ClientJsonRpcMessage,
        session_id: Option<Arc<str>>,
        auth_header: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
        limits: StreamableHttpResponseLimits,
    ) -> Result<StreamableHttpPostResponse, HttpError> {
        each!(self, client => {
            client
                .post_message_with_response_limits(
                    uri,
                    message,
                    session_id,
                    auth_header,
                    custom_headers,
                    limits,
                )
                .await
        })
    }

    async fn delete_session(
        &self,
        uri: Arc<str>,
        session_id: Arc<str>,
        auth_header: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
    ) -> Result<(), HttpError> {
        each!(self, client => {
            client
                .delete_session(uri, session_id, auth_header, custom_headers)
                .await
        })
    }

    async fn get_stream(
        &self,
        uri: Arc<str>,
        session_id: Option<Arc<str>>,
        last_event_id: Option<String>,
        auth_header: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
    ) -> Result<BoxedSseResponse, HttpError> {
        each!(self, client => {
            client
                .get_stream(uri, session_id, last_event_id, auth_header, custom_headers)
                .await
        })
    }

    async fn get_stream_with_max_sse_event_size(
        &self,
        uri: Arc<str>,
        session_id: Option<Arc<str>>,
        last_event_id: Option<String>,
        auth_header: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
        max_sse_event_size: usize,
    ) -> Result<BoxedSseResponse, HttpError> {
        each!(self, client => {
            client
                .get_stream_with_max_sse_event_size(
                    uri,
                    session_id,
                    last_event_id,
                    auth_header,
                    custom_headers,
                    max_sse_event_size,
                )
                .await
        })
    }
}
