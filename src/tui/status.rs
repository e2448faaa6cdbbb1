//! The status line under the composer: what is happening (the agent's state and how long
//! it has lasted, or a hint) on the left; model, thinking level, tokens, cost and context use
//! on the right.

use super::app::App;
use super::width::str_width;
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

pub fn status_line(app: &App, width: u16) -> Line<'static> {
    let theme = app.theme;
    let state = app.agent.snapshot();
    let mut right = Vec::new();
    if let Some((ready, enabled)) = app.mcp.readiness() {
        right.push(format!("mcp {ready}/{enabled}"));
    }
    right.extend(super::lsp_view::status(
        app.settings.tool_settings.lsp.as_deref(),
    ));
    right.push(state.model.clone());
    if state.thinking != crate::llm::request::ThinkingLevel::Off {
        right.push(format!("think {}", state.thinking.as_str()));
    }
    if state.usage.total_tokens > 0 {
        right.push(format!(
            "↑{} ↓{}",
            tokens(state.usage.input + state.usage.cache_read),
            tokens(state.usage.output)
        ));
    }
    if state.usage.cost.total > 0.0 {
        right.push(cost(state.usage.cost.total));
    } else if state.usage.price_unknown() {
        // Tokens without a price: the cost is unknown, not $0.
        right.push("$?".to_string());
    }
    if state.context_window > 0 {
        let percent = (state.context_tokens as f64 / state.context_window as f64 * 100.0).round();
        if percent >= 1.0 {
            right.push(format!("ctx {percent}%"));
        }
    }
    right.insert(0, format!("{} mode", state.permission_mode.as_str()));
    let right = right.join(" · ");
    let left = match (&state.session_error, &app.hint) {
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
    fn the_state_shows_with_its_duration_unless_idle() {
        assert_eq!(
            state_prefix(RunState::AwaitingHuman, Duration::from_secs(3)),
            "awaiting human 3s · "
        );
        assert_eq!(state_prefix(RunState::Idle, Duration::from_secs(3)), "");
    }
}
