//! Drawing the live area, bottom to top: the status line, the composer (or the approval
//! dialog, or the session picker) with slash-command completions, and above them whatever
//! is in progress — the streaming message's open part, tool calls and their live output,
//! what the agent is doing, and the queued messages.

use super::app::{App, Phase, ToolState};
use super::cells;
use super::commands::completions;
use super::screen::clamp_u16;
use super::status::status_line;
use super::views::ask_user::AskUser;
use super::wrap::wrap_text;
use ratatui::buffer::Buffer;
use ratatui::layout::{Position, Rect};
use ratatui::text::{Line, Span, Text};
use ratatui::widgets::{Paragraph, Widget};
use std::time::Instant;

/// The rows of one frame of the live area.
pub struct LiveFrame {
    upper: Vec<Line<'static>>,
    bottom_height: u16,
    bottom_rows: Vec<Line<'static>>,
    completions: Vec<Line<'static>>,
}

impl LiveFrame {
    /// How tall the live area wants to be, at most `max`.
    pub fn height(&self, max: u16) -> u16 {
        clamp_u16(self.upper.len())
            .saturating_add(self.bottom_height)
            .saturating_add(clamp_u16(self.completions.len()))
            .saturating_add(1)
            .min(max)
    }
}

/// The last `max` characters of `text`.
fn tail_chars(text: &str, max: usize) -> &str {
    match text.char_indices().rev().nth(max) {
        Some((cut, _)) => &text[cut..],
        None => text,
    }
}

const SPINNER: [&str; 10] = ["⠋", "⠙", "⠹", "⠸", "⠼", "⠴", "⠦", "⠧", "⠇", "⠏"];
/// Rows of the streaming thinking shown.
const THINKING_ROWS: usize = 3;

fn spinner(since: Instant) -> &'static str {
    let frame = since.elapsed().as_millis() / 80 % SPINNER.len() as u128;
    SPINNER[usize::try_from(frame).unwrap_or(0)]
}

fn elapsed(since: Instant) -> String {
    let seconds = since.elapsed().as_secs();
    if seconds < 60 {
        format!("{seconds}s")
    } else {
        format!("{}m {:02}s", seconds / 60, seconds % 60)
    }
}

impl App {
    /// Rows above the composer: the work in progress.
    fn upper_rows(&self, width: u16) -> Vec<Line<'static>> {
        let mut rows = Vec::new();
        self.stream_rows(&mut rows, width);
        self.tool_rows(&mut rows, width);
        self.shell_rows(&mut rows, width);
        self.working_rows(&mut rows, width);
        self.queue_rows(&mut rows, width);
        // One blank row always separates the conversation from the composer.
        if rows.is_empty() || rows.last().is_some_and(|r| r.width() > 0) {
            rows.push(cells::blank());
        }
        rows
    }

    /// The answer streaming now: the end of its thinking, the rows of its text not yet final.
    fn stream_rows(&self, rows: &mut Vec<Line<'static>>, width: u16) {
        let theme = &self.theme;
        if let Some(stream) = &self.run.stream {
            if let Some(thinking) = &stream.thinking {
                // Only the last rows show: wrap only the end of a long text.
                let shown = tail_chars(thinking.trim(), width as usize * (THINKING_ROWS + 1));
                let wrapped = wrap_text(
                    shown,
                    theme.thinking(),
                    width,
                    &[Span::styled("✻ ", theme.thinking())],
                    &[Span::raw("  ")],
                );
                rows.push(cells::blank());
                rows.extend(
                    wrapped[wrapped.len().saturating_sub(THINKING_ROWS)..]
                        .iter()
                        .cloned(),
                );
            }
            if let Some(text) = &stream.text {
                let mut tail: Vec<Line<'static>> =
                    text.tail().iter().cloned().map(cells::indent).collect();
                if !stream.marked && !tail.is_empty() {
                    rows.push(cells::blank());
                    cells::mark_first(&mut tail, theme);
                }
                rows.extend(tail);
            }
        }
    }

    /// The tool calls being written or running (not the one the approval dialog shows), with their sub-agents and live output.
    fn tool_rows(&self, rows: &mut Vec<Line<'static>>, width: u16) {
        let theme = &self.theme;
        let streaming = self
            .run
            .tools
            .iter()
            .any(|t| t.state == ToolState::Streaming)
            .then(|| self.agent.streaming_message())
            .flatten();
        let asking = self
            .views
            .approval()
            .map(|a| a.request.tool_call_id.as_str());
        for tool in &self.run.tools {
            // The call in the approval dialog is shown there, whole; it is not running yet.
            if asking.is_some() && tool.id.as_deref() == asking {
                continue;
            }
            let args = match (&tool.state, &streaming, tool.content_index) {
                (ToolState::Streaming, Some(message), Some(index)) => {
                    match message.content.get(index) {
                        Some(crate::protocol::message::AssistantContent::ToolCall(call)) => {
                            call.arguments.clone()
                        }
                        _ => tool.args.clone(),
                    }
                }
                _ => tool.args.clone(),
            };
            let marker = match tool.state {
                ToolState::Running => {
                    Span::styled(format!("{} ", spinner(tool.since)), theme.accent())
                }
                _ => Span::styled("○ ", theme.dim()),
            };
            rows.push(cells::blank());
            let mut header =
                cells::tool_header(&tool.name, &args, marker, width.saturating_sub(8), theme);
            if tool.state == ToolState::Running && tool.since.elapsed().as_secs() >= 1 {
                header.spans.push(Span::styled(
                    format!("  {}", elapsed(tool.since)),
                    theme.dim(),
                ));
            }
            rows.push(header);
            if let Some(id) = tool.id.as_deref() {
                rows.extend(self.subagent_rows(id, width));
            }
            for (i, line) in tool.output.iter().enumerate() {
                let prefix = if i == 0 { "  ⎿ " } else { "    " };
                let plain = super::ansi::strip(line);
                rows.push(Line::from(vec![
                    Span::styled(prefix, theme.dim()),
                    Span::styled(
                        cells::cut(&plain, usize::from(width).saturating_sub(4)),
                        theme.dim(),
                    ),
                ]));
            }
        }
    }

    /// The user's `!` commands running, with their live output.
    fn shell_rows(&self, rows: &mut Vec<Line<'static>>, width: u16) {
        let theme = &self.theme;
        for run in &self.run.shells {
            rows.push(cells::blank());
            rows.push(Line::from(vec![
                Span::styled(format!("{} ", spinner(run.since)), theme.accent()),
                Span::styled("! ", theme.bold()),
                Span::styled(
                    cells::cut(
                        &super::wrap::visible(run.command.lines().next().unwrap_or("")),
                        usize::from(width).saturating_sub(30),
                    ),
                    theme.dim(),
                ),
                Span::styled(
                    format!("  {} · esc to cancel", elapsed(run.since)),
                    theme.dim(),
                ),
            ]));
            for (i, line) in run.output.iter().enumerate() {
                let prefix = if i == 0 { "  ⎿ " } else { "    " };
                rows.push(Line::from(vec![
                    Span::styled(prefix, theme.dim()),
                    Span::styled(
                        cells::cut(
                            &super::ansi::strip(line),
                            usize::from(width).saturating_sub(4),
                        ),
                        theme.dim(),
                    ),
                ]));
            }
        }
    }

    /// The task list and the working line: what the run does now, for how long.
    fn working_rows(&self, rows: &mut Vec<Line<'static>>, width: u16) {
        let theme = &self.theme;
        if self.run.working.is_some() {
            rows.extend(super::todo_panel::rows(&self.run.todos, width, theme));
        }
        if let Some((since, phase)) = &self.run.working {
            // Waiting for an answer is timed from the question, not from the run's start.
            let timed_from = match (phase, self.views.asked_at()) {
                (Phase::Approval, Some(asked)) => asked,
                _ => *since,
            };
            let what = match phase {
                Phase::Waiting => "Working".to_string(),
                Phase::Thinking => "Thinking".to_string(),
                Phase::Responding => "Responding".to_string(),
                Phase::Tool(name) => format!("Running {name}"),
                // A question of the model's waits for an answer, not an approval.
                Phase::Approval if self.views.find::<AskUser>().is_some() => {
                    "Waiting for your answer".to_string()
                }
                Phase::Approval => "Waiting for your approval".to_string(),
                Phase::Retrying {
                    until,
                    attempt,
                    max,
                } => {
                    let left = until
                        .saturating_duration_since(Instant::now())
                        .as_secs_f64()
                        .ceil();
                    format!("Retrying in {left} s ({attempt}/{max})")
                }
                Phase::Compacting => "Compacting the conversation".to_string(),
            };
            rows.push(cells::blank());
            rows.push(Line::from(vec![
                Span::styled(format!("{} ", spinner(*since)), theme.accent()),
                Span::styled(format!("{what}… "), theme.text()),
                Span::styled(
                    format!("{} · esc to interrupt", elapsed(timed_from)),
                    theme.dim(),
                ),
            ]));
        }
    }

    /// The messages queued for the run (steering, follow-ups).
    fn queue_rows(&self, rows: &mut Vec<Line<'static>>, width: u16) {
        let theme = &self.theme;
        if !self.run.steering.is_empty() || !self.run.follow_up.is_empty() {
            rows.push(cells::blank());
            let queued = self
                .run
                .steering
                .iter()
                .map(|t| ("steer", t))
                .chain(self.run.follow_up.iter().map(|t| ("follow-up", t)));
            for (kind, text) in queued {
                let first_line = text.lines().next().unwrap_or("");
                rows.push(Line::from(vec![
                    Span::styled(format!("↳ {kind}: "), theme.dim()),
                    Span::styled(
                        cells::cut(first_line, (width as usize).saturating_sub(kind.len() + 4)),
                        theme.dim(),
                    ),
                ]));
            }
            rows.push(Line::from(Span::styled(
                "  alt+↑ edits the last queued message",
                theme.dim(),
            )));
        }
    }

    fn bottom_rows(&self, width: u16, max_height: u16) -> (u16, Vec<Line<'static>>) {
        let theme = &self.theme;
        // The view on top may take the whole area but the status line and a blank row.
        let rows = self
            .views
            .top()
            .map(|view| view.rows(width, max_height.saturating_sub(2), theme));
        match rows {
            Some(rows) => (clamp_u16(rows.len()), rows),
            None => (self.input.composer.height(width), Vec::new()),
        }
    }

    fn completion_rows(&self, width: u16) -> Vec<Line<'static>> {
        let dialog = !self.views.is_empty();
        if let Some(mention) = &self.input.mention
            && !dialog
        {
            return mention.rows(width, &self.theme);
        }
        if dialog || self.input.popup_closed {
            return Vec::new();
        }
        let matches = completions(self.input.composer.single_line(), &self.settings.extensions);
        let usage =
            |command: &super::commands::Completion| format!("  /{} {}", command.name, command.args);
        // The help column starts after the longest usage shown, so the two never touch.
        let column = matches
            .iter()
            .map(|c| super::width::str_width(&usage(c)))
            .max()
            .unwrap_or(0)
            + 2;
        matches
            .iter()
            .enumerate()
            .map(|(i, command)| {
                let style = if i == self.input.completion {
                    self.theme.accent()
                } else {
                    self.theme.dim()
                };
                let usage = usage(command);
                let pad = column.saturating_sub(super::width::str_width(&usage));
                Line::from(vec![
                    Span::styled(format!("{usage}{}", " ".repeat(pad)), style),
                    Span::styled(
                        cells::cut(&command.help, usize::from(width).saturating_sub(column)),
                        self.theme.dim(),
                    ),
                ])
            })
            .collect()
    }

    /// Everything the live area shows, built once per frame, for an area at most
    /// `max_height` rows tall.
    pub fn live_frame(&self, width: u16, max_height: u16) -> LiveFrame {
        let (bottom_height, bottom_rows) = self.bottom_rows(width, max_height);
        LiveFrame {
            upper: self.upper_rows(width),
            bottom_height,
            bottom_rows,
            completions: self.completion_rows(width),
        }
    }

    /// Paint the live area; returns the cursor position.
    pub fn render_live(&self, frame: LiveFrame, buffer: &mut Buffer) -> Option<Position> {
        let area = buffer.area;
        let width = area.width;
        let LiveFrame {
            mut upper,
            bottom_height,
            bottom_rows,
            completions: completion_rows,
        } = frame;
        let fixed = bottom_height
            .saturating_add(clamp_u16(completion_rows.len()))
            .saturating_add(1)
            .min(area.height);
        let upper_room = usize::from(area.height - fixed);
        if upper.len() > upper_room {
            upper.drain(..upper.len() - upper_room);
        }
        let mut y = area.y;
        let upper_height = clamp_u16(upper.len());
        Paragraph::new(Text::from(upper)).render(Rect::new(area.x, y, width, upper_height), buffer);
        y += upper_height;
        let bottom_area = Rect::new(
            area.x,
            y,
            width,
            bottom_height.min(area.bottom().saturating_sub(y)),
        );
        let cursor = if bottom_rows.is_empty() {
            self.input.composer.render(bottom_area, buffer, &self.theme)
        } else {
            Paragraph::new(Text::from(bottom_rows)).render(bottom_area, buffer);
            None
        };
        y += bottom_area.height;
        let completions_height =
            clamp_u16(completion_rows.len()).min(area.bottom().saturating_sub(y + 1));
        Paragraph::new(Text::from(completion_rows))
            .render(Rect::new(area.x, y, width, completions_height), buffer);
        y += completions_height;
        if y < area.bottom() {
            Paragraph::new(status_line(self, width)).render(Rect::new(area.x, y, width, 1), buffer);
        }
        cursor
    }
}
