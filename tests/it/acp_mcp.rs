//! The MCP servers an editor passes with `session/new`: a stdio server (the rmcp fixture,
//! the `test_mcp_server` program) and a streamable HTTP one (the fixture on 127.0.0.1) are
//! started for the session and their tools offered and called; an SSE server, which the MCP
//! client does not speak, is left out with a message saying so.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // test code fails loudly

use crate::support;
use crate::support::mcp_fixture;

use agent_client_protocol::v1::schema::{
    EnvVariable, McpServer, McpServerHttp, McpServerSse, McpServerStdio, NewSessionRequest,
    StopReason,
};
use serde_json::{Value, json};
use support::acp::{Acp, text_of};
use support::chat;
use support::env::env;
use support::server::{FakeServer, Reply};

fn offered(body: &Value) -> Vec<String> {
    body["tools"]
        .as_array()
        .map(|tools| {
            tools
                .iter()
                .filter_map(|t| t["function"]["name"].as_str().map(str::to_string))
                .collect()
        })
        .unwrap_or_default()
}

#[tokio::test]
async fn acp_the_editors_mcp_servers_serve_the_session() {
    let env = env();
    let marks = tempfile::tempdir().unwrap();
    let url = mcp_fixture::serve_http(None, None).await;
    let (command, args, vars) = mcp_fixture::stdio_command("stdio", marks.path());
    let servers = vec![
        McpServer::Stdio(
            McpServerStdio::new("st", command).args(args).env(
                vars.into_iter()
                    .map(|(k, v)| EnvVariable::new(k, v))
                    .collect(),
            ),
        ),
        McpServer::Http(McpServerHttp::new("fx", url)),
        McpServer::Sse(McpServerSse::new("old", "http://127.0.0.1:9/sse")),
    ];
    let server = FakeServer::start(vec![
        Reply::sse(chat::tool_calls(&[
            ("c1", "mcp__st__echo", json!({"text": "over stdio"})),
            ("c2", "mcp__fx__echo", json!({"text": "over http"})),
        ])),
        Reply::sse(chat::text("both answered")),
    ])
    .await;
    let mut acp =
        Acp::spawn(env.agent(&server, &["--mode", "acp", "--permission-mode", "auto"])).await;
    acp.initialize().await;
    let session = acp
        .request(NewSessionRequest::new(env.cwd.path()).mcp_servers(servers))
        .await
        .expect("session/new");
    let id = session.session_id;
    let answer = acp.prompt(&id, "use the servers").await.unwrap().unwrap();
    assert_eq!(answer.stop_reason, StopReason::EndTurn);
    let updates = acp.drain();
    // This client takes no notices: the SSE server's is a line of thought.
    let thought = text_of(&updates, "agent_thought_chunk");
    assert!(
        thought.contains("`old` was left out") && thought.contains("SSE"),
        "{updates:#?}"
    );
    for (call, text) in [("c1", "over stdio"), ("c2", "over http")] {
        let done = updates
            .iter()
            .find(|u| {
                u["sessionUpdate"] == "tool_call_update"
                    && u["toolCallId"] == call
                    && u["status"] == "completed"
            })
            .unwrap_or_else(|| panic!("{call} completed: {updates:#?}"));
        assert!(done["content"].to_string().contains(text), "{done}");
    }
    // An MCP tool's call shows as `kind: other`, written out as docs/protocol.md §7.3 says
    // (the schema's default, which the protocol crate would leave out), `status: pending`.
    for call in ["c1", "c2"] {
        let written = acp.wire_updates();
        let started = written
            .iter()
            .find(|u| u["sessionUpdate"] == "tool_call" && u["toolCallId"] == call)
            .unwrap_or_else(|| panic!("{call} started: {written:#?}"));
        assert_eq!(started["kind"], "other", "{started}");
        assert_eq!(started["status"], "pending", "{started}");
    }
    assert_eq!(text_of(&updates, "agent_message_chunk"), "both answered");
    let tools = offered(&server.bodies()[0]);
    assert!(
        tools.contains(&"mcp__st__echo".to_string())
            && tools.contains(&"mcp__fx__echo".to_string()),
        "{tools:?}"
    );
    assert!(
        !tools.iter().any(|t| t.starts_with("mcp__old__")),
        "{tools:?}"
    );
    assert_eq!(acp.exit_code().await, 0);
}
