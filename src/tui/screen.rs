//! The inline screen: a live area whose height follows its content, drawn below the
//! conversation, and finished lines inserted above it into the terminal's own scrollback
//! (so native scrolling, search and copy keep working, and nothing is lost on exit).
//!
//! Hand-written on ratatui-core's `Buffer` and `Backend` because ratatui's
//! `Viewport::Inline` has a fixed height and queries the cursor position on every resize.
//! History goes above the live area through scroll regions (DECSTBM): the rows above the
//! area scroll up, the top row leaves into the scrollback, and the live area is not
//! repainted. Only cells that changed since the last frame are written.

use ratatui::backend::{Backend, ClearType};
use ratatui::buffer::Buffer;
use ratatui::layout::{Position, Rect, Size};
use ratatui::text::Line;

pub struct Screen<B: Backend> {
    backend: B,
    size: Size,
    /// Where the live area is: full width, `top..top + height`.
    area: Rect,
    /// What the live area shows on the terminal now.
    previous: Buffer,
    /// Repaint every cell on the next draw (after a resize or a height change).
    repaint: bool,
}

impl<B: Backend> Screen<B> {
    /// Start the live area at row `top` (where the cursor was), empty.
    pub fn new(backend: B, top: u16) -> Result<Self, B::Error> {
        let size = backend.size()?;
        let area = Rect::new(0, top.min(size.height.saturating_sub(1)), size.width, 0);
        Ok(Screen {
            backend,
            size,
            area,
            previous: Buffer::empty(area),
            repaint: true,
        })
    }

    pub fn backend(&self) -> &B {
        &self.backend
    }

    pub fn backend_mut(&mut self) -> &mut B {
        &mut self.backend
    }

    pub fn size(&self) -> Size {
        self.size
    }

    pub fn area(&self) -> Rect {
        self.area
    }

    /// The tallest live area: the whole screen but one row, so history can always be
    /// inserted above it.
    pub fn max_height(&self) -> u16 {
        self.size.height.saturating_sub(1).max(1)
    }

    /// Draw a frame of `height` rows; `render` paints into a buffer covering the live area
    /// and returns where the cursor belongs (`None` hides it).
    pub fn draw(
        &mut self,
        height: u16,
        render: impl FnOnce(&mut Buffer) -> Option<Position>,
    ) -> Result<(), B::Error> {
        self.set_height(height.min(self.max_height()))?;
        let mut next = Buffer::empty(self.area);
        let cursor = render(&mut next);
        if self.repaint {
            self.clear_rows(self.area.top(), self.area.bottom())?;
            self.previous = Buffer::empty(self.area);
            self.repaint = false;
        }
        let changes = self.previous.diff(&next);
        if !changes.is_empty() {
            self.backend.draw(changes.into_iter())?;
        }
        self.previous = next;
        match cursor {
            Some(position) => {
                self.backend.set_cursor_position(position)?;
                self.backend.show_cursor()?;
            }
            None => self.backend.hide_cursor()?,
        }
        self.backend.flush()
    }

    /// Put `lines` (one terminal row each, already wrapped to the width) into the history
    /// above the live area.
    pub fn insert_before(&mut self, lines: &[Line<'_>]) -> Result<(), B::Error> {
        if lines.is_empty() {
            return Ok(());
        }
        let mut rows = lines;
        // Room below the live area: move it down and use the gap.
        let below = self.size.height.saturating_sub(self.area.bottom());
        let into_gap = (rows.len() as u16).min(below);
        if into_gap > 0 {
            if self.area.height > 0 {
                self.backend
                    .scroll_region_down(self.area.top()..self.size.height, into_gap)?;
            }
            let (now, later) = rows.split_at(into_gap as usize);
            self.write_rows(self.area.top(), now)?;
            self.area.y += into_gap;
            self.previous.area = self.area;
            rows = later;
        }
        // The live area touches the bottom: scroll the rows above it up, into the scrollback.
        while !rows.is_empty() {
            let room = self.area.top();
            if room == 0 {
                break;
            }
            let step = (rows.len() as u16).min(room);
            self.backend.scroll_region_up(0..room, step)?;
            let (now, later) = rows.split_at(step as usize);
            self.write_rows(room - step, now)?;
            rows = later;
        }
        self.backend.flush()
    }

    /// The terminal changed size: keep the live area on screen and repaint it.
    pub fn resize(&mut self, size: Size) -> Result<(), B::Error> {
        if size == self.size {
            return Ok(());
        }
        self.size = size;
        let height = self.area.height.min(self.max_height());
        let top = self.area.top().min(size.height.saturating_sub(height));
        self.area = Rect::new(0, top, size.width, height);
        // Whatever the terminal reflowed below the area's top is stale.
        self.backend.set_cursor_position(Position::new(0, top))?;
        self.backend.clear_region(ClearType::AfterCursor)?;
        self.repaint = true;
        Ok(())
    }

    /// Clear the live area and leave the cursor where it started, for a clean exit (or a
    /// suspend): the shell prompt follows the conversation.
    pub fn leave(&mut self) -> Result<(), B::Error> {
        self.clear_rows(self.area.top(), self.area.bottom())?;
        self.backend
            .set_cursor_position(Position::new(0, self.area.top()))?;
        self.backend.show_cursor()?;
        self.area.height = 0;
        self.previous = Buffer::empty(self.area);
        self.repaint = true;
        self.backend.flush()
    }

    /// After a suspend or anything else that wrote to the terminal: start again at `top`.
    pub fn restart_at(&mut self, top: u16) -> Result<(), B::Error> {
        self.size = self.backend.size()?;
        self.area = Rect::new(
            0,
            top.min(self.size.height.saturating_sub(1)),
            self.size.width,
            0,
        );
        self.previous = Buffer::empty(self.area);
        self.repaint = true;
        Ok(())
    }

    fn set_height(&mut self, height: u16) -> Result<(), B::Error> {
        if height == self.area.height {
            return Ok(());
        }
        if height > self.area.height {
            let overflow = (self.area.top() + height).saturating_sub(self.size.height);
            if overflow > 0 {
                // Make room: everything above moves up, the top rows into the scrollback.
                self.backend
                    .scroll_region_up(0..self.size.height, overflow)?;
                self.area.y -= overflow;
            }
        } else {
            self.clear_rows(self.area.top() + height, self.area.bottom())?;
        }
        self.area.height = height;
        self.repaint = true;
        Ok(())
    }

    fn clear_rows(&mut self, from: u16, to: u16) -> Result<(), B::Error> {
        for row in from..to.min(self.size.height) {
            self.backend.set_cursor_position(Position::new(0, row))?;
            self.backend.clear_region(ClearType::CurrentLine)?;
        }
        Ok(())
    }

    fn write_rows(&mut self, top: u16, rows: &[Line<'_>]) -> Result<(), B::Error> {
        let area = Rect::new(0, top, self.size.width, rows.len() as u16);
        let mut buffer = Buffer::empty(area);
        for (i, line) in rows.iter().enumerate() {
            buffer.set_line(0, top + i as u16, line, self.size.width);
        }
        // Every cell, blanks included: the rows may hold stale content.
        let cells = buffer.content.iter().enumerate().map(|(i, cell)| {
            (
                (i as u16) % area.width.max(1),
                top + (i as u16) / area.width.max(1),
                cell,
            )
        });
        self.backend.draw(cells)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use ratatui::backend::TestBackend;

    fn rows_of(buffer: &Buffer) -> Vec<String> {
        let width = buffer.area.width as usize;
        buffer
            .content
            .chunks(width.max(1))
            .map(|row| {
                row.iter()
                    .map(|c| c.symbol())
                    .collect::<String>()
                    .trim_end()
                    .to_string()
            })
            .collect()
    }

    fn screen(width: u16, height: u16, top: u16) -> Screen<TestBackend> {
        Screen::new(TestBackend::new(width, height), top).unwrap()
    }

    fn paint(text: &'static [&'static str]) -> impl FnOnce(&mut Buffer) -> Option<Position> {
        move |buffer: &mut Buffer| {
            let area = buffer.area;
            for (i, line) in text.iter().enumerate().take(area.height as usize) {
                buffer.set_string(0, area.y + i as u16, line, ratatui::style::Style::default());
            }
            None
        }
    }

    #[test]
    fn the_live_area_follows_the_history_and_grows_downwards() {
        let mut s = screen(10, 6, 0);
        s.draw(2, paint(&["> typing", "status"])).unwrap();
        assert_eq!(
            rows_of(s.backend().buffer()),
            ["> typing", "status", "", "", "", ""]
        );
        s.insert_before(&[Line::from("hello"), Line::from("world")])
            .unwrap();
        assert_eq!(
            rows_of(s.backend().buffer()),
            ["hello", "world", "> typing", "status", "", ""]
        );
        assert_eq!(s.area(), Rect::new(0, 2, 10, 2));
        s.draw(3, paint(&["streaming", "> typing", "status"]))
            .unwrap();
        assert_eq!(
            rows_of(s.backend().buffer()),
            ["hello", "world", "streaming", "> typing", "status", ""]
        );
    }

    #[test]
    fn history_scrolls_into_the_scrollback_once_the_screen_is_full() {
        let mut s = screen(10, 4, 0);
        s.draw(2, paint(&["> a", "status"])).unwrap();
        let lines: Vec<Line> = (1..=5).map(|i| Line::from(format!("line {i}"))).collect();
        s.insert_before(&lines).unwrap();
        assert_eq!(
            rows_of(s.backend().buffer()),
            ["line 4", "line 5", "> a", "status"]
        );
        assert_eq!(
            rows_of(s.backend().scrollback()),
            ["line 1", "line 2", "line 3"]
        );
        // Growing pushes history up instead of going off screen.
        s.draw(3, paint(&["more", "> a", "status"])).unwrap();
        assert_eq!(
            rows_of(s.backend().buffer()),
            ["line 5", "more", "> a", "status"]
        );
        assert_eq!(rows_of(s.backend().scrollback()).last().unwrap(), "line 4");
        // Shrinking clears the freed row and keeps the top.
        s.draw(2, paint(&["> a", "status"])).unwrap();
        assert_eq!(
            rows_of(s.backend().buffer()),
            ["line 5", "> a", "status", ""]
        );
    }

    #[test]
    fn the_live_area_is_never_taller_than_the_screen_but_one_row() {
        let mut s = screen(10, 4, 2);
        s.draw(10, paint(&["a", "b", "c", "d", "e"])).unwrap();
        assert_eq!(s.area(), Rect::new(0, 1, 10, 3));
        s.insert_before(&[Line::from("h")]).unwrap();
        assert_eq!(rows_of(s.backend().buffer())[0], "h");
    }

    #[test]
    fn only_changed_cells_are_written_and_leave_clears_the_area() {
        let mut s = screen(10, 4, 1);
        s.draw(1, paint(&["abc"])).unwrap();
        s.draw(1, paint(&["abd"])).unwrap();
        assert_eq!(rows_of(s.backend().buffer())[1], "abd");
        s.leave().unwrap();
        assert_eq!(rows_of(s.backend().buffer()), ["", "", "", ""]);
    }
}
