//! `/usage` and `/context`: the engine's usage report (totals, per model, per sub-agent, top
//! tools, cache hit ratio, cost — "price unknown" when a model has no prices) and its report
//! of what the next request holds (a bar and a table), printed into the transcript.

use super::app::App;
use super::cells;
use super::status::{cost, tokens};
use crate::protocol::usage::{ContextReport, UsageReport};
use ratatui::style::Style;
use ratatui::text::{Line, Span};

/// How wide the `/context` bar is, in cells.
const BAR: usize = 50;

fn money(value: Option<f64>) -> String {
    value.map_or_else(|| "price unknown".to_string(), cost)
}

impl App {
    pub(super) fn usage_command(&mut self) {
        let theme = self.theme;
        let report: UsageReport = self.agent.usage_report();
        let total = &report.total;
        let mut rows = vec![
            cells::blank(),
            Line::from(Span::styled("Usage of this session", theme.bold())),
            Line::from(format!(
                "  {} calls · {} input · {} output ({} reasoning) · {} cache read · {} cache write",
                report.calls,
                tokens(total.input),
                tokens(total.output),
                tokens(total.reasoning),
                tokens(total.cache_read),
                tokens(total.cache_write),
            )),
            Line::from(format!(
                "  cache hits {:.0}% · cost {}",
                report.cache_hit_ratio * 100.0,
                money(report.cost)
            )),
        ];
        if !report.price_unknown.is_empty() {
            rows.push(Line::from(Span::styled(
                format!("  no prices for: {}", report.price_unknown.join(", ")),
                theme.warning(),
            )));
        }
        if !report.models.is_empty() {
            rows.push(Line::from(Span::styled("Per model", theme.bold())));
            for m in &report.models {
                rows.push(Line::from(format!(
                    "  {:<32} {:>4} calls {:>8} in {:>8} out  {}",
                    format!("{}/{}", m.provider, m.model),
                    m.calls,
                    tokens(m.usage.input + m.usage.cache_read + m.usage.cache_write),
                    tokens(m.usage.output),
                    money(m.cost)
                )));
            }
        }
        if !report.agents.is_empty() {
            rows.push(Line::from(Span::styled("Per sub-agent", theme.bold())));
            for a in &report.agents {
                rows.push(Line::from(format!(
                    "  {:<32} {:>4} calls {:>8} in {:>8} out  {}",
                    format!("{} ({})", a.agent_id, a.name),
                    a.calls,
                    tokens(a.usage.input + a.usage.cache_read + a.usage.cache_write),
                    tokens(a.usage.output),
                    money(a.cost)
                )));
            }
        }
        if !report.tools.is_empty() {
            rows.push(Line::from(Span::styled(
                "Top tools (tokens their results added)",
                theme.bold(),
            )));
            for t in report.tools.iter().take(8) {
                rows.push(Line::from(format!(
                    "  {:<32} {:>4} calls {:>8}",
                    t.tool,
                    t.calls,
                    tokens(t.result_tokens)
                )));
            }
        }
        self.push_rows(rows);
    }

    pub(super) fn context_command(&mut self) {
        let theme = self.theme;
        let Some(agent) = self.agent.local() else {
            return self.warning(crate::live::link::OWNER_ONLY);
        };
        let report: ContextReport = agent.context_report();
        let styles = [
            theme.accent(),
            theme.success(),
            theme.warning(),
            theme.bold(),
        ];
        let window = report.context_window.max(report.total).max(1);
        let mut bar = Vec::new();
        let mut used = 0;
        for (i, part) in report.parts.iter().enumerate() {
            // A part too small for a cell of its own still shows as one.
            let share = usize::try_from(part.tokens.saturating_mul(BAR as u64) / window)
                .unwrap_or(BAR)
                .max(usize::from(part.tokens > 0));
            let cells = share.min(BAR - used);
            used += cells;
            bar.push(Span::styled("█".repeat(cells), styles[i % styles.len()]));
        }
        bar.push(Span::styled("░".repeat(BAR - used), theme.dim()));
        bar.insert(0, Span::raw("  "));
        let mut rows = vec![
            cells::blank(),
            Line::from(Span::styled(
                format!(
                    "Context: {} of {} ({:.0}%) — what the next request holds",
                    tokens(report.total),
                    tokens(report.context_window),
                    report.total as f64 / window as f64 * 100.0
                ),
                theme.bold(),
            )),
            Line::from(bar),
        ];
        for (i, part) in report.parts.iter().enumerate() {
            rows.push(Line::from(vec![
                Span::styled("  ■ ", styles[i % styles.len()]),
                Span::styled(format!("{:<28}", part.part), Style::default()),
                Span::raw(format!("{:>8}", tokens(part.tokens))),
            ]));
        }
        self.push_rows(rows);
    }
}
