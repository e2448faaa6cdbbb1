//! The event loop shared by `-p` and `--mode json`: start one prompt, hand every event to
//! the front end until `agent_end`, and turn SIGINT/SIGTERM/SIGHUP into an abort (a second
//! signal exits at once).

use super::signals::Interrupts;
use crate::agent::Agent;
use crate::protocol::event::AgentEvent;

pub trait Handler {
    /// Handle one event; `Some(code)` ends the run with that exit code. `interrupted` is the
    /// exit code of a signal that aborted the run.
    fn event(&mut self, event: AgentEvent, interrupted: Option<u8>) -> Option<u8>;

    /// No event is waiting right now (a good moment to flush output). `false` means the
    /// output is gone and the run should stop.
    fn pause(&mut self) -> bool {
        true
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
    agent.session_end("exit").await;
    code
}

async fn drive_prompt(
    agent: &Agent,
    mut events: tokio::sync::mpsc::UnboundedReceiver<crate::protocol::event::AgentEvent>,
    prompt: String,
    handler: &mut impl Handler,
) -> u8 {
    let message = match agent.user_message(&prompt) {
        Ok((message, attached)) => {
            // Said on stderr, so stdout stays the answer (or the JSON events).
            for attachment in attached {
                if let crate::agent::mentions::Attached::Skipped { path, why } = attachment {
                    say!("agent: @{path} not attached: {why}");
                }
            }
            message
        }
        Err(e) => {
            say!("agent: {e}");
            return 1;
        }
    };
    if let Err(e) = agent.prompt(message) {
        say!("agent: {e}");
        return 1;
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
