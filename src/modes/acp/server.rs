//! The sessions of one ACP connection: `initialize` (what this agent can do), and opening,
//! loading and closing sessions. Each session is an engine session in the editor's
//! directory — a real session file, resumable from the terminal with `agent -r ID`.

use super::commands;
use super::link::Link;
use super::mcp;
use super::options;
use super::replay;
use super::session::Session;
use crate::config::Settings;
use crate::mcp::McpManager;
use crate::session::Choice;
use crate::startup::{self, Opening};
use agent_client_protocol::schema::ProtocolVersion;
use agent_client_protocol::v1::ConnectionTo;
use agent_client_protocol::v1::schema::{
    AgentCapabilities, AuthMethod, AuthMethodAgent, ClientCapabilities, Implementation,
    InitializeRequest, InitializeResponse, LoadSessionRequest, LoadSessionResponse,
    McpCapabilities, McpServer, NewSessionRequest, NewSessionResponse, NoticeSeverity,
    PromptCapabilities, SessionCapabilities, SessionCloseCapabilities, SessionId,
};
use agent_client_protocol::{Client, Error};
use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::Duration;

/// How long closing waits for a run to end (its tools killed) before leaving it.
const CLOSE_WAIT: Duration = Duration::from_secs(5);

pub struct Server {
    settings: Settings,
    /// The reasoning level came from the command line (a resumed session keeps its own
    /// otherwise).
    thinking_from_flags: bool,
    /// Why no model call could succeed (no API key): sessions are refused until it is fixed.
    unusable: Option<String>,
    client: Mutex<ClientCapabilities>,
    sessions: Mutex<HashMap<SessionId, Arc<Session>>>,
}

impl Server {
    pub fn new(settings: Settings, thinking_from_flags: bool) -> Server {
        let unusable = settings.provider.missing_key();
        Server {
            settings,
            thinking_from_flags,
            unusable,
            client: Mutex::new(ClientCapabilities::default()),
            sessions: Mutex::new(HashMap::new()),
        }
    }

    fn sessions(&self) -> MutexGuard<'_, HashMap<SessionId, Arc<Session>>> {
        self.sessions.lock().unwrap_or_else(PoisonError::into_inner)
    }

    pub fn session(&self, id: &SessionId) -> Result<Arc<Session>, Error> {
        self.sessions().get(id).cloned().ok_or_else(|| {
            agent_client_protocol::v1::schema::Error::session_not_found(id.clone()).into()
        })
    }

    pub fn initialize(&self, request: InitializeRequest) -> InitializeResponse {
        *self.client.lock().unwrap_or_else(PoisonError::into_inner) =
            request.client_capabilities.clone();
        let version = request.protocol_version.min(ProtocolVersion::V1);
        let capabilities = AgentCapabilities::new()
            .load_session(true)
            .prompt_capabilities(PromptCapabilities::new().image(true).embedded_context(true))
            // Stdio MCP servers are always taken; of the others, streamable HTTP (not SSE).
            .mcp_capabilities(McpCapabilities::new().http(true))
            .session_capabilities(
                SessionCapabilities::new().close(SessionCloseCapabilities::new()),
            );
        let auth_methods = match &self.unusable {
            None => Vec::new(),
            Some(why) => vec![AuthMethod::Agent(
                AuthMethodAgent::new("api-key", "API key").description(format!(
                    "{why}, in the environment the editor starts the agent with, or in its config.toml"
                )),
            )],
        };
        InitializeResponse::new(version)
            .agent_capabilities(capabilities)
            .auth_methods(auth_methods)
            .agent_info(
                Implementation::new("agent", env!("CARGO_PKG_VERSION")).title("agent".to_string()),
            )
    }

    /// `authenticate`: nothing can be entered here; the key has to be in the environment.
    pub fn authenticate(&self) -> Result<(), Error> {
        match &self.unusable {
            None => Ok(()),
            Some(why) => Err(super::auth_required(why.clone())),
        }
    }

    fn link(&self, cx: &ConnectionTo<Client>, id: SessionId) -> Link {
        let notices = self
            .client
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .session
            .as_ref()
            .is_some_and(|session| session.notices.is_some());
        Link {
            cx: cx.clone(),
            id,
            notices,
        }
    }

    fn usable(&self) -> Result<(), Error> {
        match &self.unusable {
            None => Ok(()),
            Some(why) => Err(super::auth_required(why.clone())),
        }
    }

    /// The settings for a session in the editor's directory.
    fn settings_for(&self, cwd: PathBuf) -> Result<Settings, Error> {
        let mut settings = self
            .settings
            .for_directory(cwd)
            .map_err(|why| super::invalid_params(format!("cwd: {why}")))?;
        // The session's own language servers, ended with it.
        startup::attach_lsp(&mut settings);
        Ok(settings)
    }

    /// `session/new`: a new session in `cwd`, with its file.
    pub async fn new_session(
        &self,
        request: NewSessionRequest,
        cx: &ConnectionTo<Client>,
    ) -> Result<(NewSessionResponse, Arc<Session>), Error> {
        self.usable()?;
        let settings = self.settings_for(request.cwd)?;
        let opened = startup::open_session(Choice::New, &settings)
            .await
            .map_err(|e| super::internal_error(e.to_string()))?;
        let mut settings = settings;
        let opening = Opening::new(&mut settings, opened, self.thinking_from_flags)
            .await
            .map_err(super::internal_error)?;
        let id = SessionId::new(opening.opened.id.clone());
        let link = self.link(cx, id.clone());
        let session = open(settings, opening, &request.mcp_servers, link)?;
        let state = session.agent.snapshot();
        let response = NewSessionResponse::new(id.clone())
            .modes(options::modes(state.permission_mode))
            .config_options(session.options());
        self.sessions().insert(id, session.clone());
        Ok((response, session))
    }

    /// `session/load`: one of our sessions, by id, in `cwd`; its conversation is replayed
    /// as updates before the answer.
    pub async fn load_session(
        &self,
        request: LoadSessionRequest,
        cx: &ConnectionTo<Client>,
    ) -> Result<(LoadSessionResponse, Arc<Session>), Error> {
        self.usable()?;
        let mut settings = self.settings_for(request.cwd)?;
        let wanted = request.session_id.to_string();
        // Loaded again: the copy open here lets go of the file first.
        let open_here = self.sessions().remove(&request.session_id);
        if let Some(session) = open_here {
            close(&session).await;
        }
        let opened = startup::open_session(Choice::Resume(wanted.clone()), &settings)
            .await
            .map_err(|e| super::invalid_params(e.to_string()))?;
        if opened.id != wanted {
            return Err(super::invalid_params(format!(
                "no session has the id `{wanted}` (it is the beginning of {})",
                opened.id
            )));
        }
        let opening = Opening::new(&mut settings, opened, self.thinking_from_flags)
            .await
            .map_err(super::internal_error)?;
        let messages: Vec<_> = opening
            .opened
            .history
            .iter()
            .map(|(_, m)| m.clone())
            .collect();
        let link = self.link(cx, request.session_id.clone());
        replay::replay(&link, &messages, &settings.cwd);
        let session = open(settings, opening, &request.mcp_servers, link)?;
        let state = session.agent.snapshot();
        let response = LoadSessionResponse::new()
            .modes(options::modes(state.permission_mode))
            .config_options(session.options());
        self.sessions().insert(request.session_id, session.clone());
        Ok((response, session))
    }

    /// After the session's answer: tell its editor what the terminal says on opening the
    /// same session (the sandbox, problems with the project's commands, skills and hooks,
    /// hooks not run because the project is not trusted yet, a session model that cannot be
    /// used), and which commands there are.
    pub fn announce_opening(session: &Session) {
        for notice in session.take_opening_notices() {
            session.link.inform(NoticeSeverity::Warning, &notice);
        }
        session
            .link
            .send(commands::available(&session.settings.extensions));
    }

    /// `session/close`: stop it and let go of its file.
    pub async fn close_session(&self, id: &SessionId) -> Result<(), Error> {
        let session = self.sessions().remove(id);
        match session {
            Some(session) => {
                close(&session).await;
                Ok(())
            }
            None => {
                Err(agent_client_protocol::v1::schema::Error::session_not_found(id.clone()).into())
            }
        }
    }

    /// The editor is gone: stop every session, killing their tools.
    pub async fn shutdown(&self) {
        let sessions: Vec<_> = self.sessions().drain().map(|(_, s)| s).collect();
        futures_util::future::join_all(sessions.iter().map(|s| close(s))).await;
    }
}

async fn close(session: &Session) {
    if tokio::time::timeout(CLOSE_WAIT, session.close())
        .await
        .is_err()
    {
        tracing::warn!("a session's run did not stop in time");
    }
}

/// Build the session's engine on `opening`: its MCP servers (config.toml's and the
/// editor's) started in the background, so the agent offers their tools — servers the
/// editor passed that cannot be used are reported to it — and the session started.
fn open(
    mut settings: Settings,
    opening: Opening,
    given: &[McpServer],
    link: Link,
) -> Result<Arc<Session>, Error> {
    let (servers, notices) = mcp::servers(&settings.mcp_servers, given);
    for notice in notices {
        link.inform(NoticeSeverity::Warning, &notice);
    }
    settings.mcp_servers = servers;
    let manager = McpManager::start(
        settings.mcp_servers.clone(),
        settings.cwd.clone(),
        settings.tool_settings.hidden_env.clone(),
        settings.tool_settings.sandbox.clone(),
    )
    .map_err(super::internal_error)?;
    // An editor cannot be asked to trust the project's hooks: it is told they do not run.
    let notices = opening.notices_without_asking();
    let prepared = opening
        .build(&settings, true, manager)
        .map_err(super::internal_error)?;
    // The user's `notify` command hears of this session's runs too (the watcher lives as
    // long as the engine).
    drop(crate::startup::notify::Notifier::start(
        &prepared.agent,
        settings.notify.as_deref(),
        settings.cwd.clone(),
    ));
    Ok(Session::start(link, prepared, settings, notices))
}
