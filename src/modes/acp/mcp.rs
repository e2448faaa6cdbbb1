//! The MCP servers of an ACP session: those of config.toml, and those the editor passes
//! with `session/new` or `session/load` (stdio and streamable HTTP; an editor's server
//! replaces a configured one of the same name). The editor's are checked like a
//! `[mcp_servers.NAME]` table; one that cannot be used is left out with a notice.

use crate::mcp::config::{ServerConfig, ServerTable};
use agent_client_protocol::v1::schema::McpServer;

/// The servers to start, and why any the editor passed were left out.
pub fn servers(
    configured: &[ServerConfig],
    given: &[McpServer],
) -> (Vec<ServerConfig>, Vec<String>) {
    let mut servers: Vec<ServerConfig> = configured.to_vec();
    let mut notices = Vec::new();
    for server in given {
        let (name, table) = match server {
            McpServer::Stdio(stdio) => (
                stdio.name.clone(),
                ServerTable {
                    command: Some(stdio.command.display().to_string()),
                    args: stdio.args.clone(),
                    env: stdio
                        .env
                        .iter()
                        .map(|v| (v.name.clone(), v.value.clone()))
                        .collect(),
                    ..ServerTable::default()
                },
            ),
            McpServer::Http(http) => (
                http.name.clone(),
                ServerTable {
                    url: Some(http.url.clone()),
                    http_headers: http
                        .headers
                        .iter()
                        .map(|h| (h.name.clone(), h.value.clone()))
                        .collect(),
                    ..ServerTable::default()
                },
            ),
            McpServer::Sse(sse) => {
                notices.push(format!(
                    "MCP server `{}` was left out: SSE servers are not supported (stdio and streamable HTTP are).",
                    sse.name
                ));
                continue;
            }
            _ => {
                notices.push(
                    "An MCP server of a kind this agent does not know was left out.".to_string(),
                );
                continue;
            }
        };
        match table.resolve(&name) {
            Ok(config) => {
                servers.retain(|s| s.name != config.name);
                servers.push(config);
            }
            Err(error) => notices.push(format!(
                "MCP server `{name}` was left out: {}: {}",
                error.key, error.message
            )),
        }
    }
    (servers, notices)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::mcp::config::Transport;
    use agent_client_protocol::v1::schema::{
        EnvVariable, HttpHeader, McpServerHttp, McpServerSse, McpServerStdio,
    };

    #[test]
    fn the_editors_servers_join_and_replace_the_configured_ones() {
        let configured = ServerTable {
            command: Some("old".into()),
            ..ServerTable::default()
        }
        .resolve("docs")
        .unwrap();
        let given = vec![
            McpServer::Stdio(
                McpServerStdio::new("docs", "/usr/bin/docs-mcp")
                    .args(vec!["--fast".into()])
                    .env(vec![EnvVariable::new("TOKEN", "t")]),
            ),
            McpServer::Http(
                McpServerHttp::new("web", "http://127.0.0.1:9/mcp")
                    .headers(vec![HttpHeader::new("x-team", "a")]),
            ),
            McpServer::Http(McpServerHttp::new("bad", "ftp://nowhere")),
            McpServer::Sse(McpServerSse::new("old-sse", "http://127.0.0.1:9/sse")),
        ];
        let (servers, notices) = servers(&[configured], &given);
        assert_eq!(servers.len(), 2, "{servers:?}");
        assert!(matches!(&servers[0].transport,
            Transport::Stdio { command, args, env, .. }
                if command == "/usr/bin/docs-mcp" && args == &["--fast"] && env["TOKEN"] == "t"));
        assert!(matches!(&servers[1].transport,
            Transport::Http { url, headers, .. } if url == "http://127.0.0.1:9/mcp" && headers["x-team"] == "a"));
        assert_eq!(notices.len(), 2, "{notices:?}");
        assert!(
            notices[0].contains("`bad`") && notices[0].contains("not an http"),
            "{notices:?}"
        );
        assert!(notices[1].contains("SSE"), "{notices:?}");
    }
}
