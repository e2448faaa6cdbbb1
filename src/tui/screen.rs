//! The inline screen: a live area whose height follows its content, drawn below the
//! conversation, and finished lines inserted above it into the terminal's own scrollback
//! (so native scrolling, search and copy keep working, and nothing is lost on exit).
//!
//! Hand-written on ratatui-core's `Buffer` and `Backend` because ratatui's
//! `Viewport::Inline` has a fixed height and queries the cursor position on every resize.
//! History goes above the live area through scroll regions (DECSTBM): the rows above the
//! area scroll up, the top row leaves into the scrollback, and the live area is not
//! repainted. Only cells that changed since the last frame are written.
//!
//! Row counts come from outside (a huge paste, a long resumed session) and are `usize`;
//! terminal coordinates are `u16`. Every conversion saturates, so no count wraps around.

use ratatui::backend::{Backend, ClearType};
use ratatui::buffer::{Buffer, CellWidth};
use ratatui::layout::{Position, Rect, Size};
use ratatui::text::Line;

/// What a full-screen frame repainted (see `Screen::draw_alternate`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Painted {
    /// Every cell, from a blank buffer.
    All,
    /// Only these rows (full width); the others are as in the last frame.
    Rows(Rect),
}

/// Write the cells that differ between two frames of the same area.
fn draw_updates<B: Backend>(
    backend: &mut B,
    before: &Buffer,
    after: &Buffer,
) -> Result<(), B::Error> {
    let changes = super::frame_diff::frame_updates(before, after);
    if changes.is_empty() {
        return Ok(());
    }
    backend.draw(changes.into_iter())
}

/// The rows of `buffer` that `rows` covers, as a buffer of their own.
fn rows_of(buffer: &Buffer, rows: Rect) -> Buffer {
    let width = usize::from(buffer.area.width);
    let start = usize::from(rows.y.saturating_sub(buffer.area.y)) * width;
    let end = start + usize::from(rows.height) * width;
    Buffer {
        area: Rect::new(buffer.area.x, rows.y, buffer.area.width, rows.height),
        content: buffer.content.get(start..end).unwrap_or_default().to_vec(),
    }
}

/// `n` as a terminal row count, saturated at the largest one.
pub fn clamp_u16(n: usize) -> u16 {
    u16::try_from(n).unwrap_or(u16::MAX)
}

pub struct Screen<B: Backend> {
    backend: B,
    size: Size,
    /// Where the live area is: full width, `top..top + height`.
    area: Rect,
    /// What the live area shows on the terminal now.
    previous: Buffer,
    /// Repaint every cell on the next draw (after a resize or a height change).
    repaint: bool,
    /// Rows this screen inserted that are still on screen above the live area (the rest
    /// went into the scrollback, out of reach; rows above them are not ours).
    since_mark: u16,
    /// While a full-screen view is up on the alternate screen: what it shows now.
    alternate: Option<Buffer>,
    /// That was drawn by the last `draw_alternate` (not blank after entering or a resize).
    alternate_drawn: bool,
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
            since_mark: 0,
            alternate: None,
            alternate_drawn: false,
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
        draw_updates(&mut self.backend, &self.previous, &next)?;
        self.previous = next;
        // The cursor is always left at a known place, shown or not.
        let position = cursor.unwrap_or(Position::new(0, self.area.top()));
        self.move_cursor(position)?;
        if cursor.is_some() {
            self.backend.show_cursor()?;
        } else {
            self.backend.hide_cursor()?;
        }
        self.backend.flush()
    }

    /// A full-screen view is up (the caller switched the terminal to its alternate screen,
    /// which starts blank).
    pub fn enter_alternate(&mut self) {
        self.alternate_drawn = false;
        self.alternate = Some(Buffer::empty(Rect::new(
            0,
            0,
            self.size.width,
            self.size.height,
        )));
    }

    pub fn in_alternate(&self) -> bool {
        self.alternate.is_some()
    }

    /// Draw a frame of the full-screen view: only what changed since the last one. `render`
    /// gets the last frame it drew (`true`) or a blank buffer (`false`: the first frame, or
    /// after a resize cleared the screen) and says what it painted; rows it left alone are not compared again,
    /// so a frame that changes one row costs one row.
    pub fn draw_alternate(
        &mut self,
        render: impl FnOnce(&mut Buffer, bool) -> Painted,
    ) -> Result<(), B::Error> {
        let area = Rect::new(0, 0, self.size.width, self.size.height);
        let (previous, kept) = match self.alternate.take() {
            Some(previous) if previous.area == area => (previous, self.alternate_drawn),
            // The first frame, or a resize: start from a blank screen.
            _ => {
                self.backend.clear_region(ClearType::All)?;
                (Buffer::empty(area), false)
            }
        };
        let mut next = previous.clone();
        let painted = render(&mut next, kept);
        match painted {
            Painted::Rows(rows) if kept => {
                let rows = rows.intersection(area);
                let (before, after) = (rows_of(&previous, rows), rows_of(&next, rows));
                draw_updates(&mut self.backend, &before, &after)?;
            }
            _ => draw_updates(&mut self.backend, &previous, &next)?,
        }
        self.alternate = Some(next);
        self.alternate_drawn = true;
        self.backend.hide_cursor()?;
        self.backend.flush()
    }

    /// The terminal is back on its normal screen (which it kept as it was): the live area
    /// is drawn again in full.
    pub fn leave_alternate(&mut self) {
        self.alternate = None;
        self.previous = Buffer::empty(self.area);
        self.repaint = true;
    }

    /// The terminal changed size while the full-screen view is up: it stays up, and its
    /// next frame clears the screen and starts from a blank one (a buffer of no area
    /// matches no screen). Forgetting the view instead (`alternate = None`) made the next
    /// frame enter the alternate screen again — which tmux, already there, does not clear
    /// — and draw the new layout over the old one.
    pub fn resize_alternate(&mut self, size: Size) {
        self.size = size;
        self.alternate = Some(Buffer::empty(Rect::default()));
        self.alternate_drawn = false;
    }

    /// Put `lines` (one terminal row each, already wrapped to the width) into the history
    /// above the live area. Any number of rows: they go up a screenful at a time. The
    /// caller draws the live area next, which flushes.
    pub fn insert_before(&mut self, lines: &[Line<'_>]) -> Result<(), B::Error> {
        if lines.is_empty() {
            return Ok(());
        }
        let mut rows = lines;
        // Room below the live area: move it down and use the gap.
        let below = self.size.height.saturating_sub(self.area.bottom());
        let into_gap = clamp_u16(rows.len()).min(below);
        if into_gap > 0 {
            if self.area.height > 0 {
                self.backend
                    .scroll_region_down(self.area.top()..self.size.height, into_gap)?;
            } else {
                // Rows below the cursor may hold what ran before: blank them.
                self.clear_rows(self.area.top(), self.area.top().saturating_add(into_gap))?;
            }
            let (now, later) = rows.split_at(usize::from(into_gap));
            self.write_rows(self.area.top(), now)?;
            self.area.y = self.area.y.saturating_add(into_gap);
            self.previous.area = self.area;
            self.since_mark = self.since_mark.saturating_add(into_gap);
            rows = later;
        }
        // The live area touches the bottom: scroll the rows above it up, into the scrollback.
        while !rows.is_empty() {
            let room = self.area.top();
            if room == 0 {
                break;
            }
            // `room` is at least 1, so every step makes progress.
            let step = clamp_u16(rows.len()).min(room);
            if room == 1 {
                // A scroll region of one row is no region (DECSTBM wants top < bottom:
                // xterm and tmux ignore it, and the whole screen would scroll, live area
                // and all). Take the live area's first row into the region and draw the
                // live area again (its first row, moved up, is erased for the new one).
                self.backend
                    .scroll_region_up(0..2.min(self.size.height), step)?;
                self.clear_rows(0, 1)?;
                self.repaint = true;
            } else {
                self.backend.scroll_region_up(0..room, step)?;
            }
            let (now, later) = rows.split_at(usize::from(step));
            self.write_rows(room - step, now)?;
            self.since_mark = self.since_mark.saturating_add(step);
            rows = later;
        }
        self.since_mark = self.since_mark.min(self.area.top());
        // Not flushed: the live area is drawn next, and the frame goes out whole (a
        // terminal without synchronized output would otherwise show the moved, stale live
        // area under the new rows for a moment).
        self.move_cursor(Position::new(0, self.area.top()))
    }

    /// Take back up to `count` of the rows inserted last, newest first: those still on
    /// screen are erased and the live area moves up over them. Returns how many were taken
    /// back (rows already in the scrollback cannot be).
    pub fn retract(&mut self, count: usize) -> Result<usize, B::Error> {
        let taken = clamp_u16(count).min(self.since_mark).min(self.area.top());
        if taken == 0 {
            return Ok(0);
        }
        let bottom = self.area.bottom();
        self.area.y -= taken;
        self.since_mark -= taken;
        self.clear_rows(self.area.top(), bottom)?;
        self.previous = Buffer::empty(self.area);
        self.repaint = true;
        Ok(usize::from(taken))
    }

    /// Clear the live area and leave the cursor where it started, for a clean exit (or a
    /// suspend): the shell prompt follows the conversation.
    pub fn leave(&mut self) -> Result<(), B::Error> {
        self.clear_rows(self.area.top(), self.area.bottom())?;
        self.move_cursor(Position::new(0, self.area.top()))?;
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
        self.since_mark = 0;
        Ok(())
    }

    fn move_cursor(&mut self, position: Position) -> Result<(), B::Error> {
        self.backend.set_cursor_position(position)
    }

    fn set_height(&mut self, height: u16) -> Result<(), B::Error> {
        if height == self.area.height {
            return Ok(());
        }
        if height > self.area.height {
            let overflow = self
                .area
                .top()
                .saturating_add(height)
                .saturating_sub(self.size.height);
            if overflow > 0 {
                // Make room: everything above moves up, the top rows into the scrollback.
                self.backend
                    .scroll_region_up(0..self.size.height, overflow)?;
                self.area.y = self.area.y.saturating_sub(overflow);
                self.since_mark = self.since_mark.min(self.area.top());
            }
        } else {
            self.clear_rows(self.area.top().saturating_add(height), self.area.bottom())?;
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

    /// Write `rows` into blank screen rows from `top` down: each row's cells up to its last
    /// one that is not a plain blank, except the columns covered by a wide character — they
    /// belong to the character on their left, and writing a blank there would erase it. (A
    /// grapheme the terminal draws wider than Unicode says, such as an emoji ZWJ sequence
    /// on some terminals, then still ends its row whole.)
    fn write_rows(&mut self, top: u16, rows: &[Line<'_>]) -> Result<(), B::Error> {
        let width = self.size.width;
        for (y, line) in (top..self.size.height).zip(rows) {
            let mut buffer = Buffer::empty(Rect::new(0, y, width, 1));
            buffer.set_line(0, y, line, width);
            let end = buffer
                .content
                .iter()
                .rposition(|cell| !is_blank(cell))
                .map_or(0, |last| last + 1);
            let mut cells = Vec::new();
            let mut x = 0u16;
            while usize::from(x) < end {
                let cell = &buffer[(x, y)];
                cells.push((x, y, cell));
                x = x.saturating_add(cell.cell_width().max(1));
            }
            self.backend.draw(cells.into_iter())?;
        }
        Ok(())
    }
}

/// A cell that shows nothing: a space with no colour or emphasis.
fn is_blank(cell: &ratatui::buffer::Cell) -> bool {
    cell.symbol() == " "
        && cell.fg == ratatui::style::Color::Reset
        && cell.bg == ratatui::style::Color::Reset
        && cell.modifier.is_empty()
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
            for (y, line) in (area.top()..area.bottom()).zip(text.iter()) {
                buffer.set_string(0, y, line, ratatui::style::Style::default());
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

    #[test]
    fn more_rows_than_a_u16_counts_are_all_inserted() {
        // 65,536 rows once wrapped to 0 and the insert loop never ended.
        let mut s = screen(12, 4, 0);
        s.draw(1, paint(&["> a"])).unwrap();
        let lines: Vec<Line> = (0..65_540).map(|i| Line::from(format!("r{i}"))).collect();
        s.insert_before(&lines).unwrap();
        assert_eq!(
            rows_of(s.backend().buffer()),
            ["r65537", "r65538", "r65539", "> a"]
        );
        // (The test backend keeps the last 65,535 rows of scrollback.)
        let scrollback = rows_of(s.backend().scrollback());
        assert_eq!(scrollback.last().unwrap(), "r65536");
        assert_eq!(scrollback[scrollback.len() - 65_535], "r2");
    }

    #[test]
    fn rows_land_in_place_on_a_terminal_of_more_than_65_535_cells() {
        let mut s = screen(300, 250, 0);
        s.draw(1, paint(&["> a"])).unwrap();
        let lines: Vec<Line> = (0..240).map(|i| Line::from(format!("row {i}"))).collect();
        s.insert_before(&lines).unwrap();
        let rows = rows_of(s.backend().buffer());
        for (i, row) in rows.iter().take(240).enumerate() {
            assert_eq!(row, &format!("row {i}"));
        }
        assert_eq!(rows[240], "> a");
    }

    #[test]
    fn retract_takes_back_rows_still_on_screen() {
        let mut s = screen(10, 6, 0);
        s.draw(1, paint(&["> a"])).unwrap();
        s.insert_before(&[Line::from("kept")]).unwrap();
        s.insert_before(&[Line::from("partial 1"), Line::from("partial 2")])
            .unwrap();
        assert_eq!(s.retract(2).unwrap(), 2);
        s.draw(1, paint(&["> a"])).unwrap();
        assert_eq!(
            rows_of(s.backend().buffer()),
            ["kept", "> a", "", "", "", ""]
        );
        // Rows already in the scrollback are out of reach.
        let lines: Vec<Line> = (0..8).map(|i| Line::from(format!("p{i}"))).collect();
        s.insert_before(&lines).unwrap();
        // p0..p2 and "kept" went into the scrollback; p3..p7 are still on screen.
        assert_eq!(s.retract(8).unwrap(), 5);
        s.draw(1, paint(&["> a"])).unwrap();
        assert_eq!(rows_of(s.backend().buffer())[..2], ["> a", ""]);
        assert_eq!(rows_of(s.backend().scrollback()).last().unwrap(), "p2");
    }

    #[test]
    fn a_full_screen_frame_that_repaints_some_rows_writes_only_those() {
        let mut s = screen(10, 4, 0);
        s.enter_alternate();
        s.draw_alternate(|buffer, kept| {
            assert!(!kept, "the first frame starts blank");
            for y in 0..4 {
                buffer.set_string(0, y, format!("row {y}"), ratatui::style::Style::default());
            }
            Painted::All
        })
        .unwrap();
        assert_eq!(
            rows_of(s.backend().buffer()),
            ["row 0", "row 1", "row 2", "row 3"]
        );
        s.draw_alternate(|buffer, kept| {
            assert!(kept, "later frames start from the last one");
            assert_eq!(buffer[(0, 2)].symbol(), "r");
            buffer.set_string(0, 3, "footer", ratatui::style::Style::default());
            // A row said to be left alone is not compared again.
            buffer.set_string(0, 0, "stale", ratatui::style::Style::default());
            Painted::Rows(Rect::new(0, 3, 10, 1))
        })
        .unwrap();
        assert_eq!(
            rows_of(s.backend().buffer()),
            ["row 0", "row 1", "row 2", "footer"]
        );
        // After a resize the frame starts blank again.
        s.backend_mut().resize(12, 4);
        s.resize_alternate(Size::new(12, 4));
        // Still up: the next frame does not enter the alternate screen again.
        assert!(s.in_alternate());
        s.draw_alternate(|_, kept| {
            assert!(!kept);
            Painted::All
        })
        .unwrap();
    }
}
