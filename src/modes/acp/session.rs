//! One ACP session: an engine `Agent` working in the editor's directory, its event pump, and
//! what the editor asks of it — prompts (a prompt during a run is a follow-up), cancel,
//! steer, mode, model and reasoning level. Everything here only calls the `Agent` handle;
//! the loop itself stays in the engine.

use super::commands;
use super::link::Link;
use super::options;
use super::permission::Asking;
use super::prompt;
use super::pump::Pump;
use super::turns::{Ticket, Turns};
use crate::agent::Agent;
use crate::agent::commands::Control;
use crate::config::Settings;
use crate::mcp::McpManager;
use crate::protocol::command::{Command, Delivery, ModelRef, ThinkingLevel, UserInput};
use crate::protocol::message::now_millis;
use crate::protocol::outcome::{CommandError, Outcome};
use crate::startup::Prepared;
use agent_client_protocol::Error;
use agent_client_protocol::v1::Responder;
use agent_client_protocol::v1::schema::{
    NoticeSeverity, PromptRequest, PromptResponse, SessionConfigOption, StopReason,
};
use futures_util::FutureExt;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use tokio::task::JoinHandle;

pub struct Session {
    pub link: Arc<Link>,
    pub agent: Arc<Agent>,
    /// The settings for this session's directory (models are resolved with them).
    pub settings: Settings,
    turns: Arc<Mutex<Turns<Ticket>>>,
    /// The timestamp of the last message sent, so that no two are stamped alike.
    clock: Mutex<i64>,
    pump: JoinHandle<()>,
    /// The session's MCP servers, ended with it.
    mcp: Arc<McpManager>,
    /// What the user is told once the editor has the session (`Server::announce_opening`).
    opening_notices: Mutex<Vec<String>>,
}

fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}

impl Session {
    /// Start the session's event pump, with `notices` for the user once the editor has
    /// the session. Must be called inside a tokio runtime.
    pub fn start(
        link: Link,
        prepared: Prepared,
        settings: Settings,
        notices: Vec<String>,
    ) -> Arc<Session> {
        let link = Arc::new(link);
        let agent = Arc::new(prepared.agent);
        let mcp = prepared.mcp;
        let turns = Arc::new(Mutex::new(Turns::default()));
        let pump = Pump::new(
            link.clone(),
            Arc::downgrade(&agent),
            turns.clone(),
            Asking::default(),
            settings.cwd.clone(),
        );
        let pump = crate::tasks::spawn(pump.run(agent.subscribe()));
        Arc::new(Session {
            link,
            agent,
            settings,
            turns,
            clock: Mutex::new(0),
            pump,
            mcp,
            opening_notices: Mutex::new(notices),
        })
    }

    /// The notices of opening the session, once.
    pub fn take_opening_notices(&self) -> Vec<String> {
        std::mem::take(&mut *lock(&self.opening_notices))
    }

    /// A timestamp no other message of this session has.
    fn next_timestamp(&self) -> i64 {
        let mut clock = lock(&self.clock);
        *clock = now_millis().max(clock.saturating_add(1));
        *clock
    }

    /// Handle a `session/prompt`: a command runs at once; anything else goes to the engine
    /// (starting a run, or queued as a follow-up while one runs) and is answered by the
    /// pump when its turn ends.
    pub fn prompt(self: &Arc<Self>, request: PromptRequest, responder: Responder<PromptResponse>) {
        if let Some((name, arg)) = prompt::command_of(&request.prompt)
            && commands::is_command(&name)
        {
            let session = self.clone();
            crate::tasks::spawn(async move {
                let result = commands::run(&session, &name, &arg).await;
                let answer = result.map(|text| {
                    if let Some(text) = text {
                        session.link.say(text);
                    }
                    PromptResponse::new(StopReason::EndTurn)
                });
                if let Err(error) = responder.respond_with_result(answer) {
                    tracing::debug!(%error, "a command's answer could not be sent");
                }
            });
            return;
        }
        // The client may cancel the request itself (`$/cancel_request`): that stops the run
        // as `session/cancel` does.
        let cancellation = responder.cancellation();
        let weak = Arc::downgrade(self);
        let watcher = crate::tasks::spawn(async move {
            cancellation.cancelled().await;
            if let Some(session) = weak.upgrade() {
                session.cancel();
            }
        });
        let ticket = Ticket {
            responder,
            watcher: Some(watcher),
        };
        let timestamp = self.next_timestamp();
        let command = Command::Prompt {
            input: prompt::input(&request.prompt, timestamp),
            delivery: Delivery::FollowUp,
        };
        // The turns stay locked until the ticket waits, so the pump cannot see the message
        // enter the conversation first. Delivering a prompt takes effect at once.
        let mut turns = lock(&self.turns);
        let result = self
            .agent
            .execute(command, Control::new())
            .now_or_never()
            .unwrap_or_else(|| Err(CommandError::Session("the prompt was not delivered".into())));
        match result {
            Ok(outcome) => {
                turns.wait(timestamp, ticket);
                drop(turns);
                if let Outcome::Accepted { skipped, .. } = outcome {
                    for file in skipped {
                        self.link.inform(
                            NoticeSeverity::Warning,
                            &format!("@{} was not attached: {}", file.path, file.reason),
                        );
                    }
                }
            }
            Err(error) => {
                drop(turns);
                // Nothing reached the model: say why, and end the turn.
                let why = match error {
                    CommandError::UnknownCommand { message, .. } => format!(
                        "{message}. This agent's own commands: {}.",
                        commands::names().join(", ")
                    ),
                    other => other.to_string(),
                };
                self.link.say(why);
                ticket.answer(Ok(PromptResponse::new(StopReason::EndTurn)));
            }
        }
    }

    /// `session/cancel`: stop the run now (`Abort`). Its prompt is answered `cancelled` when
    /// the run has ended (every tool call answered); prompts still queued are answered at once.
    pub fn cancel(&self) {
        let aborted = self
            .agent
            .execute(Command::Abort, Control::new())
            .now_or_never();
        let dropped = match aborted {
            Some(Ok(Outcome::Aborted { queued })) => queued,
            _ => Vec::new(),
        };
        let tickets = lock(&self.turns).dropped(&dropped);
        for ticket in tickets {
            ticket.answer(Ok(PromptResponse::new(StopReason::Cancelled)));
        }
    }

    /// `_agent/steer`: deliver a message to the run that is going (`Prompt`, delivered
    /// `steer_running`: `Idle` when no run is going).
    pub async fn steer(&self, text: String) -> Result<(), Error> {
        let input = UserInput {
            timestamp: Some(self.next_timestamp()),
            ..UserInput::text(text)
        };
        let command = Command::Prompt {
            input,
            delivery: Delivery::SteerRunning,
        };
        match self.agent.execute(command, Control::new()).await {
            Ok(_) => Ok(()),
            Err(e @ CommandError::Idle) => Err(super::invalid_params(e.to_string())),
            Err(other) => Err(super::internal_error(other.to_string())),
        }
    }

    /// Every config option with its current value.
    pub fn options(&self) -> Vec<SessionConfigOption> {
        options::all(&self.agent.snapshot(), &self.agent.available_models())
    }

    /// Switch the permission mode (`SetPermissionMode`); the pump tells the editor when the
    /// engine announces it (`config_changed`).
    pub async fn set_mode(&self, id: &str) -> Result<(), Error> {
        let mode = options::mode_of(id).ok_or_else(|| {
            super::invalid_params(format!(
                "unknown mode `{id}` (the modes are ask, auto, read-only and plan)"
            ))
        })?;
        self.execute(Command::SetPermissionMode { mode }).await?;
        Ok(())
    }

    /// `session/set_config_option`: the mode, the model (`provider/model`) or the reasoning
    /// level (the answer carries every option's new value).
    pub async fn set_option(&self, id: &str, value: &str) -> Result<(), Error> {
        match id {
            options::MODE => self.set_mode(value).await?,
            options::MODEL => drop(self.set_model(value).await?),
            options::THINKING => drop(self.set_thinking(value).await?),
            _ => {
                return Err(super::invalid_params(format!(
                    "unknown config option `{id}`"
                )));
            }
        }
        Ok(())
    }

    /// Use another model, `provider/model` or a model of the current provider
    /// (`SetModel`): its `provider/model`.
    pub async fn set_model(&self, value: &str) -> Result<String, Error> {
        let model = ModelRef::Text(value.to_string());
        match self.execute(Command::SetModel { model }).await? {
            Outcome::Model { model, .. } => Ok(options::model_value(&model.provider, &model.id)),
            _ => Ok(value.to_string()),
        }
    }

    /// Use this reasoning level (`SetThinking`; the name in any case): the level in effect.
    pub async fn set_thinking(&self, value: &str) -> Result<ThinkingLevel, Error> {
        let level = ThinkingLevel::parse(value).ok_or_else(|| {
            super::invalid_params(format!(
                "unknown reasoning level `{value}` (off, minimal, low, medium, high)"
            ))
        })?;
        match self.execute(Command::SetThinking { level }).await? {
            Outcome::Thinking { level } => Ok(level),
            _ => Ok(level),
        }
    }

    /// Carry out `command`; its error as the editor's `invalid_params`.
    pub async fn execute(&self, command: Command) -> Result<Outcome, Error> {
        self.agent
            .execute(command, Control::new())
            .await
            .map_err(|e| super::invalid_params(e.to_string()))
    }

    /// Stop everything and answer every prompt still open (the session is closed or the
    /// editor is gone). Waits until the run has ended, so its tools are killed, and ends
    /// the session's MCP servers.
    pub async fn close(&self) {
        self.agent.abort();
        for ticket in lock(&self.turns).take_all() {
            ticket.answer(Ok(PromptResponse::new(StopReason::Cancelled)));
        }
        self.agent.wait_for_idle().await;
        self.pump.abort();
        self.mcp.shut_down().await;
        if let Some(lsp) = &self.settings.tool_settings.lsp {
            lsp.shut_down().await;
        }
    }
}
