//! The interface's way to the engine: every operation the user asks for (a message, an
//! answer, a new or resumed session, a rewind) is an engine `Command` executed by
//! `Agent::execute`. Commands the engine answers at once are answered before the next key
//! is read (`execute_now`); the slow ones run as tasks whose result comes back as
//! `TaskResult::Command` with what to do then (`After`). The session's identity is the
//! engine's (`snapshot().session`): the interface keeps no copy.

use super::app::{App, TaskResult};
use super::views::menu::{Choice, Menu, MenuItem};
use crate::agent::commands::Control;
use crate::protocol::command::{Command, Delivery, InputPart, UserInput};
use crate::protocol::outcome::{CommandError, Outcome};
use futures_util::FutureExt;

pub type CommandResult = Result<Outcome, CommandError>;

/// What the interface does with a slow command's result.
pub enum After {
    NewSession,
    Resumed,
    /// `retry`: the same switch with `force`; `files`: the files were asked for.
    SwitchedBranch {
        retry: Choice,
        files: bool,
    },
    Forked,
    /// `retry`: the same rewind with `force`, offered when files changed outside.
    Rewound {
        retry: Choice,
        undo: bool,
    },
}

impl App {
    /// Execute `command`; its result when the engine answered at once, else `None` (it
    /// finishes in a task of its own, its result unused).
    pub fn execute_now(&self, command: Command) -> Option<CommandResult> {
        let agent = self.agent.clone();
        let mut run = Box::pin(async move { agent.execute(command, Control::new()).await });
        match (&mut run).now_or_never() {
            Some(result) => Some(result),
            None => {
                crate::tasks::spawn(run);
                None
            }
        }
    }

    /// Execute `command` in a task; its result comes back to `on_command`.
    pub fn execute_then(&self, command: Command, after: After) {
        let agent = self.agent.clone();
        let tasks = self.tasks.clone();
        crate::tasks::spawn(async move {
            let result = agent.execute(command, Control::new()).await;
            let _ = tasks.send(TaskResult::Command(after, result));
        });
    }

    /// Send what the composer held (`text`, its image chips) as `delivery` says; on a
    /// refusal the text comes back to the composer, with why.
    pub fn send_prompt(&mut self, text: String, delivery: Delivery) {
        let sent = self.as_engine_text(&text);
        if let Err(problem) = self.send(&text, sent, delivery) {
            // Nothing is sent: the prompt comes back to be changed.
            self.input.composer.set_text(&text);
            self.warning(&problem);
        }
    }

    /// Run a custom command or skill (`/review src`): expanded by the engine, it starts a
    /// run (with the command's model, for that run) or steers the one going.
    pub fn send_command(&mut self, line: &str) {
        if let Err(problem) = self.send(line, line.to_string(), Delivery::Steer) {
            self.warning(&problem);
        }
    }

    /// `sent` (what `text` is for the engine) and the image chips `text` shows, as a
    /// `Prompt`; what was attached is said.
    fn send(&mut self, text: &str, sent: String, delivery: Delivery) -> Result<(), String> {
        let mut parts = vec![InputPart::Text { text: sent }];
        parts.extend(
            self.input
                .composer
                .images_in(text)
                .into_iter()
                .map(|image| InputPart::Chip {
                    label: image.label,
                    path: image.path,
                }),
        );
        let prompt = Command::Prompt {
            input: UserInput {
                parts,
                timestamp: None,
            },
            delivery,
        };
        match self.execute_now(prompt) {
            Some(Ok(Outcome::Accepted { attached, .. })) => self.note_attachments(&attached),
            Some(Err(e)) => return Err(command_problem(&e)),
            Some(Ok(_)) | None => {}
        }
        Ok(())
    }

    /// A text as the engine should read it: a slash word that names no custom command or
    /// skill ("/tmp is full") is the user's text, sent with the engine's escape (`//`).
    fn as_engine_text(&self, text: &str) -> String {
        let extensions = &self.settings.extensions;
        match crate::extensions::slash_word(text) {
            Some((word, _)) if !extensions.knows(word) && !word.starts_with("skill:") => {
                let at = text.len() - text.trim_start().len();
                format!("{}/{}", &text[..at], &text[at..])
            }
            _ => text.to_string(),
        }
    }

    /// A slow command ended.
    pub fn on_command(&mut self, after: After, result: CommandResult) {
        match (after, result) {
            (After::NewSession, Ok(Outcome::Session { session, notices })) => {
                self.switched(&session.id, &notices, "Started a new session.".to_string())
            }
            (After::Resumed, Ok(Outcome::Session { session, notices })) => {
                let note = format!("Resumed session {}", session.id);
                self.switched(&session.id, &notices, note)
            }
            (After::NewSession, Err(e)) => {
                self.warning(&format!("Could not start a new session: {e}"))
            }
            (After::Resumed, Err(e)) => self.warning(&format!("Could not resume: {e}")),
            (
                After::SwitchedBranch { files, .. },
                Ok(Outcome::BranchSwitched { files: done, .. }),
            ) => self.switched_branch(done, files),
            (
                After::SwitchedBranch { retry, .. },
                Err(CommandError::ChangedOutside { paths, .. }),
            ) => self.offer_overwrite(&paths, retry),
            (After::SwitchedBranch { .. }, Err(e)) => {
                self.warning(&format!("Could not switch branch: {e}"))
            }
            (After::Forked, Ok(Outcome::Forked { session, text })) => {
                self.notice(&format!(
                    "Forked: this is now session {} (the original stays as it was; /resume lists it)",
                    session.id
                ));
                self.reshow(6);
                if let Some(text) = text {
                    self.input.composer.set_text(&text);
                }
            }
            (After::Forked, Err(e)) => self.warning(&format!("Could not fork: {e}")),
            (After::Rewound { undo, .. }, Ok(Outcome::Rewound { summary, text })) => {
                self.rewound(summary, text, undo)
            }
            (After::Rewound { retry, .. }, Err(CommandError::ChangedOutside { paths, .. })) => {
                self.offer_overwrite(&paths, retry)
            }
            (After::Rewound { .. }, Err(e)) => self.warning(&format!("Nothing was rewound: {e}")),
            (_, Ok(_)) => {}
        }
        self.dirty = true;
    }

    /// A restore refused because `paths` changed outside the agent: nothing was restored;
    /// `retry` (the same with `force`) is offered.
    fn offer_overwrite(&mut self, paths: &[String], retry: Choice) {
        let listed = paths.join(", ");
        self.warning(&format!(
            "Changed outside the agent since the checkpoint: {listed}. Nothing was restored."
        ));
        self.views.push(Box::new(Menu::new(
            "Overwrite them?",
            vec![
                MenuItem::new("Cancel", Choice::Cancel),
                MenuItem::new("Restore anyway", retry)
                    .note("(their changes are lost; undo brings them back)"),
            ],
        )));
    }

    /// Another session is the current one: its conversation shown, and which it is.
    fn switched(&mut self, id: &str, notices: &[String], note: String) {
        for notice in notices {
            self.warning(notice);
        }
        self.run.todos.clear();
        self.reshow(200);
        let resumed = self.resumed_note(id);
        self.notice(&resumed.unwrap_or(note));
    }

    /// The conversation shown anew after it moved (another session or branch): the
    /// transcript view's log starts over, and the last `limit` messages are shown (as far
    /// as they fill `REPLAY_ROWS`).
    pub fn reshow(&mut self, limit: usize) {
        self.log.clear();
        self.replay(limit, super::start::REPLAY_ROWS);
    }
}

/// How the interface words an engine's refusal.
pub fn command_problem(error: &CommandError) -> String {
    match error {
        CommandError::UnknownCommand { name, .. } => {
            format!("Unknown command /{name} — /help lists them")
        }
        CommandError::Busy | CommandError::RunActive => {
            "The agent is working: wait for it, or press esc first".to_string()
        }
        other => other.to_string(),
    }
}
