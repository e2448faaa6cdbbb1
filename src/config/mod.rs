//! Settings: `config.toml`, environment and command-line flags, merged once at start-up.
//! Flags override the file, the file overrides built-in defaults. Every mistake a user can
//! make here ends in one line that names the file and key (exit 1) or the flag (exit 2).

mod builtin;
mod directory;
pub mod file;
pub mod lsp;
pub mod mcp_edit;
mod models;
pub mod permissions_edit;
mod sandbox;
mod timeouts;
pub mod web;

use crate::agent::children::TASK_TOOL;
use crate::agent::compaction::CompactionSettings;
use crate::agent::guard::GuardSettings;
use crate::agent::limits::{Limits, RetryPolicy};
use crate::agent::queue::QueueMode;
use crate::cli::Cli;
use crate::llm::catalog;
use crate::llm::model::{ModelCost, ModelInfo};
use crate::llm::provider::ProviderSettings;
use crate::llm::request::ThinkingLevel;
use crate::mcp::config::ServerConfig;
use crate::tools::permission::{PermissionMode, PermissionRules};
use crate::tools::rules::RuleSet;
use crate::tools::{ALL_TOOLS, ToolSettings, Tools};
pub use builtin::BUILTIN_PROVIDERS;
use file::{FileConfig, GuardConfig, ProviderConfig};
pub use models::AvailableModel;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

/// Where the agent keeps its files.
#[derive(Clone, Debug)]
pub struct Paths {
    pub config_file: PathBuf,
    pub sessions_dir: PathBuf,
    /// The checkpoint store (`checkpoints/` beside `sessions/`).
    pub checkpoints_dir: PathBuf,
    pub log_dir: PathBuf,
    /// `AGENT_HOME` or the platform config directory (global AGENTS.md lives here).
    pub home: PathBuf,
}

/// The fully resolved settings of this process.
#[derive(Clone, Debug)]
pub struct Settings {
    pub paths: Paths,
    pub cwd: PathBuf,
    pub provider: ProviderSettings,
    pub model: ModelInfo,
    pub thinking: ThinkingLevel,
    pub permission_mode: PermissionMode,
    pub steering_mode: QueueMode,
    pub follow_up_mode: QueueMode,
    pub limits: Limits,
    pub retry: RetryPolicy,
    pub tool_settings: ToolSettings,
    pub tools: Vec<String>,
    pub system_prompt: Option<String>,
    pub append_system_prompt: Option<String>,
    pub log_level: String,
    /// How long a model request may wait at each stage.
    pub timeouts: crate::llm::timeouts::Timeouts,
    pub permission_rules: PermissionRules,
    pub compaction: CompactionSettings,
    /// `[checkpoints]`: recording the working tree before mutating tool calls.
    pub checkpoints: crate::checkpoint::Settings,
    /// The configured providers, to switch provider or model later.
    pub providers: BTreeMap<String, ProviderConfig>,
    /// Whether the command line chose the provider, model or endpoint (a resumed session's
    /// model is used only when it did not).
    pub model_from_flags: bool,
    /// `--base-url` / `--api-key`, for the provider chosen at start.
    pub overrides: Overrides,
    /// The MCP servers of `[mcp_servers]`, in name order (none with `--no-tools`).
    pub mcp_servers: Vec<ServerConfig>,
    /// The config file read (or that would be: it may not exist), where `/permissions`
    /// writes a rule.
    pub config_path: PathBuf,
    /// `[sandbox]` and `--sandbox`; `tool_settings.sandbox` is what came of it here.
    pub sandbox: crate::sandbox::SandboxConfig,
    /// `[proxy]`, for `agent proxy`.
    pub proxy: file::ProxyConfig,
    /// Custom commands and skills of the project and the user (docs/extensions.md).
    pub extensions: std::sync::Arc<crate::extensions::Extensions>,
    /// The hooks of `[[hooks.EVENT]]`.
    pub hooks: Vec<crate::extensions::hooks::HookSpec>,
    /// The project's own hooks (its settings files), run only if the user trusts them.
    pub project_hooks: Option<crate::extensions::hooks::trust::ProjectHooks>,
    /// `[agents]`: whether the model can start sub-agents, how many at once, how deep.
    pub agents: AgentsConfig,
    /// `[lsp]`: the language servers (none usable with `--no-tools`).
    pub lsp: lsp::LspSettings,
}

/// `[agents]`, resolved.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct AgentsConfig {
    /// Whether the `task` tool is offered (not with `--no-tools`, nor with a tool list
    /// that does not name it).
    pub enabled: bool,
    pub max_parallel: usize,
    pub max_depth: u32,
}

impl Settings {
    /// The provider and model info for `provider`/`model`, from the config and the
    /// built-ins (no command-line overrides).
    pub fn resolve_model(
        &self,
        provider: &str,
        model: &str,
    ) -> Result<(ProviderSettings, ModelInfo), String> {
        let config = self.providers.get(provider);
        let builtin = builtin::builtin(provider);
        if config.is_none() && builtin.is_none() {
            let mut names: Vec<&str> = BUILTIN_PROVIDERS.iter().map(|p| p.name).collect();
            names.extend(
                self.providers
                    .keys()
                    .map(String::as_str)
                    .filter(|n| builtin::builtin(n).is_none()),
            );
            return Err(format!(
                "unknown provider `{provider}` (known: {})",
                names.join(", ")
            ));
        }
        // `--base-url` and `--api-key` stay with the provider they were given for.
        let overrides = if provider == self.overrides.provider {
            self.overrides.clone()
        } else {
            Overrides::default()
        };
        let settings = provider_settings(&overrides, provider, config, builtin)
            .map_err(|(key, message)| format!("`{key}`: {message}"))?;
        Ok((settings, model_info(model, config)))
    }
}

/// Command-line values that override a provider's configuration.
#[derive(Clone, Debug, Default)]
pub struct Overrides {
    /// The provider they were given for.
    provider: String,
    base_url: Option<String>,
    api_key: Option<String>,
}

#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    #[error("{}", file_error(path, key.as_deref(), message))]
    File {
        path: PathBuf,
        key: Option<String>,
        message: String,
    },
    #[error("{flag}: {message}")]
    Flag { flag: &'static str, message: String },
    #[error("{0}")]
    Environment(String),
}

fn file_error(path: &Path, key: Option<&str>, message: &str) -> String {
    match key {
        Some(key) => format!("config error in {}: `{key}`: {message}", path.display()),
        None => format!("config error in {}: {message}", path.display()),
    }
}

impl ConfigError {
    /// 2 for a bad command line, 1 for everything else.
    pub fn exit_code(&self) -> u8 {
        match self {
            ConfigError::Flag { .. } => 2,
            _ => 1,
        }
    }
}

pub fn paths() -> Result<Paths, ConfigError> {
    if let Some(home) = std::env::var_os("AGENT_HOME").filter(|h| !h.is_empty()) {
        let home = PathBuf::from(home);
        return Ok(Paths {
            config_file: home.join("config.toml"),
            sessions_dir: home.join("sessions"),
            checkpoints_dir: home.join("checkpoints"),
            log_dir: home.join("logs"),
            home,
        });
    }
    let dirs = directories::ProjectDirs::from("", "", "agent").ok_or_else(|| {
        ConfigError::Environment(
            "cannot find a home directory for the agent's files: set AGENT_HOME".to_string(),
        )
    })?;
    Ok(Paths {
        config_file: dirs.config_dir().join("config.toml"),
        sessions_dir: dirs.data_dir().join("sessions"),
        checkpoints_dir: dirs.data_dir().join("checkpoints"),
        log_dir: dirs.state_dir().unwrap_or(dirs.data_dir()).join("logs"),
        home: dirs.config_dir().to_path_buf(),
    })
}

/// Read the config file (the default one may be missing) and merge it with the flags.
pub fn load(cli: &Cli) -> Result<Settings, ConfigError> {
    let paths = paths()?;
    let (config_path, file) = match &cli.config {
        Some(path) => {
            let text = std::fs::read_to_string(path).map_err(|e| ConfigError::Flag {
                flag: "--config",
                message: format!("cannot read {}: {e}", path.display()),
            })?;
            (path.clone(), parse_file(path, &text)?)
        }
        None => match std::fs::read_to_string(&paths.config_file) {
            Ok(text) => (
                paths.config_file.clone(),
                parse_file(&paths.config_file, &text)?,
            ),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                (paths.config_file.clone(), FileConfig::default())
            }
            Err(e) => {
                return Err(ConfigError::File {
                    path: paths.config_file.clone(),
                    key: None,
                    message: format!("cannot read it: {e}"),
                });
            }
        },
    };
    let cwd = std::env::current_dir()
        .map_err(|e| ConfigError::Environment(format!("cannot read the working directory: {e}")))?;
    resolve(cli, file, &config_path, paths, cwd)
}

fn parse_file(path: &Path, text: &str) -> Result<FileConfig, ConfigError> {
    file::parse(text).map_err(|(key, message)| ConfigError::File {
        path: path.to_path_buf(),
        key,
        message,
    })
}

fn resolve(
    cli: &Cli,
    file: FileConfig,
    config_path: &Path,
    paths: Paths,
    cwd: PathBuf,
) -> Result<Settings, ConfigError> {
    let file_error = |key: &str, message: String| ConfigError::File {
        path: config_path.to_path_buf(),
        key: Some(key.to_string()),
        message,
    };
    let provider_name = cli
        .provider
        .clone()
        .or_else(|| file.provider.clone())
        .unwrap_or_else(|| "openai".to_string());
    let provider_config = file.providers.get(&provider_name);
    let builtin = builtin::builtin(&provider_name);
    if provider_config.is_none() && builtin.is_none() {
        let message = format!(
            "unknown provider `{provider_name}` ({})",
            known_providers(&file)
        );
        return Err(match cli.provider {
            Some(_) => ConfigError::Flag {
                flag: "--provider",
                message,
            },
            None => file_error("provider", message),
        });
    }
    let overrides = Overrides {
        provider: provider_name.clone(),
        base_url: cli.base_url.clone(),
        api_key: cli.api_key.clone(),
    };
    let provider = provider_settings(&overrides, &provider_name, provider_config, builtin)
        .map_err(|(key, message)| file_error(&key, message))?;

    // The file's model belongs to the file's provider: with another provider on the
    // command line, use that provider's default.
    let file_model = file
        .model
        .clone()
        .filter(|_| cli.provider.is_none() || cli.provider == file.provider);
    let model_id = cli
        .model
        .clone()
        .or(file_model)
        .or_else(|| builtin.and_then(|b| b.default_model).map(String::from))
        .ok_or_else(|| ConfigError::Flag {
            flag: "--model",
            message: format!(
                "provider `{provider_name}` has no default model: pass --model or set `model` in {}",
                config_path.display()
            ),
        })?;
    let model = model_info(&model_id, provider_config);

    // A tool list means that list: the `task` tool too is offered only when named in it.
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
                    .map_err(|m| file_error("tools.enabled", m))?;
                (crate::tools::with_companions(names), task)
            }
            None => (ALL_TOOLS.iter().map(|t| t.to_string()).collect(), true),
        },
    };

    let defaults = Limits::default();
    let limit = |flag: Option<u32>, file: Option<u32>, default: Option<u32>| match flag.or(file) {
        Some(0) => None,
        Some(n) => Some(n),
        None => default,
    };
    let limits = Limits {
        max_turns: limit(cli.max_turns, file.limits.max_turns, defaults.max_turns),
        max_tool_calls: limit(
            cli.max_tool_calls,
            file.limits.max_tool_calls,
            defaults.max_tool_calls,
        ),
        timeout: match cli.timeout.or(file.limits.timeout_secs) {
            Some(0) => None,
            Some(secs) => Some(Duration::from_secs(secs)),
            None => defaults.timeout,
        },
        loop_guard: loop_guard(&file.guard).map_err(|(key, m)| file_error(key, m))?,
        budgets: crate::agent::budget::Budgets {
            run_usd: match cli.max_budget_usd {
                Some(usd) => budget_usd(Some(usd)).map_err(|message| ConfigError::Flag {
                    flag: "--max-budget-usd",
                    message,
                })?,
                None => budget_usd(file.limits.budget_usd)
                    .map_err(|m| file_error("limits.budget_usd", m))?,
            },
            session_usd: budget_usd(file.limits.session_budget_usd)
                .map_err(|m| file_error("limits.session_budget_usd", m))?,
            run_output_tokens: file.limits.max_output_tokens.filter(|n| *n > 0),
        },
    };
    let retry_defaults = RetryPolicy::default();
    let ms =
        |value: Option<u64>, default: Duration| value.map(Duration::from_millis).unwrap_or(default);
    let retry = RetryPolicy {
        max_retries: file.retry.max_retries.unwrap_or(retry_defaults.max_retries),
        initial_delay: ms(file.retry.initial_delay_ms, retry_defaults.initial_delay),
        max_delay: ms(file.retry.max_delay_ms, retry_defaults.max_delay),
        max_retry_delay: ms(
            file.retry.max_retry_delay_ms,
            retry_defaults.max_retry_delay,
        ),
    };
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
            return Err(file_error(
                "tools.bash_timeout_secs",
                "must be at least 1".to_string(),
            ));
        }
        tool_settings.bash_timeout = Duration::from_secs(secs);
    }
    if let Some(execution) = file.tools.execution {
        tool_settings.execution = execution;
    }
    if let Some(max) = file.tools.max_parallel {
        if max == 0 {
            return Err(file_error(
                "tools.max_parallel",
                "must be at least 1".to_string(),
            ));
        }
        tool_settings.max_parallel = max;
    }
    tool_settings.web = web::settings(&file.web).map_err(|(key, why)| file_error(key, why))?;
    if cli.no_tools {
        // No tools at all: the provider's own search neither.
        tool_settings.web.search = None;
    }
    let mut permission_rules = RuleSet::parse(
        &file.permissions.allow,
        &file.permissions.ask,
        &file.permissions.deny,
        &cwd,
    )
    .map_err(|e| file_error(&e.key, e.message))?;
    permission_rules.locate(|kind, index| {
        file.rule_lines
            .line(kind, index)
            .map(|line| format!("{}:{line}", config_path.display()))
    });
    let log_level = std::env::var("RUST_LOG")
        .ok()
        .filter(|v| !v.is_empty())
        .or(file.log_level.clone())
        .unwrap_or_else(|| "info".to_string());
    if tracing_subscriber::EnvFilter::try_new(&log_level).is_err() {
        return Err(file_error(
            "log_level",
            format!("`{log_level}` is not a log level or filter"),
        ));
    }

    let timeouts = timeouts::from_file(&file).map_err(|(key, message)| file_error(key, message))?;
    let compaction_defaults = CompactionSettings::default();
    let compaction = CompactionSettings {
        enabled: file
            .compaction
            .enabled
            .unwrap_or(compaction_defaults.enabled),
        reserve_tokens: file
            .compaction
            .reserve_tokens
            .unwrap_or(compaction_defaults.reserve_tokens),
        keep_recent_tokens: file
            .compaction
            .keep_recent_tokens
            .unwrap_or(compaction_defaults.keep_recent_tokens),
    };
    let sandbox = sandbox::resolve(cli.sandbox, &file.sandbox, &cwd, &paths.home)
        .map_err(|(key, message)| file_error(&key, message))?;
    let checkpoints = checkpoint_settings(&file.checkpoints).map_err(|(k, m)| file_error(k, m))?;
    let agents = agents_settings(&file.agents, task_listed).map_err(|(k, m)| file_error(k, m))?;
    let model_from_flags = cli.provider.is_some() || cli.model.is_some() || cli.base_url.is_some();
    let mut mcp_servers = Vec::new();
    for (name, table) in &file.mcp_servers {
        let server = table
            .resolve(name)
            .map_err(|e| file_error(&e.key, e.message))?;
        if !cli.no_tools {
            mcp_servers.push(server);
        }
    }

    let extensions = std::sync::Arc::new(crate::extensions::Extensions::load(&paths.home, &cwd));
    let hooks = file
        .hooks
        .specs(config_path)
        .map_err(|(key, message)| file_error(&key, message))?;
    let project_hooks = crate::extensions::hooks::trust::ProjectHooks::load(&cwd);
    let mut lsp = lsp::resolve(&file.lsp, std::env::var_os("PATH").as_deref(), &cwd)
        .map_err(|(key, message)| file_error(&key, message))?;
    lsp.enabled &= !cli.no_tools;
    Ok(Settings {
        paths,
        provider,
        model,
        thinking: cli.thinking.or(file.thinking).unwrap_or_default(),
        permission_mode: cli
            .permission_mode
            .or(file.permission_mode)
            .unwrap_or_default(),
        steering_mode: file.steering_mode.unwrap_or_default(),
        follow_up_mode: file.follow_up_mode.unwrap_or_default(),
        limits,
        retry,
        tool_settings,
        tools,
        system_prompt: cli.system_prompt.clone().or(file.system_prompt.clone()),
        append_system_prompt: cli
            .append_system_prompt
            .clone()
            .or(file.append_system_prompt.clone()),
        log_level,
        timeouts,
        permission_rules: PermissionRules {
            rules: permission_rules,
            cwd: cwd.clone(),
        },
        compaction,
        checkpoints,
        providers: file.providers,
        model_from_flags,
        overrides,
        mcp_servers,
        sandbox,
        config_path: config_path.to_path_buf(),
        proxy: file.proxy,
        agents,
        extensions,
        hooks,
        project_hooks,
        lsp,
        cwd,
    })
}

/// `names` without the `task` tool (not a built-in: the engine adds it when sub-agents are
/// on), and whether it was there.
fn without_task(mut names: Vec<String>) -> (Vec<String>, bool) {
    let listed = names.iter().any(|n| n == TASK_TOOL);
    names.retain(|n| n != TASK_TOOL);
    (names, listed)
}

/// `[agents]`; `task_listed`: the tools the model may use include `task` (no tool list, or
/// one that names it; never with `--no-tools`).
fn agents_settings(
    table: &file::AgentsTable,
    task_listed: bool,
) -> Result<AgentsConfig, (&'static str, String)> {
    if table.max_parallel == Some(0) {
        return Err(("agents.max_parallel", "must be at least 1".to_string()));
    }
    Ok(AgentsConfig {
        enabled: table.enabled.unwrap_or(true) && task_listed,
        max_parallel: table.max_parallel.unwrap_or(4),
        max_depth: table.max_depth.unwrap_or(1),
    })
}

fn loop_guard(config: &GuardConfig) -> Result<GuardSettings, (&'static str, String)> {
    let defaults = GuardSettings::default();
    let repeat_threshold = config.repeat_threshold.unwrap_or(defaults.repeat_threshold);
    if repeat_threshold < 2 {
        return Err((
            "guard.repeat_threshold",
            "must be at least 2 (set guard.enabled = false to turn the guard off)".to_string(),
        ));
    }
    Ok(GuardSettings {
        enabled: config.enabled.unwrap_or(defaults.enabled),
        repeat_threshold,
    })
}

fn checkpoint_settings(
    config: &file::CheckpointsConfig,
) -> Result<crate::checkpoint::Settings, (&'static str, String)> {
    let defaults = crate::checkpoint::Settings::default();
    let at_least_one = |key: &'static str, value: Option<u64>| match value {
        Some(0) => Err((key, "must be at least 1".to_string())),
        _ => Ok(()),
    };
    at_least_one("checkpoints.max_file_bytes", config.max_file_bytes)?;
    at_least_one(
        "checkpoints.max_files",
        config
            .max_files
            .map(|n| u64::try_from(n).unwrap_or(u64::MAX)),
    )?;
    at_least_one("checkpoints.keep_days", config.keep_days.map(u64::from))?;
    Ok(crate::checkpoint::Settings {
        enabled: config.enabled.unwrap_or(defaults.enabled),
        max_file_bytes: config.max_file_bytes.unwrap_or(defaults.max_file_bytes),
        max_files: config.max_files.unwrap_or(defaults.max_files),
        keep_days: config.keep_days.unwrap_or(defaults.keep_days),
        ..defaults
    })
}

fn known_providers(file: &FileConfig) -> String {
    let mut names: Vec<&str> = BUILTIN_PROVIDERS.iter().map(|p| p.name).collect();
    names.extend(
        file.providers
            .keys()
            .map(String::as_str)
            .filter(|n| builtin::builtin(n).is_none()),
    );
    format!("known: {}", names.join(", "))
}

/// Merge a configured provider over the built-in one of the same name.
fn provider_settings(
    overrides: &Overrides,
    name: &str,
    config: Option<&ProviderConfig>,
    builtin: Option<&builtin::BuiltinProvider>,
) -> Result<ProviderSettings, (String, String)> {
    let key = |field: &str| format!("providers.{name}.{field}");
    let api = config
        .and_then(|c| c.api)
        .or(builtin.map(|b| b.api))
        .ok_or_else(|| {
            (
                key("api"),
                "missing: set it to \"openai-chat\", \"openai-responses\" or \"anthropic\""
                    .to_string(),
            )
        })?;
    let env_base_url = builtin
        .and_then(|b| b.base_url_env)
        .and_then(|var| std::env::var(var).ok())
        .filter(|v| !v.trim().is_empty());
    let base_url = overrides
        .base_url
        .clone()
        .or_else(|| config.and_then(|c| c.base_url.clone()))
        .or(env_base_url)
        .or(builtin.map(|b| b.base_url.to_string()))
        .ok_or_else(|| {
            (
                key("base_url"),
                "missing: the provider needs a base URL".to_string(),
            )
        })?;
    if !(base_url.starts_with("http://") || base_url.starts_with("https://")) {
        return Err((
            key("base_url"),
            format!("`{base_url}` is not an http:// or https:// URL"),
        ));
    }
    Ok(ProviderSettings {
        name: name.to_string(),
        api,
        base_url,
        api_key: overrides.api_key.clone(),
        api_key_env: config
            .and_then(|c| c.api_key_env.clone())
            .or(builtin.and_then(|b| b.api_key_env).map(String::from)),
        api_key_command: config.and_then(|c| c.api_key_command.clone()),
        headers: config
            .map(|c| {
                c.headers
                    .iter()
                    .map(|(k, v)| (k.clone(), v.clone()))
                    .collect()
            })
            .unwrap_or_default(),
    })
}

/// The catalog's entry for `id` (or the defaults for an unknown model), with every field the
/// config sets for it taking precedence: the model's own entry first, then the provider's.
fn model_info(id: &str, provider: Option<&ProviderConfig>) -> ModelInfo {
    let mut info = catalog::lookup(id).unwrap_or_else(|| ModelInfo::unknown(id));
    let config = provider.and_then(|p| p.models.get(id));
    if let Some(images) = config
        .and_then(|c| c.images)
        .or(provider.and_then(|p| p.images))
    {
        info.images = images;
    }
    if let Some(config) = config {
        info.context_window = config.context_window.unwrap_or(info.context_window);
        info.max_output_tokens = config.max_output_tokens.unwrap_or(info.max_output_tokens);
        info.cost = ModelCost {
            input: config.cost_input.unwrap_or(info.cost.input),
            output: config.cost_output.unwrap_or(info.cost.output),
            cache_read: config.cost_cache_read.unwrap_or(info.cost.cache_read),
            cache_write: config.cost_cache_write.unwrap_or(info.cost.cache_write),
        };
        info.reasoning = config.reasoning.unwrap_or(info.reasoning);
    }
    info
}

/// A dollar budget: positive and finite (0: none).
fn budget_usd(value: Option<f64>) -> Result<Option<f64>, String> {
    match value {
        None => Ok(None),
        Some(0.0) => Ok(None),
        Some(usd) if usd.is_finite() && usd > 0.0 => Ok(Some(usd)),
        Some(usd) => Err(format!(
            "a budget is a positive number of US dollars, not {usd}"
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use file::ModelConfig;

    #[test]
    fn config_entries_override_the_catalog_field_by_field() {
        let known = model_info("claude-haiku-4-5", None);
        assert_eq!(known.max_output_tokens, 64_000);
        assert_eq!(known.cost.input, 1.0);
        let mut provider = ProviderConfig::default();
        provider.models.insert(
            "claude-haiku-4-5".into(),
            ModelConfig {
                max_output_tokens: Some(1000),
                cost_output: Some(7.0),
                ..ModelConfig::default()
            },
        );
        let tuned = model_info("claude-haiku-4-5", Some(&provider));
        assert_eq!(tuned.max_output_tokens, 1000);
        assert_eq!(tuned.cost.output, 7.0);
        assert_eq!(
            tuned.cost.input, 1.0,
            "unset fields keep the catalog's value"
        );
        assert_eq!(tuned.context_window, 200_000);

        let unknown = model_info("qwen3-coder", None);
        assert_eq!(unknown, ModelInfo::unknown("qwen3-coder"));
        assert_eq!(unknown.context_window, 128_000);
        assert_eq!(unknown.cost, ModelCost::default());
    }

    #[test]
    fn image_input_comes_from_the_model_then_the_provider_then_the_catalog() {
        assert!(model_info("gpt-4.1", None).images);
        assert!(!model_info("qwen3-coder", None).images);
        let mut provider = ProviderConfig {
            images: Some(true),
            ..ProviderConfig::default()
        };
        assert!(model_info("qwen2.5-vl", Some(&provider)).images);
        provider.models.insert(
            "qwen3-coder".into(),
            ModelConfig {
                images: Some(false),
                ..ModelConfig::default()
            },
        );
        assert!(!model_info("qwen3-coder", Some(&provider)).images);
        provider.images = Some(false);
        assert!(
            !model_info("gpt-4.1", Some(&provider)).images,
            "a provider that strips images overrides the catalog"
        );
    }
}
