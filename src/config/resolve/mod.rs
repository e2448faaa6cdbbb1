//! `config.toml` and the command line merged into `Settings`, one step per concern, in the
//! order their errors are reported: the provider and model (`model`), the tools (`tools`),
//! limits and retries (`limits`), permission rules and the log level (`rules`), then the
//! tables resolved by their own modules (timeouts, sandbox, MCP servers, hooks, LSP).

mod limits;
pub(super) mod model;
use super::profiles;
mod rules;
mod tools;

pub(super) use model::{model_info, provider_settings};

use super::file::FileConfig;
use super::{ConfigError, Paths, Settings, lsp, sandbox, timeouts};
use crate::cli::Cli;
use std::path::{Path, PathBuf};
use std::sync::Arc;

pub(super) fn resolve(
    cli: &Cli,
    file: FileConfig,
    config_path: &Path,
    paths: Paths,
    cwd: PathBuf,
) -> Result<Settings, ConfigError> {
    let errors = FileErrors { path: config_path };
    let mcp_names: Vec<&str> = file.mcp_servers.keys().map(String::as_str).collect();
    profiles::check(
        &file.profiles,
        |name| file.providers.contains_key(name) || crate::config::builtin::builtin(name).is_some(),
        || model::known_providers(&file),
        &mcp_names,
    )
    .map_err(errors.pair())?;
    let profile_name = match (&cli.profile, &file.profile) {
        (Some(name), _) if !file.profiles.contains_key(name) => {
            return Err(ConfigError::Flag {
                flag: "--profile",
                message: profiles::unknown(name, &file.profiles),
            });
        }
        (None, Some(name)) if !file.profiles.contains_key(name) => {
            return Err(errors.at("profile", profiles::unknown(name, &file.profiles)));
        }
        (given, in_file) => given.clone().or_else(|| in_file.clone()),
    };
    let profile = profile_name
        .as_deref()
        .and_then(|name| file.profiles.get(name).map(|table| (name, table)));
    let chosen = model::resolve(cli, &file, profile, config_path, &errors)?;
    let unprofiled = if file.profiles.is_empty() {
        None
    } else {
        Some(unprofiled(cli, &file, config_path, &errors)?)
    };
    let profile_table = profile.map(|(_, table)| table.clone());
    let profile_sandbox = profile_table.as_ref().and_then(|p| p.sandbox);
    let profile_permissions = profile_table.as_ref().and_then(|p| p.permission_mode);
    let tool_choice = tools::names(cli, &file, &errors)?;
    let limits = limits::limits(cli, &file, &errors)?;
    let tool_settings = tools::settings(cli, &file, &errors)?;
    let permission_rules = rules::permission_rules(&file, config_path, &cwd, &errors)?;
    let log_level = rules::log_level(&file, &errors)?;
    let timeouts = timeouts::from_file(&file).map_err(errors.pair())?;
    let sandbox = sandbox::resolve(
        cli.sandbox.or(profile_sandbox),
        &file.sandbox,
        &cwd,
        &paths.home,
    )
    .map_err(errors.pair())?;
    let checkpoints = limits::checkpoints(&file.checkpoints).map_err(errors.pair())?;
    let agents = limits::agents(&file.agents, tool_choice.task_listed).map_err(errors.pair())?;
    let mut mcp_servers = Vec::new();
    for (name, table) in &file.mcp_servers {
        let server = table
            .resolve(name)
            .map_err(|e| errors.at(e.key, e.message))?;
        if !cli.no_tools {
            mcp_servers.push(server);
        }
    }
    let extensions = Arc::new(crate::extensions::Extensions::load(&paths.home, &cwd));
    let hooks = file.hooks.specs(config_path).map_err(errors.pair())?;
    let project_hooks = crate::extensions::hooks::trust::ProjectHooks::load(&cwd);
    let mut lsp = lsp::resolve(&file.lsp, std::env::var_os("PATH").as_deref(), &cwd)
        .map_err(errors.pair())?;
    lsp.enabled &= !cli.no_tools;
    let (retry, compaction) = (limits::retry(&file), limits::compaction(&file));
    Ok(Settings {
        paths,
        provider: chosen.provider,
        model: chosen.model,
        thinking: cli.thinking.or(file.thinking).unwrap_or_default(),
        permission_mode: cli
            .permission_mode
            .or(profile_permissions)
            .or(file.permission_mode)
            .unwrap_or_default(),
        steering_mode: file.steering_mode.unwrap_or_default(),
        follow_up_mode: file.follow_up_mode.unwrap_or_default(),
        limits,
        retry,
        tool_settings,
        tools: tool_choice.tools,
        ask_user: tool_choice.ask_user_listed,
        system_prompt: cli.system_prompt.clone().or(file.system_prompt),
        append_system_prompt: cli
            .append_system_prompt
            .clone()
            .or(file.append_system_prompt),
        log_level,
        timeouts,
        permission_rules,
        compaction,
        checkpoints,
        providers: file.providers,
        profile: profile_name,
        mcp_selection: profile_table.and_then(|p| p.mcp_servers),
        profiles: file.profiles,
        unprofiled,
        sandboxes: Vec::new(),
        model_from_flags: chosen.model_from_flags,
        overrides: chosen.overrides,
        mcp_servers,
        sandbox,
        config_path: config_path.to_path_buf(),
        proxy: file.proxy,
        serve: file.serve,
        notify: file.notify,
        tui_notify: file.tui.notify.unwrap_or_default(),
        keys: file.keys.bindings(),
        tui_theme: file.tui.theme.clone(),
        tui_status_line: file
            .tui
            .status_line
            .clone()
            .filter(|c| !c.trim().is_empty()),
        tui_editor_mode: file.tui.editor_mode.unwrap_or_default(),
        agents,
        extensions,
        hooks,
        project_hooks,
        lsp,
        cwd,
    })
}

/// What the command line and the file choose without a profile: what a profile switched
/// to later keeps for the keys it leaves out.
fn unprofiled(
    cli: &Cli,
    file: &FileConfig,
    config_path: &Path,
    errors: &FileErrors<'_>,
) -> Result<super::Unprofiled, ConfigError> {
    let chosen = model::resolve(cli, file, None, config_path, errors)?;
    Ok(super::Unprofiled {
        provider: chosen.provider.name,
        model: chosen.model.id,
        permission_mode: cli
            .permission_mode
            .or(file.permission_mode)
            .unwrap_or_default(),
        sandbox: cli.sandbox.or(file.sandbox.mode).unwrap_or_default(),
    })
}

/// Errors that name a key of the config file at `path`.
pub(super) struct FileErrors<'a> {
    path: &'a Path,
}

impl FileErrors<'_> {
    pub fn at(&self, key: impl Into<String>, message: String) -> ConfigError {
        ConfigError::File {
            path: self.path.to_path_buf(),
            key: Some(key.into()),
            message,
        }
    }

    /// `at` for the `(key, message)` pairs the tables' own resolvers return.
    pub fn pair<K: Into<String>>(&self) -> impl Fn((K, String)) -> ConfigError + '_ {
        move |(key, message)| self.at(key, message)
    }
}
