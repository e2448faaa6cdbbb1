//! The sessions `agent serve` keeps running with no terminal attached: each is built as
//! the command line would build it (its config, a new or resumed session), served live on
//! its socket like any running agent's (so `agent attach` and the HTTP routes reach it the
//! same way), and runs until it is closed or the server stops.

use super::super::client::LiveClient;
use super::super::server::{LiveServer, serve};
use crate::agent::Agent;
use crate::config::Settings;
use crate::mcp::McpManager;
use crate::session::Choice;
use serde_json::{Value, json};
use std::path::PathBuf;
use std::sync::Arc;
use tokio::sync::Mutex;

struct Hosted {
    agent: Agent,
    notifier: Option<crate::startup::notify::Notifier>,
    live: LiveServer,
    mcp: Arc<McpManager>,
    lsp: Option<Arc<crate::lsp::Lsp>>,
}

pub struct Host {
    settings: Settings,
    sessions: Mutex<Vec<Hosted>>,
}

impl Host {
    pub fn new(settings: Settings) -> Host {
        Host {
            settings,
            sessions: Mutex::default(),
        }
    }

    /// Start a session (a new one, or `resume`d by id), send it `prompt` when given: its
    /// id and socket.
    pub async fn start(
        &self,
        resume: Option<String>,
        prompt: Option<String>,
    ) -> Result<(String, PathBuf), String> {
        let mut settings = self.settings.clone();
        let choice = match resume {
            Some(id) => Choice::Resume(id),
            None => Choice::New,
        };
        let prepared = crate::startup::prepare_choice(choice, &mut settings, true, false).await?;
        let mcp = prepared.mcp.clone();
        mcp.launch();
        prepared.agent.count_earlier();
        let live = serve(&prepared.agent, &settings, mcp.clone()).map_err(|e| e.to_string())?;
        let notifier = crate::startup::notify::Notifier::start(
            &prepared.agent,
            settings.notify.as_deref(),
            settings.cwd.clone(),
        );
        let id = prepared.agent.snapshot().session.id;
        let socket = live.path();
        if let Some(prompt) = prompt {
            let (client, _events) = LiveClient::connect(&socket)
                .await
                .map_err(|e| e.to_string())?;
            client
                .request(json!({"type": "prompt", "message": prompt}))
                .await
                .map_err(|e| e.to_string())?;
        }
        self.sessions.lock().await.push(Hosted {
            agent: prepared.agent,
            notifier,
            live,
            mcp,
            lsp: settings.tool_settings.lsp.clone(),
        });
        Ok((id, socket))
    }

    /// The sessions hosted here: `{id, state, model, isStreaming, sessionFile}`.
    pub async fn list(&self) -> Vec<Value> {
        self.sessions
            .lock()
            .await
            .iter()
            .map(|hosted| {
                let state = hosted.agent.snapshot();
                json!({
                    "id": state.session.id,
                    "state": state.state.as_str(),
                    "model": state.model,
                    "isStreaming": state.is_running,
                    "sessionFile": state.session.path,
                })
            })
            .collect()
    }

    /// Stop hosting session `id` (its run is aborted, its clients told): whether it was
    /// hosted here.
    pub async fn close(&self, id: &str) -> bool {
        let hosted = {
            let mut sessions = self.sessions.lock().await;
            let Some(at) = sessions
                .iter()
                .position(|h| h.agent.snapshot().session.id == id)
            else {
                return false;
            };
            sessions.remove(at)
        };
        let file = hosted.agent.snapshot().session.path;
        end(hosted, "the session was closed on the server").await;
        if let Some(file) = file {
            released(&file).await;
        }
        true
    }

    /// Stop every session (the server is stopping).
    pub async fn close_all(&self) {
        let all = std::mem::take(&mut *self.sessions.lock().await);
        for hosted in all {
            end(hosted, "the server stopped").await;
        }
    }
}

/// Wait until the session file is no longer locked: its writer lets go once the last of the
/// closed agent's tasks has dropped it, a moment after `end`. A client that closes a session
/// and resumes it at once must not be told it is open elsewhere. Bounded: a file still held
/// after that is reported by the resume itself.
async fn released(file: &std::path::Path) {
    let deadline = tokio::time::Instant::now() + std::time::Duration::from_secs(30);
    while tokio::time::Instant::now() < deadline {
        match crate::session::SessionWriter::lock_existing(file) {
            Err(crate::session::SessionError::Locked(_)) => {}
            // Free (the lock is dropped with the file), or gone: nothing to wait for.
            _ => return,
        }
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
}

async fn end(hosted: Hosted, reason: &str) {
    hosted.agent.abort();
    hosted.agent.wait_for_idle().await;
    hosted.agent.session_end("exit").await;
    if let Some(notifier) = hosted.notifier {
        notifier.finish().await;
    }
    hosted.live.shutdown(reason).await;
    hosted.mcp.shut_down().await;
    if let Some(lsp) = hosted.lsp {
        lsp.shut_down().await;
    }
}
