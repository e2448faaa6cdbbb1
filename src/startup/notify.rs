//! The `notify` command of the config (docs/protocol.md §4.7): when a run ends, waits for
//! an approval or the model asks the user a question (`ask_user`), the command is started with a JSON description as its last argument (Codex's
//! convention), for the user's own tool (a desktop notification, a push to a phone). It
//! watches the engine's events, so every front end gets it; a command that fails to start
//! is logged, never in the run's way.

use crate::agent::Agent;
use crate::protocol::event::{AgentEvent, RunStatus};
use crate::protocol::message::Message;
use serde_json::{Value, json};
use std::path::PathBuf;
use std::process::Stdio;
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

/// Watches one engine for what to tell the `notify` command.
pub struct Notifier {
    task: tokio::task::JoinHandle<()>,
    stop: CancellationToken,
}

impl Notifier {
    /// Watch `agent` (none when no command is configured). Inside the tokio runtime.
    pub fn start(agent: &Agent, command: Option<&[String]>, cwd: PathBuf) -> Option<Notifier> {
        let command = command.filter(|c| !c.is_empty())?.to_vec();
        let events = agent.subscribe_without_deltas();
        let session = agent.snapshot().session.id;
        let stop = CancellationToken::new();
        let watcher = Watcher {
            command,
            cwd,
            session,
        };
        let task = crate::tasks::spawn(watcher.watch(events, stop.clone()));
        Some(Notifier { task, stop })
    }

    /// Tell the command about every event so far (started, not waited for), then stop.
    pub async fn finish(self) {
        self.stop.cancel();
        let _ = self.task.await;
    }
}

struct Watcher {
    command: Vec<String>,
    cwd: PathBuf,
    session: String,
}

impl Watcher {
    async fn watch(
        mut self,
        mut events: mpsc::UnboundedReceiver<AgentEvent>,
        stop: CancellationToken,
    ) {
        loop {
            tokio::select! {
                biased;
                event = events.recv() => match event {
                    Some(event) => self.note(&event),
                    None => return,
                },
                () = stop.cancelled() => {
                    while let Ok(event) = events.try_recv() {
                        self.note(&event);
                    }
                    return;
                }
            }
        }
    }

    fn note(&mut self, event: &AgentEvent) {
        let description = match event {
            AgentEvent::SessionChanged { session, .. } => {
                self.session = session.id.clone();
                return;
            }
            AgentEvent::AgentEnd {
                messages,
                status,
                error,
            } => turn_complete(messages, *status, error.as_deref()),
            AgentEvent::ToolApprovalRequest {
                tool_call_id,
                tool_name,
                args,
                reason,
                agent_id,
                ..
            } => json!({
                "type": "approval-requested",
                "tool-call-id": tool_call_id,
                "tool-name": tool_name,
                "arguments": args,
                "reason": reason,
                "agent-id": agent_id,
            }),
            AgentEvent::UserQuestion {
                tool_call_id,
                agent_id,
                questions,
                ..
            } => json!({
                "type": "question-asked",
                "tool-call-id": tool_call_id,
                "questions": questions.iter().map(|q| q.question.as_str()).collect::<Vec<_>>(),
                "agent-id": agent_id,
            }),
            _ => return,
        };
        self.run(description);
    }

    /// Start the command with `description` (and the session and directory) appended.
    fn run(&self, mut description: Value) {
        description["session-id"] = json!(self.session);
        description["cwd"] = json!(self.cwd);
        let Some((program, args)) = self.command.split_first() else {
            return;
        };
        let text = String::from_utf8_lossy(&crate::secrets::redact_bytes(
            description.to_string().into_bytes(),
        ))
        .into_owned();
        let spawned = tokio::process::Command::new(program)
            .args(args)
            .arg(text)
            .current_dir(&self.cwd)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn();
        match spawned {
            // Reaped in the background; never waited for by the run.
            Ok(mut child) => {
                crate::tasks::spawn(async move {
                    let _ = child.wait().await;
                });
            }
            Err(error) => tracing::warn!(%error, program, "the notify command did not start"),
        }
    }
}

/// `agent-turn-complete`: how the run ended, the user's messages of the run, the last
/// thing the model said.
fn turn_complete(
    messages: &[std::sync::Arc<Message>],
    status: RunStatus,
    error: Option<&str>,
) -> Value {
    let inputs: Vec<String> = messages
        .iter()
        .filter_map(|m| match m.as_ref() {
            Message::User(user) => Some(user.plain_text()),
            _ => None,
        })
        .collect();
    let last = messages
        .iter()
        .rev()
        .find_map(|m| m.as_assistant())
        .map(|a| a.text().trim().to_string())
        .filter(|t| !t.is_empty());
    json!({
        "type": "agent-turn-complete",
        "status": status,
        "error": error,
        "input-messages": inputs,
        "last-assistant-message": last,
    })
}
