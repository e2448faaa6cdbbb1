//! Settings: `config.toml`, environment and command-line flags, merged once at start-up.
//! Flags override the file, the file overrides built-in defaults. Every mistake a user can
//! make here ends in one line that names the file and key (exit 1) or the flag (exit 2).

mod builtin;
mod directory;
pub mod file;
pub mod keys;
pub mod lsp;
pub mod mcp_edit;
mod models;
pub mod permissions_edit;
pub mod profiles;
mod resolve;
mod sandbox;
mod timeouts;
pub mod tui;
pub mod web;

use crate::agent::compaction::CompactionSettings;
use crate::agent::limits::{Limits, RetryPolicy};
use crate::cli::Cli;
use crate::llm::model::ModelInfo;
use crate::llm::provider::ProviderSettings;
use crate::llm::request::ThinkingLevel;
use crate::mcp::config::ServerConfig;
use crate::protocol::rpc::QueueMode;
use crate::tools::ToolSettings;
use crate::tools::permission::{PermissionMode, PermissionRules};
pub use builtin::BUILTIN_PROVIDERS;
use file::{FileConfig, ProviderConfig};
pub use models::AvailableModel;
use resolve::{model_info, provider_settings, resolve};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

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
    /// Whether the model is offered `ask_user` (not with `--no-tools`, nor with a tool list
    /// that does not name it).
    pub ask_user: bool,
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
    /// The profile in use (`--profile`, the file's `profile`), if any.
    pub profile: Option<String>,
    /// `[profiles]`, to switch between them later (`SetProfile`).
    pub profiles: BTreeMap<String, profiles::ProfileTable>,
    /// What the command line and the file chose below any profile (`None` without
    /// profiles): a profile switched to keeps these for the keys it leaves out.
    pub unprofiled: Option<Unprofiled>,
    /// The `[mcp_servers]` the profile uses (`None`: all).
    pub mcp_selection: Option<Vec<String>>,
    /// The sandbox of every other mode a profile may switch to, found at start while the
    /// process has one thread (`Sandbox::start` forks; main.rs).
    pub sandboxes: Vec<crate::sandbox::Sandbox>,
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
    /// `[serve]`, for `agent serve`.
    pub serve: file::ServeConfig,
    /// `notify`: the command told when a run ends or waits for approval.
    pub notify: Option<Vec<String>>,
    /// `[tui] notify`: how the interface tells you the same while its terminal is not focused.
    pub tui_notify: tui::TuiNotify,
    /// `[keys]`: the key bindings as written, with their lines (the TUI checks them).
    pub keys: Vec<keys::KeyBinding>,
    /// `[tui] theme`: the interface's colours (`None`: auto).
    pub tui_theme: Option<String>,
    /// `[tui] status_line`: the command that writes the status line (`None`: the built-in).
    pub tui_status_line: Option<String>,
    /// `[tui] editor_mode`: the composer's keys (vim or the default ones).
    pub tui_editor_mode: tui::EditorMode,
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

/// The settings a profile can change, as the command line and the file chose them.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Unprofiled {
    pub provider: String,
    pub model: String,
    pub permission_mode: PermissionMode,
    pub sandbox: crate::sandbox::SandboxMode,
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
        let mut settings = provider_settings(&overrides, provider, config, builtin)
            .map_err(|(key, message)| format!("`{key}`: {message}"))?;
        settings.account = self.profile_account(self.profile.as_deref(), provider);
        Ok((settings, model_info(model, config)))
    }

    /// Find out now, for every other sandbox mode a profile may switch to, whether this
    /// machine enforces it (`sandboxes`). Like `Sandbox::start`, call it while the process
    /// has one thread.
    pub fn prepare_profile_sandboxes(&mut self) {
        let Some(base) = &self.unprofiled else {
            return;
        };
        let mut modes: Vec<crate::sandbox::SandboxMode> = self
            .profiles
            .values()
            .filter_map(|profile| profile.sandbox)
            .chain([base.sandbox])
            .filter(|mode| *mode != self.tool_settings.sandbox.mode)
            .collect();
        modes.sort_by_key(|mode| mode.as_str());
        modes.dedup();
        self.sandboxes = modes
            .into_iter()
            .map(|mode| {
                let config = crate::sandbox::SandboxConfig {
                    mode,
                    ..self.sandbox.clone()
                };
                crate::sandbox::Sandbox::start(&config, &self.cwd)
            })
            .collect();
    }

    /// The account `provider` is called with while `profile` is in use: the profile's
    /// `account`, for the profile's provider (a profile naming no provider: for the one
    /// chosen without it); `None`: the provider's default credential.
    pub fn profile_account(&self, profile: Option<&str>, provider: &str) -> Option<String> {
        let profile = self.profiles.get(profile?)?;
        let chosen = match &profile.provider {
            Some(own) => own.as_str(),
            None => &self.unprofiled.as_ref()?.provider,
        };
        profile.account.clone().filter(|_| chosen == provider)
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
/// Why `name` is no provider this configuration knows (neither built in nor a
/// `[providers.NAME]` of `config_file`), naming the known ones; `None` when it is one. For
/// commands that take a provider's name without loading the whole configuration
/// (`agent login`), so a mistyped name is said rather than kept.
pub fn unknown_provider(name: &str, config_file: &Path) -> Option<String> {
    if builtin::builtin(name).is_some() {
        return None;
    }
    let file = std::fs::read_to_string(config_file)
        .ok()
        .and_then(|text| file::parse(&text).ok())
        .unwrap_or_default();
    if file.providers.contains_key(name) {
        return None;
    }
    Some(format!(
        "unknown provider `{name}` ({})",
        resolve::model::known_providers(&file)
    ))
}

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
