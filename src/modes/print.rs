//! `-p`: run one prompt to completion and print the final answer on stdout. Progress (retries,
//! denied tools) goes to stderr; a failure ends with exactly one explaining line on stderr.

use super::headless::{Handler, drive};
use crate::agent::Agent;
use crate::protocol::event::{AgentEvent, RunStatus};
use crate::protocol::message::Message;
use crate::tools::meta::Denial;
use std::io::Write;
use std::sync::Arc;

pub async fn run(agent: Agent, prompt: String, verbose: bool) -> u8 {
    drive(&agent, prompt, &mut Print { verbose }).await
}

struct Print {
    verbose: bool,
}

impl Handler for Print {
    fn verbose(&self) -> bool {
        self.verbose
    }

    fn wants_deltas(&self) -> bool {
        false
    }

    fn event(&mut self, event: AgentEvent, interrupted: Option<u8>) -> Option<u8> {
        match event {
            AgentEvent::AutoRetryStart {
                attempt,
                max_attempts,
                delay_ms,
                error_message,
            } => say!(
                "agent: {error_message} — retrying in {:.1} s ({attempt}/{max_attempts})",
                delay_ms as f64 / 1000.0
            ),
            AgentEvent::ToolExecutionEnd {
                tool_name, result, ..
            } => match Denial::of_details(result.details.as_ref()) {
                Some(Denial::NoApprover) => say!(
                    "agent: `{tool_name}` was not allowed to run (--permission-mode auto allows it)"
                ),
                Some(Denial::Rule) => say!(
                    "agent: `{tool_name}` was not allowed to run (a [permissions] deny rule forbids it)"
                ),
                Some(Denial::ReadOnlyMode) => say!(
                    "agent: `{tool_name}` was not allowed to run (the permission mode only lets tools look)"
                ),
                Some(Denial::User) | None => {}
            },
            AgentEvent::Notice { message, .. } => say!("agent: {message}"),
            AgentEvent::HookError {
                hook_event_name,
                command,
                message,
            } => say!("agent: the {hook_event_name} hook `{command}` failed ({message}); going on"),
            AgentEvent::AgentEnd {
                messages,
                status,
                error,
            } => return Some(finish(&messages, status, error, interrupted)),
            _ => {}
        }
        None
    }
}

fn finish(
    messages: &[Arc<Message>],
    status: RunStatus,
    error: Option<String>,
    interrupted: Option<u8>,
) -> u8 {
    let last = messages.iter().rev().find_map(|m| m.as_assistant());
    let mut answer = last.map(|m| m.text()).unwrap_or_default();
    // A refusal is the model's answer: printed as one, and the run still succeeded.
    if let Some(refusal) = last.and_then(|m| m.refusal.as_deref()) {
        say!("agent: the model refused");
        if !answer.is_empty() && !answer.ends_with('\n') {
            answer.push('\n');
        }
        answer.push_str(refusal);
    }
    if !answer.is_empty() && status != RunStatus::Failed {
        let answer = crate::secrets::redact_string(answer);
        let mut stdout = std::io::stdout().lock();
        let _ = stdout.write_all(answer.as_bytes());
        if !answer.ends_with('\n') {
            let _ = stdout.write_all(b"\n");
        }
        let _ = stdout.flush();
    }
    let error = error.unwrap_or_default();
    match status {
        RunStatus::Completed => 0,
        RunStatus::Failed => {
            say!("agent: error: {error}");
            1
        }
        RunStatus::Limit => {
            say!("agent: stopped: {error}");
            1
        }
        RunStatus::Aborted => {
            say!("agent: aborted");
            interrupted.unwrap_or(130)
        }
    }
}
