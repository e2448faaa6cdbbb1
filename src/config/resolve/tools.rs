//! The tools a run offers (`--tools`, `--no-tools`, `[tools] enabled`) and how they run
//! (`[tools]`, `[web]`, the key variables hidden from their environment).

use super::FileErrors;
use crate::cli::Cli;
use crate::config::builtin::BUILTIN_PROVIDERS;
use crate::config::file::FileConfig;
use crate::config::{ConfigError, web};
use crate::tools::{ALL_TOOLS, TASK_TOOL, ToolSettings, Tools};
use std::time::Duration;

/// The tool names offered, and whether the list includes the `task` tool (sub-agents).
pub(super) struct ToolChoice {
    pub tools: Vec<String>,
    pub task_listed: bool,
}

/// A tool list means that list: the `task` tool too is offered only when named in it.
pub(super) fn names(
    cli: &Cli,
    file: &FileConfig,
    errors: &FileErrors<'_>,
) -> Result<ToolChoice, ConfigError> {
    let (tools, task_listed) = match (&cli.tools, cli.no_tools) {
        (_, true) => (Vec::new(), false),
        (Some(list), false) => {
            let names: Vec<String> = list
                .iter()
                .map(|t| t.trim().to_string())
                .filter(|t| !t.is_empty())
                .collect();
            let (names, task) = without_task(names);
            Tools::check_names(&names, &[TASK_TOOL]).map_err(|message| ConfigError::Flag {
                flag: "--tools",
                message,
            })?;
            (crate::tools::with_companions(names), task)
        }
        (None, false) => match &file.tools.enabled {
            Some(list) => {
                let (names, task) = without_task(list.clone());
                Tools::check_names(&names, &[TASK_TOOL])
                    .map_err(|m| errors.at("tools.enabled", m))?;
                (crate::tools::with_companions(names), task)
            }
            None => (ALL_TOOLS.iter().map(|t| t.to_string()).collect(), true),
        },
    };
    Ok(ToolChoice { tools, task_listed })
}

/// `names` without the `task` tool (not a built-in: the engine adds it when sub-agents are
/// on), and whether it was there.
fn without_task(mut names: Vec<String>) -> (Vec<String>, bool) {
    let listed = names.iter().any(|n| n == TASK_TOOL);
    names.retain(|n| n != TASK_TOOL);
    (names, listed)
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
