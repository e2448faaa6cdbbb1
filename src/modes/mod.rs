//! Front ends without a terminal UI: `-p` (print), `--mode json` and `--mode rpc`. They
//! share how an `Agent` is built from the settings, how the prompt is read, and how
//! signals and output lines are handled.

mod headless;
pub mod json;
mod output;
pub mod print;
pub mod rpc;
mod signals;

use crate::agent::{Agent, AgentConfig};
use crate::cli::Cli;
use crate::config::Settings;
use crate::llm::client::Provider;
use crate::prompt::system_prompt;
use crate::tools::Tools;
use std::io::{IsTerminal, Read};
use std::path::PathBuf;
use std::sync::Arc;

/// Which session the agent writes to (reported by the `session` line and `get_state`).
#[derive(Clone, Debug)]
pub struct SessionInfo {
    pub id: String,
    pub path: Option<PathBuf>,
}

impl SessionInfo {
    /// A session that is not kept on disk.
    pub fn ephemeral() -> Self {
        SessionInfo {
            id: new_session_id(),
            path: None,
        }
    }
}

/// A time-ordered unique id: milliseconds since the epoch and 48 random bits, in hex.
pub fn new_session_id() -> String {
    format!(
        "{:012x}{:012x}",
        crate::agent::message::now_millis(),
        fastrand::u64(..1 << 48)
    )
}

/// Build the agent the settings describe.
pub fn build_agent(settings: &Settings, can_ask: bool) -> Result<Agent, String> {
    let provider = Provider::new(settings.provider.clone(), settings.stream_idle_timeout)
        .map_err(|e| e.to_string())?;
    let tools = Tools::from_names(&settings.tools)?;
    let system_prompt = system_prompt(
        settings.system_prompt.as_deref(),
        settings.append_system_prompt.as_deref(),
        &tools.names(),
        &settings.cwd,
    );
    Ok(Agent::new(AgentConfig {
        provider: Arc::new(provider),
        model: settings.model.clone(),
        thinking: settings.thinking,
        system_prompt,
        tools,
        tool_settings: settings.tool_settings.clone(),
        permission_mode: settings.permission_mode,
        permission_rules: settings.permission_rules.clone(),
        can_ask,
        limits: settings.limits.clone(),
        retry: settings.retry.clone(),
        steering_mode: settings.steering_mode,
        follow_up_mode: settings.follow_up_mode,
        cwd: settings.cwd.clone(),
        history: Vec::new(),
    }))
}

/// The prompt of `-p` / `--mode json`: the PROMPT words, or stdin for `-` or when stdin is
/// piped and no PROMPT was given. `Err` is a usage error.
pub fn read_prompt(cli: &Cli) -> Result<String, String> {
    let from_args = cli.prompt.join(" ");
    let use_stdin =
        from_args == "-" || (from_args.trim().is_empty() && !std::io::stdin().is_terminal());
    let prompt = if use_stdin {
        let mut text = String::new();
        std::io::stdin()
            .read_to_string(&mut text)
            .map_err(|e| format!("cannot read the prompt from stdin: {e}"))?;
        text
    } else {
        from_args
    };
    if prompt.trim().is_empty() {
        return Err("no prompt: give one as an argument, or pipe it on stdin".to_string());
    }
    Ok(prompt)
}
