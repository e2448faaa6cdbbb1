//! The event loop shared by `-p` and `--mode json`: start one prompt (the engine's `Prompt`,
//! which expands a custom command and runs it with the command's model), hand every event to
//! the front end until `agent_end`, and turn SIGINT/SIGTERM/SIGHUP into an abort (a second
//! signal exits at once).

use super::signals::Interrupts;
use crate::agent::Agent;
use crate::agent::commands::Control;
use crate::protocol::command::{Command, Delivery, UserInput};
use crate::protocol::event::AgentEvent;
use crate::protocol::outcome::Outcome;

pub trait Handler {
    /// Handle one event; `Some(code)` ends the run with that exit code. `interrupted` is the
    /// exit code of a signal that aborted the run.
    fn event(&mut self, event: AgentEvent, interrupted: Option<u8>) -> Option<u8>;

    /// No event is waiting right now (a good moment to flush output). `false` means the
    /// output is gone and the run should stop.
    fn pause(&mut self) -> bool {
        true
    }

    /// Whether a final usage line goes to stderr (`--verbose`).
    fn verbose(&self) -> bool {
        false
    }

    /// Whether the handler looks at each streamed delta.
    fn wants_deltas(&self) -> bool {
        true
    }
}

/// Run `prompt` to its end between the session's SessionStart and SessionEnd hooks.
pub async fn drive(agent: &Agent, prompt: String, handler: &mut impl Handler) -> u8 {
    let events = if handler.wants_deltas() {
        agent.subscribe()
    } else {
        agent.subscribe_without_deltas()
    };
    agent.session_start(agent.session_source()).await;
    let code = drive_prompt(agent, events, prompt, handler).await;
    if handler.verbose() {
        say!("{}", usage_line(&agent.usage_report()));
    }
    agent.session_end("exit").await;
    code
}

async fn drive_prompt(
    agent: &Agent,
    mut events: tokio::sync::mpsc::UnboundedReceiver<crate::protocol::event::AgentEvent>,
    prompt: String,
    handler: &mut impl Handler,
) -> u8 {
    let command = Command::Prompt {
        input: UserInput::text(prompt),
        delivery: Delivery::Start,
    };
    match agent.execute(command, Control::new()).await {
        Ok(Outcome::Accepted { skipped, .. }) => {
            // Said on stderr, so stdout stays the answer (or the JSON events).
            for file in skipped {
                say!("agent: @{} not attached: {}", file.path, file.reason);
            }
        }
        Ok(other) => {
            say!("agent: internal error: the prompt was answered {other:?}");
            return 1;
        }
        Err(e) => {
            say!("agent: {e}");
            return 1;
        }
    }
    let mut interrupts = Interrupts::new();
    let mut interrupted: Option<u8> = None;
    loop {
        let event = tokio::select! {
            event = events.recv() => event,
            code = interrupts.next() => {
                if let Some(code) = interrupted {
                    handler.pause();
                    return code;
                }
                interrupted = Some(code);
                agent.abort();
                continue;
            }
        };
        let Some(event) = event else {
            say!("agent: error: the engine stopped unexpectedly");
            return 1;
        };
        let mut next = Some(event);
        while let Some(event) = next {
            if let Some(code) = handler.event(event, interrupted) {
                handler.pause();
                return code;
            }
            next = events.try_recv().ok();
        }
        if !handler.pause() {
            // The output is gone (the reader exited, the terminal closed): stop, but let
            // the run end properly — its tools' processes killed, every result written —
            // unless a signal says not to wait.
            agent.abort();
            tokio::select! {
                () = agent.wait_for_idle() => {}
                _ = interrupts.next() => {}
            }
            return interrupted.unwrap_or(1);
        }
    }
}

/// The `--verbose` line: the session's tokens (sub-agents included) and cost.
pub fn usage_line(usage: &crate::protocol::usage::UsageReport) -> String {
    let total = &usage.total;
    let cost = match usage.cost {
        Some(cost) => format!("${cost:.4}"),
        None => format!("price unknown ({})", usage.price_unknown.join(", ")),
    };
    format!(
        "agent: usage: {} calls, {} input, {} output ({} reasoning), {} cache read, {} cache write tokens; cost {cost}",
        usage.calls,
        total.input,
        total.output,
        total.reasoning,
        total.cache_read,
        total.cache_write
    )
}
