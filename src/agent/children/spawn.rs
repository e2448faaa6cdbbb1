//! Building a child agent from its parent: the parent's provider and model (unless the
//! definition names another), its tools as the definition allows (never `task` unless the
//! depth allows it), its permission mode and rules, limits and working directory; a fresh
//! context with the definition's system prompt; its own session file beside the parent's,
//! whose header links back to the parent session and the `task` call.

use super::AgentsSettings;
use super::definitions::AgentDefinition;
use crate::agent::AgentConfig;
use crate::agent::state::{Shared, lock};
use crate::session::SessionWriter;
use crate::session::format::{Header, NewEntry};
use crate::tools::Tool;
use crate::tools::permission::PermissionRules;
use crate::tools::source::ToolSource;
use futures_util::future::BoxFuture;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use tokio_util::sync::CancellationToken;

/// A child's session: its writer, id and file.
pub struct ChildSession {
    pub writer: Arc<SessionWriter>,
    pub id: String,
    pub path: PathBuf,
}

/// The configuration of a child of `parent` running `definition`.
pub fn child_config(
    parent: &Arc<Shared>,
    settings: &AgentsSettings,
    definition: &AgentDefinition,
) -> Result<AgentConfig, String> {
    let run = parent.settings();
    let (provider, model) = match &definition.model {
        None => (run.provider.clone(), run.model.clone()),
        Some(name) => {
            let models = parent.models.as_ref().ok_or_else(|| {
                format!(
                    "the agent `{}` names the model `{name}`, but models cannot be chosen here",
                    definition.name
                )
            })?;
            crate::agent::commands::models::choose(
                name,
                &run.provider.settings().name,
                models.as_ref(),
            )
            .map_err(|e| {
                format!(
                    "the agent `{}` names the model `{name}`: {e}",
                    definition.name
                )
            })?
        }
    };
    let allowed = |name: &str| {
        name != super::TASK_TOOL
            && name != crate::agent::goal::TOOL
            // Each agent has its own, bound to it (its questions are relayed).
            && name != crate::agent::ask_user::TOOL
            && definition
                .tools
                .as_ref()
                .is_none_or(|tools| tools.iter().any(|t| t == name))
    };
    if let Some(names) = &definition.tools {
        let known: Vec<String> = run.tools.names().into_iter().map(str::to_string).collect();
        let mcp = crate::tools::source::MCP_TOOL_PREFIX;
        if let Some(unknown) = names
            .iter()
            .find(|n| !known.contains(n) && !n.starts_with(mcp))
        {
            return Err(format!(
                "the agent `{}` lists the tool `{unknown}`, which is not enabled (enabled: {})",
                definition.name,
                known.join(", ")
            ));
        }
    }
    let tools = run.base_tools.only(allowed);
    // The child asks the user only where its parent may, and only when its definition
    // does not leave the tool out.
    let ask_user = run.base_tools.get(crate::agent::ask_user::TOOL).is_some()
        && definition
            .tools
            .as_ref()
            .is_none_or(|tools| tools.iter().any(|t| t == crate::agent::ask_user::TOOL));
    let tool_source = run
        .tool_source
        .clone()
        .map(|source| match &definition.tools {
            None => source,
            Some(names) => Arc::new(Filtered {
                inner: source,
                names: names.clone(),
            }) as Arc<dyn ToolSource>,
        });
    let (permission_mode, permission_rules, can_ask, steering_mode, follow_up_mode) = {
        let state = lock(&parent.state);
        let permissions = &state.permissions;
        (
            permissions.mode,
            PermissionRules {
                rules: permissions.rules().clone(),
                cwd: permissions.cwd().to_path_buf(),
            },
            state.can_ask,
            state.steering.mode,
            state.follow_up.mode,
        )
    };
    let agents = AgentsSettings {
        depth: settings.depth.saturating_add(1),
        ..settings.clone()
    };
    let mut offered = tools.names();
    offered.extend(crate::agent::added_tool_names(Some(&agents), ask_user));
    let system_prompt = format!(
        "{}\n\nWorking directory: {}\nTools: {}",
        definition.prompt,
        run.cwd.display(),
        offered.join(", ")
    );
    Ok(AgentConfig {
        provider,
        model,
        thinking: run.thinking,
        system_prompt,
        tools,
        ask_user,
        tool_source,
        tool_settings: crate::tools::ToolSettings::clone(&run.tool_settings),
        permission_mode,
        permission_rules,
        can_ask,
        // The child spends from its parent's budgets (linked when it starts), not from
        // copies of them.
        limits: crate::agent::limits::Limits {
            budgets: Default::default(),
            ..run.limits.clone()
        },
        retry: run.retry.clone(),
        steering_mode,
        follow_up_mode,
        compaction: run.compaction.clone(),
        cwd: run.cwd.clone(),
        history: Vec::new(),
        cold: None,
        session: None,
        // The parent's checkpoints belong to the parent's session.
        checkpoints: None,
        // The user's hooks hold for a sub-agent's tool calls and prompts as for the parent's.
        hooks: parent.hooks.clone(),
        models: parent.models.clone(),
        profile: run.profile.clone(),
        extensions: Default::default(),
        session_id: None,
        sessions_dir: None,
        agents: Some(agents),
    })
}

/// Where a child of the session at `parent` keeps its file: `<parent>.agents/`, so that
/// children are not listed (or continued with `-c`) as sessions of their own.
pub fn child_session_path(parent: &Path, id: &str) -> PathBuf {
    let name = parent.file_name().unwrap_or(parent.as_os_str());
    let name = name.to_string_lossy();
    let stem = name.strip_suffix(".jsonl").unwrap_or(&name);
    let millis = crate::protocol::message::now_millis();
    parent
        .with_file_name(format!("{stem}.agents"))
        .join(format!("{}_{id}.jsonl", crate::time::file_stamp(millis)))
}

/// A session for a child of the parent's session (none when the parent keeps none).
pub async fn child_session(
    parent: &Arc<Shared>,
    tool_call_id: &str,
    provider: &str,
    model: &str,
) -> Result<Option<ChildSession>, String> {
    let Some(parent_session) = parent.session() else {
        return Ok(None);
    };
    let id = crate::session::new_id();
    let path = child_session_path(parent_session.path(), &id);
    let cwd = parent.settings().cwd.to_string_lossy().to_string();
    let mut header = Header::new(&id, &cwd, crate::protocol::message::now_millis());
    header.parent_session = Some(parent_session.id().to_string());
    header.parent_tool_call_id = Some(tool_call_id.to_string());
    let writer = SessionWriter::create(&path, &header).map_err(|e| e.to_string())?;
    writer
        .append(NewEntry::ModelChange { provider, model })
        .await
        .map_err(|e| e.to_string())?;
    Ok(Some(ChildSession {
        writer: Arc::new(writer),
        id,
        path,
    }))
}

/// A tool source offering only the named tools (a definition's `tools` list).
struct Filtered {
    inner: Arc<dyn ToolSource>,
    names: Vec<String>,
}

impl ToolSource for Filtered {
    fn generation(&self) -> u64 {
        self.inner.generation()
    }

    fn tools(&self) -> Vec<Arc<dyn Tool>> {
        self.inner
            .tools()
            .into_iter()
            .filter(|t| self.names.iter().any(|n| n == t.name()))
            .collect()
    }

    fn settle<'a>(&'a self, cancel: &'a CancellationToken) -> BoxFuture<'a, Vec<String>> {
        self.inner.settle(cancel)
    }

    fn catch_up<'a>(&'a self, cancel: &'a CancellationToken) -> BoxFuture<'a, ()> {
        self.inner.catch_up(cancel)
    }
}
