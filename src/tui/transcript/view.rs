//! The transcript view (ctrl+o): the whole conversation, every tool output expanded, on
//! the terminal's alternate screen — scrolled by rows, searched with `/`, closed with esc
//! or q, while the run goes on underneath.
//!
//! Only what is on screen is rendered: entries are wrapped when first shown and cached for
//! the current width, and a position is an (entry, row) pair, so opening, scrolling and
//! searching cost the same on a session of ten or ten thousand messages. The cache keeps
//! the entries used last, up to a few screens of rows: scrolling through a long session
//! does not leave all of it rendered in memory.

use super::log::Log;
use super::render;
use crate::tui::screen::Painted;
use crate::tui::theme::Theme;
use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use ratatui::style::{Modifier, Style};
use ratatui::text::{Line, Span, Text};
use ratatui::widgets::{Paragraph, Widget};
use std::collections::HashMap;
use std::rc::Rc;

/// Rendered rows kept for entries off screen, at least (see `Cache`).
const CACHED_ROWS: usize = 2_000;

/// A position in the transcript: an entry and a row of its rendering.
type Position = (usize, usize);

pub struct View {
    /// What the footer calls it ("Transcript", "Diff").
    title: &'static str,
    /// The first row shown.
    top: Position,
    /// Keep the end in view as entries arrive (it opens at the end).
    follow: bool,
    /// `/` was pressed: the search being typed.
    pub input: Option<String>,
    query: Option<String>,
    /// A short note in the footer ("no match").
    note: Option<String>,
    width: u16,
    /// Rows shown at the last frame (for page keys).
    page: usize,
    cache: Cache,
    /// Bumped when rendered entries are forgotten (their text changed).
    generation: u64,
    /// What the body (every row but the footer) showed at the last frame.
    body: Option<Body>,
}

/// Everything the body's rows depend on: the same body is not drawn again.
#[derive(PartialEq, Eq)]
struct Body {
    /// Which log (the transcript or a sub-agent's), by address.
    log: usize,
    entries: usize,
    generation: u64,
    top: Position,
    area: Rect,
    query: Option<String>,
}

/// Entries rendered at the current width, the least recently used dropped once they hold
/// more than `CACHED_ROWS` rows or eight screens, whichever is more.
#[derive(Default)]
struct Cache {
    entries: HashMap<usize, (Rc<Vec<Line<'static>>>, u64)>,
    rows: usize,
    clock: u64,
}

impl Cache {
    fn get(&mut self, index: usize) -> Option<Rc<Vec<Line<'static>>>> {
        self.clock += 1;
        let clock = self.clock;
        self.entries.get_mut(&index).map(|(rows, used)| {
            *used = clock;
            rows.clone()
        })
    }

    fn insert(&mut self, index: usize, rows: Rc<Vec<Line<'static>>>, page: usize) {
        self.clock += 1;
        self.rows += rows.len();
        if let Some((old, _)) = self.entries.insert(index, (rows, self.clock)) {
            self.rows -= old.len();
        }
        let limit = CACHED_ROWS.max(page.saturating_mul(8));
        while self.rows > limit && self.entries.len() > 1 {
            let oldest = self
                .entries
                .iter()
                .filter(|(i, _)| **i != index)
                .min_by_key(|(_, (_, used))| *used)
                .map(|(i, _)| *i);
            let Some((old, _)) = oldest.and_then(|i| self.entries.remove(&i)) else {
                break;
            };
            self.rows -= old.len();
        }
    }

    fn clear(&mut self) {
        self.entries.clear();
        self.rows = 0;
    }
}

impl View {
    pub fn new() -> View {
        View::titled("Transcript")
    }

    /// A view of another log, opened at its start.
    pub fn titled(title: &'static str) -> View {
        View {
            title,
            top: (0, 0),
            follow: true,
            input: None,
            query: None,
            note: None,
            width: 0,
            page: 10,
            cache: Cache::default(),
            generation: 0,
            body: None,
        }
    }

    /// Forget the rendered entries (their text changed: a sub-agent's streaming message).
    pub fn invalidate(&mut self) {
        self.cache.clear();
        self.generation += 1;
    }

    /// Rendered rows held for entries now (what the view costs in memory).
    pub fn cached_rows(&self) -> usize {
        self.cache.rows
    }

    fn rows(&mut self, log: &Log, index: usize, theme: &Theme) -> Rc<Vec<Line<'static>>> {
        if let Some(rows) = self.cache.get(index) {
            return rows;
        }
        let rows = Rc::new(
            log.entries()
                .get(index)
                .map(|entry| render::rows(entry, self.width, theme))
                .unwrap_or_default(),
        );
        if index < log.len() {
            self.cache.insert(index, rows.clone(), self.page);
        }
        rows
    }

    /// The top position that shows the last `height` rows.
    fn end_top(&mut self, log: &Log, height: usize, theme: &Theme) -> Position {
        let mut needed = height;
        let mut index = log.len();
        while index > 0 {
            index -= 1;
            let count = self.rows(log, index, theme).len();
            if count >= needed {
                return (index, count - needed);
            }
            needed -= count;
        }
        (0, 0)
    }

    pub fn scroll(&mut self, log: &Log, delta: isize, theme: &Theme) {
        self.note = None;
        let end = self.end_top(log, self.page, theme);
        let mut top = if self.follow { end } else { self.top };
        if delta < 0 {
            self.follow = false;
            let mut left = delta.unsigned_abs();
            while left > 0 {
                if top.1 >= left {
                    top.1 -= left;
                    left = 0;
                } else if top.0 == 0 {
                    top.1 = 0;
                    left = 0;
                } else {
                    left -= top.1 + 1;
                    top.0 -= 1;
                    top.1 = self.rows(log, top.0, theme).len().saturating_sub(1);
                }
            }
        } else {
            let mut left = delta.unsigned_abs();
            while left > 0 && top < end {
                let count = self.rows(log, top.0, theme).len();
                if top.1 + left < count {
                    top.1 += left;
                    left = 0;
                } else {
                    left -= count - top.1;
                    top = (top.0 + 1, 0);
                }
            }
            if top >= end {
                top = end;
            }
        }
        self.follow = top >= end;
        self.top = top;
    }

    pub fn page_down(&mut self, log: &Log, theme: &Theme) {
        let page = isize::try_from(self.page.saturating_sub(1).max(1)).unwrap_or(isize::MAX);
        self.scroll(log, page, theme);
    }

    pub fn page_up(&mut self, log: &Log, theme: &Theme) {
        let page = isize::try_from(self.page.saturating_sub(1).max(1)).unwrap_or(isize::MAX);
        self.scroll(log, -page, theme);
    }

    pub fn to_start(&mut self) {
        self.follow = false;
        self.top = (0, 0);
    }

    pub fn to_end(&mut self) {
        self.follow = true;
    }

    /// Search for the typed text (enter): backward from the view's position, as `?` does in
    /// less — the view opens at the end, so the first search finds the latest match.
    pub fn submit_search(&mut self, log: &Log, theme: &Theme) {
        if let Some(query) = self.input.take().filter(|q| !q.trim().is_empty()) {
            self.query = Some(query);
            self.find(log, false, false, theme);
        }
    }

    /// The next newer (`forward`) or older entry that holds the query, wrapping around at
    /// either end; `again` skips the current one. Following the end, the whole log is older.
    pub fn find(&mut self, log: &Log, forward: bool, again: bool, theme: &Theme) {
        let Some(query) = self.query.clone().map(|q| q.to_lowercase()) else {
            return;
        };
        let current = if self.follow && !forward {
            log.len()
        } else if self.follow {
            self.end_top(log, self.page, theme).0
        } else {
            self.top.0
        };
        let holds = |i: &usize| {
            log.entries()
                .get(*i)
                .is_some_and(|e| e.text().to_lowercase().contains(&query))
        };
        let (found, wrapped) = if forward {
            let from = if again { current + 1 } else { current };
            match (from..log.len()).find(holds) {
                Some(index) => (Some(index), false),
                None => ((0..from.min(log.len())).find(holds), true),
            }
        } else {
            // Not following, the entry at the top is included unless searching again.
            let before = if again || self.follow {
                current
            } else {
                current + 1
            };
            let before = before.min(log.len());
            match (0..before).rev().find(holds) {
                Some(index) => (Some(index), false),
                None => ((before..log.len()).rev().find(holds), true),
            }
        };
        match found {
            Some(index) => {
                // The first row of the entry that shows the text, else its first row.
                let rows = self.rows(log, index, theme);
                let row = rows
                    .iter()
                    .position(|r| r.to_string().to_lowercase().contains(&query))
                    .unwrap_or(0);
                self.follow = false;
                self.top = (index, row);
                let end = self.end_top(log, self.page, theme);
                if self.top > end {
                    self.top = end;
                }
                self.note = wrapped.then(|| {
                    format!(
                        "search wrapped to the {}",
                        if forward { "start" } else { "end" }
                    )
                });
            }
            None => self.note = Some(format!("no match for “{query}”")),
        }
    }

    /// Draw the view into `buffer` (the whole screen); `status` says what the run is doing.
    /// When `kept` (the buffer holds the last frame) and the rows shown are the same as
    /// then — the usual case while a search is typed or the run's status ticks — only the
    /// footer is drawn again.
    pub fn render(
        &mut self,
        log: &Log,
        buffer: &mut Buffer,
        kept: bool,
        theme: &Theme,
        status: &str,
    ) -> Painted {
        let area = buffer.area;
        if area.width != self.width {
            self.width = area.width;
            self.cache.clear();
        }
        let height = usize::from(area.height.saturating_sub(1));
        self.page = height.max(1);
        if self.follow {
            self.top = self.end_top(log, height, theme);
        }
        let footer_area = Rect::new(area.x, area.bottom().saturating_sub(1), area.width, 1);
        let body = Body {
            log: std::ptr::from_ref(log).addr(),
            entries: log.len(),
            generation: self.generation,
            top: self.top,
            area,
            query: self.query.clone(),
        };
        let footer = self.footer(log, status, theme);
        if kept && self.body.as_ref() == Some(&body) {
            for x in footer_area.left()..footer_area.right() {
                buffer[(x, footer_area.y)].reset();
            }
            Paragraph::new(footer).render(footer_area, buffer);
            return Painted::Rows(footer_area);
        }
        buffer.reset();
        let mut shown: Vec<Line<'static>> = Vec::with_capacity(height);
        let (mut index, mut row) = self.top;
        while shown.len() < height && index < log.len() {
            let rows = self.rows(log, index, theme);
            shown.extend(rows.iter().skip(row).take(height - shown.len()).cloned());
            index += 1;
            row = 0;
        }
        if let Some(query) = self.query.as_deref().filter(|q| !q.is_empty()) {
            for line in &mut shown {
                *line = highlight(line, query);
            }
        }
        let body_area = Rect::new(area.x, area.y, area.width, area.height.saturating_sub(1));
        Paragraph::new(Text::from(shown)).render(body_area, buffer);
        Paragraph::new(footer).render(footer_area, buffer);
        self.body = Some(body);
        Painted::All
    }

    fn footer(&self, log: &Log, status: &str, theme: &Theme) -> Line<'static> {
        if let Some(input) = &self.input {
            return Line::from(vec![
                Span::styled("/", theme.accent()),
                Span::raw(input.clone()),
                Span::styled("▏", theme.accent()),
                Span::styled("  enter searches · esc cancels", theme.dim()),
            ]);
        }
        let position = if self.follow {
            "end".to_string()
        } else {
            format!("{} of {}", self.top.0 + 1, log.len())
        };
        let mut spans = vec![
            Span::styled(format!("{} ", self.title), theme.bold()),
            Span::styled(format!("({position}) "), theme.dim()),
        ];
        if let Some(note) = &self.note {
            spans.push(Span::styled(format!("{note} · "), theme.warning()));
        }
        if !status.is_empty() {
            spans.push(Span::styled(format!("{status} · "), theme.accent()));
        }
        spans.push(Span::styled(
            "↑↓ pgup pgdn g G · / search · n older · N newer · esc closes",
            theme.dim(),
        ));
        Line::from(spans)
    }
}

impl Default for View {
    fn default() -> Self {
        View::new()
    }
}

/// `line` with every (case-insensitive) occurrence of `query` reversed.
fn highlight(line: &Line<'static>, query: &str) -> Line<'static> {
    let text: String = line.spans.iter().map(|s| s.content.as_ref()).collect();
    let lower = text.to_lowercase();
    let needle = query.to_lowercase();
    // Lower-casing can change byte lengths; highlight only where positions agree.
    if lower.len() != text.len() || !lower.contains(&needle) {
        return line.clone();
    }
    let mut marks = Vec::new();
    let mut from = 0;
    while let Some(at) = lower[from..].find(&needle) {
        marks.push(from + at..from + at + needle.len());
        from += at + needle.len().max(1);
    }
    let mut spans = Vec::new();
    let mut offset = 0;
    for span in &line.spans {
        let content = span.content.as_ref();
        let (start, end) = (offset, offset + content.len());
        let mut cut = start;
        for mark in marks.iter().filter(|m| m.start < end && m.end > start) {
            let (s, e) = (mark.start.max(start), mark.end.min(end));
            if s > cut {
                spans.push(Span::styled(
                    content[cut - start..s - start].to_string(),
                    span.style,
                ));
            }
            spans.push(Span::styled(
                content[s - start..e - start].to_string(),
                span.style
                    .patch(Style::new().add_modifier(Modifier::REVERSED)),
            ));
            cut = e;
        }
        if cut < end {
            spans.push(Span::styled(content[cut - start..].to_string(), span.style));
        }
        offset = end;
    }
    Line::from(spans).style(line.style)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tui::transcript::log::Entry;

    fn log(n: usize) -> Log {
        let mut log = Log::default();
        for i in 0..n {
            log.push(Entry::User(crate::tui::transcript::Text::own(format!(
                "question {i}"
            ))));
            log.push(Entry::assistant(format!("answer {i}")));
        }
        log
    }

    fn screen(view: &mut View, log: &Log, height: u16) -> Vec<String> {
        let mut buffer = Buffer::empty(Rect::new(0, 0, 40, height));
        view.render(log, &mut buffer, false, &Theme::plain(), "");
        buffer
            .content
            .chunks(40)
            .map(|r| {
                r.iter()
                    .map(|c| c.symbol())
                    .collect::<String>()
                    .trim_end()
                    .to_string()
            })
            .collect()
    }

    #[test]
    fn opens_at_the_end_and_scrolls_to_the_start() {
        let log = log(50);
        let mut view = View::new();
        let rows = screen(&mut view, &log, 6);
        assert_eq!(rows[4], "● answer 49");
        view.to_start();
        assert_eq!(screen(&mut view, &log, 6)[1], "› question 0");
        view.scroll(&log, 2, &Theme::plain());
        assert_eq!(screen(&mut view, &log, 6)[0], "");
        assert_eq!(screen(&mut view, &log, 6)[1], "● answer 0");
        view.scroll(&log, -1, &Theme::plain());
        assert_eq!(screen(&mut view, &log, 6)[0], "› question 0");
        // Past the end it sticks to the end.
        view.scroll(&log, 10_000, &Theme::plain());
        assert_eq!(screen(&mut view, &log, 6)[4], "● answer 49");
    }

    #[test]
    fn search_jumps_to_matches_and_says_when_there_is_none() {
        let log = log(50);
        let mut view = View::new();
        screen(&mut view, &log, 6);
        view.to_start();
        view.input = Some("ANSWER 17".into());
        view.submit_search(&log, &Theme::plain());
        assert_eq!(screen(&mut view, &log, 6)[0], "● answer 17");
        // n again: the only match, found again after wrapping.
        view.find(&log, false, true, &Theme::plain());
        assert_eq!(screen(&mut view, &log, 6)[0], "● answer 17");
        assert_eq!(view.note.as_deref(), Some("search wrapped to the end"));
        view.input = Some("nothing like it".into());
        view.submit_search(&log, &Theme::plain());
        assert!(screen(&mut view, &log, 6)[5].contains("no match"));
        view.input = Some("question 3".into());
        view.submit_search(&log, &Theme::plain());
        assert_eq!(screen(&mut view, &log, 6)[0], "› question 3");
        // N: newer, n: older.
        view.find(&log, true, true, &Theme::plain());
        assert_eq!(screen(&mut view, &log, 6)[0], "› question 30");
        view.find(&log, true, true, &Theme::plain());
        assert_eq!(screen(&mut view, &log, 6)[0], "› question 31");
        view.find(&log, false, true, &Theme::plain());
        view.find(&log, false, true, &Theme::plain());
        assert_eq!(screen(&mut view, &log, 6)[0], "› question 3");
    }

    #[test]
    fn search_from_the_end_finds_the_latest_match_and_wraps() {
        let log = log(50);
        let mut view = View::new();
        screen(&mut view, &log, 6);
        view.input = Some("question 4".into());
        view.submit_search(&log, &Theme::plain());
        assert!(screen(&mut view, &log, 6).contains(&"› question 49".to_string()));
        view.input = Some("question 1".into());
        view.submit_search(&log, &Theme::plain());
        assert_eq!(screen(&mut view, &log, 6)[0], "› question 19");
        view.to_start();
        view.find(&log, false, true, &Theme::plain());
        assert_eq!(screen(&mut view, &log, 6)[0], "› question 19");
        assert_eq!(view.note.as_deref(), Some("search wrapped to the end"));
        view.find(&log, true, true, &Theme::plain());
        assert_eq!(view.note.as_deref(), Some("search wrapped to the start"));
        assert_eq!(screen(&mut view, &log, 6)[0], "› question 1");
    }

    fn answer_log(text: String) -> Log {
        use crate::protocol::message::{AssistantContent, AssistantMessage, Message};
        let mut answer = AssistantMessage::empty("test", "test-model");
        answer.content.push(AssistantContent::Text { text });
        let mut log = Log::default();
        log.push_turn(&std::sync::Arc::new(Message::Assistant(answer)), &[]);
        log
    }

    fn long_markdown(bytes: usize) -> String {
        let mut text = String::new();
        let mut n = 0;
        while text.len() < bytes {
            n += 1;
            text.push_str(&format!("Paragraph {n}: {}\n\n", "word ".repeat(60)));
            if n % 40 == 0 {
                text.push_str("```rust\nfn main() {}\n\nlet x = 1;\n```\n\n");
                text.push_str("1. one\n\n2. two\n\n3. three\n\n- a\n- b\n\n");
            }
        }
        text.push_str("THE END");
        text
    }

    #[test]
    fn a_long_answer_in_pieces_looks_like_the_whole() {
        let text = long_markdown(100_000);
        let log = answer_log(text.clone());
        assert!(log.len() > 3, "cut into {} pieces", log.len());
        let theme = Theme::plain();
        let pieces: Vec<String> = log
            .entries()
            .iter()
            .flat_map(|e| render::rows(e, 80, &theme))
            .map(|l| l.to_string())
            .collect();
        let whole: Vec<String> = crate::tui::cells::assistant_text(&text, 80, &theme)
            .iter()
            .map(|l| l.to_string())
            .collect();
        for (i, (a, b)) in pieces.iter().zip(&whole).enumerate() {
            assert_eq!(a, b, "row {i}: {:?}", &pieces[i.saturating_sub(3)..i + 2]);
        }
        assert_eq!(pieces.len(), whole.len());
    }

    #[test]
    fn reading_a_long_answer_through_holds_a_few_screens_of_rows() {
        // 1 MB of answer is ~17,000 rows at 100 columns; the view used to keep every row
        // it had shown (styled spans, ~9 bytes per byte of answer).
        let log = answer_log(long_markdown(1024 * 1024));
        let mut view = View::new();
        let theme = Theme::plain();
        let mut buffer = Buffer::empty(Rect::new(0, 0, 100, 40));
        view.render(&log, &mut buffer, false, &theme, "");
        view.to_start();
        let mut most = 0;
        let mut pages = 0;
        while !view.follow {
            buffer = Buffer::empty(Rect::new(0, 0, 100, 40));
            view.render(&log, &mut buffer, false, &theme, "");
            most = most.max(view.cached_rows());
            view.page_down(&log, &theme);
            pages += 1;
        }
        view.render(&log, &mut buffer, false, &theme, "");
        let shown: String = buffer.content.iter().map(|c| c.symbol()).collect();
        assert!(shown.contains("THE END"), "the walk reached the end");
        assert!(pages > 300, "the answer spans {pages} pages");
        assert!(most <= 3_000, "the view held {most} rendered rows");
    }

    #[test]
    fn typing_a_search_draws_only_the_footer_again() {
        let log = log(5_000);
        let theme = Theme::plain();
        let mut view = View::new();
        let mut buffer = Buffer::empty(Rect::new(0, 0, 40, 8));
        assert_eq!(
            view.render(&log, &mut buffer, false, &theme, ""),
            Painted::All
        );
        view.input = Some(String::new());
        for c in "answer 4".chars() {
            if let Some(input) = view.input.as_mut() {
                input.push(c);
            }
            let painted = view.render(&log, &mut buffer, true, &theme, "");
            assert_eq!(painted, Painted::Rows(Rect::new(0, 7, 40, 1)));
        }
        let footer: String = buffer.content[7 * 40..]
            .iter()
            .map(|c| c.symbol())
            .collect();
        assert!(footer.starts_with("/answer 4▏"), "{footer}");
        // What the body shows changes: it is drawn again, whole.
        view.submit_search(&log, &theme);
        assert_eq!(
            view.render(&log, &mut buffer, true, &theme, ""),
            Painted::All
        );
        view.scroll(&log, -1, &theme);
        assert_eq!(
            view.render(&log, &mut buffer, true, &theme, ""),
            Painted::All
        );
        // A blank buffer (after a resize) is always drawn whole.
        let mut blank = Buffer::empty(Rect::new(0, 0, 40, 8));
        assert_eq!(
            view.render(&log, &mut blank, false, &theme, ""),
            Painted::All
        );
        assert_eq!(blank, buffer);
    }
}
