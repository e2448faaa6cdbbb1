//! Markdown for the transcript. This first version renders the source as wrapped plain
//! text, with the streaming contract the interface relies on: complete lines become stable
//! as soon as their newline arrives.

use super::theme::Theme;
use super::wrap::wrap_text;
use ratatui::text::Line;

pub fn render(markdown: &str, width: u16, theme: &Theme) -> Vec<Line<'static>> {
    wrap_text(
        markdown.trim_end_matches('\n'),
        theme.text(),
        width,
        &[],
        &[],
    )
}

pub struct StreamingMarkdown {
    width: u16,
    theme: Theme,
    pending: String,
    tail: Vec<Line<'static>>,
}

impl StreamingMarkdown {
    pub fn new(width: u16, theme: Theme) -> Self {
        StreamingMarkdown {
            width,
            theme,
            pending: String::new(),
            tail: Vec::new(),
        }
    }

    pub fn push(&mut self, delta: &str) {
        self.pending.push_str(delta);
        self.retail();
    }

    pub fn take_stable(&mut self) -> Vec<Line<'static>> {
        let Some(end) = self.pending.rfind('\n') else {
            return Vec::new();
        };
        let complete: String = self.pending.drain(..=end).collect();
        self.retail();
        wrap_text(
            complete.trim_end_matches('\n'),
            self.theme.text(),
            self.width,
            &[],
            &[],
        )
    }

    pub fn tail(&self) -> &[Line<'static>] {
        &self.tail
    }

    pub fn finish(&mut self) -> Vec<Line<'static>> {
        let mut lines = self.take_stable();
        if !self.pending.is_empty() {
            lines.extend(render(
                &std::mem::take(&mut self.pending),
                self.width,
                &self.theme,
            ));
        }
        self.tail.clear();
        lines
    }

    pub fn set_width(&mut self, width: u16) {
        self.width = width;
        self.retail();
    }

    fn retail(&mut self) {
        let open = self.pending.rsplit('\n').next().unwrap_or("");
        self.tail = if open.is_empty() {
            Vec::new()
        } else {
            render(open, self.width, &self.theme)
        };
    }
}
