//! Front ends without a terminal UI: `-p` (print), `--mode json`, `--mode rpc` and
//! `--mode acp` (an Agent Client Protocol server for editors). They
//! share how the session is opened, how an `Agent` is built from the settings, how the
//! prompt is read, and how signals and output lines are handled.

/// A line on stderr for the user. Unlike `eprintln!`, a stderr that is gone (the terminal
/// hung up) is no panic: the line is dropped and the run still ends as it should. It is one
/// line whatever it quotes (a provider's message over several lines): see `one_line`.
macro_rules! say {
    ($($arg:tt)*) => {{
        use std::io::Write as _;
        let line = format!($($arg)*);
        let _ = writeln!(std::io::stderr().lock(), "{}", $crate::modes::one_line(&line));
    }};
}

/// `text` on one line: each line break (and the blanks around it) becomes one space, so a
/// message quoted from a provider cannot split what a script reads as one line on stderr
/// (the events keep the text as it came).
pub fn one_line(text: &str) -> std::borrow::Cow<'_, str> {
    let is_break = |c: char| {
        matches!(
            c,
            '\n' | '\r' | '\u{0B}' | '\u{0C}' | '\u{85}' | '\u{2028}' | '\u{2029}'
        )
    };
    if !text.contains(is_break) {
        return std::borrow::Cow::Borrowed(text);
    }
    let pieces: Vec<&str> = text
        .split(is_break)
        .map(str::trim)
        .filter(|piece| !piece.is_empty())
        .collect();
    std::borrow::Cow::Owned(pieces.join(" "))
}

pub mod acp;
mod headless;
pub mod json;
mod output;
pub mod print;
pub mod rpc;
mod signals;

use crate::agent::commands::Control;
use crate::agent::{Agent, AgentConfig};
use crate::cli::Cli;
use crate::config::Settings;
use crate::llm::client::Provider;
use crate::mcp::McpManager;
use crate::prompt::system_prompt;
use crate::protocol::command::Command;
use crate::protocol::message::Message;
use crate::protocol::outcome::Outcome;
use crate::session::{self, Choice, SessionWriter};
use crate::tools::Tools;
use std::io::{IsTerminal, Read};
use std::path::PathBuf;
use std::sync::Arc;
use tokio_util::sync::CancellationToken;

/// Which session the agent writes to (reported by the `session` line and `get_state`).
#[derive(Clone, Debug)]
pub struct SessionInfo {
    pub id: String,
    pub path: Option<PathBuf>,
}

/// An agent ready to run, with its session.
pub struct Prepared {
    pub agent: Agent,
    pub session: SessionInfo,
    /// The MCP servers, not started yet: the front end calls `launch` (the interface once
    /// its first frame is drawn); end them with `shut_down` on exit.
    pub mcp: Arc<McpManager>,
    /// One-line notes for the user (a resumed session was repaired, `-c` found nothing...).
    pub notices: Vec<String>,
    /// The project's hooks when the user has not decided about them yet (they do not run;
    /// the interface asks).
    pub untrusted_hooks: Option<crate::extensions::hooks::trust::ProjectHooks>,
}

/// The session the command line asks for.
pub fn session_choice(cli: &Cli) -> Result<Choice, String> {
    Ok(if cli.no_session {
        Choice::Ephemeral
    } else if cli.continue_session {
        Choice::Continue
    } else if let Some(id) = &cli.resume {
        if id.trim().is_empty() {
            return Err(
                "-r without an id picks a session in the interactive interface; here, give an id (a prefix is enough)"
                    .to_string(),
            );
        }
        Choice::Resume(id.clone())
    } else if let Some(path) = &cli.session {
        Choice::Path(path.clone())
    } else {
        Choice::New
    })
}

/// Open the session, settle the model (a resumed session keeps its own unless the command
/// line chose one), and build the agent.
pub async fn prepare(
    cli: &Cli,
    settings: &mut Settings,
    can_ask: bool,
) -> Result<Prepared, String> {
    let choice = session_choice(cli)?;
    let opened = session::open(choice, &settings.paths.sessions_dir, &settings.cwd)
        .await
        .map_err(|e| e.to_string())?;
    let mut notices = opened.notices.clone();
    notices.extend(settings.tool_settings.sandbox.notice());
    notices.extend(settings.extensions.problems.iter().cloned());
    let untrusted_hooks = untrusted_project_hooks(settings);
    if let Some(project) = &settings.project_hooks {
        notices.extend(project.problems.iter().cloned());
    }
    notices.extend(adopt_session_model(settings, &opened, cli.thinking.is_some()).await?);
    attach_lsp(settings);
    // Started by the front end (`McpManager::launch`): the interface waits for its first
    // frame, the others start them at once.
    let mcp = McpManager::configure(
        settings.mcp_servers.clone(),
        settings.cwd.clone(),
        settings.tool_settings.hidden_env.clone(),
        settings.tool_settings.sandbox.clone(),
    )?;
    let agent = build_agent(
        settings,
        can_ask,
        opened.writer,
        opened.history,
        &mcp,
        &opened.id,
    )?;
    Ok(Prepared {
        agent,
        mcp,
        session: SessionInfo {
            id: opened.id,
            path: opened.path,
        },
        notices,
        untrusted_hooks,
    })
}

/// The language servers of `[lsp]` for the settings' working directory, as
/// `tool_settings.lsp` (none with `[lsp] enabled = false` or `--no-tools`); they start on
/// first use. Whoever calls this ends them with `Lsp::shut_down`.
pub fn attach_lsp(settings: &mut Settings) {
    settings.tool_settings.lsp = settings.lsp.enabled.then(|| {
        crate::lsp::Lsp::new(
            settings.lsp.clone(),
            settings.cwd.clone(),
            settings.tool_settings.hidden_env.clone(),
        )
    });
}

/// The project's hooks when the user was never asked about them (or they changed since).
fn untrusted_project_hooks(
    settings: &Settings,
) -> Option<crate::extensions::hooks::trust::ProjectHooks> {
    use crate::extensions::hooks::trust::{Trust, TrustStore};
    let project = settings.project_hooks.as_ref()?;
    let unknown = !project.specs.is_empty()
        && TrustStore::in_home(&settings.paths.home).status(project) == Trust::Unknown;
    unknown.then(|| project.clone())
}

/// What a front end that cannot ask says about a project's hooks it does not run.
pub fn untrusted_hooks_notice(project: &crate::extensions::hooks::trust::ProjectHooks) -> String {
    let files: Vec<String> = project
        .files
        .iter()
        .map(|f| f.display().to_string())
        .collect();
    format!(
        "the project's hooks ({}) are not run: this project is not trusted yet — start `agent` in it interactively to review and trust them",
        files.join(", ")
    )
}

/// The hooks an agent runs: the user's from `config.toml`, and the project's when the user
/// trusted them (as they are now).
pub fn hooks_for(settings: &Settings) -> Arc<crate::extensions::hooks::Hooks> {
    use crate::extensions::hooks::trust::{Trust, TrustStore};
    let mut specs = settings.hooks.clone();
    if let Some(project) = &settings.project_hooks
        && TrustStore::in_home(&settings.paths.home).status(project) == Trust::Trusted
    {
        specs.extend(project.specs.iter().cloned());
    }
    Arc::new(crate::extensions::hooks::Hooks::new(specs, &settings.cwd))
}

/// Settle the model of an opened session: a resumed one keeps the model and reasoning level
/// it last used unless the command line chose them (`thinking_from_flags` for the level);
/// the outcome is noted in the session when it changed. Returns notices for the user.
pub async fn adopt_session_model(
    settings: &mut Settings,
    opened: &session::Opened,
    thinking_from_flags: bool,
) -> Result<Vec<String>, String> {
    let mut notices = Vec::new();
    if !settings.model_from_flags
        && let Some((provider, model)) = &opened.model
        && (provider != &settings.provider.name || model != &settings.model.id)
    {
        match settings.resolve_model(provider, model) {
            Ok((provider_settings, model_info)) => {
                settings.provider = provider_settings;
                settings.model = model_info;
            }
            Err(e) => notices.push(format!(
                "the session used {provider}/{model}, which is not available ({e}); using {}/{}",
                settings.provider.name, settings.model.id
            )),
        }
    }
    if !thinking_from_flags && let Some(thinking) = opened.thinking {
        settings.thinking = thinking;
    }
    if let Some(writer) = &opened.writer {
        let current = (settings.provider.name.clone(), settings.model.id.clone());
        record_model(
            writer,
            &current,
            settings.thinking,
            opened.model.as_ref(),
            opened.thinking,
        )
        .await
        .map_err(|e| e.to_string())?;
    }
    Ok(notices)
}

/// Start over in a new session (kept on disk unless the current one is not), noting the
/// current model in it. Only while idle.
pub async fn start_new_session(
    agent: &Agent,
    settings: &Settings,
    persistent: bool,
) -> Result<SessionInfo, String> {
    start_new_session_unless(agent, settings, persistent, &CancellationToken::new()).await
}

/// `start_new_session` that `cancel` stops: before the switch, nothing has changed (an
/// error says so); after it, only the wait for the old session to be closed is cut short
/// (the closing goes on) and the new session is reported as usual. The engine's
/// `NewSession` (kept on disk when the current session is; `settings` and `persistent`
/// are what the engine knows already).
pub async fn start_new_session_unless(
    agent: &Agent,
    _settings: &Settings,
    _persistent: bool,
    cancel: &CancellationToken,
) -> Result<SessionInfo, String> {
    let control = Control {
        cancel: cancel.clone(),
        progress: None,
    };
    match agent.execute(Command::NewSession, control).await {
        Ok(Outcome::Session { session, .. }) => Ok(SessionInfo {
            id: session.id,
            path: session.path,
        }),
        Ok(other) => Err(format!("internal error: a new session answered {other:?}")),
        Err(error) => Err(error.to_string()),
    }
}

pub use crate::agent::commands::session::record_model;

/// Build the agent the settings describe, for session `session_id`, offering the tools of
/// `mcp`'s servers too.
pub fn build_agent(
    settings: &Settings,
    can_ask: bool,
    session: Option<Arc<SessionWriter>>,
    history: Vec<(String, Arc<Message>)>,
    mcp: &Arc<McpManager>,
    session_id: &str,
) -> Result<Agent, String> {
    let provider =
        Provider::new(settings.provider.clone(), settings.timeouts).map_err(|e| e.to_string())?;
    let mut tools = Tools::from_names(&settings.tools)?;
    // The `lsp` tool, when a language server can run for this workspace.
    if let Some(lsp) = &settings.tool_settings.lsp
        && lsp.available()
        && tools.get(crate::tools::lsp::NAME).is_none()
    {
        tools = tools.with_tool(Arc::new(crate::tools::lsp::LspTool))?;
    }
    let context_files = crate::context_files::load(&settings.paths.home, &settings.cwd);
    let system_prompt = system_prompt(
        settings.system_prompt.as_deref(),
        settings.append_system_prompt.as_deref(),
        &tools.names(),
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
        session,
        checkpoints: open_checkpoints(settings, session_id),
        agents: agents_settings(settings),
        hooks: hooks_for(settings),
        models: Some(Arc::new(crate::startup::models::SettingsModels::new(
            settings.clone(),
        ))),
        extensions: settings.extensions.clone(),
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
    tokio::task::spawn_blocking(move || {
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

/// A custom command's `model` (`provider/model`, or a model of `current_provider`) as the
/// provider to call it with.
pub fn command_model(
    settings: &Settings,
    current_provider: &str,
    model: &str,
) -> Result<(Arc<Provider>, crate::llm::model::ModelInfo), String> {
    let resolved = match model.split_once('/') {
        Some((provider, id)) if settings.resolve_model(provider, id).is_ok() => {
            settings.resolve_model(provider, id)
        }
        _ => settings.resolve_model(current_provider, model),
    }
    .map_err(|e| format!("the command's model `{model}`: {e}"))?;
    let provider = Provider::new(resolved.0, settings.timeouts).map_err(|e| e.to_string())?;
    Ok((Arc::new(provider), resolved.1))
}

/// A `-p` / `--mode json` prompt that starts with `/name`: the custom command or skill
/// expanded, its `model` made the model of this run. `Err`: an unknown name (listing the
/// known ones) or a model that cannot be used — nothing is sent to the model then.
pub fn expand_headless_prompt(settings: &mut Settings, prompt: String) -> Result<String, String> {
    use crate::extensions::Invocation;
    match settings.extensions.invoke(&prompt) {
        Invocation::Text(text) => Ok(text),
        Invocation::Unknown(why) => Err(why),
        Invocation::Prompt { text, model, .. } => {
            if let Some(model) = model {
                let provider = settings.provider.name.clone();
                let resolved = match model.split_once('/') {
                    Some((p, id)) if settings.resolve_model(p, id).is_ok() => {
                        settings.resolve_model(p, id)
                    }
                    _ => settings.resolve_model(&provider, &model),
                }
                .map_err(|e| format!("the command's model `{model}`: {e}"))?;
                settings.provider = resolved.0;
                settings.model = resolved.1;
                // A resumed session's own model does not override the command's.
                settings.model_from_flags = true;
            }
            Ok(text)
        }
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn a_message_over_several_lines_is_folded_into_one() {
        assert_eq!(super::one_line("plain"), "plain");
        assert_eq!(
            super::one_line("agent: error: upstream said:\n  line two\r\n\nline three\n"),
            "agent: error: upstream said: line two line three"
        );
    }
}
