//! `--mode json`: run one prompt and write every event as one JSON line on stdout, after a
//! first `session` line. The exit code is the same as `-p`'s.

use super::SessionInfo;
use super::headless::{Handler, drive};
use super::output::JsonLines;
use crate::agent::Agent;
use crate::protocol::event::{AgentEvent, RunStatus};
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
    drive(&agent, prompt, &mut Json { out }).await
}

struct Json {
    out: JsonLines,
}

impl Handler for Json {
    fn event(&mut self, event: AgentEvent, interrupted: Option<u8>) -> Option<u8> {
        self.out.push(&event);
        let AgentEvent::AgentEnd { status, error, .. } = &event else {
            return None;
        };
        Some(match status {
            RunStatus::Completed => 0,
            RunStatus::Aborted => interrupted.unwrap_or(130),
            RunStatus::Failed | RunStatus::Limit => {
                eprintln!(
                    "agent: error: {}",
                    error.as_deref().unwrap_or("the run failed")
                );
                1
            }
        })
    }

    fn pause(&mut self) -> bool {
        self.out.flush().is_ok()
    }
}
