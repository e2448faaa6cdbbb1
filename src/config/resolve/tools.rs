//! The tools a run offers (`--tools`, `--no-tools`, `[tools] enabled`) and how they run
//! (`[tools]`, `[web]`, the key variables hidden from their environment).

use super::FileErrors;
use crate::cli::Cli;
use crate::config::builtin::BUILTIN_PROVIDERS;
use crate::config::file::FileConfig;
use crate::config::{ConfigError, web};
use crate::tools::{ALL_TOOLS, ASK_USER_TOOL, TASK_TOOL, ToolSettings, Tools};
use std::time::Duration;

/// The engine's own tools a list may name besides the built-ins.
const ENGINE_TOOLS: &[&str] = &[TASK_TOOL, ASK_USER_TOOL];

/// The tool names offered, and whether the list includes the `task` tool (sub-agents) and
/// the `ask_user` tool.
pub(super) struct ToolChoice {
    pub tools: Vec<String>,
    pub task_listed: bool,
    pub ask_user_listed: bool,
}

/// A tool list means that list: the `task` and `ask_user` tools too are offered only when
/// named in it; `--no-tools` offers none at all.
pub(super) fn names(
    cli: &Cli,
    file: &FileConfig,
    errors: &FileErrors<'_>,
) -> Result<ToolChoice, ConfigError> {
    let (tools, task_listed, ask_user_listed) = match (&cli.tools, cli.no_tools) {
        (_, true) => (Vec::new(), false, false),
        (Some(list), false) => {
            let names: Vec<String> = list
                .iter()
                .map(|t| t.trim().to_string())
                .filter(|t| !t.is_empty())
                .collect();
            let (names, task, ask_user) = without_engine_tools(names);
            Tools::check_names(&names, ENGINE_TOOLS).map_err(|message| ConfigError::Flag {
                flag: "--tools",
                message,
            })?;
            (crate::tools::with_companions(names), task, ask_user)
        }
        (None, false) => match &file.tools.enabled {
            Some(list) => {
                let (names, task, ask_user) = without_engine_tools(list.clone());
                Tools::check_names(&names, ENGINE_TOOLS)
                    .map_err(|m| errors.at("tools.enabled", m))?;
                (crate::tools::with_companions(names), task, ask_user)
            }
            None => (
                ALL_TOOLS.iter().map(|t| t.to_string()).collect(),
                true,
                true,
            ),
        },
    };
    Ok(ToolChoice {
        tools,
        task_listed,
        ask_user_listed,
    })
}

/// `names` without the engine's own tools (not built-ins: the engine adds `task` when
/// sub-agents are on, `ask_user` when asked to), and whether each was there.
fn without_engine_tools(mut names: Vec<String>) -> (Vec<String>, bool, bool) {
    let task = names.iter().any(|n| n == TASK_TOOL);
    let ask_user = names.iter().any(|n| n == ASK_USER_TOOL);
    names.retain(|n| !ENGINE_TOOLS.contains(&n.as_str()));
    (names, task, ask_user)
}

/// How tools run.
pub(super) fn settings(
    cli: &Cli,
    file: &FileConfig,
    errors: &FileErrors<'_>,
) -> Result<ToolSettings, ConfigError> {
    let mut hidden_env: Vec<String> = BUILTIN_PROVIDERS
        .iter()
        .filter_map(|p| p.api_key_env.map(String::from))
        .chain(
            file.providers
                .values()
                .filter_map(|p| p.api_key_env.clone()),
        )
        .collect();
    hidden_env.sort();
    hidden_env.dedup();
    let mut tool_settings = ToolSettings {
        hidden_env,
        ..ToolSettings::default()
    };
    if let Some(secs) = file.tools.bash_timeout_secs {
        if secs == 0 {
            return Err(errors.at("tools.bash_timeout_secs", "must be at least 1".to_string()));
        }
        tool_settings.bash_timeout = Duration::from_secs(secs);
    }
    if let Some(execution) = file.tools.execution {
        tool_settings.execution = execution;
    }
    if let Some(max) = file.tools.max_parallel {
        if max == 0 {
            return Err(errors.at("tools.max_parallel", "must be at least 1".to_string()));
        }
        tool_settings.max_parallel = max;
    }
    tool_settings.web = web::settings(&file.web).map_err(errors.pair())?;
    if cli.no_tools {
        // No tools at all: the provider's own search neither.
        tool_settings.web.search = None;
    }
    Ok(tool_settings)
}
