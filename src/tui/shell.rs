//! `!command`: the user's own shell command, carried out by the engine (`RunShell`: the
//! bash tool in the working directory, between two checkpoints, its output not sent to the
//! model). While it runs it has a live cell — a spinner, its time, "esc to cancel" and its
//! last lines; when it ends its cell goes into the transcript, and its whole output into the
//! transcript view.

use super::app::{App, TaskResult};
use super::cells;
use super::transcript::{Entry, Tool as LoggedTool};
use crate::agent::commands::Control;
use crate::protocol::command::Command;
use crate::protocol::message::{Content, join_text};
use crate::protocol::outcome::Outcome;
use serde_json::{Value, json};
use std::sync::Arc;
use std::time::Instant;

/// A `!command` that is running.
pub struct ShellRun {
    pub id: u64,
    pub command: String,
    pub since: Instant,
    /// Its last lines so far.
    pub output: Vec<String>,
}

/// What a running `!command` reports.
pub enum ShellEvent {
    /// Its output so far (all of it).
    Output(u64, String),
    Done(u64, Value, Finished),
}

/// How a `!command` ended: its output, details and whether it failed, or why it could not
/// run.
pub struct Finished {
    pub output: String,
    pub details: Option<Value>,
    pub is_error: bool,
}

impl App {
    pub fn run_shell(&mut self, command: &str) {
        let command = command.trim().to_string();
        if command.is_empty() {
            return;
        }
        self.run.shell_runs_started += 1;
        let id = self.run.shell_runs_started;
        self.run.shells.push(ShellRun {
            id,
            command: command.clone(),
            since: Instant::now(),
            output: Vec::new(),
        });
        self.dirty = true;
        let tasks = self.tasks.clone();
        let updates = tasks.clone();
        let control = Control {
            cancel: self.run.shell_cancel.clone(),
            progress: Some(Arc::new(move |partial| {
                let text = join_text(&partial.content);
                let _ = updates.send(TaskResult::Shell(ShellEvent::Output(id, text)));
            })),
        };
        let agent = self.agent.clone();
        crate::tasks::spawn(async move {
            let args = json!({ "command": command });
            let run = agent.execute(Command::RunShell { command }, control).await;
            let finished = match run {
                Ok(Outcome::Shell(shell)) => Finished {
                    output: shell.output,
                    details: shell.details,
                    is_error: shell.is_error,
                },
                Ok(other) => Finished {
                    output: format!("unexpected answer to a shell command: {other:?}"),
                    details: None,
                    is_error: true,
                },
                Err(error) => Finished {
                    output: error.to_string(),
                    details: None,
                    is_error: true,
                },
            };
            let _ = tasks.send(TaskResult::Shell(ShellEvent::Done(id, args, finished)));
        });
    }

    pub fn on_shell(&mut self, event: ShellEvent) {
        match event {
            ShellEvent::Output(id, text) => {
                if let Some(run) = self.run.shells.iter_mut().find(|r| r.id == id) {
                    let lines: Vec<&str> = text.lines().collect();
                    run.output = lines[lines.len().saturating_sub(super::app::LIVE_OUTPUT_ROWS)..]
                        .iter()
                        .map(|s| s.to_string())
                        .collect();
                }
            }
            ShellEvent::Done(id, args, finished) => {
                self.run.shells.retain(|r| r.id != id);
                let content = [Content::Text {
                    text: finished.output.clone(),
                }];
                let (shown_args, details) = (args.clone(), finished.details.clone());
                let (is_error, theme) = (finished.is_error, self.theme);
                self.push_cell(move |width| {
                    cells::tool(
                        "!",
                        &shown_args,
                        &content,
                        details.as_ref(),
                        is_error,
                        width,
                        &theme,
                    )
                });
                self.log.push(Entry::Tool(LoggedTool::Own {
                    name: "!".to_string(),
                    args,
                    output: finished.output,
                    details: finished.details,
                    is_error: finished.is_error,
                }));
            }
        }
        self.dirty = true;
    }
}
