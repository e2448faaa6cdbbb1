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

    /// The conversation (remotely: the part replayed and what came since).
    pub fn messages(&self) -> Vec<Arc<Message>> {
        match self {
            EngineLink::Local(agent) => agent.messages(),
            EngineLink::Remote(remote) => remote.messages(),
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
