//! `/mcp`: the MCP servers as transcript rows — each server's status, transport, tool count
//! and why it is down, then its tools as the model sees them (name and the first line of
//! their description, read-only ones marked).

use super::cells;
use super::theme::Theme;
use crate::mcp::server::{ServerView, Status};
use ratatui::text::{Line, Span};

pub fn rows(servers: &[ServerView], width: u16, theme: &Theme) -> Vec<Line<'static>> {
    let mut rows = vec![cells::blank()];
    if servers.is_empty() {
        rows.push(Line::from(Span::styled(
            "No MCP servers are configured. Add one with `agent mcp add NAME -- COMMAND ARGS…` \
             or `agent mcp add NAME --url URL`, or in [mcp_servers] of config.toml.",
            theme.dim(),
        )));
        return rows;
    }
    rows.push(Line::from(Span::styled("MCP servers", theme.bold())));
    let room = usize::from(width).saturating_sub(8).max(20);
    for server in servers {
        let status_style = match server.status {
            Status::Ready => theme.success(),
            Status::Starting => theme.dim(),
            Status::Failed => theme.error(),
            Status::Disabled => theme.dim(),
        };
        let tools = match server.tools.len() {
            1 => "1 tool".to_string(),
            n => format!("{n} tools"),
        };
        rows.push(Line::from(vec![
            Span::styled(format!("  {} ", server.name), theme.accent()),
            Span::styled(server.status.as_str().to_string(), status_style),
            Span::styled(format!(" · {} · {tools}", server.transport), theme.dim()),
        ]));
        if let Some(error) = &server.error {
            rows.push(Line::from(Span::styled(
                format!("    {}", cells::cut(error, room)),
                theme.error(),
            )));
        }
        for tool in &server.tools {
            let description = tool.description.lines().next().unwrap_or("").to_string();
            let marker = if tool.read_only { " (read-only)" } else { "" };
            let text = format!("{}{marker} — {description}", tool.name);
            rows.push(Line::from(Span::styled(
                format!("    {}", cells::cut(&text, room)),
                theme.dim(),
            )));
        }
    }
    rows
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::mcp::server::ToolView;

    #[test]
    fn shows_status_tools_and_errors() {
        let servers = vec![
            ServerView {
                name: "docs".into(),
                status: Status::Ready,
                transport: "http",
                tools: vec![ToolView {
                    name: "mcp__docs__search".into(),
                    original: "search".into(),
                    description: "Search the docs\nmore".into(),
                    read_only: true,
                }],
                error: None,
            },
            ServerView {
                name: "db".into(),
                status: Status::Failed,
                transport: "stdio",
                tools: vec![],
                error: Some("did not start within 20 s".into()),
            },
        ];
        let text: Vec<String> = rows(&servers, 100, &Theme::from_env())
            .iter()
            .map(|l| l.to_string())
            .collect();
        assert_eq!(
            text,
            [
                "",
                "MCP servers",
                "  docs ready · http · 1 tool",
                "    mcp__docs__search (read-only) — Search the docs",
                "  db failed · stdio · 0 tools",
                "    did not start within 20 s",
            ]
        );
    }
}
