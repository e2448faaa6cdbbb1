//! `--mode json`: run one prompt and write every event as one JSON line on stdout, after a
//! first `session` line. The exit code is the same as `-p`'s.

use super::headless::{Handler, drive};
use super::output::JsonLines;
use crate::agent::Agent;
use crate::protocol::event::{AgentEvent, RunStatus};
use serde::Serialize;
use std::path::Path;

/// The first line: which session the events belong to. `type` comes first, as on every line.
#[derive(Serialize)]
struct SessionLine<'a> {
    #[serde(rename = "type")]
    kind: &'static str,
    id: &'a str,
    path: Option<&'a Path>,
    cwd: &'a Path,
}

pub async fn run(agent: Agent, prompt: String, cwd: &Path, verbose: bool) -> u8 {
    let session = agent.snapshot().session;
    let mut out = JsonLines::default();
    out.push(&SessionLine {
        kind: "session",
        id: &session.id,
        path: session.path.as_deref(),
        cwd,
    });
    drive(&agent, prompt, &mut Json { out, verbose }).await
}

struct Json {
    out: JsonLines,
    verbose: bool,
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
                say!(
                    "agent: error: {}",
                    error.as_deref().unwrap_or("the run failed")
                );
                1
            }
        })
    }

    fn verbose(&self) -> bool {
        self.verbose
    }

    fn pause(&mut self) -> bool {
        self.out.flush().is_ok()
    }
}
