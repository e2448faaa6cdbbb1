//! `!command`: the user's own shell command, run with the bash tool in the working
//! directory between two checkpoints (its output is not sent to the model). While it runs it has a live cell — a
//! spinner, its time, "esc to cancel" and its last lines; when it ends its cell goes into the
//! transcript, and its whole output into the transcript view.

use super::app::{App, TaskResult};
use super::cells;
use super::transcript::{Entry, Tool as LoggedTool};
use crate::protocol::message::join_text;
use crate::tools::{Tool, ToolContext, ToolOutput};
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
    Done(u64, Value, ToolOutput),
}

impl App {
    pub fn run_shell(&mut self, command: &str) {
        let command = command.trim().to_string();
        if command.is_empty() {
            return;
        }
        self.shell_runs_started += 1;
        let id = self.shell_runs_started;
        self.shells.push(ShellRun {
            id,
            command: command.clone(),
            since: Instant::now(),
            output: Vec::new(),
        });
        self.dirty = true;
        let settings = self.settings.clone();
        let tasks = self.tasks.clone();
        let cancel = self.shell_cancel.clone();
        let spill = self.agent.spill_dir();
        let agent = self.agent.clone();
        tokio::spawn(async move {
            let updates = tasks.clone();
            let ctx = ToolContext {
                tool_call_id: String::new(),
                cwd: settings.cwd.clone(),
                cancel,
                on_update: Arc::new(move |partial| {
                    let text = join_text(&partial.content);
                    let _ = updates.send(TaskResult::Shell(ShellEvent::Output(id, text)));
                }),
                settings: Arc::new(settings.tool_settings.clone()),
                hidden: None,
                files: Default::default(),
                spill,
                shells: Default::default(),
            };
            let args = json!({"command": command});
            // Checkpointed like a mutating tool call, so a rewind covers it too.
            let run = crate::tools::bash::BashTool.execute(args.clone(), ctx);
            let output = agent
                .checkpointed(run)
                .await
                .unwrap_or_else(|e| ToolOutput::error(e.to_string()));
            let _ = tasks.send(TaskResult::Shell(ShellEvent::Done(id, args, output)));
        });
    }

    pub fn on_shell(&mut self, event: ShellEvent) {
        match event {
            ShellEvent::Output(id, text) => {
                if let Some(run) = self.shells.iter_mut().find(|r| r.id == id) {
                    let lines: Vec<&str> = text.lines().collect();
                    run.output = lines[lines.len().saturating_sub(super::app::LIVE_OUTPUT_ROWS)..]
                        .iter()
                        .map(|s| s.to_string())
                        .collect();
                }
            }
            ShellEvent::Done(id, args, output) => {
                self.shells.retain(|r| r.id != id);
                let rows = cells::tool(
                    "!",
                    &args,
                    &output.content,
                    output.details.as_ref(),
                    output.is_error,
                    self.width,
                    &self.theme,
                );
                self.push_rows(rows);
                self.log.push(Entry::Tool(LoggedTool::Own {
                    name: "!".to_string(),
                    args,
                    output: join_text(&output.content),
                    details: output.details,
                    is_error: output.is_error,
                }));
            }
        }
        self.dirty = true;
    }
}
