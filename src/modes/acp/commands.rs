//! The slash commands an editor offers (`available_commands_update`) and what a prompt
//! that starts with one does: `/compact [focus]`, `/new`, `/model [provider/]model`,
//! `/thinking [level]`, `/session`, `/help`. A command answers with a message and ends its
//! turn at once; `/compact` and `/new` wait for no run to be going. The project's and user's
//! custom commands and skills are offered too; a prompt naming one is expanded by the session.

use super::options;
use super::session::Session;
use crate::extensions::Extensions;
use crate::modes::start_new_session;
use agent_client_protocol::Error;
use agent_client_protocol::v1::schema::{
    AvailableCommand, AvailableCommandInput, AvailableCommandsUpdate, SessionUpdate,
    UnstructuredCommandInput,
};

struct Command {
    name: &'static str,
    /// What the argument is, for commands that take one.
    input: Option<&'static str>,
    about: &'static str,
}

const COMMANDS: &[Command] = &[
    Command {
        name: "compact",
        input: Some("what the summary should keep"),
        about: "Summarize the conversation to free context",
    },
    Command {
        name: "new",
        input: None,
        about: "Start a new session here (the current one stays resumable)",
    },
    Command {
        name: "model",
        input: Some("[provider/]model"),
        about: "Show or switch the model",
    },
    Command {
        name: "thinking",
        input: Some("off, minimal, low, medium or high"),
        about: "Show or set the reasoning level",
    },
    Command {
        name: "session",
        input: None,
        about: "This session's id, file and usage",
    },
    Command {
        name: "help",
        input: None,
        about: "The commands",
    },
];

pub fn is_command(name: &str) -> bool {
    COMMANDS.iter().any(|c| c.name == name)
}

/// This agent's own command names, `/compact` …
pub fn names() -> Vec<String> {
    COMMANDS.iter().map(|c| format!("/{}", c.name)).collect()
}

/// The commands, for `available_commands_update`: ours, then the project's and user's
/// custom commands (those ours do not hide) and skills (`skill:NAME`).
pub fn available(extensions: &Extensions) -> SessionUpdate {
    let input = |hint: &str| {
        Some(AvailableCommandInput::Unstructured(
            UnstructuredCommandInput::new(hint),
        ))
    };
    let ours = COMMANDS.iter().map(|command| {
        AvailableCommand::new(command.name, command.about).input(command.input.and_then(input))
    });
    let custom = extensions
        .commands
        .iter()
        .filter(|command| !is_command(&command.name))
        .map(|command| {
            let about = command.description.as_deref().unwrap_or("Custom command");
            AvailableCommand::new(command.name.as_str(), about)
                .input(command.argument_hint.as_deref().and_then(input))
        });
    let skills = extensions.skills.iter().map(|skill| {
        AvailableCommand::new(format!("skill:{}", skill.name), skill.description.as_str())
            .input(input("what to do with it"))
    });
    SessionUpdate::AvailableCommandsUpdate(AvailableCommandsUpdate::new(
        ours.chain(custom).chain(skills).collect(),
    ))
}

/// Run `/name arg`; the text is the answer shown to the user.
pub async fn run(session: &Session, name: &str, arg: &str) -> Result<String, Error> {
    let agent = &session.agent;
    match name {
        "compact" => {
            if agent.is_running() {
                return Ok(busy());
            }
            let focus = (!arg.is_empty()).then(|| arg.to_string());
            Ok(match agent.compact(focus).await {
                Ok((before, after)) => {
                    format!("Compacted the conversation: {before} → {after} tokens.")
                }
                Err(e) => format!("Nothing was compacted: {e}"),
            })
        }
        "new" => {
            if agent.is_running() {
                return Ok(busy());
            }
            let previous = session.info();
            let persistent = previous.path.is_some();
            let info = start_new_session(agent, &session.settings, persistent)
                .await
                .map_err(super::internal_error)?;
            let text = format!(
                "Started a new session ({}). The earlier one stays resumable: `agent -r {}`.",
                info.id, previous.id
            );
            *session
                .info
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner) = info;
            Ok(text)
        }
        "model" if arg.is_empty() => {
            let state = agent.snapshot();
            let choices: Vec<String> = session
                .settings
                .available_models((&state.provider, &state.model))
                .iter()
                .map(|choice| options::model_value(&choice.provider.name, &choice.model.id))
                .collect();
            Ok(format!(
                "Model: {}. Switch with /model [provider/]model; known: {}.",
                options::model_value(&state.provider, &state.model),
                choices.join(", ")
            ))
        }
        "model" => {
            let label = session.set_model(arg).await?;
            session.announce_options();
            Ok(format!("Model: {label}."))
        }
        "thinking" if arg.is_empty() => Ok(format!(
            "Thinking: {}. Set it with /thinking off|minimal|low|medium|high.",
            agent.snapshot().thinking.as_str()
        )),
        "thinking" => {
            let level = options::thinking_of(arg).ok_or_else(|| {
                super::invalid_params(format!(
                    "unknown reasoning level `{arg}` (off, minimal, low, medium, high)"
                ))
            })?;
            agent.set_thinking(level).await;
            session.announce_options();
            Ok(format!("Thinking: {}.", level.as_str()))
        }
        "session" => {
            let info = session.info();
            let state = agent.snapshot();
            let file = info.path.map_or_else(
                || "not kept on disk".to_string(),
                |path| path.display().to_string(),
            );
            Ok(format!(
                "Session {} · {file} · {} messages · {} tokens · ${:.4} · context {} of {} tokens",
                info.id,
                state.message_count,
                state.usage.total_tokens,
                state.usage.cost.total,
                state.context_tokens,
                state.context_window
            ))
        }
        _ => Ok(help(&session.settings.extensions)),
    }
}

/// One line per command: ours, the custom ones, the skills.
fn help(extensions: &Extensions) -> String {
    let line = |name: &str, input: Option<&str>, about: &str| match input {
        Some(input) => format!("/{name} [{input}] — {about}"),
        None => format!("/{name} — {about}"),
    };
    let ours = COMMANDS.iter().map(|c| line(c.name, c.input, c.about));
    let custom = extensions
        .commands
        .iter()
        .filter(|c| !is_command(&c.name))
        .map(|c| {
            let about = c.description.as_deref().unwrap_or("Custom command");
            line(&c.name, c.argument_hint.as_deref(), about)
        });
    let skills = extensions
        .skills
        .iter()
        .map(|s| line(&format!("skill:{}", s.name), None, &s.description));
    ours.chain(custom)
        .chain(skills)
        .collect::<Vec<_>>()
        .join("\n")
}

fn busy() -> String {
    "The agent is working: wait for it to finish, or cancel it first.".to_string()
}
