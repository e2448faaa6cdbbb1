//! The approval dialog: a tool call shown whole before the user answers — why it needs
//! approval, the working directory, the full command (every line, wrapped) or the file and
//! the diff a `write` or `edit` would make, as the engine's request says
//! (`tool_approval_request.preview`) — scrollable when it does not fit, and its keys
//! (y / a / e / n / m / u, ↑↓ PgUp PgDn Home End to scroll). `a` allows for the session
//! with the rule the engine suggests (`bash(npm test*)`, named in the dialog) or, without
//! one, the exact call; `e` edits the rule on one line first.

use super::super::cells;
use super::super::theme::Theme;
use super::super::wrap::{visible, wrap_text};
use super::{Next, View};
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
pub fn dialog_grace() -> Duration {
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
    /// What the request asks.
    pub request: Request,
    /// Typing a message to go with a denial.
    pub message: Option<String>,
    /// Editing the rule `a` adds (`e`), while it is edited.
    pub rule: Option<String>,
    /// Why the engine refused the rule last given (the request is asked again).
    pub rule_error: Option<String>,
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
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Request {
    pub tool_call_id: String,
    pub agent_id: Option<String>,
    pub tool_name: String,
    pub args: Value,
    pub reason: String,
    pub cwd: PathBuf,
    pub preview: Preview,
    /// The allow rules `a` adds for the session (`tool_approval_request.suggestedRule`).
    pub suggested_rule: Option<String>,
}

impl Approval {
    pub fn new(request: Request) -> Self {
        Approval {
            request,
            message: None,
            rule: None,
            rule_error: None,
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
            Span::styled(format!("Allow {}?", self.request.tool_name), theme.bold()),
        ];
        if waiting > 0 {
            title.push(Span::styled(
                format!("  ({waiting} more waiting)"),
                theme.dim(),
            ));
        }
        let mut head = vec![Line::from(title)];
        head.extend(labelled("why", &self.request.reason, width, theme));
        head.extend(labelled(
            "cwd",
            &shorten_home(&self.request.cwd),
            width,
            theme,
        ));
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
        match &self.request.preview {
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
        if matches!(
            self.request.preview,
            Preview::None | Preview::Command { .. }
        ) && let Some(object) = self.request.args.as_object()
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
        match &self.request.preview {
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
            self.request.preview,
            Preview::Command {
                unsandboxed_allowed: true,
                ..
            }
        )
    }

    fn key_rows(&self, theme: &Theme) -> Vec<Line<'static>> {
        let mut rows = Vec::new();
        if let Some(why) = &self.rule_error {
            rows.push(Line::from(Span::styled(
                format!("  ✗ {why}"),
                theme.warning(),
            )));
        }
        if let Some(rule) = &self.rule {
            rows.push(Line::from(vec![
                Span::styled("  Allow for this session: ", theme.bold()),
                Span::raw(rule.clone()),
                Span::styled("▏", theme.accent()),
            ]));
            rows.push(Line::from(Span::styled(
                "  enter allow with this rule · esc back",
                theme.dim(),
            )));
            return rows;
        }
        if let Some(message) = &self.message {
            rows.push(Line::from(vec![
                Span::styled("  Tell the model why: ", theme.bold()),
                Span::raw(message.clone()),
            ]));
            return rows;
        }
        rows.push(Line::from(vec![
            Span::styled("  y", theme.bold()),
            Span::raw(" allow once  "),
            Span::styled("n", theme.bold()),
            Span::raw(" deny  "),
            Span::styled("m", theme.bold()),
            Span::raw(" deny with a message"),
        ]));
        rows.push(Line::from(match &self.request.suggested_rule {
            Some(rule) => vec![
                Span::styled("  a", theme.bold()),
                Span::raw(" allow "),
                Span::styled(rule.clone(), theme.accent()),
                Span::raw(" for this session  "),
                Span::styled("e", theme.bold()),
                Span::raw(" edit the rule"),
            ],
            None => vec![
                Span::styled("  a", theme.bold()),
                Span::raw(" allow this exact call for this session"),
            ],
        }));
        if self.is_command() {
            rows.push(Line::from(vec![
                Span::styled("  u", theme.bold()),
                Span::raw(" allow once, outside the command sandbox"),
            ]));
        }
        rows
    }

    /// `a`: the suggested rule, or the exact call when there is none.
    fn allow_for_session(&self) -> Decision {
        match &self.request.suggested_rule {
            Some(rule) => Decision::AllowRule(rule.clone()),
            None => Decision::AllowSession,
        }
    }

    /// A key while the rule is edited: typing, enter allows with it, esc goes back.
    fn rule_key(&mut self, key: KeyEvent) -> Next {
        let Some(rule) = self.rule.as_mut() else {
            return Next::Stay;
        };
        match key.code {
            KeyCode::Enter if !rule.trim().is_empty() => {
                return Next::Answer(Decision::AllowRule(rule.trim().to_string()));
            }
            KeyCode::Esc => self.rule = None,
            KeyCode::Backspace => {
                rule.pop();
            }
            KeyCode::Char('u') if key.modifiers.contains(KeyModifiers::CONTROL) => rule.clear(),
            KeyCode::Char(c) if !key.modifiers.contains(KeyModifiers::CONTROL) => rule.push(c),
            _ => {}
        }
        Next::Stay
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

impl View for Approval {
    /// y / a / u / n answer, m starts a message to go with a denial, ↑↓ PgUp PgDn Home End
    /// scroll, esc stops the run. Keys in the first moments were typed for the composer.
    fn key(&mut self, key: KeyEvent) -> Next {
        if self.opened.elapsed() < dialog_grace() && key.code != KeyCode::Esc {
            return Next::Early;
        }
        if self.rule.is_some() {
            return self.rule_key(key);
        }
        if let Some(message) = self.message.as_mut() {
            match key.code {
                KeyCode::Enter => {
                    let message = message.trim().to_string();
                    return Next::Answer(Decision::Deny((!message.is_empty()).then_some(message)));
                }
                KeyCode::Esc => self.message = None,
                KeyCode::Backspace => {
                    message.pop();
                }
                KeyCode::Char(c) if !key.modifiers.contains(KeyModifiers::CONTROL) => {
                    message.push(c)
                }
                _ => {}
            }
            return Next::Stay;
        }
        let page = 10;
        match key.code {
            KeyCode::Char('y') | KeyCode::Enter => return Next::Answer(Decision::Allow),
            KeyCode::Char('a') => return Next::Answer(self.allow_for_session()),
            KeyCode::Char('e') if self.request.suggested_rule.is_some() => {
                self.rule = self.request.suggested_rule.clone();
            }
            KeyCode::Char('u') if self.is_command() => {
                return Next::Answer(Decision::AllowUnsandboxed);
            }
            KeyCode::Char('n') => return Next::Answer(Decision::Deny(None)),
            KeyCode::Char('m') => self.message = Some(String::new()),
            KeyCode::Up | KeyCode::Char('k') => self.scroll_by(-1),
            KeyCode::Down | KeyCode::Char('j') => self.scroll_by(1),
            KeyCode::PageUp => self.scroll_by(-page),
            KeyCode::PageDown | KeyCode::Char(' ') => self.scroll_by(page),
            KeyCode::Home => self.scroll = 0,
            KeyCode::End => self.scroll = usize::MAX,
            KeyCode::Esc => return Next::Close,
            _ => {}
        }
        Next::Stay
    }

    /// A paste while typing the denial's message (or the rule) goes into it, on one line.
    fn paste(&mut self, text: &str) -> bool {
        let Some(message) = self.rule.as_mut().or(self.message.as_mut()) else {
            return false;
        };
        message.push_str(&text.replace(['\r', '\n'], " "));
        true
    }

    /// The dialog alone; `Approvals` adds how many more wait behind it.
    fn rows(&self, width: u16, max_rows: u16, theme: &Theme) -> Vec<Line<'static>> {
        Approval::rows(self, width, max_rows, theme, 0)
    }
}

#[cfg(test)]
pub mod tests {
    use super::super::testing::{draw, key};
    use super::*;

    /// A `bash` request, seen long enough ago that keys answer it.
    pub fn command(lines: usize) -> Approval {
        let command: Vec<String> = (1..=lines).map(|i| format!("echo line {i}")).collect();
        let mut approval = Approval::new(Request {
            tool_call_id: "call-1".into(),
            agent_id: None,
            tool_name: "bash".into(),
            args: serde_json::json!({"command": command.join("\n")}),
            reason: "not in the allow list".into(),
            cwd: PathBuf::from("/srv/project"),
            preview: Preview::Command {
                command: command.join("\n"),
                unsandboxed_allowed: true,
            },
            suggested_rule: None,
        });
        approval.opened = Instant::now()
            .checked_sub(Duration::from_secs(60))
            .unwrap_or_else(Instant::now);
        approval
    }

    #[test]
    fn answers_are_told_to_the_core() {
        let mut approval = command(1);
        assert_eq!(
            approval.key(key(KeyCode::Char('y'))),
            Next::Answer(Decision::Allow)
        );
        assert_eq!(
            approval.key(key(KeyCode::Char('a'))),
            Next::Answer(Decision::AllowSession)
        );
        assert_eq!(
            approval.key(key(KeyCode::Char('u'))),
            Next::Answer(Decision::AllowUnsandboxed)
        );
        assert_eq!(
            approval.key(key(KeyCode::Char('n'))),
            Next::Answer(Decision::Deny(None))
        );
        assert_eq!(approval.key(key(KeyCode::Esc)), Next::Close);
    }

    #[test]
    fn a_adds_the_rule_the_dialog_names_and_e_edits_it_first() {
        let mut approval = command(1);
        let rows = draw(&approval, 80, 12).join("\n");
        assert!(
            rows.contains("a allow this exact call for this session"),
            "{rows}"
        );
        approval.request.suggested_rule = Some("bash(echo line*)".into());
        let rows = draw(&approval, 80, 12).join("\n");
        assert!(
            rows.contains("a allow bash(echo line*) for this session  e edit the rule"),
            "{rows}"
        );
        assert_eq!(
            approval.key(key(KeyCode::Char('a'))),
            Next::Answer(Decision::AllowRule("bash(echo line*)".into()))
        );
        assert_eq!(approval.key(key(KeyCode::Char('e'))), Next::Stay);
        for _ in 0.."line*)".len() {
            approval.key(key(KeyCode::Backspace));
        }
        for c in "*)".chars() {
            assert_eq!(approval.key(key(KeyCode::Char(c))), Next::Stay, "typed");
        }
        let rows = draw(&approval, 80, 12).join("\n");
        assert!(
            rows.contains("Allow for this session: bash(echo *)"),
            "{rows}"
        );
        assert_eq!(
            approval.key(key(KeyCode::Enter)),
            Next::Answer(Decision::AllowRule("bash(echo *)".into()))
        );
        assert_eq!(approval.key(key(KeyCode::Esc)), Next::Stay, "back");
        assert_eq!(approval.key(key(KeyCode::Esc)), Next::Close);
    }

    #[test]
    fn m_takes_a_message_and_paste_joins_it_on_one_line() {
        let mut approval = command(1);
        assert!(!approval.paste("not yet"), "no message is being typed");
        assert_eq!(approval.key(key(KeyCode::Char('m'))), Next::Stay);
        assert_eq!(
            approval.key(key(KeyCode::Char('n'))),
            Next::Stay,
            "typed, not a deny"
        );
        assert!(approval.paste("o\nway "));
        assert_eq!(
            approval.key(key(KeyCode::Enter)),
            Next::Answer(Decision::Deny(Some("no way".into())))
        );
    }

    #[test]
    fn keys_right_after_it_opened_go_to_the_composer() {
        let mut approval = command(1);
        // Opened "in the future": the grace has not run out, however slow this machine is.
        approval.opened = Instant::now()
            .checked_add(Duration::from_secs(3600))
            .unwrap_or_else(Instant::now);
        assert_eq!(approval.key(key(KeyCode::Char('y'))), Next::Early);
        assert_eq!(
            approval.key(key(KeyCode::Esc)),
            Next::Close,
            "esc always answers"
        );
    }

    #[test]
    fn a_long_command_scrolls_inside_the_dialog() {
        let mut approval = command(40);
        let first = draw(&approval, 60, 16);
        assert!(first[0].starts_with("? Allow bash?"), "{first:?}");
        assert!(first.iter().any(|row| row.contains("echo line 1")));
        assert!(!first.iter().any(|row| row.contains("echo line 40")));
        assert_eq!(approval.key(key(KeyCode::End)), Next::Stay);
        let last = draw(&approval, 60, 16);
        assert!(
            last.iter().any(|row| row.contains("echo line 40")),
            "{last:?}"
        );
        assert!(!last.iter().any(|row| row.ends_with("echo line 1")));
    }
}
