//! The slash commands an editor offers (`available_commands_update`) and what a prompt
//! that starts with one does: `/compact [focus]`, `/new`, `/model [provider/]model`,
//! `/profile [name]`, `/thinking [level]`, `/session`, `/goal [text|clear]`, `/help`. A command answers with a
//! message and ends its turn at once; `/compact` and `/new` wait for no run to be going; a
//! `/goal` set while idle keeps its turn until the run it starts ends. The project's and user's
//! custom commands and skills are offered too; a prompt naming one is expanded by the session.

use super::options;
use super::session::Session;
use crate::agent::commands::Control;
use crate::extensions::Extensions;
use crate::protocol::command::Command as EngineCommand;
use crate::protocol::outcome::{CommandError, Outcome};
use agent_client_protocol::Error;
use agent_client_protocol::v1::schema::{
    AvailableCommand, AvailableCommandInput, AvailableCommandsUpdate, SessionUpdate,
    UnstructuredCommandInput,
};

struct Builtin {
    name: &'static str,
    /// What the argument is, for commands that take one.
    input: Option<&'static str>,
    about: &'static str,
}

const COMMANDS: &[Builtin] = &[
    Builtin {
        name: "compact",
        input: Some("what the summary should keep"),
        about: "Summarize the conversation to free context",
    },
    Builtin {
        name: "new",
        input: None,
        about: "Start a new session here (the current one stays resumable)",
    },
    Builtin {
        name: "model",
        input: Some("[provider/]model"),
        about: "Show or switch the model",
    },
    Builtin {
        name: "profile",
        input: Some("a [profiles.NAME] of the config"),
        about: "Show or switch the profile (provider, model, account, modes, MCP servers)",
    },
    Builtin {
        name: "thinking",
        input: Some("off, minimal, low, medium or high"),
        about: "Show or set the reasoning level",
    },
    Builtin {
        name: "session",
        input: None,
        about: "This session's id, file and usage",
    },
    Builtin {
        name: "goal",
        input: Some("the objective; `clear` to clear it"),
        about: "Show, set or clear the goal the agent works toward across turns",
    },
    Builtin {
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

/// Run `/name arg` (the engine's command where there is one); the text is the answer shown
/// to the user (`None`: the pump tells the user, as a compaction's notice).
pub async fn run(session: &Session, name: &str, arg: &str) -> Result<Option<String>, Error> {
    let agent = &session.agent;
    let execute = |command| agent.execute(command, Control::new());
    Ok(Some(match name {
        "compact" => {
            let instructions = (!arg.is_empty()).then(|| arg.to_string());
            match execute(EngineCommand::Compact { instructions }).await {
                // The pump announces the compaction (`auto_compaction_end`).
                Ok(_) => return Ok(None),
                Err(CommandError::Busy) => busy(),
                Err(e) => format!("Nothing was compacted: {e}"),
            }
        }
        "new" => {
            let previous = agent.snapshot().session;
            match execute(EngineCommand::NewSession).await {
                Ok(Outcome::Session { session: now, .. }) => format!(
                    "Started a new session ({}). The earlier one stays resumable: `agent -r {}`.",
                    now.id, previous.id
                ),
                Ok(_) => String::new(),
                Err(CommandError::Busy | CommandError::RunActive) => busy(),
                Err(e) => return Err(super::internal_error(e.to_string())),
            }
        }
        "model" if arg.is_empty() => {
            let state = agent.snapshot();
            let choices: Vec<String> = agent
                .available_models()
                .iter()
                .map(|choice| options::model_value(&choice.provider, &choice.id))
                .collect();
            format!(
                "Model: {}. Switch with /model [provider/]model; known: {}.",
                options::model_value(&state.provider, &state.model),
                choices.join(", ")
            )
        }
        "model" => format!("Model: {}.", session.set_model(arg).await?),
        "profile" if arg.is_empty() => {
            let profiles = agent.profiles();
            let current = agent.snapshot().profile;
            match (current, profiles.is_empty()) {
                (_, true) => {
                    "No profile is configured ([profiles.NAME] in config.toml).".to_string()
                }
                (current, false) => format!(
                    "Profile: {}. Switch with /profile NAME; known: {}.",
                    current.as_deref().unwrap_or("none"),
                    profiles.join(", ")
                ),
            }
        }
        "profile" => match execute(EngineCommand::SetProfile {
            name: arg.to_string(),
        })
        .await
        {
            Ok(Outcome::Profile { profile }) => format!(
                "Profile: {} ({}/{}, {} mode, sandbox {}).",
                profile.name,
                profile.model.provider,
                profile.model.id,
                profile.permission_mode.as_str(),
                profile.sandbox
            ),
            Ok(_) => String::new(),
            Err(CommandError::RunActive) => busy(),
            Err(e) => format!("The profile was not switched: {e}"),
        },
        "thinking" if arg.is_empty() => format!(
            "Thinking: {}. Set it with /thinking off|minimal|low|medium|high.",
            agent.snapshot().thinking.as_str()
        ),
        "thinking" => format!("Thinking: {}.", session.set_thinking(arg).await?.as_str()),
        "goal" if arg.is_empty() => match agent.goal() {
            Some(goal) => format!("Goal: {goal}. Clear it with /goal clear."),
            None => "No goal is set. Set one with /goal TEXT.".to_string(),
        },
        "goal" => {
            let goal = (arg != "clear").then(|| arg.to_string());
            let was_running = agent.is_running();
            match execute(EngineCommand::SetGoal { goal }).await {
                Ok(Outcome::Goal { goal: None }) => "Goal cleared.".to_string(),
                Ok(Outcome::Goal { goal: Some(goal) }) if !was_running => {
                    // The run the goal started belongs to this turn.
                    agent.wait_for_idle().await;
                    match agent.goal() {
                        None => format!("Goal done: {goal}"),
                        Some(_) => format!("Goal still set: {goal}. Clear it with /goal clear."),
                    }
                }
                Ok(_) => format!("Goal set: {arg}"),
                Err(e) => format!("The goal was not set: {e}"),
            }
        }
        "session" => {
            let state = agent.snapshot();
            let file = state.session.path.as_ref().map_or_else(
                || "not kept on disk".to_string(),
                |path| path.display().to_string(),
            );
            format!(
                "Session {} · {file} · {} messages · {} tokens · ${:.4} · context {} of {} tokens",
                state.session.id,
                state.message_count,
                state.usage.total_tokens,
                state.usage.cost.total,
                state.context_tokens,
                state.context_window
            )
        }
        _ => help(&session.settings.extensions),
    }))
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
