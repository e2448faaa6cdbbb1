//! Vim's visual mode in the composer: `v` starts a selection at the cursor, the motions
//! (with counts) stretch it, d / x deletes it, c changes it, y yanks it — the character
//! under the cursor included, as in vim — and esc or `v` leaves it.

use super::super::{Action, Composer};
use super::motion::Motion;
use super::{Mode, Op};
use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};

impl Composer {
    pub(super) fn vim_visual_key(&mut self, key: KeyEvent) -> Action {
        let ctrl = key.modifiers.contains(KeyModifiers::CONTROL);
        match key.code {
            KeyCode::Esc | KeyCode::Char('v') => self.leave_visual(),
            KeyCode::Char(c @ '1'..='9') if !ctrl => {
                if let Some(vim) = self.vim.as_mut() {
                    let digit = c
                        .to_digit(10)
                        .map_or(0, |d| usize::try_from(d).unwrap_or(0));
                    vim.count = Some(vim.count.unwrap_or(0).saturating_mul(10) + digit);
                }
            }
            KeyCode::Char('d' | 'x') if !ctrl => self.visual_operator(Op::Delete),
            KeyCode::Char('c') if !ctrl => self.visual_operator(Op::Change),
            KeyCode::Char('y') if !ctrl => self.visual_operator(Op::Yank),
            KeyCode::Char('G') if !ctrl => {
                let line = self.vim.as_mut().and_then(|vim| vim.count.take());
                self.go_to_line(line);
            }
            code => {
                if let Some(motion) = Motion::of(code).filter(|_| !ctrl) {
                    let count = self.vim_count();
                    self.move_by(motion, count);
                }
            }
        }
        Action::Edited
    }

    fn leave_visual(&mut self) {
        self.textarea.cancel_selection();
        if let Some(vim) = self.vim.as_mut() {
            vim.mode = Mode::Normal;
            vim.reset_command();
        }
    }

    /// `op` over the selection, its last character included.
    fn visual_operator(&mut self, op: Op) {
        let Some(((r0, c0), (r1, c1))) = self.textarea.selection_range() else {
            return self.leave_visual();
        };
        self.leave_visual();
        let end = (r1, (c1 + 1).min(self.line_chars(r1)));
        if op != Op::Yank {
            self.begin_change();
        }
        self.span(op, (r0, c0), end);
        if op == Op::Yank {
            self.jump((r0, c0));
        }
        match op {
            Op::Change => {
                if let Some(vim) = self.vim.as_mut() {
                    vim.typed.clear();
                    vim.mode = Mode::Insert;
                }
            }
            Op::Delete => self.end_change(),
            Op::Yank => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::tests::{normal, vim_with};

    #[test]
    fn visual_selections_delete_change_and_yank() {
        let mut c = vim_with("hello big world");
        normal(&mut c, "0wved");
        assert_eq!(c.text(), "hello  world");
        assert_eq!(c.mode_label(), Some("NORMAL"));
        normal(&mut c, "0vllyP");
        assert_eq!(c.text(), "helhello  world");
        let mut c = vim_with("one two");
        normal(&mut c, "0vecsix\x1b");
        assert_eq!(c.text(), "six two");
        normal(&mut c, "u");
        assert_eq!(c.text(), "one two");
        let mut c = vim_with("a\nb\nc");
        normal(&mut c, "ggvjd");
        assert_eq!(c.text(), "\nc");
        normal(&mut c, "v\x1bx");
        assert_eq!(c.mode_label(), Some("NORMAL"));
    }
}
