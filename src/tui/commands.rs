//! Slash commands (`/help`, `/model`, `/thinking`, `/compact`, `/new`, `/resume`,
//! `/rewind`, `/fork`, `/tree`, `/session`, `/mcp`, `/permissions`, `/plan`, `/ps`, `/agents`,
//! `/copy`, `/quit`) with completion. Anything slow
//! runs as a task that reports back through `TaskResult`.

use super::app::{App, TaskResult};
use super::cells;
use super::picker::Picker;
use crate::llm::client::Provider;
use crate::llm::request::ThinkingLevel;
use crate::modes::{SessionInfo, record_model, start_new_session};
use crate::session::{self, Choice};
use clap::ValueEnum;
use ratatui::text::{Line, Span};
use std::sync::Arc;

pub struct Command {
    pub name: &'static str,
    pub args: &'static str,
    pub help: &'static str,
}

pub const COMMANDS: &[Command] = &[
    Command {
        name: "help",
        args: "",
        help: "Keys and commands",
    },
    Command {
        name: "model",
        args: "[provider/]model",
        help: "Show or switch the model",
    },
    Command {
        name: "thinking",
        args: "[level]",
        help: "Show or set the reasoning level (off, minimal, low, medium, high)",
    },
    Command {
        name: "compact",
        args: "[focus]",
        help: "Summarize the conversation to free context",
    },
    Command {
        name: "new",
        args: "",
        help: "Start a new session",
    },
    Command {
        name: "resume",
        args: "",
        help: "Continue an earlier session of this directory",
    },
    Command {
        name: "rewind",
        args: "",
        help: "Go back to before a message: conversation, code or both (esc esc)",
    },
    Command {
        name: "fork",
        args: "",
        help: "Continue in a new session from an earlier message",
    },
    Command {
        name: "tree",
        args: "",
        help: "This session's branches; switch between them",
    },
    Command {
        name: "session",
        args: "",
        help: "This session's file, id and usage",
    },
    Command {
        name: "mcp",
        args: "",
        help: "MCP servers: status, tools, why one is down",
    },
    Command {
        name: "agents",
        args: "[ID]",
        help: "Sub-agents: list them, or view one (steer it, stop it); ctrl+g",
    },
    Command {
        name: "permissions",
        args: "[revoke N]",
        help: "Mode, sandbox, rules, session grants; revoke N, or allow|ask|deny RULE",
    },
    Command {
        name: "copy",
        args: "",
        help: "Copy the last answer to the clipboard (OSC 52: works over SSH)",
    },
    Command {
        name: "ps",
        args: "",
        help: "Background shells: list them, kill one",
    },
    Command {
        name: "plan",
        args: "[task]",
        help: "Plan mode: the agent only looks, then proposes a plan to approve",
    },
    Command {
        name: "quit",
        args: "",
        help: "Leave (the session is kept)",
    },
];

/// Whether `/name` is a command (its name or an alias).
pub fn is_command(name: &str) -> bool {
    COMMANDS.iter().any(|c| c.name == name) || ["?", "exit", "q"].contains(&name)
}

/// The commands matching what is being typed (`/co` → compact), while no argument is typed.
pub fn completions(input: &str) -> Vec<&'static Command> {
    let Some(typed) = input.strip_prefix('/') else {
        return Vec::new();
    };
    if typed.contains(char::is_whitespace) {
        return Vec::new();
    }
    COMMANDS
        .iter()
        .filter(|c| c.name.starts_with(typed))
        .collect()
}

impl App {
    /// Tab: complete the highlighted command.
    pub fn complete(&mut self) -> bool {
        let matches = completions(self.composer.single_line());
        let Some(command) = matches.get(self.completion.min(matches.len().saturating_sub(1)))
        else {
            return false;
        };
        let suffix = if command.args.is_empty() { "" } else { " " };
        self.composer
            .set_text(&format!("/{}{suffix}", command.name));
        self.completion = 0;
        true
    }

    pub fn run_command(&mut self, line: &str) {
        let line = line.trim();
        let (name, arg) = match line[1..].split_once(char::is_whitespace) {
            Some((name, arg)) => (name, arg.trim()),
            None => (&line[1..], ""),
        };
        match name {
            "help" | "?" => self.help(),
            "model" => self.model_command(arg),
            "thinking" => self.thinking_command(arg),
            "compact" => self.compact_command(arg),
            "new" => self.new_session(),
            "resume" => self.open_picker(),
            "rewind" => self.open_rewind(),
            "fork" => self.open_fork(),
            "tree" => self.open_tree(),
            "session" => self.session_info(),
            "mcp" => {
                let rows = super::mcp_view::rows(&self.mcp.views(), self.width, &self.theme);
                self.push_rows(rows);
            }
            "permissions" => self.permissions_command(arg),
            "plan" => self.plan_command(arg),
            "ps" => self.ps_command(),
            "agents" if arg.is_empty() => self.list_agents(),
            "agents" => self.open_agent_view(Some(arg)),
            "copy" => self.copy_command(),
            "quit" | "exit" | "q" => self.exit = Some(0),
            _ => self.warning(&format!("Unknown command /{name} — /help lists them")),
        }
    }

    fn help(&mut self) {
        let theme = self.theme;
        let mut rows = vec![
            cells::blank(),
            Line::from(Span::styled("Commands", theme.bold())),
        ];
        for command in COMMANDS {
            rows.push(Line::from(vec![
                Span::styled(format!("  /{:<10}", command.name), theme.accent()),
                Span::styled(format!("{:<20}", command.args), theme.dim()),
                Span::raw(command.help),
            ]));
        }
        rows.push(Line::from(vec![
            Span::styled("  !command   ", theme.accent()),
            Span::raw("run a shell command (the output is not sent to the model)"),
        ]));
        rows.push(cells::blank());
        rows.push(Line::from(Span::styled("Keys", theme.bold())));
        for (keys, what) in [
            ("enter", "send; while the agent works, steer it"),
            ("alt+enter", "queue a follow-up for when it is done"),
            ("shift+enter, ctrl+j", "new line"),
            (
                "esc",
                "stop the agent (queued messages come back to the composer)",
            ),
            ("esc esc", "rewind (on an empty composer, while idle)"),
            ("ctrl+c", "stop the agent; when idle clear, twice to quit"),
            ("ctrl+d", "quit (on an empty composer)"),
            ("alt+↑", "edit the last queued message"),
            ("↑ ↓", "earlier prompts"),
            ("ctrl+t", "show or hide thinking"),
            ("ctrl+o", "transcript view (esc closes)"),
            (
                "ctrl+g",
                "agent view: a sub-agent's transcript as it streams; s steer, x stop, tab next",
            ),
            ("ctrl+z", "suspend"),
        ] {
            rows.push(Line::from(vec![
                Span::styled(format!("  {keys:<22}"), theme.accent()),
                Span::raw(what),
            ]));
        }
        self.push_rows(rows);
    }

    fn model_command(&mut self, arg: &str) {
        let state = self.agent.snapshot();
        if arg.is_empty() {
            let known: Vec<&str> = crate::llm::catalog::ids().collect();
            self.notice(&format!(
                "Model: {}/{} — switch with /model [provider/]model, e.g. /model anthropic/claude-sonnet-4-5. Known models: {}",
                state.provider,
                state.model,
                known.join(", ")
            ));
            return;
        }
        let resolved = match arg.split_once('/') {
            Some((provider, model)) if self.settings.resolve_model(provider, model).is_ok() => {
                self.settings.resolve_model(provider, model)
            }
            _ => self.settings.resolve_model(&state.provider, arg),
        };
        let (provider_settings, model) = match resolved {
            Ok(resolved) => resolved,
            Err(e) => return self.warning(&e),
        };
        let provider = match Provider::new(provider_settings, self.settings.timeouts) {
            Ok(provider) => provider,
            Err(e) => return self.warning(&e.to_string()),
        };
        let label = format!("{}/{}", provider.settings().name, model.id);
        let agent = self.agent.clone();
        let tasks = self.tasks.clone();
        tokio::spawn(async move {
            agent.set_model(Arc::new(provider), model).await;
            let _ = tasks.send(TaskResult::Notice(format!("Model: {label}")));
            let _ = tasks.send(TaskResult::Settings);
        });
    }

    fn thinking_command(&mut self, arg: &str) {
        if arg.is_empty() {
            let current = self.agent.snapshot().thinking;
            return self.notice(&format!(
                "Thinking: {} — set with /thinking off|minimal|low|medium|high",
                current.as_str()
            ));
        }
        let Ok(level) = ThinkingLevel::from_str(arg, true) else {
            return self.warning(&format!(
                "Unknown thinking level `{arg}` (off, minimal, low, medium, high)"
            ));
        };
        let agent = self.agent.clone();
        let tasks = self.tasks.clone();
        tokio::spawn(async move {
            agent.set_thinking(level).await;
            let _ = tasks.send(TaskResult::Notice(format!("Thinking: {}", level.as_str())));
        });
    }

    fn compact_command(&mut self, focus: &str) {
        if self.is_working() {
            return self.warning("The agent is working: wait for it, or press esc first");
        }
        let agent = self.agent.clone();
        let tasks = self.tasks.clone();
        let focus = (!focus.is_empty()).then(|| focus.to_string());
        tokio::spawn(async move {
            // A compaction reports itself (auto_compaction_end); only a refusal is left.
            if let Err(crate::agent::AgentError::Busy) = agent.compact(focus).await {
                let _ = tasks.send(TaskResult::Warning(
                    "The agent is working: wait for it, or press esc first".to_string(),
                ));
            }
            let _ = tasks.send(TaskResult::Idle);
        });
    }

    fn new_session(&mut self) {
        if self.is_working() {
            return self.warning("The agent is working: wait for it, or press esc first");
        }
        let settings = self.settings.clone();
        let agent = self.agent.clone();
        let tasks = self.tasks.clone();
        let persistent = self.session.path.is_some();
        tokio::spawn(async move {
            let result = start_new_session(&agent, &settings, persistent).await;
            let _ = tasks.send(match result {
                Ok(info) => TaskResult::SessionSwitched(info, "Started a new session.".to_string()),
                Err(e) => TaskResult::Warning(format!("Could not start a new session: {e}")),
            });
        });
    }

    pub fn open_picker(&mut self) {
        if self.is_working() {
            return self.warning("The agent is working: wait for it, or press esc first");
        }
        let picker = Picker::load(
            &self.settings.paths.sessions_dir,
            &self.settings.cwd,
            self.session.path.as_deref(),
        );
        if picker.is_empty() {
            return self.notice("No earlier sessions in this directory.");
        }
        self.picker = Some(picker);
        self.dirty = true;
    }

    /// Continue the session picked in the picker.
    pub fn resume_picked(&mut self) {
        let Some(path) = self.picker.take().and_then(|p| p.selected_path()) else {
            return;
        };
        let agent = self.agent.clone();
        let tasks = self.tasks.clone();
        let settings = self.settings.clone();
        tokio::spawn(async move {
            let result = async {
                agent.save_session().await.map_err(|e| e.to_string())?;
                let opened = session::open(
                    Choice::Path(path),
                    &settings.paths.sessions_dir,
                    &settings.cwd,
                )
                .await
                .map_err(|e| e.to_string())?;
                for notice in &opened.notices {
                    let _ = tasks.send(TaskResult::Warning(notice.clone()));
                }
                // The conversation goes on with the current model: say so in its file.
                if let Some(writer) = &opened.writer {
                    let state = agent.snapshot();
                    record_model(
                        writer,
                        &(state.provider, state.model),
                        state.thinking,
                        opened.model.as_ref(),
                        opened.thinking,
                    )
                    .await
                    .map_err(|e| e.to_string())?;
                }
                agent
                    .switch_session(opened.writer, opened.history)
                    .map_err(|e| e.to_string())?;
                Ok::<_, String>(SessionInfo {
                    id: opened.id,
                    path: opened.path,
                })
            }
            .await;
            let _ = tasks.send(match result {
                Ok(info) => {
                    let note = format!("Resumed session {}", info.id);
                    TaskResult::SessionSwitched(info, note)
                }
                Err(e) => TaskResult::Warning(format!("Could not resume: {e}")),
            });
        });
    }

    fn session_info(&mut self) {
        let state = self.agent.snapshot();
        let file = self
            .session
            .path
            .as_ref()
            .map(|p| p.display().to_string())
            .unwrap_or_else(|| "not kept on disk (--no-session)".to_string());
        self.notice(&format!(
            "Session {} · {} · {} messages · {} tokens · {} · context {} of {}",
            self.session.id,
            file,
            state.message_count,
            super::status::tokens(state.usage.total_tokens),
            super::status::cost(state.usage.cost.total),
            super::status::tokens(state.context_tokens),
            super::status::tokens(state.context_window)
        ));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn completes_commands_while_the_name_is_typed() {
        let names = |input: &str| {
            completions(input)
                .iter()
                .map(|c| c.name)
                .collect::<Vec<_>>()
        };
        assert_eq!(names("/co"), ["compact", "copy"]);
        assert_eq!(
            names("/"),
            COMMANDS.iter().map(|c| c.name).collect::<Vec<_>>()
        );
        assert!(names("/compact focus").is_empty());
        assert!(names("hello").is_empty());
    }
}
