//! The status line under the composer: what is happening (the agent's state and how long
//! it has lasted, or a hint) on the left; model, thinking level, tokens, cost and context use
//! on the right. When the terminal is narrow, whole parts go (servers, cost, tokens, thinking,
//! model) before the mode and the context share; the hint on the left is cut last. With
//! `[tui] status_line` set, the command's line takes the place of all of it
//! (`status_command`), with a passing hint or a warning beside it while one is shown.

use super::app::App;
use super::status_command::{ContextState, McpState, ModelState, StatusInput, UsageState, fitted};
use super::width::str_width;
use crate::agent::Snapshot;
use crate::protocol::event::RunState;
use ratatui::text::{Line, Span};
use std::time::Duration;

/// 950, 12.3k, 1.2M.
pub fn tokens(count: u64) -> String {
    match count {
        0..1_000 => count.to_string(),
        1_000..1_000_000 => format!("{:.1}k", count as f64 / 1_000.0),
        _ => format!("{:.1}M", count as f64 / 1_000_000.0),
    }
}

pub fn cost(dollars: f64) -> String {
    if dollars < 0.01 {
        format!("${dollars:.4}")
    } else {
        format!("${dollars:.2}")
    }
}

/// 4s, 2m 05s.
pub fn duration(duration: Duration) -> String {
    let seconds = duration.as_secs();
    if seconds < 60 {
        format!("{seconds}s")
    } else {
        format!("{}m {:02}s", seconds / 60, seconds % 60)
    }
}

/// `model running 4s · ` while a run is in a state; nothing when idle.
fn state_prefix(state: RunState, elapsed: Duration) -> String {
    if state == RunState::Idle {
        return String::new();
    }
    format!(
        "{} {} · ",
        state.as_str().replace('_', " "),
        duration(elapsed)
    )
}

/// How readily a part of the right-hand side goes when the line is too narrow: higher
/// goes first. The mode and the context share stay longest.
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Keep {
    Always = 0,
    Goal = 1,
    Model = 2,
    Think = 3,
    Tokens = 4,
    Cost = 5,
    Servers = 6,
}

/// The parts that fit in `width` (with one column to spare), in their order: whole parts
/// are dropped, the most dispensable first, until the rest fits.
fn fitting(mut parts: Vec<(Keep, String)>, width: usize) -> String {
    let joined = |parts: &[(Keep, String)]| {
        parts
            .iter()
            .map(|(_, text)| text.as_str())
            .collect::<Vec<_>>()
            .join(" · ")
    };
    loop {
        let line = joined(&parts);
        if str_width(&line) < width {
            return line;
        }
        let most_dispensable = parts
            .iter()
            .enumerate()
            .filter(|(_, (keep, _))| *keep != Keep::Always)
            .max_by_key(|(i, (keep, _))| (*keep, *i))
            .map(|(i, _)| i);
        match most_dispensable {
            Some(i) => {
                parts.remove(i);
            }
            None => return line,
        }
    }
}

/// The state a `[tui] status_line` command is given (docs/protocol.md §5.6).
fn command_input(app: &App, state: &Snapshot, width: u16) -> StatusInput {
    // Rounded to the nearest whole percent, as the built-in line shows it.
    let percent = state
        .context_tokens
        .saturating_mul(100)
        .saturating_add(state.context_window / 2)
        .checked_div(state.context_window)
        .unwrap_or(0);
    StatusInput {
        version: 1,
        session_id: state.session.id.clone(),
        session_file: state.session.path.as_ref().map(|p| p.display().to_string()),
        title: state.session_name.clone(),
        cwd: app.settings.cwd.display().to_string(),
        model: ModelState {
            provider: state.provider.clone(),
            id: state.model.clone(),
            thinking: state.thinking.as_str().to_string(),
        },
        permission_mode: state.permission_mode.as_str().to_string(),
        state: state.state.as_str().to_string(),
        editor_mode: match app.input.composer.mode_label() {
            None => "default",
            Some("NORMAL") => "vim-normal",
            Some("-- VISUAL --") => "vim-visual",
            Some(_) => "vim-insert",
        }
        .to_string(),
        usage: UsageState {
            input: state.usage.input,
            output: state.usage.output,
            cache_read: state.usage.cache_read,
            cache_write: state.usage.cache_write,
            cost_usd: state.usage.cost.total,
        },
        context: ContextState {
            tokens: state.context_tokens,
            window: state.context_window,
            percent,
        },
        mcp: app
            .mcp
            .readiness()
            .map(|(ready, enabled)| McpState { ready, enabled }),
        columns: width,
    }
}

/// The command's line, with a secret's prompt, the session's write error or a passing hint
/// (at most half the width) on its left while there is one.
fn with_note(app: &App, state: &Snapshot, line: &Line<'static>, width: usize) -> Line<'static> {
    let theme = app.theme;
    let note = if app.input.secret.is_some() {
        Some(Span::styled(
            app.secret_prompt().unwrap_or_default(),
            theme.accent(),
        ))
    } else if let Some(error) = &state.session_error {
        Some(Span::styled(format!("⚠ {error}"), theme.warning()))
    } else {
        app.status
            .hint
            .as_ref()
            .map(|(hint, _)| Span::styled(hint.clone(), theme.dim()))
    };
    let Some(note) = note else {
        return fitted(line, width);
    };
    let note_text = super::cells::cut(&note.content, width / 2);
    let note_width = str_width(&note_text);
    let right = fitted(line, width.saturating_sub(note_width + 1));
    let gap = width.saturating_sub(note_width + right.width());
    let mut spans = vec![
        Span::styled(note_text, note.style),
        Span::raw(" ".repeat(gap)),
    ];
    spans.extend(right.spans);
    Line::from(spans)
}

/// The `[tui] status_line` command's line, when there is one (it is told the state first).
fn command_line(app: &App, state: &Snapshot, width: u16) -> Option<Line<'static>> {
    let command = app.status.command.as_ref()?;
    command.observe(command_input(app, state, width));
    let line = command.line.as_ref()?;
    Some(with_note(app, state, line, usize::from(width)))
}

pub fn status_line(app: &App, width: u16) -> Line<'static> {
    let theme = app.theme;
    let state = app.agent.snapshot();
    if let Some(line) = command_line(app, &state, width) {
        return line;
    }
    let mut right = vec![(
        Keep::Always,
        format!("{} mode", state.permission_mode.as_str()),
    )];
    let vim_mode = app.input.composer.mode_label().map(str::to_string);
    right.splice(0..0, vim_mode.map(|label| (Keep::Always, label)));
    if let Some((ready, enabled)) = app.mcp.readiness() {
        right.push((Keep::Servers, format!("mcp {ready}/{enabled}")));
    }
    right.extend(
        super::lsp_view::status(app.settings.tool_settings.lsp.as_deref())
            .into_iter()
            .map(|part| (Keep::Servers, part)),
    );
    if let Some(profile) = &state.profile {
        right.push((Keep::Model, format!("profile {profile}")));
    }
    if let Some(goal) = &state.goal {
        right.push((Keep::Goal, super::goal::status_part(goal, 24)));
    }
    right.push((Keep::Model, state.model.clone()));
    if state.thinking != crate::llm::request::ThinkingLevel::Off {
        right.push((Keep::Think, format!("think {}", state.thinking.as_str())));
    }
    if state.usage.total_tokens > 0 {
        right.push((
            Keep::Tokens,
            format!(
                "↑{} ↓{}",
                tokens(state.usage.input + state.usage.cache_read),
                tokens(state.usage.output)
            ),
        ));
    }
    if state.usage.cost.total > 0.0 {
        right.push((Keep::Cost, cost(state.usage.cost.total)));
    } else if state.usage.price_unknown() {
        // Tokens without a price: the cost is unknown, not $0.
        right.push((Keep::Cost, "$?".to_string()));
    }
    if state.context_window > 0 {
        let percent = (state.context_tokens as f64 / state.context_window as f64 * 100.0).round();
        if percent >= 1.0 {
            right.push((Keep::Always, format!("ctx {percent}%")));
        }
    }
    let right = fitting(right, usize::from(width));
    let left = match (&state.session_error, &app.status.hint) {
        _ if app.input.secret.is_some() => {
            Span::styled(app.secret_prompt().unwrap_or_default(), theme.accent())
        }
        (Some(error), _) => Span::styled(format!("⚠ {error}"), theme.warning()),
        (None, Some((hint, _))) => Span::styled(hint.clone(), theme.dim()),
        (None, None) if app.is_working() => Span::styled(
            format!(
                "{}esc interrupts · enter steers · alt+enter queues",
                state_prefix(state.state, state.state_elapsed)
            ),
            theme.dim(),
        ),
        (None, None) => Span::styled("/ commands · ! shell · ctrl+c twice quits", theme.dim()),
    };
    let right_width = str_width(&right);
    let room = usize::from(width).saturating_sub(right_width + 1);
    let left_text = super::cells::cut(&left.content, room);
    let gap = usize::from(width).saturating_sub(str_width(&left_text) + right_width);
    Line::from(vec![
        Span::styled(left_text, left.style),
        Span::raw(" ".repeat(gap)),
        Span::styled(right, theme.dim()),
    ])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn formats_counts() {
        assert_eq!(tokens(950), "950");
        assert_eq!(tokens(12_345), "12.3k");
        assert_eq!(tokens(1_234_567), "1.2M");
        assert_eq!(cost(0.0042), "$0.0042");
        assert_eq!(cost(1.5), "$1.50");
        assert_eq!(duration(Duration::from_millis(4_900)), "4s");
        assert_eq!(duration(Duration::from_secs(125)), "2m 05s");
    }

    #[test]
    fn a_narrow_line_drops_whole_parts_but_keeps_the_mode_and_the_context_share() {
        let parts = || {
            vec![
                (Keep::Always, "ask mode".to_string()),
                (Keep::Servers, "mcp 1/2".to_string()),
                (Keep::Model, "test-model".to_string()),
                (Keep::Tokens, "↑2.0k ↓20".to_string()),
                (Keep::Cost, "$?".to_string()),
                (Keep::Always, "ctx 2%".to_string()),
            ]
        };
        assert_eq!(
            fitting(parts(), 80),
            "ask mode · mcp 1/2 · test-model · ↑2.0k ↓20 · $? · ctx 2%"
        );
        assert_eq!(fitting(parts(), 36), "ask mode · test-model · ctx 2%");
        assert_eq!(fitting(parts(), 20), "ask mode · ctx 2%");
        assert_eq!(fitting(parts(), 5), "ask mode · ctx 2%");
    }

    #[test]
    fn the_state_shows_with_its_duration_unless_idle() {
        assert_eq!(
            state_prefix(RunState::AwaitingHuman, Duration::from_secs(3)),
            "awaiting human 3s · "
        );
        assert_eq!(state_prefix(RunState::Idle, Duration::from_secs(3)), "");
    }
}
