//! `agent serve`'s HTTP routes (docs/protocol.md §4.6). Every live session of the user —
//! hosted here or by any other running agent — is reached through its socket: the events
//! route is an `attach` streamed as server-sent events, the commands route one RPC line and
//! its answer.

use super::super::client::LiveClient;
use super::super::server::{clean_stale, run_dir, socket_path};
use super::access::{self, Refusal};
use super::{Server, web};
use bytes::Bytes;
use http_body_util::combinators::BoxBody;
use http_body_util::{BodyExt, Full, Limited, StreamBody};
use hyper::body::{Frame, Incoming};
use hyper::{Method, Request, Response, StatusCode};
use serde_json::{Value, json};
use std::convert::Infallible;
use std::path::PathBuf;
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
use tokio::net::UnixStream;

pub(super) type Body = BoxBody<Bytes, Infallible>;

/// The largest request body (a prompt with pasted files).
const MAX_BODY_BYTES: usize = 16 * 1024 * 1024;

pub(super) async fn route(server: &Server, request: Request<Incoming>) -> Response<Body> {
    let path = request.uri().path().to_string();
    if let Err(refusal) = admit(server, &request, &path) {
        let status = StatusCode::from_u16(refusal.status).unwrap_or(StatusCode::FORBIDDEN);
        let mut response = error(status, refusal.message);
        if status == StatusCode::UNAUTHORIZED {
            response.headers_mut().insert(
                hyper::header::WWW_AUTHENTICATE,
                hyper::header::HeaderValue::from_static("Bearer"),
            );
        }
        return response;
    }
    if let Some(web) = &server.web {
        match (request.method(), path.as_str()) {
            (&Method::GET, _) => {
                if let Some((index, asset)) = web::asset(&path) {
                    return web::asset_response(index, asset, request.headers());
                }
            }
            (&Method::POST, "/v1/web/login") => return web.sign_in(server, request).await,
            (&Method::POST, "/v1/web/logout") => return web.sign_out(request.headers()),
            _ => {}
        }
    }
    let segments: Vec<&str> = path.trim_matches('/').split('/').collect();
    let method = request.method().clone();
    match (method, segments.as_slice()) {
        (Method::GET, ["healthz"]) => json_response(StatusCode::OK, &json!({"status": "ok"})),
        (Method::GET, ["v1", "sessions"]) => sessions(server).await,
        (Method::POST, ["v1", "sessions"]) => match body(request).await {
            Ok(body) => start(server, &body).await,
            Err(response) => response,
        },
        (Method::GET, ["v1", "sessions", id, "events"]) => {
            let since = request.uri().query().and_then(|q| {
                q.split('&')
                    .find_map(|pair| pair.strip_prefix("since="))
                    .map(str::to_string)
            });
            let socket = socket_of(server, id);
            events(socket, since).await
        }
        (Method::POST, ["v1", "sessions", id, "commands"]) => {
            let socket = socket_of(server, id);
            match body(request).await {
                Ok(body) => command(socket, body).await,
                Err(response) => response,
            }
        }
        (Method::DELETE, ["v1", "sessions", id]) => {
            if server.host.close(id).await {
                json_response(StatusCode::OK, &json!({"closed": id}))
            } else {
                error(StatusCode::NOT_FOUND, "no such session hosted here")
            }
        }
        (_, ["healthz"] | ["v1", "sessions", ..]) => {
            error(StatusCode::METHOD_NOT_ALLOWED, "method not allowed")
        }
        _ => error(StatusCode::NOT_FOUND, "no such route"),
    }
}

/// Whether `request` is answered: its `Host` and `Origin` are this server's, and — unless
/// it is public (`/healthz`, the web client's files and sign-in) or no token is needed —
/// it carries an accepted bearer token or the web client's cookie; signed in by cookie, a
/// request that changes anything must also carry this server's `Origin`.
fn admit(server: &Server, request: &Request<Incoming>, path: &str) -> Result<(), Refusal> {
    let headers = request.headers();
    let header = |name: hyper::header::HeaderName| headers.get(name).and_then(|v| v.to_str().ok());
    let origin = header(hyper::header::ORIGIN);
    server
        .access
        .check_origin(header(hyper::header::HOST), origin, server.scheme)?;
    let public = path == "/healthz"
        || server.web.is_some()
            && (path == "/v1/web/login" || path == "/v1/web/logout" || web::asset(path).is_some());
    if public
        || server
            .access
            .bearer_ok(header(hyper::header::AUTHORIZATION))
    {
        return Ok(());
    }
    match &server.web {
        Some(web) if web.signed_in(headers) => {
            let reads = matches!(*request.method(), Method::GET | Method::HEAD);
            if reads || origin.is_some() {
                Ok(())
            } else {
                Err(web::NO_ORIGIN)
            }
        }
        _ => Err(access::UNAUTHORIZED),
    }
}

/// The socket of session `id` (only an id: never a path).
fn socket_of(server: &Server, id: &str) -> Option<PathBuf> {
    let plain = !id.is_empty()
        && id
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_');
    plain
        .then(|| socket_path(&server.home, id))
        .filter(|p| p.exists())
}

async fn body(request: Request<Incoming>) -> Result<Value, Response<Body>> {
    let bytes = Limited::new(request.into_body(), MAX_BODY_BYTES)
        .collect()
        .await
        .map_err(|_| {
            error(
                StatusCode::PAYLOAD_TOO_LARGE,
                "the body is too large or broken",
            )
        })?
        .to_bytes();
    if bytes.is_empty() {
        return Ok(json!({}));
    }
    serde_json::from_slice(&bytes).map_err(|e| {
        error(
            StatusCode::BAD_REQUEST,
            &format!("the body is not JSON: {e}"),
        )
    })
}

async fn sessions(server: &Server) -> Response<Body> {
    let hosted = server.host.list().await;
    let dir = run_dir(&server.home);
    clean_stale(&dir);
    let mut live: Vec<Value> = std::fs::read_dir(&dir)
        .map(|entries| {
            entries
                .flatten()
                .filter_map(|e| {
                    let id = e.file_name().to_str()?.strip_suffix(".sock")?.to_string();
                    let own = hosted.iter().find(|h| h["id"] == id.as_str());
                    Some(match own {
                        Some(own) => {
                            let mut own = own.clone();
                            own["live"] = json!(true);
                            own["hosted"] = json!(true);
                            own
                        }
                        None => json!({"id": id, "live": true, "hosted": false}),
                    })
                })
                .collect()
        })
        .unwrap_or_default();
    live.sort_by(|a, b| a["id"].as_str().cmp(&b["id"].as_str()));
    let saved =
        crate::session::store::list_for(&server.settings.paths.sessions_dir, &server.settings.cwd)
            .into_iter()
            .filter(|s| !live.iter().any(|l| l["id"] == s.id.as_str()))
            .map(|s| json!({"id": s.id, "live": false, "sessionFile": s.path}))
            .collect::<Vec<_>>();
    live.extend(saved);
    json_response(StatusCode::OK, &json!({ "sessions": live }))
}

/// `POST /v1/sessions {"prompt"?, "resume"?}`: host a new or resumed session.
async fn start(server: &Server, body: &Value) -> Response<Body> {
    let text = |key: &str| body.get(key).and_then(Value::as_str).map(str::to_string);
    match server.host.start(text("resume"), text("prompt")).await {
        Ok((id, _)) => json_response(StatusCode::CREATED, &json!({ "sessionId": id })),
        Err(why) => error(StatusCode::BAD_REQUEST, &why),
    }
}

/// `POST /v1/sessions/ID/commands LINE`: one RPC line (§4.2, §4.5), its answer.
async fn command(socket: Option<PathBuf>, line: Value) -> Response<Body> {
    let Some(socket) = socket else {
        return error(StatusCode::NOT_FOUND, "no such live session");
    };
    if !line.is_object() || line["type"] == "attach" {
        return error(
            StatusCode::BAD_REQUEST,
            "a command is one JSON object (stream events with GET …/events)",
        );
    }
    let (client, _events) = match LiveClient::connect(&socket).await {
        Ok(connected) => connected,
        Err(e) => return error(StatusCode::BAD_GATEWAY, &e.to_string()),
    };
    let kind = line["type"].clone();
    match client.request(line).await {
        Ok(data) => json_response(
            StatusCode::OK,
            &json!({"type": "response", "command": kind, "success": true, "data": data}),
        ),
        Err(e) => json_response(
            StatusCode::OK,
            &json!({"type": "response", "command": kind, "success": false, "error": e.to_string()}),
        ),
    }
}

/// `GET /v1/sessions/ID/events[?since=ENTRY]`: the `attach` answer, the replay and every
/// event after it, one `data:` line each; the stream ends with the session.
async fn events(socket: Option<PathBuf>, since: Option<String>) -> Response<Body> {
    let Some(socket) = socket else {
        return error(StatusCode::NOT_FOUND, "no such live session");
    };
    let stream = match UnixStream::connect(&socket).await {
        Ok(stream) => stream,
        Err(e) => return error(StatusCode::BAD_GATEWAY, &e.to_string()),
    };
    let (read, mut write) = stream.into_split();
    let attach = json!({"id": "attach", "type": "attach", "since": since});
    if write
        .write_all(format!("{attach}\n").as_bytes())
        .await
        .is_err()
    {
        return error(
            StatusCode::BAD_GATEWAY,
            "the live session closed the connection",
        );
    }
    let lines = BufReader::new(read).lines();
    // The write half stays with the stream: closing it would end the attachment.
    let frames = futures_util::stream::unfold((lines, write), |(mut lines, write)| async move {
        match lines.next_line().await {
            Ok(Some(line)) => {
                let frame = Frame::data(Bytes::from(format!("data: {line}\n\n")));
                Some((Ok::<_, Infallible>(frame), (lines, write)))
            }
            _ => None,
        }
    });
    let mut response = Response::new(BodyExt::boxed(StreamBody::new(frames)));
    let headers = response.headers_mut();
    headers.insert(
        hyper::header::CONTENT_TYPE,
        hyper::header::HeaderValue::from_static("text/event-stream"),
    );
    headers.insert(
        hyper::header::CACHE_CONTROL,
        hyper::header::HeaderValue::from_static("no-store"),
    );
    response
}

pub(super) fn json_response(status: StatusCode, body: &Value) -> Response<Body> {
    let mut response = Response::new(Full::new(Bytes::from(body.to_string())).boxed());
    *response.status_mut() = status;
    response.headers_mut().insert(
        hyper::header::CONTENT_TYPE,
        hyper::header::HeaderValue::from_static("application/json"),
    );
    response
}

pub(super) fn error(status: StatusCode, message: &str) -> Response<Body> {
    json_response(status, &json!({"error": {"message": message}}))
}
