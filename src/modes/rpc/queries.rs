//! The read-only RPC commands and the `data` they answer with: `get_state`,
//! `get_session_stats`, `get_last_assistant_text`, `get_available_models`. Field names are
//! pi's where pi has the same command.

use super::Context;
use super::answers::model_json;
use crate::protocol::message::{Message, StopReason};
use serde_json::{Value, json};

pub(super) fn state(context: &Context) -> Value {
    let state = context.agent.snapshot();
    let session = &state.session;
    json!({
        "model": state.model,
        "provider": state.provider,
        "thinkingLevel": state.thinking.as_str(),
        "isStreaming": state.is_running,
        "state": state.state.as_str(),
        "stateElapsedMs": crate::time::millis(state.state_elapsed),
        "sessionId": session.id,
        "sessionFile": session.path,
        "messageCount": state.message_count,
        "pendingMessageCount": state.pending_message_count,
        "steeringMode": state.steering_mode.as_str(),
        "followUpMode": state.follow_up_mode.as_str(),
        "permissionMode": state.permission_mode.as_str(),
        "autoCompactionEnabled": state.auto_compaction,
        "autoRetryEnabled": state.auto_retry,
        "sessionTitle": title(context, state.session_name.as_deref()),
        "sessionName": state.session_name,
        "goal": state.goal,
        "profile": state.profile,
        "profiles": context.agent.profiles(),
        "usage": state.usage,
        "contextTokens": state.context_tokens,
        "contextWindow": state.context_window,
        "sessionError": state.session_error,
        "mcpServers": crate::mcp::views_json(&context.mcp.views()),
        "lspServers": context
            .settings
            .tool_settings
            .lsp
            .as_ref()
            .map_or_else(|| json!([]), |lsp| crate::lsp::views_json(&lsp.views())),
    })
}

/// The session's title as `agent sessions list` shows it: its name, else the first line of
/// its first prompt in the context (null before one).
fn title(context: &Context, name: Option<&str>) -> Option<String> {
    if let Some(name) = name.map(str::trim).filter(|n| !n.is_empty()) {
        return Some(name.to_string());
    }
    context
        .agent
        .messages()
        .iter()
        .find_map(|m| match m.as_ref() {
            Message::User(user) if !crate::session::load::is_summary(m) => {
                crate::session::title::title_from_prompt(user.typed_text())
            }
            _ => None,
        })
}

/// Counts of the messages in the context; tokens and cost of every model call of the
/// session (also those a compaction took out of the context).
pub(super) fn session_stats(context: &Context) -> Value {
    let messages = context.agent.messages();
    let state = context.agent.snapshot();
    let (usage, session) = (state.usage, state.session);
    let count = |role: fn(&Message) -> bool| messages.iter().filter(|m| role(m)).count();
    let tool_calls: usize = messages
        .iter()
        .filter_map(|m| m.as_assistant())
        .map(|a| a.tool_calls().count())
        .sum();
    json!({
        "sessionFile": session.path,
        "sessionId": session.id,
        "userMessages": count(|m| matches!(m, Message::User(_))),
        "assistantMessages": count(|m| matches!(m, Message::Assistant(_))),
        "toolCalls": tool_calls,
        "toolResults": count(|m| matches!(m, Message::ToolResult(_))),
        "totalMessages": messages.len(),
        "tokens": {
            "input": usage.input,
            "output": usage.output,
            "cacheRead": usage.cache_read,
            "cacheWrite": usage.cache_write,
            "total": usage.total_tokens,
        },
        "cost": usage.cost.total,
        "usage": context.agent.usage_report(),
    })
}

/// The text of the last assistant message that has any content (an aborted, empty one is
/// passed over); `null` when there is none or it has no text.
pub(super) fn last_assistant_text(context: &Context) -> Value {
    let messages = context.agent.messages();
    let last = messages.iter().rev().find_map(|m| {
        m.as_assistant()
            .filter(|a| !(a.stop_reason == StopReason::Aborted && a.content.is_empty()))
    });
    let text = last.map(|a| a.text().trim().to_string());
    json!({ "text": text.filter(|t| !t.is_empty()) })
}

pub(super) fn available_models(context: &Context) -> Value {
    let models: Vec<Value> = context
        .agent
        .available_models()
        .iter()
        .map(model_json)
        .collect();
    json!({ "models": models })
}

/// `get_commands`: the custom commands (`source: "prompt"`) and skills (`skill:NAME`,
/// `source: "skill"`) a prompt can start with.
pub(super) fn commands(context: &Context) -> Value {
    let extensions = &context.settings.extensions;
    let commands = extensions.commands.iter().map(|c| {
        json!({
            "name": c.name,
            "description": c.description,
            "argumentHint": c.argument_hint,
            "source": "prompt",
            "location": c.origin.label(),
            "path": c.path.display().to_string(),
        })
    });
    let skills = extensions.skills.iter().map(|s| {
        json!({
            "name": format!("skill:{}", s.name),
            "description": s.description,
            "source": "skill",
            "location": s.origin.label(),
            "path": s.path.display().to_string(),
        })
    });
    json!({ "commands": commands.chain(skills).collect::<Vec<_>>() })
}
