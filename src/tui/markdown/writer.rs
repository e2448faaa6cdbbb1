//! One unit of markdown (a top-level block or top-level list item) from pulldown-cmark events to
//! lines: block layout (blank lines between blocks, quote bars, list markers with hanging
//! indents), inline styles (emphasis, code, links, images), and the hand-off of tables and code
//! blocks to their own modules. Nothing here recurses, so deep nesting cannot overflow the stack.
//!
//! List items are never separated by blank lines, and a nested list follows its item's text
//! directly, whether the source list is tight or loose: a unit (one item) then renders the same
//! whatever the rest of its list looks like, which is what lets the stream render items alone.

use std::collections::HashMap;

use pulldown_cmark::{BrokenLink, CodeBlockKind, CowStr, Event, HeadingLevel, Parser, Tag, TagEnd};
use ratatui::style::Style;
use ratatui::text::{Line, Span};

use super::code::CodeBlock;
use super::segment::{RefDef, normalize_label, options};
use super::styled::{StyledText, str_width, trim_end};
use super::table::Table;
use crate::tui::theme::Theme;

const BULLETS: [&str; 3] = ["•", "◦", "▪"];
const QUOTE_BAR: &str = "│ ";

/// Link reference definitions known to a unit: those of earlier units, then those found in
/// the same parse that end before the unit starts.
pub(crate) struct Refs<'a> {
    pub earlier: &'a HashMap<String, (String, String)>,
    pub parse: &'a [RefDef],
    pub before: usize,
}

impl Refs<'_> {
    fn get(&self, label: &str) -> Option<(String, String)> {
        let label = normalize_label(label);
        if let Some(found) = self.earlier.get(&label) {
            return Some(found.clone());
        }
        self.parse
            .iter()
            .take_while(|d| d.end <= self.before)
            .find(|d| d.label == label)
            .map(|d| (d.dest.clone(), d.title.clone()))
    }
}

pub(crate) struct Ctx<'a> {
    pub width: usize,
    pub theme: &'a Theme,
    /// The number of the first item of the unit's ordered list, when the unit continues a list.
    pub first_number: Option<u64>,
    pub refs: Refs<'a>,
}

/// Renders `src` (one unit) to lines of at most `ctx.width` columns where possible.
pub(crate) fn render(src: &str, ctx: &Ctx<'_>) -> Vec<Line<'static>> {
    let callback = |link: BrokenLink<'_>| {
        ctx.refs
            .get(&link.reference)
            .map(|(dest, title)| (CowStr::from(dest), CowStr::from(title)))
    };
    let parser = Parser::new_with_broken_link_callback(src, options(), Some(callback));
    let mut writer = Writer::new(ctx);
    for event in parser {
        writer.event(event);
    }
    writer.flush_inline();
    writer.lines
}

enum Container {
    Quote,
    Item {
        marker: Span<'static>,
        width: usize,
        first: bool,
    },
}

struct Writer<'a> {
    ctx: &'a Ctx<'a>,
    theme: Theme,
    lines: Vec<Line<'static>>,
    containers: Vec<Container>,
    /// The next number of each open list (`None` for bullet lists).
    lists: Vec<Option<u64>>,
    inline: StyledText,
    styles: Vec<Style>,
    heading: Option<usize>,
    /// Open links: destination and where their text starts in `inline`.
    links: Vec<(String, usize)>,
    images: Vec<String>,
    code: Option<(String, String)>,
    html: Option<String>,
    table: Option<Table>,
    blank_pending: bool,
}

impl<'a> Writer<'a> {
    fn new(ctx: &'a Ctx<'a>) -> Writer<'a> {
        Writer {
            ctx,
            theme: *ctx.theme,
            lines: Vec::new(),
            containers: Vec::new(),
            lists: Vec::new(),
            inline: StyledText::new(),
            styles: Vec::new(),
            heading: None,
            links: Vec::new(),
            images: Vec::new(),
            code: None,
            html: None,
            table: None,
            blank_pending: false,
        }
    }

    fn event(&mut self, event: Event<'_>) {
        match event {
            Event::Start(tag) => self.start(tag),
            Event::End(tag) => self.end(tag),
            Event::Text(text) => self.text(&text),
            Event::Code(code) => {
                let style = self.style().patch(self.theme.inline_code());
                self.inline.push(&code, style);
            }
            Event::Html(html) => self.text(&html),
            Event::InlineHtml(html) | Event::InlineMath(html) | Event::DisplayMath(html) => {
                self.inline.push(&html, self.style())
            }
            Event::FootnoteReference(label) => {
                self.inline.push(&format!("[^{label}]"), self.style())
            }
            Event::SoftBreak => self.inline.push(" ", self.style()),
            Event::HardBreak if self.table.is_some() => self.inline.push(" ", self.style()),
            Event::HardBreak => self.inline.hard_break(),
            Event::Rule => {
                self.begin_block();
                let rule = "─".repeat(self.avail());
                self.emit(vec![Span::styled(rule, self.theme.rule())]);
                self.blank_pending = true;
            }
            Event::TaskListMarker(done) => {
                let mark = if done { "[x] " } else { "[ ] " };
                self.inline.push(mark, self.theme.list_marker());
            }
        }
    }

    fn start(&mut self, tag: Tag<'_>) {
        match tag {
            Tag::Paragraph => self.begin_block(),
            Tag::Heading { level, .. } => {
                self.begin_block();
                let level = heading_level(level);
                self.heading = Some(level);
                self.inline
                    .push(&format!("{} ", "#".repeat(level)), self.style());
            }
            Tag::BlockQuote(_) => {
                self.begin_block();
                self.containers.push(Container::Quote);
            }
            Tag::CodeBlock(kind) => {
                self.begin_block();
                let info = match kind {
                    CodeBlockKind::Fenced(info) => info.to_string(),
                    CodeBlockKind::Indented => String::new(),
                };
                self.code = Some((info, String::new()));
            }
            Tag::HtmlBlock => {
                self.begin_block();
                self.html = Some(String::new());
            }
            Tag::List(first) => self.start_list(first),
            Tag::Item => self.start_item(),
            Tag::Table(aligns) => {
                self.begin_block();
                self.table = Some(Table::new(aligns));
            }
            Tag::TableHead => {
                self.styles.push(self.theme.bold());
                if let Some(t) = &mut self.table {
                    t.start_row();
                }
            }
            Tag::TableRow => {
                if let Some(t) = &mut self.table {
                    t.start_row();
                }
            }
            Tag::TableCell => self.inline = StyledText::new(),
            Tag::Emphasis => self.styles.push(self.theme.italic()),
            Tag::Strong => self.styles.push(self.theme.bold()),
            Tag::Strikethrough => self.styles.push(self.theme.strikethrough()),
            Tag::Superscript | Tag::Subscript => self.styles.push(Style::new()),
            Tag::Link { dest_url, .. } => {
                self.styles.push(self.theme.link());
                self.links.push((dest_url.to_string(), self.inline.len()));
            }
            Tag::Image { dest_url, .. } => {
                self.inline
                    .push("[image: ", self.style().patch(self.theme.dim()));
                self.styles.push(self.theme.dim());
                self.images.push(dest_url.to_string());
            }
            Tag::FootnoteDefinition(_)
            | Tag::DefinitionList
            | Tag::DefinitionListTitle
            | Tag::DefinitionListDefinition
            | Tag::MetadataBlock(_) => self.begin_block(),
        }
    }

    fn start_list(&mut self, first: Option<u64>) {
        self.flush_inline();
        if self.in_item() {
            // A nested list follows its item's text directly.
            self.blank_pending = false;
        } else {
            self.begin_block();
        }
        let first = match (self.lists.is_empty(), first) {
            (true, Some(n)) => Some(self.ctx.first_number.unwrap_or(n)),
            (_, first) => first,
        };
        self.lists.push(first);
    }

    /// A list item: its marker (the next number, or a bullet by depth) starts its first row.
    fn start_item(&mut self) {
        self.flush_inline();
        self.blank_pending = false;
        let marker = match self.lists.last_mut() {
            Some(Some(n)) => {
                let marker = format!("{n}. ");
                *n = n.saturating_add(1);
                marker
            }
            _ => {
                let depth = self
                    .containers
                    .iter()
                    .filter(|c| matches!(c, Container::Item { .. }))
                    .count();
                format!("{} ", BULLETS[depth % BULLETS.len()])
            }
        };
        let width = str_width(&marker);
        let marker = Span::styled(marker, self.theme.list_marker());
        self.containers.push(Container::Item {
            marker,
            width,
            first: true,
        });
    }

    fn end(&mut self, tag: TagEnd) {
        match tag {
            TagEnd::Paragraph => self.flush_inline(),
            TagEnd::Heading(_) => {
                self.flush_inline();
                self.heading = None;
            }
            TagEnd::BlockQuote(_) => {
                self.flush_inline();
                self.containers.pop();
                self.blank_pending = true;
            }
            TagEnd::CodeBlock => self.end_code(),
            TagEnd::HtmlBlock => self.end_html(),
            TagEnd::List(_) => {
                self.flush_inline();
                self.lists.pop();
                self.blank_pending = true;
            }
            TagEnd::Item => {
                self.flush_inline();
                if let Some(Container::Item { first: true, .. }) = self.containers.last() {
                    self.emit(Vec::new()); // an empty item still shows its marker
                }
                self.containers.pop();
            }
            TagEnd::Table => {
                let width = self.avail();
                if let Some(table) = self.table.take() {
                    for row in table.render(width, &self.theme) {
                        self.emit(row);
                    }
                }
                self.inline = StyledText::new();
                self.blank_pending = true;
            }
            TagEnd::TableHead => {
                self.styles.pop();
                if let Some(t) = &mut self.table {
                    t.end_head();
                }
            }
            TagEnd::TableRow => {}
            TagEnd::TableCell => {
                let cell = std::mem::take(&mut self.inline);
                if let Some(t) = &mut self.table {
                    t.push_cell(cell);
                }
            }
            TagEnd::Emphasis | TagEnd::Strong | TagEnd::Strikethrough => {
                self.styles.pop();
            }
            TagEnd::Superscript | TagEnd::Subscript => {
                self.styles.pop();
            }
            TagEnd::Link => self.end_link(),
            TagEnd::Image => {
                self.styles.pop();
                let style = self.style().patch(self.theme.dim());
                self.inline.push("]", style);
                if let Some(url) = self.images.pop()
                    && !url.is_empty()
                {
                    self.inline.push(&format!(" ({url})"), style);
                }
            }
            TagEnd::FootnoteDefinition
            | TagEnd::DefinitionList
            | TagEnd::DefinitionListTitle
            | TagEnd::DefinitionListDefinition
            | TagEnd::MetadataBlock(_) => {
                self.flush_inline();
                self.blank_pending = true;
            }
        }
    }

    fn text(&mut self, text: &str) {
        if let Some((_, code)) = &mut self.code {
            code.push_str(text);
        } else if let Some(html) = &mut self.html {
            html.push_str(text);
        } else {
            self.inline.push(text, self.style());
        }
    }

    /// A link shows its text, then its destination dimmed in parentheses unless the text
    /// already says it (autolinks, bare URLs).
    fn end_link(&mut self) {
        self.styles.pop();
        let Some((url, start)) = self.links.pop() else {
            return;
        };
        let text = self.inline.as_str().get(start..).unwrap_or("").trim();
        if url.is_empty() || text == url || url.strip_prefix("mailto:") == Some(text) {
            return;
        }
        if text.is_empty() {
            self.inline
                .push(&url, self.style().patch(self.theme.link()));
        } else {
            self.inline
                .push(&format!(" ({url})"), self.style().patch(self.theme.dim()));
        }
    }

    fn end_code(&mut self) {
        let Some((info, text)) = self.code.take() else {
            return;
        };
        let width = self.avail();
        let mut block = CodeBlock::new(&info, self.theme);
        let text = text.strip_suffix('\n').unwrap_or(&text);
        if !text.is_empty() {
            for line in text.split('\n') {
                for row in block.line(line, width) {
                    self.emit(row.spans);
                }
            }
        }
        self.blank_pending = true;
    }

    /// Raw HTML is shown as the plain text it is, line by line.
    fn end_html(&mut self) {
        let Some(html) = self.html.take() else { return };
        let width = self.avail();
        for line in html.trim_end_matches('\n').split('\n') {
            let mut text = StyledText::new();
            text.push(line, self.theme.text());
            let rows = text.wrap_words(width);
            if rows.is_empty() {
                self.emit(Vec::new());
            }
            for range in rows {
                self.emit(text.spans(range));
            }
        }
        self.blank_pending = true;
    }

    fn style(&self) -> Style {
        let mut style = Style::new();
        if self
            .containers
            .iter()
            .any(|c| matches!(c, Container::Quote))
        {
            style = style.patch(self.theme.quote());
        }
        if let Some(level) = self.heading {
            style = style.patch(self.theme.heading(level));
        }
        for s in &self.styles {
            style = style.patch(*s);
        }
        style
    }

    fn in_item(&self) -> bool {
        matches!(self.containers.last(), Some(Container::Item { .. }))
    }

    /// Columns left for content inside the open containers (at least one).
    fn avail(&self) -> usize {
        let used: usize = self
            .containers
            .iter()
            .map(|c| match c {
                Container::Quote => QUOTE_BAR.chars().count(),
                Container::Item { width, .. } => *width,
            })
            .sum();
        self.ctx.width.saturating_sub(used).max(1)
    }

    /// Before a block: ends the text of a tight list item, and puts one blank line between this
    /// block and the previous one.
    fn begin_block(&mut self) {
        self.flush_inline();
        if self.blank_pending && !self.lines.is_empty() {
            let mut spans = Vec::new();
            for c in &self.containers {
                if let Container::Quote = c {
                    spans.push(Span::styled(QUOTE_BAR, self.theme.dim()));
                }
            }
            trim_end(&mut spans);
            self.lines.push(Line::from(spans));
        }
        self.blank_pending = false;
    }

    /// Wraps the pending inline text into lines (a paragraph, a heading, a tight item's text).
    fn flush_inline(&mut self) {
        if self.inline.is_empty() || self.table.is_some() {
            return;
        }
        let text = std::mem::take(&mut self.inline);
        let rows = text.wrap_words(self.avail());
        if rows.is_empty() {
            return;
        }
        for range in rows {
            self.emit(text.spans(range));
        }
        self.blank_pending = true;
    }

    /// One line: the containers' prefixes, then `content`.
    fn emit(&mut self, content: Vec<Span<'static>>) {
        let mut spans = Vec::with_capacity(self.containers.len() + content.len());
        for c in &mut self.containers {
            match c {
                Container::Quote => spans.push(Span::styled(QUOTE_BAR, self.theme.dim())),
                Container::Item {
                    marker,
                    width,
                    first,
                } => {
                    if *first {
                        spans.push(marker.clone());
                        *first = false;
                    } else {
                        spans.push(Span::raw(" ".repeat(*width)));
                    }
                }
            }
        }
        spans.extend(content);
        trim_end(&mut spans);
        self.lines.push(Line::from(spans));
    }
}

fn heading_level(level: HeadingLevel) -> usize {
    match level {
        HeadingLevel::H1 => 1,
        HeadingLevel::H2 => 2,
        HeadingLevel::H3 => 3,
        HeadingLevel::H4 => 4,
        HeadingLevel::H5 => 5,
        HeadingLevel::H6 => 6,
    }
}
