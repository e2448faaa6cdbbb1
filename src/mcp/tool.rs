//! An MCP server's tool as one of ours. A call goes to the server (started again first if it
//! is down), its progress becomes `tool_execution_update`s, and it ends in exactly one
//! result: the server's answer, or an error that says what happened — the user aborted (the
//! server is sent `notifications/cancelled`), the tool timed out (cancelled too), the server
//! went away or answered with a protocol error.

use super::config::ServerConfig;
use super::content;
use super::names;
use super::server::{Server, ToolView};
use crate::tools::{CANCELLED_TEXT, Tool, ToolContext, ToolOutput};
use futures_util::future::BoxFuture;
use rmcp::model::{
    CallToolRequestParams, CancelledNotificationParam, ClientRequest, Request, RequestId,
    ServerResult,
};
use rmcp::service::{PeerRequestOptions, ServiceError};
use rmcp::{Peer, RoleClient};
use serde_json::Value;
use std::sync::{Arc, Weak};

pub struct McpTool {
    server: Weak<Server>,
    server_name: String,
    /// As offered to the model.
    name: String,
    /// The server's own name for it.
    original: String,
    description: String,
    schema: Value,
    read_only: bool,
    timeout_secs: f64,
    timeout: std::time::Duration,
}

impl McpTool {
    /// The tools of a server as offered: filtered by `enabled_tools`/`disabled_tools`, named
    /// `mcp__<server>__<tool>`, in name order.
    pub fn build(
        server: &Weak<Server>,
        config: &ServerConfig,
        part: &str,
        listed: Vec<rmcp::model::Tool>,
    ) -> Vec<Arc<McpTool>> {
        let offered: Vec<rmcp::model::Tool> = listed
            .into_iter()
            .filter(|t| config.offers(&t.name))
            .collect();
        let originals: Vec<&str> = offered.iter().map(|t| t.name.as_ref()).collect();
        let offered_names = names::tool_names(part, &originals);
        let mut tools: Vec<Arc<McpTool>> = offered
            .iter()
            .zip(offered_names)
            .map(|(tool, name)| {
                let mut schema = Value::Object(tool.input_schema.as_ref().clone());
                // Providers want an object schema with a type; some servers leave it out.
                if let Value::Object(map) = &mut schema {
                    map.entry("type").or_insert_with(|| Value::from("object"));
                }
                let description = tool
                    .description
                    .as_deref()
                    .filter(|d| !d.trim().is_empty())
                    .map(str::to_string)
                    .or_else(|| tool.title.clone())
                    .unwrap_or_else(|| {
                        format!(
                            "The `{}` tool of the MCP server `{}`.",
                            tool.name, config.name
                        )
                    });
                Arc::new(McpTool {
                    server: server.clone(),
                    server_name: config.name.clone(),
                    name,
                    original: tool.name.to_string(),
                    description,
                    schema,
                    read_only: tool
                        .annotations
                        .as_ref()
                        .and_then(|a| a.read_only_hint)
                        .unwrap_or(false),
                    timeout_secs: config.tool_timeout.as_secs_f64(),
                    timeout: config.tool_timeout,
                })
            })
            .collect();
        tools.sort_by(|a, b| a.name.cmp(&b.name));
        tools
    }

    pub fn view(&self) -> ToolView {
        ToolView {
            name: self.name.clone(),
            original: self.original.clone(),
            description: self.description.clone(),
            read_only: self.read_only,
        }
    }
}

impl Tool for McpTool {
    fn name(&self) -> &str {
        &self.name
    }

    fn description(&self) -> &str {
        &self.description
    }

    fn parameters(&self) -> Value {
        self.schema.clone()
    }

    fn read_only(&self) -> bool {
        self.read_only
    }

    fn read_only_is_claimed(&self) -> bool {
        true
    }

    fn execute(&self, args: Value, ctx: ToolContext) -> BoxFuture<'static, ToolOutput> {
        let call = Call {
            server: self.server.clone(),
            server_name: self.server_name.clone(),
            tool: self.original.clone(),
            timeout: self.timeout,
            timeout_secs: self.timeout_secs,
        };
        Box::pin(async move { call.run(args, ctx).await })
    }
}

struct Call {
    server: Weak<Server>,
    server_name: String,
    tool: String,
    timeout: std::time::Duration,
    timeout_secs: f64,
}

impl Call {
    async fn run(self, args: Value, ctx: ToolContext) -> ToolOutput {
        let arguments = match args {
            Value::Object(map) => Some(map),
            Value::Null => None,
            other => {
                return ToolOutput::error(format!(
                    "The arguments must be a JSON object, not {other}."
                ));
            }
        };
        let Some(server) = self.server.upgrade() else {
            return ToolOutput::error(format!("MCP server `{}` is not running.", self.server_name));
        };
        let connection = tokio::select! {
            _ = ctx.cancel.cancelled() => return ToolOutput::error(CANCELLED_TEXT),
            connection = server.connection() => match connection {
                Ok(connection) => connection,
                Err(error) => return ToolOutput::error(error),
            },
        };
        let mut params = CallToolRequestParams::new(self.tool.clone());
        if let Some(arguments) = arguments {
            params = params.with_arguments(arguments);
        }
        let request = ClientRequest::CallToolRequest(Request::new(params));
        let sent = connection
            .peer
            .send_cancellable_request(request, PeerRequestOptions::with_timeout(self.timeout))
            .await;
        let handle = match sent {
            Ok(handle) => handle,
            Err(error) => {
                server.lost(&connection, &format!("sending a call failed: {error}"));
                return ToolOutput::error(self.failure(&error, &server));
            }
        };
        let token = handle.progress_token.clone();
        connection
            .progress
            .register(token.clone(), ctx.on_update.clone());
        // From here on, giving up on the call tells the server.
        let mut guard = CancelOnDrop {
            peer: Some(handle.peer.clone()),
            id: handle.id.clone(),
        };
        let answer = tokio::select! {
            _ = ctx.cancel.cancelled() => None,
            answer = handle.await_response() => Some(answer),
        };
        connection.progress.unregister(&token);
        let Some(answer) = answer else {
            guard.cancel_now("the run was stopped").await;
            return ToolOutput::error(CANCELLED_TEXT);
        };
        // rmcp has told the server about a timeout itself; every other ending needs nothing.
        guard.disarm();
        match answer {
            Ok(ServerResult::CallToolResult(result)) => {
                server.answered();
                let cut = oversized_note(&result);
                let mut output = content::to_output(result, &ctx.spill);
                if let Some(note) = cut {
                    output
                        .content
                        .push(crate::protocol::message::Content::text(note));
                }
                output
            }
            Ok(_) => ToolOutput::error(format!(
                "MCP server `{}` answered the call with something that is not a tool result.",
                self.server_name
            )),
            Err(error) => {
                if matches!(
                    error,
                    ServiceError::TransportClosed | ServiceError::TransportSend(_)
                ) {
                    server.lost(
                        &connection,
                        "the server closed the connection during a call (it exited or crashed)",
                    );
                }
                ToolOutput::error(self.failure(&error, &server))
            }
        }
    }

    /// What the model is told when the call got no tool result.
    fn failure(&self, error: &ServiceError, server: &Server) -> String {
        let name = &self.server_name;
        match error {
            ServiceError::Timeout { .. } => format!(
                "The MCP tool `{}` did not finish within its timeout of {} s \
                 (mcp_servers.{name}.tool_timeout_secs), so it was cancelled.",
                self.tool, self.timeout_secs
            ),
            ServiceError::McpError(data) => format!(
                "MCP server `{name}` refused the call: {} (error {}).",
                data.message, data.code.0
            ),
            ServiceError::TransportClosed | ServiceError::TransportSend(_) => {
                let why = server
                    .view()
                    .error
                    .unwrap_or_else(|| "the connection closed".to_string());
                format!(
                    "MCP server `{name}` went away during the call: {why}. It will be restarted \
                     on the next call."
                )
            }
            other => format!("MCP server `{name}`: the call failed: {other}."),
        }
    }
}

/// What the model is told about an answer cut at the size limit of one MCP message (see
/// `oversized`): how big it was and how much of it is in the result.
fn oversized_note(result: &rmcp::model::CallToolResult) -> Option<String> {
    let mark = result
        .meta
        .as_ref()?
        .0
        .get(super::oversized::OVERSIZED_META)?;
    let bytes = mark.get("bytes").and_then(Value::as_u64)?;
    let limit = mark.get("limit").and_then(Value::as_u64)?;
    let kept = mark.get("kept").and_then(Value::as_u64)?;
    let size = super::oversized::size;
    Some(format!(
        "[The MCP server's answer was {}, more than the {} one MCP message may hold: only \
         its first {} were read.]",
        size(bytes),
        size(limit),
        size(kept)
    ))
}

/// Sends `notifications/cancelled` for a request we stop waiting for — also when the call's
/// future is dropped (a run torn down mid-call).
struct CancelOnDrop {
    peer: Option<Peer<RoleClient>>,
    id: RequestId,
}

impl CancelOnDrop {
    async fn cancel_now(&mut self, reason: &str) {
        if let Some(peer) = self.peer.take() {
            let param =
                CancelledNotificationParam::new(Some(self.id.clone()), Some(reason.to_string()));
            let _ = peer.notify_cancelled(param).await;
        }
    }

    fn cancel(&mut self, reason: &str) {
        let Some(peer) = self.peer.take() else {
            return;
        };
        let param =
            CancelledNotificationParam::new(Some(self.id.clone()), Some(reason.to_string()));
        if let Ok(runtime) = tokio::runtime::Handle::try_current() {
            crate::tasks::spawn_on(&runtime, async move {
                let _ = peer.notify_cancelled(param).await;
            });
        }
    }

    fn disarm(&mut self) {
        self.peer = None;
    }
}

impl Drop for CancelOnDrop {
    fn drop(&mut self) {
        self.cancel("the call was abandoned");
    }
}
