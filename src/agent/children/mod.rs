//! Sub-agents: the `task` tool runs a child agent — the same engine, a fresh context — and
//! its final text is the call's result. This module owns the tree of an agent's children:
//! the settings that shape them (definitions, how many at once, how deep), the registry
//! front ends read (`get_agents`) and act on (stop or steer one child, answer its approval
//! requests), and the per-child records kept after a child ends.

pub mod definitions;
mod forward;
mod spawn;
pub(crate) mod task;

use super::state::{Shared, lock};
use super::{Agent, AgentError, Approval};
use crate::protocol::message::{Message, Usage, UserMessage};
use definitions::AgentDefinition;
use serde::Serialize;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, OnceLock, Weak};
use tokio::sync::Semaphore;

pub use task::TASK_TOOL;

/// `[agents]`: whether and how an agent may start sub-agents.
#[derive(Clone)]
pub struct AgentsSettings {
    /// What a `task` call can start (`general` among them).
    pub definitions: Vec<AgentDefinition>,
    /// At most this many children run at once (`[agents] max_parallel`); more wait.
    pub max_parallel: usize,
    /// How deep the tree may go: 1 lets the user's agent start children that cannot start
    /// their own (`[agents] max_depth`).
    pub max_depth: u32,
    /// This agent's depth (0: the user's own).
    pub depth: u32,
}

impl AgentsSettings {
    /// Whether an agent at this depth gets the `task` tool.
    pub fn may_start_children(&self) -> bool {
        self.depth < self.max_depth
    }
}

impl Default for AgentsSettings {
    fn default() -> Self {
        AgentsSettings {
            definitions: vec![AgentDefinition::general()],
            max_parallel: 4,
            max_depth: 1,
            depth: 0,
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum ChildStatus {
    Running,
    Completed,
    Failed,
    Aborted,
}

/// What `get_agents` reports of one child.
#[derive(Clone, Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ChildInfo {
    pub agent_id: String,
    pub parent_tool_call_id: String,
    /// The definition it runs.
    pub name: String,
    /// The `task` call's `description`.
    pub description: String,
    pub status: ChildStatus,
    pub turns: u32,
    pub usage: Usage,
    pub session_id: Option<String>,
    pub session_file: Option<String>,
    /// When it started (milliseconds since the epoch).
    pub started_at: i64,
}

/// One child: its record, and its handle while it runs.
pub(crate) struct Child {
    pub info: Mutex<ChildInfo>,
    pub agent: Mutex<Option<Arc<Agent>>>,
    /// Its context when it ended (while it runs, its handle has it).
    pub transcript: Mutex<Vec<Arc<Message>>>,
    /// Stopped by the user (`abort_agent`), not by its parent's abort.
    pub stopped: AtomicBool,
}

/// The children of one agent.
pub(crate) struct Children {
    pub settings: AgentsSettings,
    /// The agent they belong to (set once it exists).
    parent: OnceLock<Weak<Shared>>,
    /// A place for each child running at once.
    pub places: Arc<Semaphore>,
    next_id: AtomicU64,
    children: Mutex<Vec<Arc<Child>>>,
}

impl Children {
    pub fn new(settings: AgentsSettings) -> Arc<Children> {
        Arc::new(Children {
            places: Arc::new(Semaphore::new(settings.max_parallel.max(1))),
            settings,
            parent: OnceLock::new(),
            next_id: AtomicU64::new(1),
            children: Mutex::new(Vec::new()),
        })
    }

    pub fn set_parent(&self, parent: &Arc<Shared>) {
        let _ = self.parent.set(Arc::downgrade(parent));
    }

    pub fn parent(&self) -> Option<Arc<Shared>> {
        self.parent.get().and_then(Weak::upgrade)
    }

    pub fn next_id(&self) -> String {
        format!("a{}", self.next_id.fetch_add(1, Ordering::SeqCst))
    }

    pub fn add(&self, child: Arc<Child>) {
        lock(&self.children).push(child);
    }

    pub fn find(&self, agent_id: &str) -> Option<Arc<Child>> {
        lock(&self.children)
            .iter()
            .find(|c| lock(&c.info).agent_id == agent_id)
            .cloned()
    }

    pub fn list(&self) -> Vec<ChildInfo> {
        lock(&self.children)
            .iter()
            .map(|c| lock(&c.info).clone())
            .collect()
    }

    /// The handles of the children running now.
    pub fn running(&self) -> Vec<Arc<Agent>> {
        lock(&self.children)
            .iter()
            .filter_map(|c| lock(&c.agent).clone())
            .collect()
    }
}

/// Why `abort_agent` or `steer_agent` could not act.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum ChildError {
    #[error("no sub-agent `{0}` (get_agents lists them)")]
    NoSuchAgent(String),
    #[error("sub-agent `{0}` has finished")]
    Finished(String),
}

impl From<ChildError> for crate::protocol::outcome::CommandError {
    fn from(error: ChildError) -> Self {
        use crate::protocol::outcome::CommandError;
        let message = error.to_string();
        match error {
            ChildError::NoSuchAgent(agent_id) => CommandError::NoSuchAgent { agent_id, message },
            ChildError::Finished(agent_id) => CommandError::AgentFinished { agent_id, message },
        }
    }
}

impl Agent {
    /// Every child this agent started in this process, running or ended, oldest first.
    pub fn agents(&self) -> Vec<ChildInfo> {
        self.shared
            .children
            .as_ref()
            .map(|c| c.list())
            .unwrap_or_default()
    }

    /// The handles of the children running now (none without a `task` tool).
    pub(crate) fn running_children(&self) -> Vec<Arc<Agent>> {
        self.shared
            .children
            .as_ref()
            .map(|c| c.running())
            .unwrap_or_default()
    }

    /// The handle of a running child (to read its transcript, e.g. in an agent view).
    pub fn child(&self, agent_id: &str) -> Option<Arc<Agent>> {
        let child = self.shared.children.as_ref()?.find(agent_id)?;
        lock(&child.agent).clone()
    }

    /// The handle of a running sub-agent below this agent, by its path of ids: a child's
    /// id (`a1`), or for a child's own child the ids down to it (`a1/a2`; each agent numbers
    /// its own children), as a relayed question names it.
    pub fn descendant(&self, path: &str) -> Option<Arc<Agent>> {
        match path.split_once('/') {
            Some((child, below)) => self.child(child)?.descendant(below),
            None => self.child(path),
        }
    }

    /// A child's context: as it is now while it runs, as it ended afterwards.
    pub fn agent_messages(&self, agent_id: &str) -> Option<Vec<Arc<Message>>> {
        let child = self.shared.children.as_ref()?.find(agent_id)?;
        let running = lock(&child.agent).clone();
        Some(match running {
            Some(agent) => agent.messages(),
            None => lock(&child.transcript).clone(),
        })
    }

    /// Stop one child: its tools are killed and its `task` call is answered with an error
    /// result saying the user stopped it; the parent goes on.
    pub fn abort_agent(&self, agent_id: &str) -> Result<(), ChildError> {
        let child = self
            .shared
            .children
            .as_ref()
            .and_then(|c| c.find(agent_id))
            .ok_or_else(|| ChildError::NoSuchAgent(agent_id.to_string()))?;
        let agent = lock(&child.agent)
            .clone()
            .ok_or_else(|| ChildError::Finished(agent_id.to_string()))?;
        child.stopped.store(true, Ordering::SeqCst);
        agent.abort();
        Ok(())
    }

    /// Steer one running child with a message (delivered after its current tool call).
    pub fn steer_agent(&self, agent_id: &str, message: UserMessage) -> Result<(), ChildError> {
        let child = self
            .shared
            .children
            .as_ref()
            .and_then(|c| c.find(agent_id))
            .ok_or_else(|| ChildError::NoSuchAgent(agent_id.to_string()))?;
        let agent = lock(&child.agent)
            .clone()
            .ok_or_else(|| ChildError::Finished(agent_id.to_string()))?;
        agent
            .steer_running(message)
            .map_err(|_| ChildError::Finished(agent_id.to_string()))
    }

    /// Answer an approval request of one of the children (relayed by this agent).
    pub(crate) fn approve_child(
        &self,
        tool_call_id: &str,
        decision: Approval,
    ) -> Result<(), AgentError> {
        for child in self.running_children() {
            if lock(&child.shared.state)
                .approvals
                .contains_key(tool_call_id)
            {
                return child.approve(tool_call_id, decision);
            }
            if child.approve_child(tool_call_id, decision.clone()).is_ok() {
                return Ok(());
            }
        }
        Err(AgentError::NoSuchApproval(tool_call_id.to_string()))
    }
}
