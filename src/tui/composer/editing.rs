//! Editing keys with the habits of readline and of every text field: ctrl+a / ctrl+e to the
//! line's start / end, ctrl+u / ctrl+k delete to the start / end, ctrl+w and alt+backspace
//! a word back, ctrl+y yanks back what they deleted, ctrl+_ undoes (ctrl+z suspends, as in
//! a shell) and ctrl+shift+z redoes; ← → backspace and delete move over whole grapheme
//! clusters, so an emoji, a flag or a letter with its accents is never split.

use super::Composer;
use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
use ratatui_textarea::CursorMove;
use unicode_segmentation::UnicodeSegmentation;

impl Composer {
    /// Handle an editing key; `false` when the key is not one of these.
    pub(super) fn edit_key(&mut self, key: KeyEvent) -> bool {
        let ctrl = key.modifiers.contains(KeyModifiers::CONTROL);
        let alt = key.modifiers.contains(KeyModifiers::ALT);
        let shift = key.modifiers.contains(KeyModifiers::SHIFT);
        let area = &mut self.textarea;
        match key.code {
            KeyCode::Char('a') if ctrl => area.move_cursor(CursorMove::Head),
            KeyCode::Char('e') if ctrl => area.move_cursor(CursorMove::End),
            KeyCode::Char('u') if ctrl => {
                area.delete_line_by_head();
            }
            KeyCode::Char('k') if ctrl => {
                area.delete_line_by_end();
            }
            KeyCode::Char('w') if ctrl => {
                area.delete_word();
            }
            KeyCode::Backspace if alt || ctrl => {
                area.delete_word();
            }
            KeyCode::Char('y') if ctrl => {
                area.paste();
            }
            // ctrl+_ arrives as ctrl+7 (0x1f) from most terminals, or as ctrl+/ or ctrl+_.
            KeyCode::Char('_' | '7' | '/') if ctrl => {
                area.undo();
            }
            KeyCode::Char('z' | 'Z') if ctrl && shift => {
                area.redo();
            }
            KeyCode::Char('b') if ctrl => self.grapheme_left(),
            KeyCode::Char('f') if ctrl => self.grapheme_right(),
            KeyCode::Left if !ctrl && !alt => self.grapheme_left(),
            KeyCode::Right if !ctrl && !alt => self.grapheme_right(),
            KeyCode::Backspace => self.delete_grapheme_back(),
            KeyCode::Delete if !ctrl && !alt => self.delete_grapheme_forward(),
            KeyCode::Char('d') if ctrl => self.delete_grapheme_forward(),
            _ => return false,
        }
        true
    }

    /// The cursor's line and its column in characters (the textarea's unit).
    pub(super) fn line_and_column(&self) -> (&str, usize) {
        let ratatui_textarea::DataCursor(row, col) = self.textarea.cursor();
        let line = self.textarea.lines().get(row).map_or("", String::as_str);
        (line, col)
    }

    /// Character columns where grapheme clusters start on `line`, and its length.
    fn boundaries(line: &str) -> Vec<usize> {
        let mut columns = vec![0];
        let mut chars = 0;
        for grapheme in line.graphemes(true) {
            chars += grapheme.chars().count();
            columns.push(chars);
        }
        columns
    }

    /// How many characters the cluster before the cursor has (0 at the line's start).
    fn chars_before(&self) -> usize {
        let (line, col) = self.line_and_column();
        let bounds = Self::boundaries(line);
        bounds
            .iter()
            .rev()
            .find(|b| **b < col)
            .map_or(0, |b| col - b)
    }

    /// How many characters the cluster after the cursor has (0 at the line's end).
    fn chars_after(&self) -> usize {
        let (line, col) = self.line_and_column();
        let bounds = Self::boundaries(line);
        bounds.iter().find(|b| **b > col).map_or(0, |b| b - col)
    }

    fn grapheme_left(&mut self) {
        let n = self.chars_before().max(1);
        for _ in 0..n {
            self.textarea.move_cursor(CursorMove::Back);
        }
    }

    fn grapheme_right(&mut self) {
        let n = self.chars_after().max(1);
        for _ in 0..n {
            self.textarea.move_cursor(CursorMove::Forward);
        }
    }

    fn delete_grapheme_back(&mut self) {
        match self.chars_before() {
            // At the line's start: join it to the line above.
            0 => {
                self.textarea.delete_char();
            }
            n => {
                for _ in 0..n {
                    self.textarea.move_cursor(CursorMove::Back);
                }
                self.textarea.delete_str(n);
            }
        }
    }

    fn delete_grapheme_forward(&mut self) {
        match self.chars_after() {
            0 => {
                self.textarea.delete_next_char();
            }
            n => {
                self.textarea.delete_str(n);
            }
        }
    }
}
