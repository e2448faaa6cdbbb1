//! Start-up: what opens the configuration's session, provider and engine for any front end
//! (the interface, `-p`, `--mode json`, `--mode rpc`, and each session an editor opens over
//! `--mode acp`). `prepare` does it all for the command line; `Opening` is the part every
//! front end shares once a session file is open — the notices the user is owed, the
//! project's hooks not trusted yet, the session's own model — and builds the engine. The
//! engine's `Models` over the configuration live in `models`.

pub mod agent;
pub mod hooks;
pub mod models;
pub mod notify;
pub mod server;
mod session;

use crate::agent::Agent;
use crate::cli::Cli;
use crate::config::Settings;
use crate::extensions::hooks::trust::ProjectHooks;
use crate::mcp::McpManager;
use crate::session::{self as store, Choice};
use std::path::PathBuf;
use std::sync::Arc;

pub use agent::build_agent;
pub use hooks::{hooks_for, untrusted_hooks_notice};
pub use session::adopt_session_model;

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
    pub untrusted_hooks: Option<ProjectHooks>,
}

/// A session file opened for a front end, its model settled, before the engine is built.
pub struct Opening {
    pub opened: store::Opened,
    /// What the user is told on opening, in this order: the session file's own notes
    /// (repaired, `-c` found nothing), the sandbox, problems with the custom commands and
    /// skills, problems with the project's hooks, a session model that cannot be used.
    pub notices: Vec<String>,
    /// The project's hooks when the user has not decided about them yet (they do not run).
    pub untrusted_hooks: Option<ProjectHooks>,
}

impl Opening {
    /// Gather what the user is owed about `opened` and the settings, and settle the model: a
    /// resumed session keeps the model and reasoning level it last used unless the command
    /// line chose them (`thinking_from_flags` for the level).
    pub async fn new(
        settings: &mut Settings,
        opened: store::Opened,
        thinking_from_flags: bool,
    ) -> Result<Opening, String> {
        let mut notices = opened.notices.clone();
        notices.extend(settings.tool_settings.sandbox.notice());
        notices.extend(settings.extensions.problems.iter().cloned());
        let untrusted_hooks = hooks::untrusted_project_hooks(settings);
        if let Some(project) = &settings.project_hooks {
            notices.extend(project.problems.iter().cloned());
        }
        notices.extend(adopt_session_model(settings, &opened, thinking_from_flags).await?);
        Ok(Opening {
            opened,
            notices,
            untrusted_hooks,
        })
    }

    /// The notices of a front end that cannot ask the user about the project's hooks: the
    /// opening's, and that the untrusted hooks are not run.
    pub fn notices_without_asking(&self) -> Vec<String> {
        let mut notices = self.notices.clone();
        notices.extend(self.untrusted_hooks.as_ref().map(untrusted_hooks_notice));
        notices
    }

    /// Build the engine the settings describe on this session, offering the tools of
    /// `mcp`'s servers too.
    pub fn build(
        self,
        settings: &Settings,
        can_ask: bool,
        mcp: Arc<McpManager>,
    ) -> Result<Prepared, String> {
        let session = SessionInfo {
            id: self.opened.id.clone(),
            path: self.opened.path.clone(),
        };
        let agent = build_agent(
            settings,
            can_ask,
            self.opened.writer,
            self.opened.history,
            self.opened.cold,
            &mcp,
            &session.id,
        )?;
        Ok(Prepared {
            agent,
            session,
            mcp,
            notices: self.notices,
            untrusted_hooks: self.untrusted_hooks,
        })
    }
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

/// Open (or create) the session `choice` names, in the settings' session store and for their
/// working directory; lazily (`session::cold`): the engine `Opening::build` makes takes
/// the older part of a long context as it is.
pub async fn open_session(
    choice: Choice,
    settings: &Settings,
) -> Result<store::Opened, store::SessionError> {
    store::open_lazy(choice, &settings.paths.sessions_dir, &settings.cwd).await
}

/// Open the session the command line asks for, settle the model (a resumed session keeps
/// its own unless the command line chose one), and build the agent.
pub async fn prepare(
    cli: &Cli,
    settings: &mut Settings,
    can_ask: bool,
) -> Result<Prepared, String> {
    let choice = session_choice(cli)?;
    prepare_choice(choice, settings, can_ask, cli.thinking.is_some()).await
}

/// `prepare` for a session chosen otherwise than by the command line (`agent serve`
/// starts and resumes sessions on request); `thinking_from_flags`: the reasoning level was
/// chosen on the command line.
pub async fn prepare_choice(
    choice: Choice,
    settings: &mut Settings,
    can_ask: bool,
    thinking_from_flags: bool,
) -> Result<Prepared, String> {
    // Lazily: the engine built below takes a cold part (`session::cold`).
    let opened = store::open_lazy(choice, &settings.paths.sessions_dir, &settings.cwd)
        .await
        .map_err(|e| e.to_string())?;
    let opening = Opening::new(settings, opened, thinking_from_flags).await?;
    attach_lsp(settings);
    // Started by the front end (`McpManager::launch`): the interface waits for its first
    // frame, the others start them at once.
    let mcp = McpManager::configure(
        settings.mcp_servers.clone(),
        settings.cwd.clone(),
        settings.tool_settings.hidden_env.clone(),
        settings.tool_settings.sandbox.clone(),
    )?;
    // A profile's `mcp_servers`: only those start.
    crate::tools::source::ToolSource::select(&*mcp, settings.mcp_selection.as_deref());
    opening.build(settings, can_ask, mcp)
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
