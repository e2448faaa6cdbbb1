//! The interface's state: what is streaming, which tools run, what is queued, whether a
//! dialog is open — and how each engine event changes it. Finished pieces become transcript
//! rows in `out`, which the loop inserts into the scrollback before drawing the live area.

use super::cells;
use super::composer::Composer;
use super::markdown::StreamingMarkdown;
use super::theme::Theme;
use super::transcript::Entry;
use crate::config::Settings;
use crate::live::link::EngineLink;

use crate::protocol::message::Message;
use ratatui::text::Line;
use serde_json::Value;
use std::sync::Arc;
use std::time::Instant;
use tokio::sync::mpsc;

/// Lines of a running command's output shown live.
pub const LIVE_OUTPUT_ROWS: usize = 5;

/// What a background task (a slash command, a shell command, a probe) reports back.
pub enum TaskResult {
    Notice(String),
    Warning(String),
    Error(String),
    /// A `!command` printed something or ended.
    Shell(super::shell::ShellEvent),
    /// A slow engine command ended: what to do with its result.
    Command(super::engine::After, super::engine::CommandResult),
    /// A manual compaction ended.
    Idle,
    /// The session tree was read (`/tree`).
    Tree(Result<crate::session::tree::SessionTree, String>),
    /// The `@` picker's matches for a query.
    Mentions(String, Vec<String>),
    /// `/diff`'s changes were read (or why they could not be).
    Diff(Result<Vec<crate::checkpoint::FileChange>, String>),
    /// ctrl+v's clipboard image was saved (or why there is none).
    ClipboardImage(Result<super::attach::SavedImage, String>),
    /// The `[tui] status_line` command's line (`None`: show the built-in one).
    StatusLine(Option<Line<'static>>),
    /// The session picker's work off the key path (content matches, a rename, a deletion).
    Picker(super::views::picker::Update),
}

pub struct Stream {
    pub text: Option<StreamingMarkdown>,
    /// The current text block's source so far: laid out again after a width change.
    pub source: String,
    /// The current text block's first row got its bullet.
    pub marked: bool,
    pub thinking: Option<String>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ToolState {
    /// The model is still writing the call.
    Streaming,
    /// Written, not started.
    Pending,
    Running,
}

pub struct ToolView {
    pub content_index: Option<usize>,
    pub id: Option<String>,
    pub name: String,
    pub args: Value,
    pub state: ToolState,
    pub output: Vec<String>,
    pub since: Instant,
}

#[derive(Clone, Debug, PartialEq)]
pub enum Phase {
    Waiting,
    Thinking,
    Responding,
    Tool(String),
    Approval,
    Retrying {
        until: Instant,
        attempt: u32,
        max: u32,
    },
    Compacting,
}

/// The live run's state: what streams, which tools and `!` commands run, what is queued,
/// what the model's task list and sub-agents are.
pub struct RunState {
    pub stream: Option<Stream>,
    pub tools: Vec<ToolView>,
    pub steering: Vec<String>,
    pub follow_up: Vec<String>,
    /// `Some` while a run (or a compaction) is active.
    pub working: Option<(Instant, Phase)>,
    /// The last compaction message shown: the same one is not repeated every turn.
    pub last_compaction_note: Option<String>,
    /// Rows of the current assistant response pushed so far (taken back if it is retried).
    pub attempt_rows: usize,
    pub show_thinking: bool,
    /// Thoughts of the current exchange shown collapsed: ctrl+t shows them expanded.
    pub collapsed_thoughts: Vec<String>,
    /// Cancels running `!` shell commands (esc, ctrl+c).
    pub shell_cancel: tokio_util::sync::CancellationToken,
    /// `!` commands running now.
    pub shells: Vec<super::shell::ShellRun>,
    /// How many `!` commands were started (their ids).
    pub shell_runs_started: u64,
    /// What the last checkpoint did not cover (shown when it changes).
    pub checkpoint_skipped: Vec<crate::protocol::event::SkippedFile>,
    /// The model's task list (`todo_write`), shown above the composer during a run.
    pub todos: Vec<crate::protocol::todo::TodoItem>,
    /// Running sub-agents, for the tree under their task cells.
    pub subagents: Vec<super::agents::SubagentRow>,
    /// The older messages of a long resumed session are not counted yet: said once they
    /// are (`earlier::counted`).
    pub earlier_untold: bool,
}

impl Default for RunState {
    fn default() -> RunState {
        RunState {
            stream: None,
            tools: Vec::new(),
            steering: Vec::new(),
            follow_up: Vec::new(),
            working: None,
            last_compaction_note: None,
            attempt_rows: 0,
            show_thinking: false,
            collapsed_thoughts: Vec::new(),
            shell_cancel: tokio_util::sync::CancellationToken::new(),
            shells: Vec::new(),
            shell_runs_started: 0,
            checkpoint_skipped: Vec::new(),
            todos: Vec::new(),
            subagents: Vec::new(),
            earlier_untold: false,
        }
    }
}

/// The composer and what helps it: slash-command completion, the `@` picker, esc esc, the
/// clipboard.
pub struct Input {
    pub composer: Composer,
    /// The highlighted slash-command completion.
    pub completion: usize,
    /// Esc closed the command popup (until the text changes).
    pub popup_closed: bool,
    /// The `@` file picker, while the word at the cursor starts with `@`.
    pub mention: Option<super::mention::MentionPicker>,
    pub mention_search: super::mention::MentionSearch,
    /// esc was pressed on an empty composer while idle: another esc opens `/rewind`.
    pub esc_armed: bool,
    /// ctrl+v is reading the clipboard.
    pub clipboard_busy: bool,
    /// `/login`'s hidden entry of an API key, while one is being typed.
    pub secret: Option<super::sign_in::SecretEntry>,
    /// Which action each key is (the defaults with `[keys]`), resolved once.
    pub keymap: super::keymap::Keymap,
}

/// The status line's passing note.
#[derive(Default)]
pub struct StatusNote {
    /// A short note in the status line (e.g. "press ctrl+c again to quit").
    pub hint: Option<(String, Instant)>,
    pub quit_armed: Option<Instant>,
    /// Whether the terminal has the focus (it says when not: `notify`).
    pub unfocused: bool,
    /// How an unfocused terminal is told that a run needs the user (`[tui] notify`).
    pub notify: crate::config::tui::TuiNotify,
    /// `[tui] status_line`: the command that writes the line, and its last line.
    pub command: Option<super::status_command::StatusCommand>,
}

/// The interface's core: the engine, the settings, what goes into the scrollback, and the
/// groups of state the parts of the screen own (the run, the composer, the views over it).
pub struct App {
    /// The engine: this process's, or a live session's (`agent attach`).
    pub agent: EngineLink,
    pub settings: Arc<Settings>,
    pub theme: Theme,
    pub width: u16,
    /// Rows waiting to go into the scrollback.
    pub out: Vec<Line<'static>>,
    /// What went into the scrollback, to print it again after a width change, and the rows
    /// the next frame must take back from the screen.
    pub scrollback: super::scrollback::Scrollback,
    /// The whole conversation, for the transcript view.
    pub log: super::transcript::Log,
    pub exit: Option<u8>,
    pub dirty: bool,
    pub tasks: mpsc::UnboundedSender<TaskResult>,
    /// The MCP servers (none unless set after `new`), for `/mcp` and the status line.
    pub mcp: Arc<crate::mcp::McpManager>,
    pub run: RunState,
    pub input: Input,
    /// The dialogs and full-screen views over the composer.
    pub views: super::views::Views,
    pub status: StatusNote,
}

impl App {
    pub fn new(
        agent: EngineLink,
        settings: Arc<Settings>,
        theme: Theme,
        width: u16,
        tasks: mpsc::UnboundedSender<TaskResult>,
    ) -> App {
        let composer = Composer::new(&theme);
        let notify = settings.tui_notify.resolve(|name| std::env::var(name).ok());
        let keymap = super::keymap::Keymap::from_config(&settings.keys, &settings.config_path).0;
        App {
            agent,
            settings,
            theme,
            width,
            out: Vec::new(),
            scrollback: Default::default(),
            log: Default::default(),
            exit: None,
            dirty: true,
            tasks,
            mcp: crate::mcp::McpManager::empty(),
            run: RunState::default(),
            input: Input {
                composer,
                completion: 0,
                popup_closed: false,
                mention: None,
                mention_search: Default::default(),
                esc_armed: false,
                clipboard_busy: false,
                secret: None,
                keymap,
            },
            views: Default::default(),
            status: StatusNote {
                notify,
                ..StatusNote::default()
            },
        }
    }

    /// Rows made for the current width that are not laid out again at another one (a
    /// table): after a width change they are cut as a terminal would cut them.
    pub fn push_rows(&mut self, rows: Vec<Line<'static>>) {
        self.scrollback.push_fixed(rows.clone());
        self.out.extend(rows);
        self.dirty = true;
    }

    /// A block for the scrollback, laid out by `render` now and again after a width change.
    pub fn push_cell(
        &mut self,
        render: impl Fn(u16) -> Vec<Line<'static>> + Send + Sync + 'static,
    ) {
        let rows = render(self.width);
        self.scrollback.push_cell(Arc::new(render), rows.len());
        self.out.extend(rows);
        self.dirty = true;
    }

    pub fn notice(&mut self, text: &str) {
        let (owned, theme) = (text.to_string(), self.theme);
        self.push_cell(move |width| cells::notice(&owned, width, &theme));
        self.log.push(Entry::Notice(text.to_string()));
    }

    pub fn warning(&mut self, text: &str) {
        let (owned, theme) = (text.to_string(), self.theme);
        self.push_cell(move |width| cells::warning(&owned, width, &theme));
        self.log.push(Entry::Warning(text.to_string()));
    }

    pub fn error(&mut self, text: &str) {
        let (owned, theme) = (text.to_string(), self.theme);
        self.push_cell(move |width| cells::error(&owned, width, &theme));
        self.log.push(Entry::Error(text.to_string()));
    }

    pub fn set_hint(&mut self, text: impl Into<String>) {
        self.status.hint = Some((text.into(), Instant::now()));
        self.dirty = true;
    }

    pub fn is_working(&self) -> bool {
        self.run.working.is_some()
    }

    /// Whether something on screen moves with time (a spinner, a timer).
    pub fn is_animated(&self) -> bool {
        self.run.working.is_some() || !self.run.shells.is_empty()
    }

    pub(super) fn set_phase(&mut self, phase: Phase) {
        // While a question is open the run waits for the user, whatever else moves (a
        // sub-agent's call ending while another sub-agent asks).
        if self.views.asked_at().is_some() && phase != Phase::Approval {
            return;
        }
        if let Some((_, current)) = &mut self.run.working {
            *current = phase;
        }
    }

    /// Show the conversation so far (a resumed session): the last `limit` messages, or
    /// fewer when they take more than `rows` rows — each is laid out and drawn before the
    /// first frame, so long messages are shown only as far as they fill that many rows
    /// (back to a whole message); the transcript view shows them all.
    pub fn replay(&mut self, limit: usize, rows: usize) {
        // What the engine holds; the older part of a long resumed context is read back
        // when the transcript view first opens (`Log::earlier`).
        let messages = self.agent.held_messages();
        let earlier = self.agent.message_count().saturating_sub(messages.len());
        self.log.push_messages(&messages);
        self.log.set_earlier(self.agent.cold_part());
        // The newest first, until they fill `rows`.
        let mut shown = Vec::new();
        let mut laid_out = 0usize;
        for message in messages.iter().rev().take(limit) {
            if laid_out >= rows {
                break;
            }
            let render = message_cell(message, &messages, self.run.show_thinking, self.theme);
            let cells = render(self.width);
            laid_out = laid_out.saturating_add(cells.len());
            shown.push((render, cells));
        }
        let start = messages.len() - shown.len();
        self.run.earlier_untold = self.agent.earlier_pending();
        if self.run.earlier_untold {
            // Not counted yet: counting them reads the whole file, after this frame.
            self.notice("… earlier messages in this session (being counted)");
        } else if start + earlier > 0 {
            self.notice(&format!(
                "… {} in this session",
                super::cells::counted(start + earlier, "earlier message")
            ));
        }
        for (render, rows) in shown.into_iter().rev() {
            self.scrollback.push_cell(render, rows.len());
            self.out.extend(rows);
        }
        self.dirty = true;
    }

    pub fn on_task(&mut self, result: TaskResult) {
        match result {
            TaskResult::Notice(text) => self.notice(&text),
            TaskResult::Warning(text) => self.warning(&text),
            TaskResult::Error(text) => self.error(&text),
            TaskResult::Shell(event) => self.on_shell(event),
            TaskResult::Idle => {
                if !self.agent.is_running() {
                    self.run.working = None;
                }
                self.dirty = true;
            }
            TaskResult::Command(after, result) => self.on_command(after, result),
            TaskResult::Tree(tree) => self.on_tree(tree),
            TaskResult::Mentions(query, found) => self.on_mentions(query, found),
            TaskResult::Diff(result) => self.show_diff(result),
            TaskResult::ClipboardImage(saved) => self.on_clipboard_image(saved),
            TaskResult::StatusLine(line) => super::status_command::received(self, line),
            TaskResult::Picker(update) => {
                if let Some(picker) = self.views.find_mut::<super::views::picker::Picker>() {
                    picker.update(update);
                    self.dirty = true;
                }
            }
        }
    }

    /// ctrl+t: show thinking from now on — and the thoughts of this exchange that were shown
    /// collapsed, expanded below — or collapse it again.
    pub fn toggle_thinking(&mut self) {
        self.run.show_thinking = !self.run.show_thinking;
        if !self.run.show_thinking {
            return self.set_hint("thinking is collapsed");
        }
        let earlier = std::mem::take(&mut self.run.collapsed_thoughts);
        for thought in &earlier {
            let (thought, theme) = (thought.clone(), self.theme);
            self.push_cell(move |width| cells::thinking(&thought, true, width, &theme));
        }
        self.set_hint(if earlier.is_empty() {
            "thinking is shown (ctrl+o: every earlier thought)"
        } else {
            "thinking is shown: this exchange's thoughts are expanded below"
        });
    }

    /// Which session goes on: its first prompt, size, age and id.
    pub fn resumed_note(&self, id: &str) -> Option<String> {
        let messages = self.agent.held_messages();
        let last = messages.last()?;
        // The first prompt of a long session whose older part is not read yet is at the
        // start of its file: not looked for before the first frame.
        let pending = self.agent.earlier_pending();
        let first = (!pending)
            .then(|| self.agent.first_user_message())
            .flatten()
            .and_then(|m| match m.as_ref() {
                Message::User(user) => Some(user.typed_text().to_string()),
                _ => None,
            });
        let name = first
            .map(|t| {
                let words = t.split_whitespace().collect::<Vec<_>>().join(" ");
                format!("“{}” ", super::width::cut(&words, 50))
            })
            .unwrap_or_else(|| "the session ".to_string());
        let now = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX))
            .unwrap_or(0);
        let age_ms = now.saturating_sub(last.timestamp()).max(0);
        let age = match age_ms / 1000 {
            0..60 => "just now".to_string(),
            s @ 60..3600 => format!("{} min ago", s / 60),
            s @ 3600..86_400 => format!("{} h ago", s / 3600),
            s => format!(
                "{} ago",
                super::cells::counted(usize::try_from(s / 86_400).unwrap_or(usize::MAX), "day")
            ),
        };
        let count = self.agent.message_count();
        let count = if pending {
            format!("{count} recent messages and earlier ones")
        } else {
            format!("{count} message{}", if count == 1 { "" } else { "s" })
        };
        Some(format!(
            "Resumed {name}· {count} · last one {age} · session {id}"
        ))
    }

    /// shift+tab: the next permission mode, ask → auto → plan → read-only → ask.
    pub fn cycle_permission_mode(&mut self) {
        use crate::protocol::command::{Command, PermissionMode};
        let next = self.agent.snapshot().permission_mode.next();
        // The engine changes the mode without waiting: done before the next key is read,
        // so two quick presses move two steps.
        if let Some(Err(e)) = self.execute_now(Command::SetPermissionMode { mode: next }) {
            return self.warning(&e.to_string());
        }
        self.set_hint(match next {
            PermissionMode::Ask => "ask mode: changes and commands wait for your approval",
            PermissionMode::Auto => "auto mode: every tool runs without asking",
            PermissionMode::ReadOnly => "read-only mode: nothing may change files or run programs",
            PermissionMode::Plan => {
                "plan mode: the agent only looks, then proposes a plan for you to approve"
            }
        });
    }

    /// The terminal width changed.
    /// The terminal's width changed and the caller cleared it: every block of the
    /// scrollback goes out again laid out at `width` (rows still waiting are among them),
    /// and the streaming answer starts again at that width.
    pub fn reprint(&mut self, width: u16) {
        self.resize(width);
        self.scrollback.retract = 0;
        let theme = self.theme;
        let stream = &mut self.run.stream;
        self.out = self
            .scrollback
            .render(width, &theme, || restart_stream(stream, width, theme));
        if self.run.attempt_rows > 0 {
            // A retried response takes back as many rows as it has now.
            self.run.attempt_rows = self.scrollback.attempt_rows();
        }
        self.dirty = true;
    }

    pub fn resize(&mut self, width: u16) {
        self.width = width;
        if let Some(text) = self.run.stream.as_mut().and_then(|s| s.text.as_mut()) {
            text.set_width(width.saturating_sub(2));
        }
        self.dirty = true;
    }
}

/// A replayed message laid out at any width, with the results of its tool calls (found
/// among `messages`).
fn message_cell(
    message: &Arc<Message>,
    messages: &[Arc<Message>],
    show_thinking: bool,
    theme: Theme,
) -> super::scrollback::Render {
    let calls: Vec<&str> = match message.as_ref() {
        Message::Assistant(assistant) => assistant.tool_calls().map(|c| c.id.as_str()).collect(),
        _ => Vec::new(),
    };
    let results: Vec<Arc<Message>> = messages
        .iter()
        .filter(|m| matches!(m.as_ref(), Message::ToolResult(r) if calls.contains(&r.tool_call_id.as_str())))
        .cloned()
        .collect();
    let message = message.clone();
    Arc::new(move |width| {
        let results: Vec<&Message> = results.iter().map(|m| m.as_ref()).collect();
        cells::message(&message, &results, show_thinking, width, &theme)
    })
}

/// The streaming answer's text laid out again at `width` from its source: its stream
/// starts over at that width and its rows that can no longer change are returned, for the
/// scrollback (the rest is the live area's).
fn restart_stream(stream: &mut Option<Stream>, width: u16, theme: Theme) -> Vec<Line<'static>> {
    let Some(stream) = stream.as_mut() else {
        return Vec::new();
    };
    let Some(text) = stream.text.as_mut() else {
        return Vec::new();
    };
    let mut fresh = StreamingMarkdown::new(width.saturating_sub(2), theme);
    fresh.push(&stream.source);
    let rows = fresh.take_stable();
    *text = fresh;
    stream.marked = false;
    super::scrollback::mark_answer(rows, &mut stream.marked, &theme)
}
