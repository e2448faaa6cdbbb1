//! The engine built from the settings: its provider, tools (with the language-server tool
//! when one can run), system prompt, hooks, sub-agents, checkpoints and the models it can
//! switch to.

use super::hooks::hooks_for;
use crate::agent::{Agent, AgentConfig};
use crate::config::Settings;
use crate::llm::client::Provider;
use crate::mcp::McpManager;
use crate::prompt::system_prompt;
use crate::protocol::message::Message;
use crate::session::SessionWriter;
use crate::tools::Tools;
use std::sync::Arc;

/// Build the agent the settings describe, for session `session_id`, offering the tools of
/// `mcp`'s servers too.
pub fn build_agent(
    settings: &Settings,
    can_ask: bool,
    session: Option<Arc<SessionWriter>>,
    history: Vec<(String, Arc<Message>)>,
    cold: Option<crate::session::cold::ColdPart>,
    mcp: &Arc<McpManager>,
    session_id: &str,
) -> Result<Agent, String> {
    let provider =
        Provider::new(settings.provider.clone(), settings.timeouts).map_err(|e| e.to_string())?;
    let tools = Tools::from_names(&settings.tools)?;
    // The `lsp` tool, when a language server can run for this workspace.
    #[cfg(feature = "lsp")]
    let tools = match &settings.tool_settings.lsp {
        Some(lsp) if lsp.available() && tools.get(crate::tools::lsp::NAME).is_none() => {
            tools.with_tool(Arc::new(crate::tools::lsp::LspTool))?
        }
        _ => tools,
    };
    let context_files = crate::context_files::load(&settings.paths.home, &settings.cwd);
    let agents = agents_settings(settings);
    let mut offered = tools.names();
    offered.extend(crate::agent::added_tool_names(
        agents.as_ref(),
        settings.ask_user,
    ));
    let system_prompt = system_prompt(
        settings.system_prompt.as_deref(),
        settings.append_system_prompt.as_deref(),
        &offered,
        &settings.cwd,
        &context_files,
        &settings.extensions.skills,
    );
    Ok(Agent::new(AgentConfig {
        provider: Arc::new(provider),
        model: settings.model.clone(),
        thinking: settings.thinking,
        system_prompt,
        tools,
        ask_user: settings.ask_user,
        tool_source: (!settings.mcp_servers.is_empty())
            .then(|| mcp.clone() as Arc<dyn crate::tools::source::ToolSource>),
        tool_settings: settings.tool_settings.clone(),
        permission_mode: settings.permission_mode,
        permission_rules: settings.permission_rules.clone(),
        can_ask,
        limits: settings.limits.clone(),
        retry: settings.retry.clone(),
        steering_mode: settings.steering_mode,
        follow_up_mode: settings.follow_up_mode,
        compaction: settings.compaction.clone(),
        cwd: settings.cwd.clone(),
        history,
        cold,
        session,
        checkpoints: open_checkpoints(settings, session_id),
        agents,
        hooks: hooks_for(settings),
        models: Some(Arc::new(super::models::SettingsModels::new(
            settings.clone(),
        ))),
        extensions: settings.extensions.clone(),
        profile: settings.profile.clone(),
        session_id: Some(session_id.to_string()),
        sessions_dir: Some(settings.paths.sessions_dir.clone()),
    }))
}

/// The sub-agents of `[agents]`: the definitions of `.agent/agents/` and
/// `$AGENT_HOME/agents/` (a file that cannot be read is logged and left out). A
/// definition's model is chosen among the configured providers (`AgentConfig.models`).
fn agents_settings(settings: &Settings) -> Option<crate::agent::children::AgentsSettings> {
    use crate::agent::children::{AgentsSettings, definitions};
    if !settings.agents.enabled {
        return None;
    }
    let dirs = [
        settings.cwd.join(".agent").join("agents"),
        settings.paths.home.join("agents"),
    ];
    let (definitions, warnings) = definitions::load(&dirs);
    for warning in warnings {
        tracing::warn!(%warning, "agent definition left out");
    }
    Some(AgentsSettings {
        definitions,
        max_parallel: settings.agents.max_parallel,
        max_depth: settings.agents.max_depth,
        depth: 0,
    })
}

/// The working directory's checkpoints (`None` when `[checkpoints] enabled = false`);
/// what is older than `keep_days` is cleaned up in the background, at most once a day.
fn open_checkpoints(
    settings: &Settings,
    session_id: &str,
) -> Option<Arc<crate::checkpoint::Checkpoints>> {
    let config = &settings.checkpoints;
    if !config.enabled {
        return None;
    }
    let root = settings.paths.checkpoints_dir.clone();
    let keep_days = config.keep_days;
    let cleanup_root = root.clone();
    crate::tasks::spawn_blocking(move || {
        if let Err(error) = crate::checkpoint::gc::run_if_due(&cleanup_root, keep_days) {
            tracing::warn!(%error, "checkpoint clean-up failed");
        }
    });
    // The agent's own files are never part of a checkpoint, even inside the workspace.
    let exclude = vec![
        settings.paths.home.clone(),
        settings.paths.sessions_dir.clone(),
        settings.paths.log_dir.clone(),
    ];
    Some(Arc::new(crate::checkpoint::Checkpoints::open(
        &root,
        &settings.cwd,
        config,
        exclude,
        session_id,
    )))
}
