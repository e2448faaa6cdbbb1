//! What a front end holds to reach its engine: the engine in this process (`Local`), or a
//! live session another process runs (`Remote`, `agent attach`). Both take the same engine
//! commands and give the same events; `snapshot`, `messages` and the other reads between
//! events are the engine's own state locally and the session's mirror remotely. What only a
//! local engine has (its sub-agents' handles, hooks, permission rules, background shells,
//! the session tree) is reached through `local()`; a front end says such a thing is not
//! available while attached.

use super::remote::RemoteEngine;
use crate::agent::commands::Control;
use crate::agent::{Agent, Snapshot};
use crate::protocol::command::Command;
use crate::protocol::event::AgentEvent;
use crate::protocol::message::{AssistantMessage, Message};
use crate::protocol::outcome::{CommandError, Outcome};
use crate::protocol::usage::UsageReport;
use serde_json::json;
use std::sync::Arc;
use tokio::sync::mpsc;

/// What a front end says when something only the owning process can do is asked for.
pub const OWNER_ONLY: &str =
    "Not available while attached to a live session: the process that runs it can do this";

#[derive(Clone)]
pub enum EngineLink {
    Local(Arc<Agent>),
    Remote(Arc<RemoteEngine>),
}

impl EngineLink {
    /// Carry out `command` (remotely, `control`'s cancel stops a `RunShell` with
    /// `abort_bash`; its progress is not reported).
    pub async fn execute(
        &self,
        command: Command,
        control: Control,
    ) -> Result<Outcome, CommandError> {
        match self {
            EngineLink::Local(agent) => agent.execute(command, control).await,
            EngineLink::Remote(remote) => {
                let shell = matches!(command, Command::RunShell { .. });
                let run = remote.execute(command);
                if !shell {
                    return run.await;
                }
                tokio::pin!(run);
                tokio::select! {
                    result = &mut run => result,
                    () = control.cancel.cancelled() => {
                        remote.request(json!({"type": "abort_bash"})).await;
                        run.await
                    }
                }
            }
        }
    }

    /// Every event from now on.
    pub fn subscribe(&self) -> mpsc::UnboundedReceiver<AgentEvent> {
        match self {
            EngineLink::Local(agent) => agent.subscribe(),
            EngineLink::Remote(remote) => remote.subscribe(),
        }
    }

    pub fn snapshot(&self) -> Snapshot {
        match self {
            EngineLink::Local(agent) => agent.snapshot(),
            EngineLink::Remote(remote) => remote.snapshot(),
        }
    }

    /// The profiles `set_profile` takes.
    pub fn profiles(&self) -> Vec<String> {
        match self {
            EngineLink::Local(agent) => agent.profiles(),
            EngineLink::Remote(remote) => remote.profiles(),
        }
    }

    /// The session's goal, while one is set.
    pub fn goal(&self) -> Option<String> {
        match self {
            EngineLink::Local(agent) => agent.goal(),
            EngineLink::Remote(remote) => remote.snapshot().goal,
        }
    }

    /// The conversation (remotely: the part replayed and what came since).
    pub fn messages(&self) -> Vec<Arc<Message>> {
        match self {
            EngineLink::Local(agent) => agent.messages(),
            EngineLink::Remote(remote) => remote.messages(),
        }
    }

    /// The messages held as values (`Agent::held_messages`); remotely, `messages`.
    pub fn held_messages(&self) -> Vec<Arc<Message>> {
        match self {
            EngineLink::Local(agent) => agent.held_messages(),
            EngineLink::Remote(remote) => remote.messages(),
        }
    }

    /// Start counting the usage of the older part of a long resumed context
    /// (`Agent::count_earlier`); remotely, the engine's own process does.
    pub fn count_earlier(&self) {
        if let EngineLink::Local(agent) = self {
            agent.count_earlier();
        }
    }

    /// The older part of a long resumed context, not read (`session::cold`); remotely none.
    pub fn cold_part(&self) -> Option<crate::session::cold::ColdPart> {
        match self {
            EngineLink::Local(agent) => agent.cold_part(),
            EngineLink::Remote(_) => None,
        }
    }

    /// How many messages the conversation has (remotely: those replayed and since).
    pub fn message_count(&self) -> usize {
        match self {
            EngineLink::Local(agent) => agent.message_count(),
            EngineLink::Remote(remote) => remote.messages().len(),
        }
    }

    /// Whether older messages of a long resumed context are not counted yet
    /// (`Agent::earlier_pending`); remotely never.
    pub fn earlier_pending(&self) -> bool {
        match self {
            EngineLink::Local(agent) => agent.earlier_pending(),
            EngineLink::Remote(_) => false,
        }
    }

    /// The conversation's first user message (remotely: of the part replayed).
    pub fn first_user_message(&self) -> Option<Arc<Message>> {
        match self {
            EngineLink::Local(agent) => agent.first_user_message(),
            EngineLink::Remote(remote) => remote
                .messages()
                .into_iter()
                .find(|m| matches!(m.as_ref(), Message::User(_))),
        }
    }

    pub fn message_entries(&self) -> Vec<(String, Arc<Message>)> {
        match self {
            EngineLink::Local(agent) => agent.message_entries(),
            EngineLink::Remote(remote) => remote.message_entries(),
        }
    }

    pub fn is_running(&self) -> bool {
        match self {
            EngineLink::Local(agent) => agent.is_running(),
            EngineLink::Remote(remote) => remote.is_running(),
        }
    }

    /// The message being streamed, arguments parsed so far (remotely `None`: the events
    /// carry what is shown).
    pub fn streaming_message(&self) -> Option<AssistantMessage> {
        match self {
            EngineLink::Local(agent) => agent.streaming_message(),
            EngineLink::Remote(_) => None,
        }
    }

    pub fn usage_report(&self) -> UsageReport {
        match self {
            EngineLink::Local(agent) => agent.usage_report(),
            EngineLink::Remote(remote) => remote.usage_report(),
        }
    }

    /// The sub-agents (remotely none are listed: their events still come).
    pub fn agents(&self) -> Vec<crate::agent::children::ChildInfo> {
        match self {
            EngineLink::Local(agent) => agent.agents(),
            EngineLink::Remote(_) => Vec::new(),
        }
    }

    pub fn can_undo_rewind(&self) -> bool {
        match self {
            EngineLink::Local(agent) => agent.can_undo_rewind(),
            EngineLink::Remote(_) => false,
        }
    }

    /// A running sub-agent's engine (remotely none).
    pub fn child(&self, agent_id: &str) -> Option<Arc<Agent>> {
        self.local().and_then(|agent| agent.child(agent_id))
    }

    /// A sub-agent's conversation (remotely none).
    pub fn agent_messages(&self, agent_id: &str) -> Option<Vec<Arc<Message>>> {
        self.local()
            .and_then(|agent| agent.agent_messages(agent_id))
    }

    /// Where pasted images are kept: beside the session locally; remotely a directory of
    /// this process's (the session's process reads it on the same machine).
    pub fn spill_dir(&self) -> Arc<crate::tools::spill::SpillDir> {
        match self {
            EngineLink::Local(agent) => agent.spill_dir(),
            EngineLink::Remote(_) => Arc::new(crate::tools::spill::SpillDir::for_session(None)),
        }
    }

    /// The files the session changed (remotely `None`: the front end falls back to git).
    pub async fn session_changes(
        &self,
    ) -> Result<Option<Vec<crate::checkpoint::FileChange>>, crate::agent::AgentError> {
        match self {
            EngineLink::Local(agent) => agent.session_changes().await,
            EngineLink::Remote(_) => Ok(None),
        }
    }

    /// Until no run is going (remotely at once: leaving never waits for the session).
    pub async fn wait_for_idle(&self) {
        if let EngineLink::Local(agent) = self {
            agent.wait_for_idle().await;
        }
    }

    /// The `SessionStart` hooks (the owning process runs its own: remotely nothing).
    pub async fn session_start(&self) {
        if let EngineLink::Local(agent) = self {
            agent.session_start(agent.session_source()).await;
        }
    }

    /// The `SessionEnd` hooks (remotely nothing: the session goes on).
    pub async fn session_end(&self, reason: &str) {
        if let EngineLink::Local(agent) = self {
            agent.session_end(reason).await;
        }
    }

    /// The engine in this process, for what only it has.
    pub fn local(&self) -> Option<&Arc<Agent>> {
        match self {
            EngineLink::Local(agent) => Some(agent),
            EngineLink::Remote(_) => None,
        }
    }

    pub fn remote(&self) -> Option<&Arc<RemoteEngine>> {
        match self {
            EngineLink::Remote(remote) => Some(remote),
            EngineLink::Local(_) => None,
        }
    }
}
