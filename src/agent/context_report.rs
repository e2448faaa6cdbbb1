//! `/context`: what the next request would hold, part by part, in estimated tokens
//! (characters / 4, an image 1,000) — the system prompt split into the template, the
//! context files and the skills list; the tool definitions, built-in and per MCP server;
//! the messages, and their attachments.

use super::Agent;
use super::state::lock;
use crate::llm::request::ToolSpec;
use crate::protocol::message::{Content, Message};
use crate::protocol::usage::{ContextPart, ContextReport};

/// The headings `prompt::system_prompt` gives its sections.
const CONTEXT_FILES: &str = "\n\n# Project instructions\n\n";
const SKILLS: &str = "\n\n# Skills\n\n";

fn tokens(chars: usize) -> u64 {
    (chars as u64).div_ceil(4)
}

impl Agent {
    /// What the next request would hold, by part (docs/protocol.md §3.5).
    pub fn context_report(&self) -> ContextReport {
        let settings = self.shared.settings();
        let (messages, mode, goal, cold) = {
            let state = lock(&self.shared.state);
            (
                state.history.messages().to_vec(),
                state.permissions.mode,
                state.goal.is_some(),
                // A cold part (`session::cold`) counts its estimate, unread.
                state.history.cold().map_or(0, |c| c.tokens()),
            )
        };
        let asks = settings
            .base_tools
            .get(crate::tools::ASK_USER_TOOL)
            .is_some();
        let prompt = super::plan_mode::system_prompt(&settings.system_prompt, mode, asks);
        let mut parts = prompt_parts(&prompt);
        parts.extend(tool_parts(&super::goal::offered(
            &settings.tool_specs,
            goal,
        )));
        let (text, images) = messages.iter().fold((0u64, 0u64), |(text, images), m| {
            let attached = attachments(m);
            let all = super::compaction::estimate_tokens(m);
            (text + all.saturating_sub(attached), images + attached)
        });
        parts.push(part("messages", text.saturating_add(cold)));
        parts.push(part("attachments", images));
        parts.retain(|p| p.tokens > 0 || p.part == "messages");
        ContextReport {
            total: parts.iter().map(|p| p.tokens).sum(),
            parts,
            context_window: settings.model.context_window,
        }
    }
}

fn part(name: &str, tokens: u64) -> ContextPart {
    ContextPart {
        part: name.to_string(),
        tokens,
    }
}

/// The template (and anything appended), the context files, the skills list.
fn prompt_parts(prompt: &str) -> Vec<ContextPart> {
    let files_at = prompt.find(CONTEXT_FILES);
    let skills_at = prompt.find(SKILLS);
    let end = prompt.len();
    let files = files_at.map_or(0, |at| skills_at.filter(|s| *s > at).unwrap_or(end) - at);
    // Text appended after the skills list (`--append-system-prompt`) counts with it.
    let skills = skills_at.map_or(0, |at| end - at);
    vec![
        part(
            "system_prompt",
            tokens(prompt.len().saturating_sub(files + skills)),
        ),
        part("context_files", tokens(files)),
        part("skills", tokens(skills)),
    ]
}

/// Built-in tools together, MCP tools per server (`mcp__SERVER__tool`), in first-seen order.
fn tool_parts(specs: &[ToolSpec]) -> Vec<ContextPart> {
    let mut parts = vec![part("tools_builtin", 0)];
    for spec in specs {
        let size = tokens(serde_json::to_string(spec).map_or(0, |s| s.len()));
        let name = match spec
            .name
            .strip_prefix(crate::tools::source::MCP_TOOL_PREFIX)
            .and_then(|rest| rest.split("__").next())
        {
            Some(server) => format!("tools_mcp:{server}"),
            None => "tools_builtin".to_string(),
        };
        match parts.iter_mut().find(|p| p.part == name) {
            Some(existing) => existing.tokens += size,
            None => parts.push(part(&name, size)),
        }
    }
    parts
}

/// The estimated tokens of a message's images.
fn attachments(message: &Message) -> u64 {
    let content: &[Content] = match message {
        Message::User(user) => &user.content,
        Message::ToolResult(result) => &result.content,
        Message::Assistant(_) => &[],
    };
    let images = content
        .iter()
        .filter(|c| matches!(c, Content::Image { .. }))
        .count() as u64;
    images * 1_000
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_system_prompt_splits_into_its_sections() {
        let prompt = format!(
            "{}{CONTEXT_FILES}{}{SKILLS}{}",
            "t".repeat(400),
            "f".repeat(800),
            "s".repeat(1200)
        );
        let parts = prompt_parts(&prompt);
        let total: u64 = parts.iter().map(|p| p.tokens).sum();
        assert!(total.abs_diff(tokens(prompt.len())) <= 3, "{parts:?}");
        assert_eq!(parts[0].tokens, 100);
        assert!(parts[1].tokens >= 200 && parts[1].tokens < 210, "{parts:?}");
        assert!(parts[2].tokens >= 300 && parts[2].tokens < 310, "{parts:?}");
    }
}
