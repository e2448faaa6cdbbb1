//! Slash commands (`/help`, `/model`, `/profile`, `/login`, `/logout`, `/thinking`, `/compact`, `/new`, `/resume`,
//! `/rewind`, `/fork`, `/tree`, `/session`, `/rename`, `/mcp`, `/lsp`, `/permissions`, `/plan`, `/ps`, `/agents`,
//! `/copy`, `/diff`, `/skills`, `/goal`, `/theme`, `/quit`), the user's custom commands and `/skill:NAME`, with
//! completion. Anything slow runs as a task that reports back through `TaskResult`.

use super::app::{App, TaskResult};
use super::cells;
use super::engine::After;
use super::views::picker::Picker;
use crate::agent::commands::Control;
use crate::extensions::Extensions;
use crate::llm::request::ThinkingLevel;
use crate::protocol::command::{Command as EngineCommand, ModelRef, ResumeModel, SessionRef};
use crate::protocol::outcome::{CommandError, Outcome};
use ratatui::text::{Line, Span};

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
        name: "keys",
        args: "",
        help: "Every key binding: action, chords, what it does ([keys] rebinds)",
    },
    Command {
        name: "model",
        args: "[provider/]model",
        help: "Show or switch the model",
    },
    Command {
        name: "profile",
        args: "[name]",
        help: "Show or switch the profile: provider, model, account, modes, MCP servers",
    },
    Command {
        name: "login",
        args: "provider [--account NAME]",
        help: "Sign in: an API key (typed hidden), or a ChatGPT / Copilot account",
    },
    Command {
        name: "logout",
        args: "provider [--account NAME]",
        help: "Forget a provider's stored credential",
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
        name: "rename",
        args: "[title]",
        help: "Show or set this session's title (agent -r lists sessions by title)",
    },
    Command {
        name: "mcp",
        args: "",
        help: "MCP servers: status, tools, why one is down",
    },
    Command {
        name: "lsp",
        args: "",
        help: "Language servers: status, diagnostics, why one is down",
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
        name: "vim",
        args: "",
        help: "Vim keys in the composer on or off, for this session ([tui] editor_mode)",
    },
    Command {
        name: "copy",
        args: "",
        help: "Copy the last answer to the clipboard (OSC 52: works over SSH)",
    },
    Command {
        name: "diff",
        args: "",
        help: "What this session changed in the working tree, file by file",
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
        name: "skills",
        args: "",
        help: "The skills the model can use; /skill:NAME [text] uses one now",
    },
    Command {
        name: "usage",
        args: "",
        help: "Tokens and cost: per model, sub-agent and tool",
    },
    Command {
        name: "context",
        args: "",
        help: "What the next request holds, in tokens",
    },
    Command {
        name: "theme",
        args: "[name]",
        help: "Colours: pick a theme with a preview, or switch to NAME (kept in the config)",
    },
    Command {
        name: "goal",
        args: "[text|clear]",
        help: "Set the goal the agent works toward until it marks it done",
    },
    Command {
        name: "quit",
        args: "",
        help: "Leave (the session is kept)",
    },
];

/// Whether `/name` is a built-in command (its name or an alias).
pub fn is_builtin(name: &str) -> bool {
    COMMANDS.iter().any(|c| c.name == name) || ["?", "exit", "q"].contains(&name)
}

/// Whether `/name` is a command: built in, custom, or `skill:NAME` of a known skill.
pub fn is_command(name: &str, extensions: &Extensions) -> bool {
    is_builtin(name)
        || extensions.command(name).is_some()
        // `/skill:typo` is answered with the known skills, not sent as text.
        || name.starts_with("skill:")
}

/// The names of the built-in commands and their aliases (a custom command of the same name
/// is hidden).
pub fn builtin_names() -> Vec<&'static str> {
    let mut names: Vec<&str> = COMMANDS.iter().map(|c| c.name).collect();
    names.extend(["?", "exit", "q"]);
    names
}

/// One line of the completion popup.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Completion {
    pub name: String,
    pub args: String,
    pub help: String,
}

/// The commands matching what is being typed (`/co` → compact), while no argument is typed:
/// the built-in ones, then the custom commands, then the skills.
pub fn completions(input: &str, extensions: &Extensions) -> Vec<Completion> {
    let Some(typed) = input.strip_prefix('/') else {
        return Vec::new();
    };
    if typed.contains(char::is_whitespace) {
        return Vec::new();
    }
    let builtin = COMMANDS.iter().map(|c| Completion {
        name: c.name.to_string(),
        args: c.args.to_string(),
        help: c.help.to_string(),
    });
    let custom = extensions
        .commands
        .iter()
        .filter(|c| !is_builtin(&c.name))
        .map(|c| Completion {
            name: c.name.clone(),
            args: c.argument_hint.clone().unwrap_or_default(),
            help: c.summary(),
        });
    let skills = extensions.skills.iter().map(|s| Completion {
        name: format!("skill:{}", s.name),
        args: "[text]".to_string(),
        help: s.description.clone(),
    });
    builtin
        .chain(custom)
        .chain(skills)
        .filter(|c| c.name.starts_with(typed))
        .collect()
}

impl App {
    /// Tab: complete the highlighted command.
    pub fn complete(&mut self) -> bool {
        let matches = completions(self.input.composer.single_line(), &self.settings.extensions);
        let Some(command) = matches.get(self.input.completion.min(matches.len().saturating_sub(1)))
        else {
            return false;
        };
        let suffix = if command.args.is_empty() { "" } else { " " };
        self.input
            .composer
            .set_text(&format!("/{}{suffix}", command.name));
        self.input.completion = 0;
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
            "keys" => self.keys_command(),
            "model" => self.model_command(arg),
            "thinking" => self.thinking_command(arg),
            "profile" => self.profile_command(arg),
            "login" => self.login_command(arg),
            "logout" => self.logout_command(arg),
            "compact" => self.compact_command(arg),
            "new" => self.new_session(),
            "resume" => self.open_picker(),
            "rewind" => self.open_rewind(),
            "fork" => self.open_fork(),
            "tree" => self.open_tree(),
            "session" => self.session_info(),
            "rename" => self.rename_command(arg),
            "mcp" => {
                let rows = super::mcp_view::rows(&self.mcp.views(), self.width, &self.theme);
                self.push_rows(rows);
            }
            "lsp" => {
                let lsp = self.settings.tool_settings.lsp.clone();
                let rows = super::lsp_view::rows(lsp.as_deref(), self.width, &self.theme);
                self.push_rows(rows);
            }
            "permissions" => self.permissions_command(arg),
            "plan" => self.plan_command(arg),
            "ps" => self.ps_command(),
            "diff" => self.diff_command(),
            "agents" if arg.is_empty() => self.list_agents(),
            "agents" => self.open_agent_view(Some(arg)),
            "vim" => self.vim_command(),
            "copy" => self.copy_command(),
            "skills" => self.skills(),
            "usage" => self.usage_command(),
            "context" => self.context_command(),
            "goal" => self.goal_command(arg),
            "theme" => self.theme_command(arg),
            "quit" | "exit" | "q" => self.exit = Some(0),
            // A custom command or skill (or a name that is neither: the engine says so).
            _ => self.send_command(line),
        }
    }

    /// `/vim`: vim keys in the composer on or off, for this session.
    fn vim_command(&mut self) {
        let on = !self.input.composer.is_vim();
        self.input.composer.set_vim(on);
        self.notice(if on {
            "Vim keys on for this session: esc for normal mode, i to insert ([tui] editor_mode = \"vim\" keeps them)"
        } else {
            "Vim keys off for this session"
        });
    }

    fn skills(&mut self) {
        let theme = self.theme;
        let skills = &self.settings.extensions.skills;
        if skills.is_empty() {
            return self.notice(
                "No skills. A skill is a folder with a SKILL.md in .agent/skills/, .claude/skills/ or the agent's home skills/ (docs/extensions.md).",
            );
        }
        let mut rows = vec![
            cells::blank(),
            Line::from(Span::styled(
                "Skills (the model reads one when a task matches; /skill:NAME uses one now)",
                theme.bold(),
            )),
        ];
        for skill in skills {
            rows.push(Line::from(vec![
                Span::styled(format!("  {:<20}", skill.name), theme.accent()),
                Span::raw(skill.description.clone()),
            ]));
            rows.push(Line::from(Span::styled(
                format!(
                    "  {:<20}{} ({})",
                    "",
                    skill.path.display(),
                    skill.origin.label()
                ),
                theme.dim(),
            )));
        }
        self.push_rows(rows);
    }

    fn help(&mut self) {
        let theme = self.theme;
        let extensions = &self.settings.extensions;
        let mut rows = vec![
            cells::blank(),
            Line::from(Span::styled("Commands", theme.bold())),
        ];
        // The columns fit the longest name and arguments (plus a space), whatever they are.
        let name_width = COMMANDS.iter().map(|c| c.name.len()).max().unwrap_or(0) + 1;
        let args_width = COMMANDS.iter().map(|c| c.args.len()).max().unwrap_or(0) + 1;
        for command in COMMANDS {
            rows.push(Line::from(vec![
                Span::styled(format!("  /{:<name_width$}", command.name), theme.accent()),
                Span::styled(format!("{:<args_width$}", command.args), theme.dim()),
                Span::raw(command.help),
            ]));
        }
        rows.extend(custom_command_rows(extensions, &theme));
        if !extensions.skills.is_empty() {
            let names: Vec<&str> = extensions.skills.iter().map(|s| s.name.as_str()).collect();
            rows.push(Line::from(vec![
                Span::styled(
                    format!("  {:<width$}", "/skill:NAME", width = name_width + 1),
                    theme.accent(),
                ),
                Span::raw(format!(
                    "use a skill now ({}; /skills lists them)",
                    names.join(", ")
                )),
            ]));
        }
        rows.push(Line::from(vec![
            Span::styled(
                format!("  {:<width$}", "!command", width = name_width + 1),
                theme.accent(),
            ),
            Span::raw("run a shell command (the output is not sent to the model)"),
        ]));
        rows.extend(super::keymap::render::help_rows(
            self.keymap(),
            super::composer::HELP_ROWS,
            &theme,
        ));
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
        let model = ModelRef::Text(arg.to_string());
        let agent = self.agent.clone();
        let tasks = self.tasks.clone();
        crate::tasks::spawn(async move {
            let said = match agent
                .execute(EngineCommand::SetModel { model }, Control::new())
                .await
            {
                Ok(Outcome::Model { model, .. }) => {
                    TaskResult::Notice(format!("Model: {}/{}", model.provider, model.id))
                }
                Ok(_) => TaskResult::Notice("Model unchanged".to_string()),
                Err(e) => TaskResult::Warning(e.to_string()),
            };
            let _ = tasks.send(said);
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
        let Some(level) = ThinkingLevel::parse(arg) else {
            return self.warning(&format!(
                "Unknown thinking level `{arg}` (off, minimal, low, medium, high)"
            ));
        };
        let agent = self.agent.clone();
        let tasks = self.tasks.clone();
        crate::tasks::spawn(async move {
            let said = match agent
                .execute(EngineCommand::SetThinking { level }, Control::new())
                .await
            {
                Ok(Outcome::Thinking { level }) => {
                    TaskResult::Notice(format!("Thinking: {}", level.as_str()))
                }
                Ok(_) => TaskResult::Notice(format!("Thinking: {}", level.as_str())),
                Err(e) => TaskResult::Warning(e.to_string()),
            };
            let _ = tasks.send(said);
        });
    }

    fn compact_command(&mut self, focus: &str) {
        if self.is_working() {
            return self.warning("The agent is working: wait for it, or press esc first");
        }
        let agent = self.agent.clone();
        let tasks = self.tasks.clone();
        let focus = (!focus.is_empty()).then(|| focus.to_string());
        crate::tasks::spawn(async move {
            // A compaction reports itself (auto_compaction_end); only a refusal is left.
            let compact = EngineCommand::Compact {
                instructions: focus,
            };
            if let Err(CommandError::Busy | CommandError::RunActive) =
                agent.execute(compact, Control::new()).await
            {
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
        self.execute_then(EngineCommand::NewSession, After::NewSession);
    }

    pub fn open_picker(&mut self) {
        if self.is_working() {
            return self.warning("The agent is working: wait for it, or press esc first");
        }
        let open_here = self.agent.snapshot().session.path.clone();
        let picker = Picker::load(
            &self.settings.paths.sessions_dir,
            &self.settings.cwd,
            open_here.as_deref(),
        );
        if picker.is_empty() {
            return self.notice("No earlier sessions in this directory.");
        }
        let keymap = self.keymap();
        let link = super::views::picker::Link {
            tasks: self.tasks.clone(),
            checkpoints_dir: self.settings.paths.checkpoints_dir.clone(),
            open_here,
            rename_keys: keymap.chords_text(super::keymap::Action::PickerRename),
            delete_keys: keymap.chords_text(super::keymap::Action::PickerDelete),
        };
        self.views.push(Box::new(picker.linked(link)));
        self.dirty = true;
    }

    /// Continue the session picked in the picker, with the model in use now.
    pub fn resume_picked(&mut self, path: std::path::PathBuf) {
        let resume = EngineCommand::Resume {
            target: SessionRef::Path { path },
            model: ResumeModel::KeepCurrent,
        };
        self.execute_then(resume, After::Resumed);
    }

    /// `/rename TITLE` names the session (the engine's `SetSessionName`); `/rename` alone
    /// shows its title: its name, else its first prompt's first line (read off the key
    /// path: the file can be long).
    fn rename_command(&mut self, title: &str) {
        let agent = self.agent.clone();
        let tasks = self.tasks.clone();
        if title.is_empty() {
            let state = agent.snapshot();
            crate::tasks::spawn_blocking(move || {
                let derived = state.session_name.clone().or_else(|| {
                    let path = state.session.path.as_deref()?;
                    crate::session::title::describe(path).ok()?.title
                });
                let said = match derived {
                    Some(title) => format!("Title: {title} — rename with /rename TITLE"),
                    None => {
                        "No title yet: it will be your first prompt's first line, or /rename TITLE"
                            .to_string()
                    }
                };
                let _ = tasks.send(TaskResult::Notice(said));
            });
            return;
        }
        let name = title.to_string();
        crate::tasks::spawn(async move {
            let said = match agent
                .execute(EngineCommand::SetSessionName { name }, Control::new())
                .await
            {
                Ok(Outcome::SessionName { name }) => {
                    TaskResult::Notice(format!("Renamed this session: {name}"))
                }
                Ok(_) => TaskResult::Notice("Renamed this session".to_string()),
                Err(e) => TaskResult::Warning(e.to_string()),
            };
            let _ = tasks.send(said);
        });
    }

    fn session_info(&mut self) {
        let state = self.agent.snapshot();
        let file = state
            .session
            .path
            .as_ref()
            .map(|p| p.display().to_string())
            .unwrap_or_else(|| "not kept on disk (--no-session)".to_string());
        self.notice(&format!(
            "Session {} · {} · {} messages · {} tokens · {} · context {} of {}",
            state.session.id,
            file,
            state.message_count,
            super::status::tokens(state.usage.total_tokens),
            super::status::cost(state.usage.cost.total),
            super::status::tokens(state.context_tokens),
            super::status::tokens(state.context_window)
        ));
    }
}

/// `/help`'s custom commands, their columns fitted to the longest name and hint.
fn custom_command_rows(extensions: &Extensions, theme: &super::theme::Theme) -> Vec<Line<'static>> {
    let custom: Vec<_> = extensions
        .commands
        .iter()
        .filter(|c| !is_builtin(&c.name))
        .collect();
    if custom.is_empty() {
        return Vec::new();
    }
    let mut rows = vec![
        cells::blank(),
        Line::from(Span::styled("Custom commands", theme.bold())),
    ];
    // Names can be long (`frontend:review`): the columns fit the longest.
    let name_width = custom
        .iter()
        .map(|c| c.name.len())
        .max()
        .unwrap_or(0)
        .max(10);
    let hint_width = custom
        .iter()
        .filter_map(|c| c.argument_hint.as_ref().map(String::len))
        .max()
        .unwrap_or(0)
        .max(19);
    for command in custom {
        rows.push(Line::from(vec![
            Span::styled(format!("  /{:<name_width$} ", command.name), theme.accent()),
            Span::styled(
                format!(
                    "{:<hint_width$} ",
                    command.argument_hint.as_deref().unwrap_or("")
                ),
                theme.dim(),
            ),
            Span::raw(command.summary()),
        ]));
    }
    rows
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn completes_commands_while_the_name_is_typed() {
        let none = Extensions::default();
        let names = |input: &str| {
            completions(input, &none)
                .into_iter()
                .map(|c| c.name)
                .collect::<Vec<_>>()
        };
        assert_eq!(names("/co"), ["compact", "copy", "context"]);
        assert_eq!(
            names("/"),
            COMMANDS.iter().map(|c| c.name).collect::<Vec<_>>()
        );
        assert!(names("/compact focus").is_empty());
        assert!(names("hello").is_empty());
    }
}
