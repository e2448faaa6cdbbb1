//! Vim's motions in the composer: h j k l (and the arrows), w b e, 0 $, gg G, with counts;
//! where a motion takes the cursor, and what it spans for an operator (`charwise_target`).
//! k on the first row and j on the last recall earlier prompts, as ↑ ↓ do.

use super::super::Composer;
use super::Op;
use crossterm::event::KeyCode;
use ratatui_textarea::CursorMove;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Motion {
    Left,
    Right,
    Up,
    Down,
    WordForward,
    WordBack,
    WordEnd,
    LineStart,
    LineEnd,
}

impl Motion {
    pub(super) fn of(code: KeyCode) -> Option<Motion> {
        Some(match code {
            KeyCode::Char('h') | KeyCode::Left | KeyCode::Backspace => Motion::Left,
            KeyCode::Char('l' | ' ') | KeyCode::Right => Motion::Right,
            KeyCode::Char('k') | KeyCode::Up => Motion::Up,
            KeyCode::Char('j') | KeyCode::Down => Motion::Down,
            KeyCode::Char('w') => Motion::WordForward,
            KeyCode::Char('b') => Motion::WordBack,
            KeyCode::Char('e') => Motion::WordEnd,
            KeyCode::Char('0') | KeyCode::Home => Motion::LineStart,
            KeyCode::Char('$') | KeyCode::End => Motion::LineEnd,
            _ => return None,
        })
    }

    /// Whether an operator with this motion takes whole lines.
    pub(super) fn linewise(self) -> bool {
        matches!(self, Motion::Up | Motion::Down)
    }
}

impl Composer {
    /// The cursor as (row, column in characters).
    pub(super) fn position(&self) -> (usize, usize) {
        let ratatui_textarea::DataCursor(row, col) = self.textarea.cursor();
        (row, col)
    }

    /// How many characters line `row` has.
    pub(super) fn line_chars(&self, row: usize) -> usize {
        self.textarea
            .lines()
            .get(row)
            .map_or(0, |line| line.chars().count())
    }

    /// Put the cursor at (`row`, `col`) (a selection being made follows it).
    pub(super) fn jump(&mut self, (row, col): (usize, usize)) {
        match (u16::try_from(row), u16::try_from(col)) {
            (Ok(row), Ok(col)) => self.textarea.move_cursor(CursorMove::Jump(row, col)),
            // Beyond what `Jump` takes: step there.
            _ => {
                self.textarea.move_cursor(CursorMove::Top);
                for _ in 0..row {
                    self.textarea.move_cursor(CursorMove::Down);
                }
                self.textarea.move_cursor(CursorMove::Head);
                for _ in 0..col.min(self.line_chars(row)) {
                    self.textarea.move_cursor(CursorMove::Forward);
                }
            }
        }
    }

    /// A motion in normal mode; k on the first row and j on the last (without a count)
    /// recall earlier prompts instead.
    pub(super) fn vertical_or_move(&mut self, motion: Motion, count: Option<usize>) {
        let (row, _) = self.position();
        let last = self.textarea.lines().len().saturating_sub(1);
        if count.is_none() {
            if motion == Motion::Up && row == 0 && self.recall(-1) {
                return;
            }
            if motion == Motion::Down && row == last && self.recall(1) {
                return;
            }
        }
        self.move_by(motion, count.unwrap_or(1));
    }

    /// Move the cursor `count` times by `motion`; h and l stay on the line.
    pub(super) fn move_by(&mut self, motion: Motion, count: usize) {
        let (row, col) = self.position();
        match motion {
            Motion::Left => self.jump((row, col.saturating_sub(count))),
            Motion::Right => {
                let last = self.line_chars(row).saturating_sub(1);
                self.jump((row, col.saturating_add(count).min(last.max(col))));
            }
            Motion::LineStart => self.textarea.move_cursor(CursorMove::Head),
            Motion::LineEnd => {
                for _ in 1..count {
                    self.textarea.move_cursor(CursorMove::Down);
                }
                self.textarea.move_cursor(CursorMove::End);
            }
            Motion::Up => self.repeat_move(CursorMove::Up, count),
            Motion::Down => self.repeat_move(CursorMove::Down, count),
            Motion::WordForward => self.repeat_move(CursorMove::WordForward, count),
            Motion::WordBack => self.repeat_move(CursorMove::WordBack, count),
            Motion::WordEnd => self.repeat_move(CursorMove::WordEnd, count),
        }
    }

    /// Move `count` times, stopping early where the cursor no longer moves.
    fn repeat_move(&mut self, step: CursorMove, count: usize) {
        for _ in 0..count {
            let before = self.position();
            self.textarea.move_cursor(step);
            if self.position() == before {
                break;
            }
        }
    }

    /// `G` (no count: the last line) and `gg` / `NG` (line N, from 1): to its start.
    pub(super) fn go_to_line(&mut self, line: Option<usize>) {
        let last = self.textarea.lines().len().saturating_sub(1);
        let row = line.map_or(last, |n| n.saturating_sub(1).min(last));
        self.jump((row, 0));
    }

    /// Where an operator's charwise `motion` ends (exclusive) from the cursor; the cursor
    /// is left where it was. `dw` stops at the end of the line its last word is on, `e` and
    /// `cw` include the word's last character (vim's `cw` is `ce`).
    pub(super) fn charwise_target(
        &mut self,
        op: Op,
        motion: Motion,
        count: usize,
    ) -> (usize, usize) {
        let start = self.position();
        let (row, col) = start;
        let on_blank = self
            .line_and_column()
            .0
            .chars()
            .nth(col)
            .is_none_or(char::is_whitespace);
        let target = match motion {
            Motion::Right => (row, col.saturating_add(count).min(self.line_chars(row))),
            Motion::WordForward if op == Op::Change && !on_blank => self.inclusive_word_end(count),
            Motion::WordEnd => self.inclusive_word_end(count),
            Motion::WordForward => {
                let mut previous = start;
                for _ in 0..count {
                    previous = self.position();
                    self.textarea.move_cursor(CursorMove::WordForward);
                    if self.position() == previous {
                        break;
                    }
                }
                let now = self.position();
                if now == previous || now.0 != previous.0 {
                    (previous.0, self.line_chars(previous.0))
                } else {
                    now
                }
            }
            Motion::LineEnd => {
                self.move_by(motion, count);
                let (row, _) = self.position();
                (row, self.line_chars(row))
            }
            _ => {
                self.move_by(motion, count);
                self.position()
            }
        };
        self.jump(start);
        target
    }

    /// After `count` `e`s, the column after the word's last character.
    fn inclusive_word_end(&mut self, count: usize) -> (usize, usize) {
        self.repeat_move(CursorMove::WordEnd, count);
        let (row, col) = self.position();
        (row, (col + 1).min(self.line_chars(row)))
    }
}

#[cfg(test)]
mod tests {
    use super::super::tests::{normal, vim_with};

    #[test]
    fn motions_move_with_counts() {
        let mut c = vim_with("one two three four");
        normal(&mut c, "0");
        assert_eq!(c.position(), (0, 0));
        normal(&mut c, "w");
        assert_eq!(c.position(), (0, 4));
        normal(&mut c, "2w");
        assert_eq!(c.position(), (0, 14));
        normal(&mut c, "b");
        assert_eq!(c.position(), (0, 8));
        normal(&mut c, "e");
        assert_eq!(c.position(), (0, 12));
        normal(&mut c, "$");
        assert_eq!(c.position(), (0, 17), "on the last character");
        normal(&mut c, "3h");
        assert_eq!(c.position(), (0, 14));
        normal(&mut c, "9l");
        assert_eq!(c.position(), (0, 17), "l stays on the line");
        normal(&mut c, "0");
        assert_eq!(c.position(), (0, 0));
    }

    #[test]
    fn lines_and_gg_and_g() {
        let mut c = vim_with("a\nbb\nccc\ndddd");
        normal(&mut c, "gg");
        assert_eq!(c.position(), (0, 0));
        normal(&mut c, "2j");
        assert_eq!(c.position(), (2, 0));
        normal(&mut c, "G");
        assert_eq!(c.position(), (3, 0));
        normal(&mut c, "k");
        assert_eq!(c.position(), (2, 0));
        normal(&mut c, "2G");
        assert_eq!(c.position(), (1, 0));
        normal(&mut c, "3gg");
        assert_eq!(c.position(), (2, 0));
    }
}
