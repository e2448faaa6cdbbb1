//! The approval dialog: a tool call shown whole before the user answers — why it needs
//! approval, the working directory, the full command (every line, wrapped) or the file and
//! the diff a `write` or `edit` would make, as the engine's request says
//! (`tool_approval_request.preview`) — scrollable when it does not fit, and its keys
//! (y / a / n / m / u, ↑↓ PgUp PgDn Home End to scroll).

use super::app::App;
use super::cells;
use super::composer::Action;
use super::screen::clamp_u16;
use super::theme::Theme;
use super::wrap::{visible, wrap_text};
use crate::agent::Approval as Decision;
use crate::protocol::event::ApprovalPreview as Preview;
use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
use ratatui::text::{Line, Span};
use serde_json::Value;
use std::cell::Cell;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

/// Keys this soon after the dialog appears were typed for something else.
const DIALOG_GRACE: Duration = Duration::from_millis(500);
/// Overrides `DIALOG_GRACE` (milliseconds): tests set it instead of waiting it out
/// (docs/protocol.md, environment variables).
pub const DIALOG_GRACE_ENV: &str = "AGENT_APPROVAL_GRACE_MS";

/// How long a new dialog takes keys for the composer: `DIALOG_GRACE`, or what
/// `DIALOG_GRACE_ENV` says.
fn dialog_grace() -> Duration {
    static GRACE: std::sync::OnceLock<Duration> = std::sync::OnceLock::new();
    *GRACE.get_or_init(|| {
        std::env::var(DIALOG_GRACE_ENV)
            .ok()
            .and_then(|ms| ms.trim().parse().ok())
            .map_or(DIALOG_GRACE, Duration::from_millis)
    })
}
/// Body rows shown at least, however small the terminal.
const MIN_BODY_ROWS: usize = 3;

pub struct Approval {
    pub tool_call_id: String,
    /// The sub-agent that asked (its request relayed), `None` for the agent's own call.
    pub agent_id: Option<String>,
    pub tool_name: String,
    pub args: Value,
    pub reason: String,
    /// The directory the call runs in.
    pub cwd: PathBuf,
    /// What the call would do, worked out by the engine.
    pub preview: Preview,
    /// Typing a message to go with a denial.
    pub message: Option<String>,
    /// When it appeared: keys typed in the first moments were meant for the composer, and
    /// the wait is timed from here.
    pub opened: Instant,
    /// The first body row shown.
    pub scroll: usize,
    /// The largest useful `scroll` at the last frame (the body's height depends on the
    /// terminal).
    max_scroll: Cell<usize>,
}

/// What a `tool_approval_request` asks.
pub struct Request {
    pub tool_call_id: String,
    pub agent_id: Option<String>,
    pub tool_name: String,
    pub args: Value,
    pub reason: String,
    pub cwd: PathBuf,
    pub preview: Preview,
}

impl Approval {
    pub fn new(request: Request) -> Self {
        let Request {
            tool_call_id,
            agent_id,
            tool_name,
            args,
            reason,
            cwd,
            preview,
        } = request;
        Approval {
            tool_call_id,
            agent_id,
            tool_name,
            args,
            reason,
            cwd,
            preview,
            message: None,
            opened: Instant::now(),
            scroll: 0,
            max_scroll: Cell::new(0),
        }
    }

    /// The dialog's rows for a terminal `width` wide, at most `max_rows` tall (the body
    /// scrolls to fit).
    /// The dialog's rows; `waiting` more requests are queued behind this one.
    pub fn rows(
        &self,
        width: u16,
        max_rows: u16,
        theme: &Theme,
        waiting: usize,
    ) -> Vec<Line<'static>> {
        let mut title = vec![
            Span::styled("? ", theme.warning()),
            Span::styled(format!("Allow {}?", self.tool_name), theme.bold()),
        ];
        if waiting > 0 {
            title.push(Span::styled(
                format!("  ({waiting} more waiting)"),
                theme.dim(),
            ));
        }
        let mut head = vec![Line::from(title)];
        head.extend(labelled("why", &self.reason, width, theme));
        head.extend(labelled("cwd", &shorten_home(&self.cwd), width, theme));
        let body = self.body(width, theme);
        let keys = self.key_rows(theme);
        let fixed = head.len() + keys.len() + 1;
        let room = usize::from(max_rows)
            .saturating_sub(fixed)
            .max(MIN_BODY_ROWS);
        let max_scroll = body.len().saturating_sub(room);
        self.max_scroll.set(max_scroll);
        let scroll = self.scroll.min(max_scroll);
        let mut rows = head;
        rows.extend(body.iter().skip(scroll).take(room).cloned());
        if body.len() > room {
            let last = (scroll + room).min(body.len());
            let below = body.len() - last;
            rows.push(Line::from(Span::styled(
                format!(
                    "  lines {}–{last} of {} · {below} more below · ↑↓ pgup pgdn scroll",
                    scroll + 1,
                    body.len()
                ),
                if below > 0 {
                    theme.warning()
                } else {
                    theme.dim()
                },
            )));
        }
        rows.extend(keys);
        rows
    }

    /// Everything the call would do: the command, or the file and its diff, and the
    /// arguments those do not show.
    fn body(&self, width: u16, theme: &Theme) -> Vec<Line<'static>> {
        let mut rows = Vec::new();
        let mut shown_command = None;
        match &self.preview {
            Preview::Command { command, .. } => {
                shown_command = Some(command.as_str());
                let command = command.trim_end_matches(['\n', '\r']);
                rows.extend(wrap_text(
                    &visible(command),
                    theme.text(),
                    width,
                    &[Span::styled("  $ ", theme.accent())],
                    &[Span::raw("    ")],
                ));
            }
            Preview::Diff { path, .. } | Preview::Unavailable { path, .. } => {
                rows.extend(labelled("file", path, width, theme));
            }
            Preview::None => {}
        }
        // Arguments the lines above did not show (a file's new content is in the diff).
        if matches!(self.preview, Preview::None | Preview::Command { .. })
            && let Some(object) = self.args.as_object()
        {
            for (key, value) in object {
                if shown_command.is_some() && value.as_str() == shown_command {
                    continue;
                }
                let text = match value {
                    Value::String(s) => s.clone(),
                    other => serde_json::to_string_pretty(other).unwrap_or_default(),
                };
                rows.extend(labelled(key, &text, width, theme));
            }
        }
        match &self.preview {
            Preview::Diff { diff, new_file, .. } => {
                if *new_file {
                    rows.push(Line::from(Span::styled("  a new file:", theme.dim())));
                }
                rows.extend(cells::diff_rows(diff, width, None, theme));
            }
            Preview::Unavailable { why, .. } => rows.extend(wrap_text(
                why,
                theme.warning(),
                width,
                &[Span::raw("  ")],
                &[Span::raw("  ")],
            )),
            Preview::Command { .. } | Preview::None => {}
        }
        rows
    }

    /// Whether `u` (allow once, outside the command sandbox) is offered: the engine says so
    /// for a command.
    fn is_command(&self) -> bool {
        matches!(
            self.preview,
            Preview::Command {
                unsandboxed_allowed: true,
                ..
            }
        )
    }

    fn key_rows(&self, theme: &Theme) -> Vec<Line<'static>> {
        match &self.message {
            Some(message) => vec![Line::from(vec![
                Span::styled("  Tell the model why: ", theme.bold()),
                Span::raw(message.clone()),
            ])],
            None => {
                let mut rows = vec![Line::from(vec![
                    Span::styled("  y", theme.bold()),
                    Span::raw(" allow once  "),
                    Span::styled("a", theme.bold()),
                    Span::raw(" allow for this session  "),
                    Span::styled("n", theme.bold()),
                    Span::raw(" deny  "),
                    Span::styled("m", theme.bold()),
                    Span::raw(" deny with a message"),
                ])];
                if self.is_command() {
                    rows.push(Line::from(vec![
                        Span::styled("  u", theme.bold()),
                        Span::raw(" allow once, outside the command sandbox"),
                    ]));
                }
                rows
            }
        }
    }

    fn scroll_by(&mut self, rows: isize) {
        let max = self.max_scroll.get();
        self.scroll = self.scroll.min(max).saturating_add_signed(rows).min(max);
    }
}

/// `  label  text`, the text wrapped under itself.
fn labelled(label: &str, text: &str, width: u16, theme: &Theme) -> Vec<Line<'static>> {
    let pad = " ".repeat(label.len() + 4);
    wrap_text(
        &visible(text),
        theme.text(),
        width,
        &[Span::styled(format!("  {label}  "), theme.dim())],
        &[Span::raw(pad)],
    )
}

/// `/home/me/src/x` as `~/src/x`.
fn shorten_home(path: &Path) -> String {
    match std::env::var_os("HOME").map(std::path::PathBuf::from) {
        Some(home) if !home.as_os_str().is_empty() && path.starts_with(&home) => {
            match path.strip_prefix(&home) {
                Ok(rest) if rest.as_os_str().is_empty() => "~".to_string(),
                Ok(rest) => format!("~/{}", rest.display()),
                Err(_) => path.display().to_string(),
            }
        }
        _ => path.display().to_string(),
    }
}

impl App {
    /// A tool call waits for approval: show it (after those already waiting: sub-agents ask
    /// at the same time).
    pub fn open_approval(&mut self, approval: Approval) {
        if self.views.approval.is_some() {
            self.views.approvals_waiting.push_back(approval);
            return;
        }
        self.views.approval = Some(approval);
        // The question must be seen: the transcript view gives way.
        self.views.view = None;
    }

    /// The dialog was answered: the next request waiting, if any, takes its place; else the
    /// run goes on with the answered call (a sub-agent's: the parent's `task` call).
    fn open_next_approval(&mut self, answered: &Approval) {
        if let Some(mut next) = self.views.approvals_waiting.pop_front() {
            next.opened = Instant::now();
            self.views.approval = Some(next);
            self.views.view = None;
            self.set_phase(super::app::Phase::Approval);
            return;
        }
        let tool = match answered.agent_id {
            Some(_) => crate::agent::children::TASK_TOOL.to_string(),
            None => answered.tool_name.clone(),
        };
        self.set_phase(super::app::Phase::Tool(tool));
    }

    /// Rows of the dialog when it is open, fitted into `max_rows`.
    pub fn approval_rows(&self, width: u16, max_rows: u16) -> Option<(u16, Vec<Line<'static>>)> {
        let approval = self.views.approval.as_ref()?;
        let waiting = self.views.approvals_waiting.len();
        let rows = approval.rows(width, max_rows, &self.theme, waiting);
        Some((clamp_u16(rows.len()), rows))
    }

    pub fn approval_key(&mut self, key: KeyEvent) {
        let Some(approval) = self.views.approval.as_mut() else {
            return;
        };
        if approval.opened.elapsed() < dialog_grace() && key.code != KeyCode::Esc {
            // Typed before the dialog could be seen: it was meant for the composer.
            if let Action::Submit(text) = self.input.composer.handle_key(key) {
                self.submit(text);
            }
            self.set_hint("a tool is waiting for approval: y, a or n");
            return;
        }
        if let Some(message) = approval.message.as_mut() {
            match key.code {
                KeyCode::Enter => {
                    let message = message.trim().to_string();
                    self.answer(Decision::Deny((!message.is_empty()).then_some(message)));
                }
                KeyCode::Esc => approval.message = None,
                KeyCode::Backspace => {
                    message.pop();
                }
                KeyCode::Char(c) if !key.modifiers.contains(KeyModifiers::CONTROL) => {
                    message.push(c)
                }
                _ => {}
            }
            return;
        }
        let page = 10;
        match key.code {
            KeyCode::Char('y') | KeyCode::Enter => self.answer(Decision::Allow),
            KeyCode::Char('a') => self.answer(Decision::AllowSession),
            KeyCode::Char('u') if approval.is_command() => self.answer(Decision::AllowUnsandboxed),
            KeyCode::Char('n') => self.answer(Decision::Deny(None)),
            KeyCode::Char('m') => approval.message = Some(String::new()),
            KeyCode::Up | KeyCode::Char('k') => approval.scroll_by(-1),
            KeyCode::Down | KeyCode::Char('j') => approval.scroll_by(1),
            KeyCode::PageUp => approval.scroll_by(-page),
            KeyCode::PageDown | KeyCode::Char(' ') => approval.scroll_by(page),
            KeyCode::Home => approval.scroll = 0,
            KeyCode::End => approval.scroll = usize::MAX,
            KeyCode::Esc => {
                self.views.approval = None;
                self.interrupt();
            }
            _ => {}
        }
    }

    fn answer(&mut self, decision: Decision) {
        let Some(approval) = self.views.approval.take() else {
            return;
        };
        // The call runs from now: its timer starts now, not when it asked.
        if let Some(view) = self
            .run
            .tools
            .iter_mut()
            .find(|t| t.id.as_deref() == Some(approval.tool_call_id.as_str()))
        {
            view.since = Instant::now();
        }
        let answer = crate::protocol::command::Command::Approve {
            tool_call_id: approval.tool_call_id.clone(),
            agent_id: approval.agent_id.clone(),
            decision,
        };
        if let Some(Err(_)) = self.execute_now(answer) {
            self.set_hint("that request is no longer waiting");
        }
        self.open_next_approval(&approval);
    }
}
