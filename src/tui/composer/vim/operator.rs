//! Vim's operators in the composer: d c y with a motion, doubled for whole lines (dd cc yy),
//! x, p P from the one unnamed register, and u / ctrl+r over snapshots of the text taken
//! before each change (so one `u` takes back a whole change, a whole insert included).

use super::super::Composer;
use super::motion::Motion;
use super::{Mode, Pending};
use crossterm::event::{KeyCode, KeyEvent};
use ratatui_textarea::CursorMove;

/// Changes `u` can take back, at most.
const UNDO_DEPTH: usize = 200;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(in crate::tui::composer) enum Op {
    Delete,
    Change,
    Yank,
}

impl Op {
    pub(super) fn of(c: char) -> Op {
        match c {
            'c' => Op::Change,
            'y' => Op::Yank,
            _ => Op::Delete,
        }
    }

    fn key(self) -> char {
        match self {
            Op::Delete => 'd',
            Op::Change => 'c',
            Op::Yank => 'y',
        }
    }
}

/// What was last deleted or yanked, and whether it was whole lines.
#[derive(Default)]
pub(super) struct Register {
    text: String,
    linewise: bool,
}

/// The text and the cursor before a change.
pub(super) struct Snapshot {
    lines: Vec<String>,
    cursor: (usize, usize),
}

impl Composer {
    /// The key after an operator: its motion, the operator again (whole lines), or `g`.
    pub(super) fn after_operator(&mut self, key: KeyEvent, op: Op) {
        let count = self.vim_count();
        let (row, _) = self.position();
        match key.code {
            KeyCode::Char(c) if c == op.key() => {
                let last = self.textarea.lines().len().saturating_sub(1);
                self.whole_lines(op, row, (row + count - 1).min(last));
            }
            KeyCode::Char('g') => {
                if let Some(vim) = self.vim.as_mut() {
                    // The count waits for the second g.
                    vim.count = (count > 1).then_some(count);
                    vim.pending = Pending::G(Some(op));
                }
                return;
            }
            KeyCode::Char('G') => {
                let last = self.textarea.lines().len().saturating_sub(1);
                self.whole_lines(op, row, last);
            }
            code => match Motion::of(code) {
                Some(motion) => self.apply_operator(op, motion, count),
                None => {
                    self.vim_done(false);
                    return;
                }
            },
        }
        self.operator_done(op);
    }

    /// The key after `g` (perhaps after an operator): `gg` goes to the first line (or line N).
    pub(super) fn after_g(&mut self, key: KeyEvent, op: Option<Op>) {
        if key.code != KeyCode::Char('g') {
            self.vim_done(false);
            return;
        }
        let line = self.vim.as_mut().and_then(|vim| vim.count.take());
        let Some(op) = op else {
            self.go_to_line(Some(line.unwrap_or(1)));
            self.vim_done(false);
            return;
        };
        let (row, _) = self.position();
        let last = self.textarea.lines().len().saturating_sub(1);
        let target = line.unwrap_or(1).saturating_sub(1).min(last);
        self.whole_lines(op, row.min(target), row.max(target));
        self.operator_done(op);
    }

    /// After an operator ran: `c` goes on in insert mode, `d` is a change for `.`.
    fn operator_done(&mut self, op: Op) {
        match op {
            Op::Change => self.start_insert_recording(),
            Op::Delete => {
                self.end_change();
                self.vim_done(true);
            }
            Op::Yank => self.vim_done(false),
        }
    }

    /// `op` over what `motion` spans (`count` times) from the cursor.
    pub(super) fn apply_operator(&mut self, op: Op, motion: Motion, count: usize) {
        if op != Op::Yank {
            self.begin_change();
        }
        if motion.linewise() {
            let (row, col) = self.position();
            self.move_by(motion, count);
            let (other, _) = self.position();
            self.jump((row, col));
            self.whole_lines_unrecorded(op, row.min(other), row.max(other));
            return;
        }
        let from = self.position();
        let to = self.charwise_target(op, motion, count);
        self.span(op, from.min(to), from.max(to));
    }

    /// `op` over the characters from `from` up to (not including) `to`.
    pub(super) fn span(&mut self, op: Op, from: (usize, usize), to: (usize, usize)) {
        if from == to {
            return;
        }
        self.textarea.cancel_selection();
        self.jump(from);
        self.textarea.start_selection();
        self.jump(to);
        if op == Op::Yank {
            self.textarea.copy();
            self.textarea.cancel_selection();
            self.jump(from);
        } else {
            self.textarea.cut();
        }
        if let Some(vim) = self.vim.as_mut() {
            vim.register = Register {
                text: self.textarea.yank_text(),
                linewise: false,
            };
        }
    }

    /// `op` over rows `first..=last` as whole lines (dd, cc, yy, dj, dG…).
    fn whole_lines(&mut self, op: Op, first: usize, last: usize) {
        if op != Op::Yank {
            self.begin_change();
        }
        self.whole_lines_unrecorded(op, first, last);
    }

    fn whole_lines_unrecorded(&mut self, op: Op, first: usize, last: usize) {
        let lines = self.textarea.lines();
        let Some(taken) = lines.get(first..=last) else {
            return;
        };
        let text = taken.join("\n");
        let count = lines.len();
        if let Some(vim) = self.vim.as_mut() {
            vim.register = Register {
                text,
                linewise: true,
            };
        }
        match op {
            Op::Yank => {
                let (row, _) = self.position();
                if first < row {
                    self.jump((first, 0));
                }
            }
            // The lines' text goes; one empty line stays to type in.
            Op::Change => {
                self.cut_between((first, 0), (last, self.line_chars(last)));
            }
            Op::Delete => {
                if last + 1 < count {
                    self.cut_between((first, 0), (last + 1, 0));
                } else if first > 0 {
                    let end = self.line_chars(last);
                    self.cut_between((first - 1, self.line_chars(first - 1)), (last, end));
                } else {
                    self.cut_between((0, 0), (last, self.line_chars(last)));
                }
                let rows = self.textarea.lines().len();
                self.jump((first.min(rows.saturating_sub(1)), 0));
            }
        }
    }

    /// Delete from `from` up to `to` as one edit (the register is set by the caller).
    fn cut_between(&mut self, from: (usize, usize), to: (usize, usize)) {
        if from == to {
            return;
        }
        self.textarea.cancel_selection();
        self.jump(from);
        self.textarea.start_selection();
        self.jump(to);
        self.textarea.cut();
    }

    /// `p` (after the cursor, or below its line) and `P` (before, or above), `count` times.
    pub(super) fn put(&mut self, after: bool, count: usize) {
        let Some(vim) = self.vim.as_ref() else {
            return;
        };
        if vim.register.text.is_empty() && !vim.register.linewise {
            return;
        }
        let linewise = vim.register.linewise;
        let text = vec![vim.register.text.as_str(); count].join(if linewise { "\n" } else { "" });
        let (row, _) = self.position();
        if linewise {
            if after {
                self.textarea.move_cursor(CursorMove::End);
                self.textarea.insert_str(format!("\n{text}"));
                self.jump((row + 1, 0));
            } else {
                self.textarea.move_cursor(CursorMove::Head);
                self.textarea.insert_str(format!("{text}\n"));
                self.jump((row, 0));
            }
            return;
        }
        if after && self.line_chars(row) > 0 {
            self.textarea.move_cursor(CursorMove::Forward);
        }
        self.textarea.insert_str(&text);
        // On the last character put.
        self.textarea.move_cursor(CursorMove::Back);
    }

    /// Note the text before a change, for `u`.
    pub(super) fn begin_change(&mut self) {
        let snapshot = self.snapshot();
        if let Some(vim) = self.vim.as_mut() {
            if vim.undo.len() >= UNDO_DEPTH {
                vim.undo.remove(0);
            }
            vim.undo.push(snapshot);
        }
    }

    /// A change ended: one that changed nothing is forgotten; one that did drops the redos.
    pub(super) fn end_change(&mut self) {
        let lines = self.textarea.lines();
        if let Some(vim) = self.vim.as_mut() {
            match vim.undo.last() {
                Some(top) if top.lines == lines => {
                    vim.undo.pop();
                }
                _ => vim.redo.clear(),
            }
        }
    }

    pub(super) fn vim_undo(&mut self) {
        let now = self.snapshot();
        let Some(vim) = self.vim.as_mut() else {
            return;
        };
        if let Some(before) = vim.undo.pop() {
            vim.redo.push(now);
            self.restore(before);
        }
    }

    pub(super) fn vim_redo(&mut self) {
        let now = self.snapshot();
        let Some(vim) = self.vim.as_mut() else {
            return;
        };
        if let Some(after) = vim.redo.pop() {
            vim.undo.push(now);
            self.restore(after);
        }
    }

    fn snapshot(&self) -> Snapshot {
        Snapshot {
            lines: self.textarea.lines().to_vec(),
            cursor: self.position(),
        }
    }

    fn restore(&mut self, snapshot: Snapshot) {
        self.replace_lines(snapshot.lines);
        self.jump(snapshot.cursor);
        if let Some(vim) = self.vim.as_mut() {
            vim.mode = Mode::Normal;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::tests::{normal, vim_with};

    fn text(c: &super::Composer) -> String {
        c.text()
    }

    #[test]
    fn d_c_y_with_motions() {
        let mut c = vim_with("hello world foo bar");
        normal(&mut c, "0wdw");
        assert_eq!(text(&c), "hello foo bar");
        normal(&mut c, "d2w");
        assert_eq!(text(&c), "hello ");
        let mut c = vim_with("hello world foo bar");
        normal(&mut c, "0de");
        assert_eq!(text(&c), " world foo bar");
        normal(&mut c, "wd$");
        assert_eq!(text(&c), " ");
        let mut c = vim_with("hello world foo bar");
        normal(&mut c, "0cwbye\x1b");
        assert_eq!(text(&c), "bye world foo bar");
        assert_eq!(c.mode_label(), Some("NORMAL"));
        normal(&mut c, "wywP");
        assert_eq!(text(&c), "bye world world foo bar");
        normal(&mut c, "0d0");
        assert_eq!(
            text(&c),
            "bye world world foo bar",
            "nothing before column 0"
        );
        normal(&mut c, "$bd0");
        assert_eq!(text(&c), "bar");
    }

    #[test]
    fn dw_on_the_last_word_stays_on_its_line() {
        let mut c = vim_with("one two\nthree");
        normal(&mut c, "gg$bdw");
        assert_eq!(text(&c), "one \nthree");
    }

    #[test]
    fn x_dd_yy_p_and_counts() {
        let mut c = vim_with("abcdef");
        normal(&mut c, "0x");
        assert_eq!(text(&c), "bcdef");
        normal(&mut c, "3x");
        assert_eq!(text(&c), "ef");
        normal(&mut c, "p");
        assert_eq!(text(&c), "ebcdf");
        let mut c = vim_with("one\ntwo\nthree\nfour");
        normal(&mut c, "ggyyp");
        assert_eq!(text(&c), "one\none\ntwo\nthree\nfour");
        normal(&mut c, "2dd");
        assert_eq!(text(&c), "one\nthree\nfour");
        assert_eq!(c.position(), (1, 0));
        normal(&mut c, "P");
        assert_eq!(text(&c), "one\none\ntwo\nthree\nfour");
        normal(&mut c, "Gdd");
        assert_eq!(text(&c), "one\none\ntwo\nthree");
        assert_eq!(c.position(), (3, 0));
        normal(&mut c, "dgg");
        assert_eq!(text(&c), "");
        let mut c = vim_with("a\nb\nc");
        normal(&mut c, "ggdj");
        assert_eq!(text(&c), "c");
        let mut c = vim_with("a\nb\nc");
        normal(&mut c, "ggjccnew\x1b");
        assert_eq!(text(&c), "a\nnew\nc");
    }

    #[test]
    fn undo_takes_back_a_whole_change_and_redo_brings_it() {
        let mut c = vim_with("hello");
        normal(&mut c, "A world\x1b");
        assert_eq!(text(&c), "hello world");
        normal(&mut c, "0x");
        assert_eq!(text(&c), "ello world");
        normal(&mut c, "u");
        assert_eq!(text(&c), "hello world");
        normal(&mut c, "u");
        assert_eq!(text(&c), "hello", "the whole insert at once");
        normal(&mut c, "\x12");
        assert_eq!(text(&c), "hello world");
        normal(&mut c, "2\x12");
        assert_eq!(text(&c), "ello world");
        normal(&mut c, "u");
        normal(&mut c, "x");
        normal(&mut c, "\x12");
        assert_eq!(text(&c), "ello world", "a new change drops the redos");
    }

    #[test]
    fn dot_repeats_the_last_change() {
        let mut c = vim_with("a b c d e f");
        normal(&mut c, "0dw");
        assert_eq!(text(&c), "b c d e f");
        normal(&mut c, ".");
        assert_eq!(text(&c), "c d e f");
        normal(&mut c, "2.");
        assert_eq!(text(&c), "e f");
        let mut c = vim_with("x");
        normal(&mut c, "A!\x1b..");
        assert_eq!(text(&c), "x!!!");
        let mut c = vim_with("one\ntwo\nthree");
        normal(&mut c, "ggdd.");
        assert_eq!(text(&c), "three");
        normal(&mut c, "u");
        assert_eq!(text(&c), "two\nthree");
    }
}
