//! Tables: cells collected while the events arrive, then laid out as aligned columns separated
//! by `│`, with a rule under the header. A table wider than the space it has is shown one row
//! per (wrapped) line instead, cells separated by `│`, which stays readable at any width.

use pulldown_cmark::Alignment;
use ratatui::text::Span;

use super::styled::StyledText;
use crate::tui::theme::Theme;

const SEP: &str = " │ ";
const CROSS: &str = "─┼─";
const CONTINUATION_INDENT: &str = "  ";

#[derive(Default)]
pub(crate) struct Table {
    aligns: Vec<Alignment>,
    rows: Vec<Vec<StyledText>>,
    head_rows: usize,
}

impl Table {
    pub(crate) fn new(aligns: Vec<Alignment>) -> Table {
        Table {
            aligns,
            ..Table::default()
        }
    }

    pub(crate) fn start_row(&mut self) {
        self.rows.push(Vec::new());
    }

    pub(crate) fn end_head(&mut self) {
        self.head_rows = self.rows.len();
    }

    pub(crate) fn push_cell(&mut self, cell: StyledText) {
        match self.rows.last_mut() {
            Some(row) => row.push(cell),
            None => self.rows.push(vec![cell]),
        }
    }

    /// The table's lines (without any container prefix), at most `width` columns when the
    /// columns fit, else one wrapped line per row.
    pub(crate) fn render(&self, width: usize, theme: &Theme) -> Vec<Vec<Span<'static>>> {
        let cols = self
            .rows
            .iter()
            .map(Vec::len)
            .max()
            .unwrap_or(0)
            .max(self.aligns.len());
        if cols == 0 {
            return Vec::new();
        }
        let mut widths = vec![1usize; cols];
        for row in &self.rows {
            for (w, cell) in widths.iter_mut().zip(row) {
                *w = (*w).max(cell.width());
            }
        }
        let total = widths.iter().sum::<usize>() + SEP.chars().count() * (cols - 1);
        if total <= width.max(1) {
            self.aligned(&widths, theme)
        } else {
            self.row_per_line(width.max(1), theme)
        }
    }

    fn aligned(&self, widths: &[usize], theme: &Theme) -> Vec<Vec<Span<'static>>> {
        let mut out = Vec::new();
        for (r, row) in self.rows.iter().enumerate() {
            let mut spans = Vec::new();
            for (c, w) in widths.iter().enumerate() {
                if c > 0 {
                    spans.push(Span::styled(SEP, theme.dim()));
                }
                let cell = row.get(c);
                let pad = w.saturating_sub(cell.map_or(0, StyledText::width));
                let (left, right) = match self.aligns.get(c) {
                    Some(Alignment::Right) => (pad, 0),
                    Some(Alignment::Center) => (pad / 2, pad - pad / 2),
                    _ => (0, pad),
                };
                if left > 0 {
                    spans.push(Span::raw(" ".repeat(left)));
                }
                if let Some(cell) = cell {
                    spans.extend(cell.all_spans());
                }
                if right > 0 {
                    spans.push(Span::raw(" ".repeat(right)));
                }
            }
            out.push(spans);
            if r + 1 == self.head_rows {
                let rule: Vec<String> = widths.iter().map(|w| "─".repeat(*w)).collect();
                out.push(vec![Span::styled(rule.join(CROSS), theme.dim())]);
            }
        }
        out
    }

    fn row_per_line(&self, width: usize, theme: &Theme) -> Vec<Vec<Span<'static>>> {
        let mut out = Vec::new();
        for row in &self.rows {
            let mut line = StyledText::new();
            for (c, cell) in row.iter().enumerate() {
                if c > 0 {
                    line.push(SEP, theme.dim());
                }
                line.append(cell);
            }
            let inner = width.saturating_sub(CONTINUATION_INDENT.len()).max(1);
            for (i, range) in line.wrap_words(inner).into_iter().enumerate() {
                let mut spans = Vec::new();
                if i > 0 {
                    spans.push(Span::raw(CONTINUATION_INDENT));
                }
                spans.extend(line.spans(range));
                out.push(spans);
            }
        }
        out
    }
}
