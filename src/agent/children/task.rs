//! The `task` tool: start a child agent on a prompt, pass its events on, wait for it, and
//! answer with its final text (usage and its session in `details`). A child that fails,
//! hits a limit or is stopped answers with an error result saying so; the parent goes on.
//! The parent's abort aborts the child (killing its tools) before the call returns.

use super::definitions::GENERAL;
use super::forward::{ChildEnd, Forwarder};
use super::spawn::{child_config, child_session};
use super::{Child, ChildInfo, ChildStatus, Children};
use crate::agent::Agent;
use crate::agent::state::lock;
use crate::protocol::event::RunStatus;
use crate::protocol::message::{Message, UserMessage, now_millis};
use crate::tools::{CANCELLED_TEXT, Subject, Tool, ToolContext, ToolOutput, parse_args};
use futures_util::future::BoxFuture;
use serde::Deserialize;
use serde_json::{Value, json};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use tokio::sync::oneshot;

pub use crate::tools::TASK_TOOL;

#[derive(Deserialize)]
struct TaskArgs {
    #[serde(default)]
    description: String,
    prompt: String,
    #[serde(default)]
    agent: Option<String>,
    /// A budget of its own in US dollars, within what the parent has left.
    #[serde(default)]
    budget_usd: Option<f64>,
}

pub struct TaskTool {
    children: Arc<Children>,
    description: String,
}

impl TaskTool {
    pub(crate) fn new(children: Arc<Children>) -> TaskTool {
        let mut description = String::from(
            "Start a sub-agent: another agent with a fresh context and its own tools carries out \
             a task on its own and answers with a final message, which is this call's result. \
             Use it for work whose details you do not need to see (research, finding code \
             across many files) or for independent pieces of work: several `task` calls in one \
             message run at the same time. The sub-agent sees only `prompt`, so say everything \
             it needs to know. Agents:",
        );
        for definition in &children.settings.definitions {
            description.push_str(&format!(
                "\n- {}: {}",
                definition.name, definition.description
            ));
        }
        TaskTool {
            children,
            description,
        }
    }
}

impl Tool for TaskTool {
    fn name(&self) -> &str {
        TASK_TOOL
    }

    fn description(&self) -> &str {
        &self.description
    }

    fn parameters(&self) -> Value {
        let names: Vec<&str> = self
            .children
            .settings
            .definitions
            .iter()
            .map(|d| d.name.as_str())
            .collect();
        json!({
            "type": "object",
            "properties": {
                "description": {
                    "type": "string",
                    "description": "A short label for the task (3-6 words), shown to the user"
                },
                "prompt": {
                    "type": "string",
                    "description": "The task, with everything the sub-agent needs to know"
                },
                "agent": {
                    "type": "string",
                    "enum": names,
                    "description": "Which agent to start (default `general`)"
                },
                "budget_usd": {
                    "type": "number",
                    "exclusiveMinimum": 0,
                    "description": "Optional: at most this many US dollars for the sub-agent (it never gets more than your own budget has left)"
                }
            },
            "required": ["description", "prompt"],
            "additionalProperties": false
        })
    }

    /// The call itself changes nothing: each of the child's own calls is checked against
    /// the permissions like the parent's.
    fn read_only(&self) -> bool {
        true
    }

    /// Children wait for a place of `[agents] max_parallel`, not of the tools' limit.
    fn limits_own_concurrency(&self) -> bool {
        true
    }

    fn subject(&self) -> Subject {
        Subject::None
    }

    fn summarize(&self, args: &Value) -> String {
        summarize(args)
    }

    fn execute(&self, args: Value, ctx: ToolContext) -> BoxFuture<'static, ToolOutput> {
        Box::pin(run_task(self.children.clone(), args, ctx))
    }
}

/// A `task` call in one line: the kind of sub-agent and what it is asked to do
/// (`general: count the files`).
pub fn summarize(args: &Value) -> String {
    let agent = args["agent"].as_str().unwrap_or(GENERAL);
    let description = args["description"].as_str().unwrap_or_default();
    format!("{agent}: {description}")
}

async fn run_task(children: Arc<Children>, args: Value, ctx: ToolContext) -> ToolOutput {
    let args: TaskArgs = match parse_args(TASK_TOOL, args) {
        Ok(args) => args,
        Err(output) => return output,
    };
    let name = args.agent.as_deref().unwrap_or(GENERAL);
    let Some(definition) = children
        .settings
        .definitions
        .iter()
        .find(|d| d.name == name)
        .cloned()
    else {
        let known: Vec<&str> = children
            .settings
            .definitions
            .iter()
            .map(|d| d.name.as_str())
            .collect();
        return ToolOutput::error(format!(
            "There is no agent `{name}`. Agents: {}.",
            known.join(", ")
        ));
    };
    // A place among the children that run at once.
    let _place = tokio::select! {
        _ = ctx.cancel.cancelled() => return ToolOutput::error(CANCELLED_TEXT),
        place = children.places.clone().acquire_owned() => match place {
            Ok(place) => place,
            Err(_) => return ToolOutput::error("The sub-agent could not start: the agent is closing."),
        },
    };
    let Some(parent) = children.parent() else {
        return ToolOutput::error("The sub-agent could not start: the agent is closing.");
    };
    let mut config = match child_config(&parent, &children.settings, &definition) {
        Ok(config) => config,
        Err(error) => {
            return ToolOutput::error(format!("The sub-agent could not start: {error}."));
        }
    };
    let provider = config.provider.settings().name.clone();
    let session = match child_session(&parent, &ctx.tool_call_id, &provider, &config.model.id).await
    {
        Ok(session) => session,
        Err(error) => {
            return ToolOutput::error(format!(
                "The sub-agent could not start: its session file could not be created: {error}."
            ));
        }
    };
    config.session = session.as_ref().map(|s| s.writer.clone());
    let agent_id = children.next_id();
    let agent = Arc::new(Agent::new(config));
    // It works on the same tree and may use its parent's dev server: the same loopback.
    lock(&agent.shared.state).session_net = ctx.session_net.clone();
    // What the child spends, its parent spends: it stops when either's budget is crossed.
    agent.shared.purse.link(
        parent.purse.clone(),
        format!("sub-agent {agent_id}"),
        args.budget_usd.filter(|usd| usd.is_finite() && *usd > 0.0),
    );
    let child = Arc::new(Child {
        info: Mutex::new(ChildInfo {
            agent_id: agent_id.clone(),
            parent_tool_call_id: ctx.tool_call_id.clone(),
            name: definition.name.clone(),
            description: args.description.clone(),
            status: ChildStatus::Running,
            turns: 0,
            usage: Default::default(),
            session_id: session.as_ref().map(|s| s.id.clone()),
            session_file: session.as_ref().map(|s| s.path.display().to_string()),
            started_at: now_millis(),
        }),
        agent: Mutex::new(Some(agent.clone())),
        transcript: Mutex::new(Vec::new()),
        stopped: AtomicBool::new(false),
    });
    let (ended, mut end) = oneshot::channel();
    let forwarder = Forwarder {
        parent: Arc::downgrade(&parent),
        child_shared: Arc::downgrade(&agent.shared),
        child: child.clone(),
        agent_id: agent_id.clone(),
        parent_tool_call_id: ctx.tool_call_id.clone(),
        name: definition.name.clone(),
    };
    drop(parent);
    crate::tasks::spawn(forwarder.run(agent.subscribe(), ended));
    children.add(child.clone());
    tracing::info!(agent = %agent_id, name = %definition.name, "sub-agent started");
    if let Err(error) = agent.prompt(UserMessage::text(args.prompt)) {
        lock(&child.agent).take();
        lock(&child.info).status = ChildStatus::Failed;
        return ToolOutput::error(format!("The sub-agent could not start: {error}."));
    }
    let outcome = tokio::select! {
        outcome = &mut end => outcome.ok(),
        _ = ctx.cancel.cancelled() => {
            // The parent stops: so does the child, its tools killed, before this returns.
            agent.abort();
            end.await.ok()
        }
    };
    let messages = agent.messages();
    let text = final_text(&messages);
    *lock(&child.transcript) = messages;
    lock(&child.agent).take();
    // Closing the child's session syncs its file: off the async workers.
    let _ = crate::tasks::spawn_blocking(move || drop(agent)).await;
    let stopped = child.stopped.load(Ordering::SeqCst);
    let (output, status) = answer(&definition.name, &agent_id, outcome, stopped, &text);
    let mut info = lock(&child.info);
    info.status = status;
    tracing::info!(agent = %agent_id, status = ?info.status, "sub-agent ended");
    let details = json!({
        "agentId": info.agent_id,
        "agent": info.name,
        "status": info.status,
        "turns": info.turns,
        "usage": info.usage,
        "sessionId": info.session_id,
        "sessionFile": info.session_file,
    });
    output.with_details(details)
}

/// The result for the parent, and the child's status.
fn answer(
    name: &str,
    agent_id: &str,
    outcome: Option<ChildEnd>,
    stopped: bool,
    text: &str,
) -> (ToolOutput, ChildStatus) {
    let who = format!("The sub-agent `{name}` ({agent_id})");
    let last = if text.trim().is_empty() {
        String::new()
    } else {
        format!("\n\nIts last message:\n{text}")
    };
    let Some(ChildEnd { status, error }) = outcome else {
        return (
            ToolOutput::error(format!("{who} ended unexpectedly.{last}")),
            ChildStatus::Failed,
        );
    };
    let error = error.unwrap_or_else(|| "no reason given".to_string());
    match status {
        RunStatus::Completed if text.trim().is_empty() => (
            ToolOutput::text(format!("{who} finished without a final message.")),
            ChildStatus::Completed,
        ),
        RunStatus::Completed => (ToolOutput::text(text), ChildStatus::Completed),
        RunStatus::Aborted if stopped => (
            ToolOutput::error(format!(
                "{who} was stopped by the user before it finished.{last}"
            )),
            ChildStatus::Aborted,
        ),
        RunStatus::Aborted => (
            ToolOutput::error(format!("{CANCELLED_TEXT}{last}")),
            ChildStatus::Aborted,
        ),
        RunStatus::Limit => (
            ToolOutput::error(format!(
                "{who} stopped at a limit before it finished: {error}.{last}"
            )),
            ChildStatus::Failed,
        ),
        RunStatus::Failed => (
            ToolOutput::error(format!("{who} failed: {error}.{last}")),
            ChildStatus::Failed,
        ),
    }
}

/// The text of the child's last assistant message that has any.
fn final_text(messages: &[Arc<Message>]) -> String {
    messages
        .iter()
        .rev()
        .filter_map(|m| m.as_assistant())
        .map(|a| a.text())
        .find(|t| !t.trim().is_empty())
        .unwrap_or_default()
}
