//! `--mode json`: run one prompt and write every event as one JSON line on stdout, after a
//! first `session` line. The exit code is the same as `-p`'s.

use super::SessionInfo;
use super::output::JsonLines;
use super::signals::Interrupts;
use crate::agent::Agent;
use crate::agent::event::{AgentEvent, RunStatus};
use crate::agent::message::UserMessage;
use serde_json::json;
use std::path::Path;

pub async fn run(agent: Agent, prompt: String, session: &SessionInfo, cwd: &Path) -> u8 {
    let mut out = JsonLines::default();
    out.push(&json!({
        "type": "session",
        "id": session.id,
        "path": session.path,
        "cwd": cwd,
    }));
    let mut events = agent.subscribe();
    if let Err(e) = agent.prompt(UserMessage::text(prompt)) {
        eprintln!("agent: {e}");
        return 1;
    }
    let mut interrupts = Interrupts::new();
    let mut interrupted: Option<u8> = None;
    loop {
        let event = tokio::select! {
            event = events.recv() => event,
            code = interrupts.next() => {
                if let Some(code) = interrupted {
                    let _ = out.flush();
                    return code;
                }
                interrupted = Some(code);
                agent.abort();
                continue;
            }
        };
        let Some(first) = event else {
            eprintln!("agent: error: the engine stopped unexpectedly");
            return 1;
        };
        let mut next = Some(first);
        while let Some(event) = next {
            out.push(&event);
            if let AgentEvent::AgentEnd { status, error, .. } = &event {
                if out.flush().is_err() {
                    return 1;
                }
                return match status {
                    RunStatus::Completed => 0,
                    RunStatus::Aborted => interrupted.unwrap_or(130),
                    RunStatus::Failed | RunStatus::Limit => {
                        eprintln!(
                            "agent: error: {}",
                            error.as_deref().unwrap_or("the run failed")
                        );
                        1
                    }
                };
            }
            next = events.try_recv().ok();
        }
        if out.flush().is_err() {
            // Nobody reads our output any more: stop the run and exit.
            agent.abort();
            return 1;
        }
    }
}
