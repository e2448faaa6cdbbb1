//! `--mode acp`: the agent as an Agent Client Protocol server on stdio, for editors (Zed,
//! JetBrains, Neovim and Emacs plugins…; docs/protocol.md §7). A thin front end: each ACP
//! session is an engine `Agent` whose events become `session/update` notifications; ACP
//! requests become calls on the `Agent` handle.
//!
//! The connection dispatches one message at a time and waits for each handler, so no
//! handler waits for the engine or for the editor: runs are answered by the session's event
//! pump, and anything slow (opening a session, a command, a permission request) runs as its
//! own task.

mod commands;
mod ext;
mod link;
mod mcp;
mod options;
mod permission;
mod plan;
mod prompt;
mod pump;
mod question;
mod replay;
mod server;
mod session;
mod tool_view;
mod transport;
mod turns;
mod web_search;

use crate::config::Settings;
use crate::modes::signals::Interrupts;
use agent_client_protocol::v1::ConnectionTo;
use agent_client_protocol::v1::schema::{
    AuthenticateRequest, AuthenticateResponse, CancelNotification, CloseSessionRequest,
    CloseSessionResponse, InitializeRequest, LoadSessionRequest, NewSessionRequest, PromptRequest,
    SetSessionConfigOptionRequest, SetSessionConfigOptionResponse, SetSessionModeRequest,
    SetSessionModeResponse,
};
use agent_client_protocol::{
    Agent, Client, ConnectTo, Error, on_receive_notification, on_receive_request,
};
use ext::{SteerRequest, SteerResponse};
use server::Server;
use std::sync::Arc;

/// Serve ACP on stdin/stdout until the editor goes away (end of input, or output closed)
/// or a signal comes; then every session is stopped, its tools killed (a second signal
/// exits without waiting). Exit code: 0 when the editor left (its input ended, or it
/// stopped reading our output), 1 when the connection failed otherwise, 130/143/129 for
/// SIGINT/SIGTERM/SIGHUP.
pub async fn run(settings: Settings, thinking_from_flags: bool) -> u8 {
    let server = Arc::new(Server::new(settings, thinking_from_flags));
    let reader_left = tokio_util::sync::CancellationToken::new();
    let connection = ConnectTo::<Client>::connect_to(
        connection(server.clone()),
        transport::stdio(reader_left.clone()),
    );
    let mut interrupts = Interrupts::new();
    let code = tokio::select! {
        result = connection => match result {
            Ok(()) => 0,
            // It closed its end of our output (e.g. right after an answer): it left.
            Err(_) if reader_left.is_cancelled() => {
                tracing::info!("the editor stopped reading the ACP output");
                0
            }
            Err(error) => {
                tracing::warn!(%error, "the ACP connection failed");
                1
            }
        },
        () = reader_left.cancelled() => {
            tracing::info!("the editor stopped reading the ACP output");
            0
        }
        code = interrupts.next() => code,
    };
    tracing::info!(code, "the ACP connection ended; stopping every session");
    // A (further) signal exits without waiting for the runs to end, as in the other modes.
    tokio::select! {
        () = server.shutdown() => {}
        _ = interrupts.next() => {}
    }
    code
}

/// The agent side of the protocol: one handler per method.
fn connection(server: Arc<Server>) -> impl ConnectTo<Client> {
    let (initialize, authenticate, new, load, close) = (
        server.clone(),
        server.clone(),
        server.clone(),
        server.clone(),
        server.clone(),
    );
    let (prompt, cancel, mode, option, steer) = (
        server.clone(),
        server.clone(),
        server.clone(),
        server.clone(),
        server,
    );
    Agent
        .v1()
        .name("agent")
        .on_receive_request(
            async move |request: InitializeRequest, responder, _cx| {
                responder.respond(initialize.initialize(request))
            },
            on_receive_request!(),
        )
        .on_receive_request(
            async move |_: AuthenticateRequest, responder, _cx| {
                responder.respond_with_result(
                    authenticate
                        .authenticate()
                        .map(|()| AuthenticateResponse::new()),
                )
            },
            on_receive_request!(),
        )
        .on_receive_request(
            async move |request: NewSessionRequest, responder, cx: ConnectionTo<Client>| {
                let server = new.clone();
                crate::tasks::spawn(async move {
                    match server.new_session(request, &cx).await {
                        Ok((response, session)) => {
                            if responder.respond(response).is_ok() {
                                Server::announce_opening(&session);
                            }
                        }
                        Err(error) => answer_error(responder, error),
                    }
                });
                Ok(())
            },
            on_receive_request!(),
        )
        .on_receive_request(
            async move |request: LoadSessionRequest, responder, cx: ConnectionTo<Client>| {
                let server = load.clone();
                crate::tasks::spawn(async move {
                    match server.load_session(request, &cx).await {
                        Ok((response, session)) => {
                            if responder.respond(response).is_ok() {
                                Server::announce_opening(&session);
                            }
                        }
                        Err(error) => answer_error(responder, error),
                    }
                });
                Ok(())
            },
            on_receive_request!(),
        )
        .on_receive_request(
            async move |request: CloseSessionRequest, responder, _cx| {
                let server = close.clone();
                crate::tasks::spawn(async move {
                    let result = server.close_session(&request.session_id).await;
                    let _ =
                        responder.respond_with_result(result.map(|()| CloseSessionResponse::new()));
                });
                Ok(())
            },
            on_receive_request!(),
        )
        .on_receive_request(
            async move |request: PromptRequest, responder, _cx| {
                match prompt.session(&request.session_id) {
                    Ok(session) => session.prompt(request, responder),
                    Err(error) => answer_error(responder, error),
                }
                Ok(())
            },
            on_receive_request!(),
        )
        .on_receive_notification(
            async move |notification: CancelNotification, _cx| {
                if let Ok(session) = cancel.session(&notification.session_id) {
                    session.cancel();
                }
                Ok(())
            },
            on_receive_notification!(),
        )
        .on_receive_request(
            async move |request: SetSessionModeRequest, responder, _cx| {
                let result = match mode.session(&request.session_id) {
                    Ok(session) => session.set_mode(&request.mode_id.to_string()).await,
                    Err(error) => Err(error),
                };
                responder.respond_with_result(result.map(|()| SetSessionModeResponse::new()))
            },
            on_receive_request!(),
        )
        .on_receive_request(
            async move |request: SetSessionConfigOptionRequest, responder, _cx| {
                let session = match option.session(&request.session_id) {
                    Ok(session) => session,
                    Err(error) => return responder.respond_with_error(error),
                };
                let Some(value) = request.value.as_value_id().map(ToString::to_string) else {
                    return responder
                        .respond_with_error(invalid_params("every option here takes a value id"));
                };
                crate::tasks::spawn(async move {
                    let result = session
                        .set_option(&request.config_id.to_string(), &value)
                        .await
                        .map(|()| SetSessionConfigOptionResponse::new(session.options()));
                    let _ = responder.respond_with_result(result);
                });
                Ok(())
            },
            on_receive_request!(),
        )
        .on_receive_request(
            async move |request: SteerRequest, responder, _cx| {
                let result = match steer.session(&request.session_id) {
                    Ok(session) => session.steer(request.message).await,
                    Err(error) => Err(error),
                };
                responder.respond_with_result(result.map(|()| SteerResponse::default()))
            },
            on_receive_request!(),
        )
}

fn answer_error<T: agent_client_protocol::JsonRpcResponse>(
    responder: agent_client_protocol::v1::Responder<T>,
    error: Error,
) {
    if let Err(error) = responder.respond_with_error(error) {
        tracing::debug!(%error, "an error answer could not be sent");
    }
}

/// An error whose message says what was wrong (clients show the message).
fn invalid_params(why: impl Into<String>) -> Error {
    Error::new(agent_client_protocol::ErrorCode::INVALID_PARAMS, why)
}

fn internal_error(why: impl Into<String>) -> Error {
    Error::new(agent_client_protocol::ErrorCode::INTERNAL_ERROR, why)
}

fn auth_required(why: impl Into<String>) -> Error {
    Error::new(agent_client_protocol::ErrorCode::AUTH_REQUIRED, why)
}
