//! Long pastes as chips: a paste of `PASTE_LINES` lines or more, or of `PASTE_CHARS`
//! characters or more, shows in the composer as one element — `[pasted 122 lines]`, or
//! `[pasted 3,400 chars]` for a long line; `#2` after a second one of the same size — that
//! edits as the image chips do (`chips`). The composer keeps each label's text for the
//! session: `Composer::text` (what is sent, remembered in the history, given back) has the
//! full text, and whatever puts a text back into the composer (↑, ctrl+r, rewind, a refused
//! send) shows the pastes it holds as their chips again. tab with the cursor at a chip puts
//! its text in place (the paste is then ordinary text). The transcript's echo of the user's
//! message shows the chips too (`collapse_pastes`).

use super::Composer;
use ratatui_textarea::CursorMove;

/// A paste of this many lines or more is a chip.
pub const PASTE_LINES: usize = 10;
/// A paste of this many characters or more is a chip.
pub const PASTE_CHARS: usize = 1_000;
/// How every paste chip's label starts.
pub(super) const LABEL_START: &str = "[pasted ";

/// One long paste: its chip's label and its text.
pub(super) struct Paste {
    pub(super) label: String,
    pub(super) text: String,
}

impl Composer {
    /// A paste: newlines as they are, a long one as a chip.
    pub fn insert(&mut self, text: &str) {
        let normalized = text.replace("\r\n", "\n").replace('\r', "\n");
        let lines = normalized.split('\n').count();
        let chars = normalized.chars().count();
        if lines < PASTE_LINES && chars < PASTE_CHARS {
            match &mut self.search {
                Some(search) => search.arrived.push_str(&normalized),
                None => {
                    self.textarea.insert_str(normalized);
                }
            }
            return;
        }
        let label = self.paste_label(normalized, lines, chars);
        match &mut self.search {
            // Searching the history (ctrl+r): the chip joins whatever text it ends with.
            Some(search) => search.arrived.push_str(&label),
            None => {
                self.textarea.insert_str(label);
            }
        }
    }

    /// The label for a long paste of `text`: the same text pasted again has the same one.
    fn paste_label(&mut self, text: String, lines: usize, chars: usize) -> String {
        if let Some(known) = self.pastes.iter().find(|p| p.text == text) {
            return known.label.clone();
        }
        let size = if lines >= PASTE_LINES {
            format!("{} lines", thousands(lines))
        } else {
            format!("{} chars", thousands(chars))
        };
        let mut n = 1;
        let label = loop {
            let label = if n == 1 {
                format!("{LABEL_START}{size}]")
            } else {
                format!("{LABEL_START}{size} #{n}]")
            };
            if !self.pastes.iter().any(|p| p.label == label) {
                break label;
            }
            n += 1;
        };
        self.pastes.push(Paste {
            label: label.clone(),
            text,
        });
        label
    }

    /// `text` with each paste chip's label replaced by the paste (what is sent).
    pub(super) fn expand_pastes(&self, text: &str) -> String {
        if self.pastes.is_empty() || !text.contains(LABEL_START) {
            return text.to_string();
        }
        let mut out = String::with_capacity(text.len());
        let mut rest = text;
        while let Some(at) = rest.find(LABEL_START) {
            out.push_str(&rest[..at]);
            let tail = &rest[at..];
            match self.pastes.iter().find(|p| tail.starts_with(&p.label)) {
                Some(paste) => {
                    out.push_str(&paste.text);
                    rest = &tail[paste.label.len()..];
                }
                None => {
                    out.push_str(LABEL_START);
                    rest = &tail[LABEL_START.len()..];
                }
            }
        }
        out.push_str(rest);
        out
    }

    /// `text` with each paste this session made shown as its chip's label (the longest
    /// first): for the composer and the transcript's echo of a sent message.
    pub fn collapse_pastes(&self, text: &str) -> String {
        let mut out = text.to_string();
        if self.pastes.is_empty() {
            return out;
        }
        let mut pastes: Vec<&Paste> = self.pastes.iter().collect();
        pastes.sort_by_key(|p| std::cmp::Reverse(p.text.len()));
        for paste in pastes {
            if out.contains(&paste.text) {
                out = out.replace(&paste.text, &paste.label);
            }
        }
        out
    }

    /// tab: the paste chip that ends (or else starts) at the cursor is replaced by its text;
    /// `false` when the cursor is at none.
    pub(super) fn expand_paste_at_cursor(&mut self) -> bool {
        let (line, col) = self.line_and_column();
        let spans = self.chip_spans(line);
        let chars: Vec<char> = line.chars().collect();
        let at = |(start, end): &(usize, usize)| {
            let label: String = chars.get(*start..*end).unwrap_or_default().iter().collect();
            self.pastes
                .iter()
                .position(|p| p.label == label)
                .map(|i| (*start, *end, i))
        };
        let found = (spans.iter().filter(|s| s.1 == col).find_map(at))
            .or_else(|| spans.iter().filter(|s| s.0 == col).find_map(at));
        let Some((start, end, index)) = found else {
            return false;
        };
        let paste = self.pastes.remove(index);
        self.move_to_column(start);
        self.textarea.delete_str(end - start);
        self.textarea.insert_str(&paste.text);
        // The cursor stays where the chip began: the text reads on from there.
        for _ in 0..paste.text.split('\n').count().saturating_sub(1) {
            self.textarea.move_cursor(CursorMove::Up);
        }
        self.textarea.move_cursor(CursorMove::Head);
        self.move_to_column(start);
        true
    }
}

/// `n` with a comma between thousands: 3,400.
pub fn thousands(n: usize) -> String {
    let digits = n.to_string();
    let mut out = String::with_capacity(digits.len() + digits.len() / 3);
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::super::Action;
    use super::*;
    use crate::tui::theme::Theme;
    use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};

    fn key(c: &mut Composer, code: KeyCode) -> Action {
        c.handle_key(KeyEvent::new(code, KeyModifiers::NONE))
    }

    fn numbered(n: usize) -> String {
        (1..=n)
            .map(|i| format!("pasted line {i}"))
            .collect::<Vec<_>>()
            .join("\n")
    }

    #[test]
    fn a_long_paste_is_one_chip_and_is_sent_whole() {
        let mut c = Composer::new(&Theme::plain());
        c.insert("see ");
        c.insert(&numbered(122).replace('\n', "\r\n"));
        c.insert(" why");
        assert_eq!(c.textarea.lines(), ["see [pasted 122 lines] why"]);
        assert_eq!(c.height(80), 1);
        let full = format!("see {} why", numbered(122));
        assert_eq!(c.text(), full);
        assert_eq!(key(&mut c, KeyCode::Enter), Action::Submit(full.clone()));
        // The echo shows the chip; ↑ gives it back as the chip, and it is sent whole again.
        assert_eq!(c.collapse_pastes(&full), "see [pasted 122 lines] why");
        key(&mut c, KeyCode::Up);
        assert_eq!(c.textarea.lines(), ["see [pasted 122 lines] why"]);
        assert_eq!(c.text(), full);
    }

    #[test]
    fn short_pastes_stay_text_and_long_lines_count_chars() {
        let mut c = Composer::new(&Theme::plain());
        c.insert(&numbered(PASTE_LINES - 1));
        assert_eq!(c.textarea.lines().len(), PASTE_LINES - 1);
        c.clear();
        c.insert(&"x".repeat(3_400));
        assert_eq!(c.textarea.lines(), ["[pasted 3,400 chars]"]);
        c.insert(&"y".repeat(3_400));
        c.insert(&"x".repeat(3_400));
        assert_eq!(
            c.textarea.lines(),
            ["[pasted 3,400 chars][pasted 3,400 chars #2][pasted 3,400 chars]"]
        );
        assert_eq!(
            c.text(),
            format!(
                "{}{}{}",
                "x".repeat(3_400),
                "y".repeat(3_400),
                "x".repeat(3_400)
            )
        );
        assert_eq!(thousands(1_234_567), "1,234,567");
        assert_eq!(thousands(999), "999");
    }

    #[test]
    fn backspace_takes_the_chip_whole_and_tab_expands_it() {
        let mut c = Composer::new(&Theme::plain());
        c.insert("a ");
        c.insert(&numbered(12));
        key(&mut c, KeyCode::Backspace);
        assert_eq!(c.text(), "a ");
        c.insert(&numbered(12));
        c.insert(" b");
        key(&mut c, KeyCode::Left);
        key(&mut c, KeyCode::Left);
        assert_eq!(c.line_and_column().1, 2 + "[pasted 12 lines]".len());
        key(&mut c, KeyCode::Tab);
        assert_eq!(c.textarea.lines().len(), 12);
        assert_eq!(c.text(), format!("a {} b", numbered(12)));
        assert_eq!(c.textarea.cursor(), ratatui_textarea::DataCursor(0, 2));
        // Expanded, it is text: nothing folds it back.
        c.set_text(&c.text());
        assert_eq!(c.textarea.lines().len(), 12);
        // tab elsewhere is not an expansion.
        c.clear();
        c.insert("plain");
        key(&mut c, KeyCode::Tab);
        assert!(c.text().starts_with("plain"));
    }

    #[test]
    fn a_paste_while_searching_the_history_is_kept() {
        let mut c = Composer::new(&Theme::plain());
        c.remember("earlier");
        c.insert("draft ");
        c.handle_key(KeyEvent::new(KeyCode::Char('r'), KeyModifiers::CONTROL));
        c.insert(&numbered(20));
        key(&mut c, KeyCode::Esc);
        assert_eq!(c.textarea.lines(), ["draft [pasted 20 lines]"]);
        assert_eq!(c.text(), format!("draft {}", numbered(20)));
    }

    #[test]
    fn a_typed_label_that_names_no_paste_is_text() {
        let mut c = Composer::new(&Theme::plain());
        c.insert(&numbered(10));
        c.insert(" [pasted 99 lines] [pasted ");
        assert_eq!(
            c.text(),
            format!("{} [pasted 99 lines] [pasted ", numbered(10))
        );
    }
}
