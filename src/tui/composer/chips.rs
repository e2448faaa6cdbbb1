//! Chips: a pasted image file or a clipboard image shows in the composer as
//! `[image: name 640×480]` and behaves as one element — the cursor never stops inside it
//! (any motion that would is carried over it), and a deletion that takes part of it takes
//! all of it. The composer keeps which file each label stands for (for the whole session,
//! so a prompt recalled from the history or given back by esc is a chip again); on send
//! `images_in` hands the labels the text holds to `agent::mentions`, which attaches them.
//! Long pastes are chips too (`pastes`): the motions and deletions here treat both alike.

use super::Composer;
use crate::agent::mentions::LabelledImage;
use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use ratatui::style::Style;
use ratatui_textarea::CursorMove;
use std::path::{Path, PathBuf};

/// Where the cursor was, how long its line was and where that line's chips were, before
/// a key.
pub(super) struct Before {
    row: usize,
    col: usize,
    rows: usize,
    line_chars: usize,
    /// The chips of the cursor's line, as character columns `[start, end)`.
    chips: Vec<(usize, usize)>,
    /// A selection's ends are never inside a chip: what replaces it takes whole chips.
    selecting: bool,
}

impl Composer {
    /// Put the image at `path` (`width`×`height`) in the text at the cursor, as a chip
    /// followed by a space.
    pub fn insert_image(&mut self, path: &Path, width: usize, height: usize) {
        let label = self.label_for(path, width, height);
        match &mut self.search {
            // Searching the history (ctrl+r): the chip joins whatever text it ends with.
            Some(search) => search.arrived.push_str(&format!("{label} ")),
            None => {
                self.textarea.insert_str(format!("{label} "));
            }
        }
    }

    /// Whether a chip (an image or a long paste) was ever made this session.
    pub(super) fn has_chips(&self) -> bool {
        !self.images.is_empty() || !self.pastes.is_empty()
    }

    /// A label for `path` that no other file has.
    fn label_for(&mut self, path: &Path, width: usize, height: usize) -> String {
        let name = path
            .file_name()
            .map_or_else(|| path.to_string_lossy(), |n| n.to_string_lossy());
        let mut n = 1;
        loop {
            let label = if n == 1 {
                format!("[image: {name} {width}×{height}]")
            } else {
                format!("[image: {name} {width}×{height} #{n}]")
            };
            match self.images.iter().find(|i| i.label == label) {
                Some(known) if known.path == path => return label,
                Some(_) => n += 1,
                None => {
                    self.images.push(LabelledImage {
                        label: label.clone(),
                        path: PathBuf::from(path),
                    });
                    return label;
                }
            }
        }
    }

    /// The images whose chips `text` holds, for `agent::mentions` to attach.
    pub fn images_in(&self, text: &str) -> Vec<LabelledImage> {
        self.images
            .iter()
            .filter(|i| text.contains(&i.label))
            .cloned()
            .collect()
    }

    /// The chip labels `text` holds whose image this composer does not know (a prompt
    /// recalled from an earlier run's history: the label came back, the file behind it
    /// did not). Sending them would silently attach nothing.
    pub fn unknown_chips(&self, text: &str) -> Vec<String> {
        let mut unknown = Vec::new();
        for (at, _) in text.match_indices("[image: ") {
            let rest = &text[at..];
            let Some(end) = rest
                .find([']', '\n'])
                .filter(|&e| rest[e..].starts_with(']'))
            else {
                continue;
            };
            let label = &rest[..=end];
            if looks_like_chip(label) && !self.images.iter().any(|i| i.label == label) {
                unknown.push(label.to_string());
            }
        }
        unknown
    }

    /// The chips of `line`, as character columns `[start, end)`, in order.
    pub(super) fn chip_spans(&self, line: &str) -> Vec<(usize, usize)> {
        let mut spans: Vec<(usize, usize)> = Vec::new();
        if !line.contains("[image: ") && !line.contains(super::pastes::LABEL_START) {
            return spans;
        }
        let labels = (self.images.iter().map(|i| i.label.as_str()))
            .chain(self.pastes.iter().map(|p| p.label.as_str()));
        for label in labels {
            for (at, _) in line.match_indices(label) {
                let start = line[..at].chars().count();
                spans.push((start, start + label.chars().count()));
            }
        }
        spans.sort_unstable();
        // A label inside another (a file named like a label) is not a chip of its own.
        let mut kept: Vec<(usize, usize)> = Vec::with_capacity(spans.len());
        for span in spans {
            match kept.last() {
                Some(last) if span.0 < last.1 => {}
                _ => kept.push(span),
            }
        }
        kept
    }

    /// Draw the chips shown whole in `area` (the text as drawn) in `style`.
    pub(super) fn style_chips(&self, area: Rect, buffer: &mut Buffer, style: Style) {
        if !self.has_chips() {
            return;
        }
        for y in area.top()..area.bottom() {
            // The row's text, and the column each of its characters is drawn at.
            let mut row = String::new();
            let mut columns = Vec::new();
            for x in area.left()..area.right() {
                let symbol = buffer[(x, y)].symbol();
                for c in symbol.chars() {
                    row.push(c);
                    columns.push(x);
                }
            }
            for (start, end) in self.chip_spans(&row) {
                let (Some(first), Some(last)) = (columns.get(start), columns.get(end - 1)) else {
                    continue;
                };
                for x in *first..=*last {
                    buffer[(x, y)].set_style(style);
                }
            }
        }
    }

    /// What a key may change, noted before it runs.
    /// (Nothing while no chip was ever made: plain typing costs nothing more.)
    pub(super) fn before_key(&self) -> Option<Before> {
        if !self.has_chips() {
            return None;
        }
        let (line, col) = self.line_and_column();
        Some(Before {
            row: self.textarea.cursor().0,
            col,
            rows: self.textarea.lines().len(),
            line_chars: line.chars().count(),
            chips: self.chip_spans(line),
            selecting: self.textarea.is_selecting(),
        })
    }

    /// After a key: a deletion that took part of a chip takes the rest of it, and a cursor
    /// that stopped inside one goes on past it, in the direction it moved.
    pub(super) fn after_key(&mut self, before: Option<Before>) {
        let Some(before) = before else {
            return;
        };
        let (row, col) = (self.textarea.cursor().0, self.line_and_column().1);
        if !before.selecting && row == before.row && self.textarea.lines().len() == before.rows {
            let line_chars = self.line_and_column().0.chars().count();
            let removed = before.line_chars.saturating_sub(line_chars);
            // Deleted back to the cursor, or after it: `[from, to)` of the old line.
            let deleted = if removed == 0 {
                None
            } else if col + removed == before.col {
                Some((col, before.col))
            } else if col == before.col {
                Some((col, col + removed))
            } else {
                None
            };
            if let Some((from, to)) = deleted {
                let (mut first, mut last) = (from, to);
                for (start, end) in &before.chips {
                    let partly = *start < to && *end > from && !(from <= *start && *end <= to);
                    if partly {
                        first = first.min(*start);
                        last = last.max(*end);
                    }
                }
                if (first, last) != (from, to) {
                    self.widen_deletion(&before, (from, to), (first, last));
                    return;
                }
            }
        }
        let back = (row, col) < (before.row, before.col);
        self.leave_chip(back);
    }

    /// A deletion took `[from, to)` of the line, part of a chip: take `[first, last)`
    /// instead, as one edit — the partial one is undone first — so that one undo brings the
    /// chip back whole.
    fn widen_deletion(
        &mut self,
        before: &Before,
        (from, to): (usize, usize),
        (first, last): (usize, usize),
    ) {
        let restored = |c: &Composer| {
            c.textarea.cursor().0 == before.row
                && c.line_and_column().0.chars().count() == before.line_chars
        };
        if self.textarea.undo() {
            if restored(self) {
                self.move_to_column(first);
                self.textarea.delete_str(last - first);
                return;
            }
            self.textarea.redo();
        }
        // Undo did not give the line back: delete the rest of the chip as an edit of its own.
        self.move_to_column(first);
        self.textarea.delete_str(last - first - (to - from));
    }

    /// Move the cursor along its line to character column `col`.
    pub(super) fn move_to_column(&mut self, col: usize) {
        let now = self.line_and_column().1;
        for _ in col..now {
            self.textarea.move_cursor(CursorMove::Back);
        }
        for _ in now..col {
            self.textarea.move_cursor(CursorMove::Forward);
        }
    }

    /// Carry a cursor that is inside a chip to its start (`back`) or its end.
    fn leave_chip(&mut self, back: bool) {
        let (line, col) = self.line_and_column();
        let Some((start, end)) = inside(&self.chip_spans(line), col) else {
            return;
        };
        if back {
            for _ in start..col {
                self.textarea.move_cursor(CursorMove::Back);
            }
        } else {
            for _ in col..end {
                self.textarea.move_cursor(CursorMove::Forward);
            }
        }
    }
}

/// The chip of `spans` that column `col` falls strictly inside.
fn inside(spans: &[(usize, usize)], col: usize) -> Option<(usize, usize)> {
    spans
        .iter()
        .copied()
        .find(|(start, end)| *start < col && col < *end)
}

/// Whether `label` (`[image: ...]`) has a chip's shape: a name, then `W×H`, perhaps `#n`.
fn looks_like_chip(label: &str) -> bool {
    let inner = label
        .strip_prefix("[image: ")
        .and_then(|l| l.strip_suffix(']'))
        .unwrap_or_default();
    let mut words = inner.rsplit(' ');
    let mut last = words.next().unwrap_or_default();
    if last
        .strip_prefix('#')
        .is_some_and(|n| n.parse::<u32>().is_ok())
    {
        last = words.next().unwrap_or_default();
    }
    let size = last
        .split_once('×')
        .is_some_and(|(w, h)| w.parse::<u32>().is_ok() && h.parse::<u32>().is_ok());
    size && words.next().is_some_and(|name| !name.is_empty())
}

#[cfg(test)]
mod tests {
    use super::super::Action;
    use super::*;
    use crate::tui::theme::Theme;
    use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};

    const CHIP: &str = "[image: shot.png 640×480]";

    fn press(c: &mut Composer, code: KeyCode, modifiers: KeyModifiers) -> Action {
        c.handle_key(KeyEvent::new(code, modifiers))
    }

    fn key(c: &mut Composer, code: KeyCode) -> Action {
        press(c, code, KeyModifiers::NONE)
    }

    fn type_text(c: &mut Composer, text: &str) {
        for ch in text.chars() {
            key(c, KeyCode::Char(ch));
        }
    }

    fn col(c: &Composer) -> usize {
        c.line_and_column().1
    }

    /// "see " + the chip + " now", the cursor at the end.
    fn with_chip() -> Composer {
        let mut c = Composer::new(&Theme::plain());
        type_text(&mut c, "see ");
        c.insert_image(Path::new("/pics/shot.png"), 640, 480);
        type_text(&mut c, "now");
        c
    }

    fn chip_end() -> usize {
        4 + CHIP.chars().count()
    }

    #[test]
    fn a_chip_that_arrives_while_searching_the_history_is_kept() {
        for (end, expected) in [
            (KeyCode::Esc, format!("draft {CHIP} ")),
            (KeyCode::Enter, format!("earlier prompt {CHIP} ")),
        ] {
            let mut c = Composer::new(&Theme::plain());
            c.remember("earlier prompt");
            type_text(&mut c, "draft");
            press(&mut c, KeyCode::Char('r'), KeyModifiers::CONTROL);
            type_text(&mut c, "earl");
            c.insert_image(Path::new("/pics/shot.png"), 640, 480);
            key(&mut c, end);
            assert_eq!(c.text(), expected);
            assert_eq!(c.images_in(&c.text()).len(), 1);
        }
    }

    #[test]
    fn a_label_whose_image_is_not_known_is_found() {
        let c = with_chip();
        assert_eq!(c.unknown_chips(&c.text()), Vec::<String>::new());
        let recalled = "[image: old.png 10×20] and [image: b c.jpg 1×2 #3] but not \
                        [image: notes] or [image: x 1×y] or [image: 5×5]";
        assert_eq!(
            c.unknown_chips(recalled),
            ["[image: old.png 10×20]", "[image: b c.jpg 1×2 #3]"]
        );
    }

    #[test]
    fn a_chip_reads_as_its_label_and_names_its_file() {
        let c = with_chip();
        assert_eq!(c.text(), format!("see {CHIP} now"));
        assert_eq!(
            c.images_in(&c.text()),
            [LabelledImage {
                label: CHIP.into(),
                path: "/pics/shot.png".into()
            }]
        );
        assert_eq!(c.images_in("no chip here"), []);
    }

    #[test]
    fn the_cursor_goes_over_a_chip_never_into_it() {
        let mut c = with_chip();
        for _ in 0.."now ".len() {
            key(&mut c, KeyCode::Left);
        }
        assert_eq!(col(&c), chip_end());
        key(&mut c, KeyCode::Left);
        assert_eq!(col(&c), 4, "one step back goes to the chip's start");
        key(&mut c, KeyCode::Right);
        assert_eq!(col(&c), chip_end(), "one step on goes to its end");
        // Word motions (ctrl+← / alt+f) stop at its ends too.
        press(&mut c, KeyCode::Left, KeyModifiers::CONTROL);
        assert_eq!(col(&c), 4);
        press(&mut c, KeyCode::Char('f'), KeyModifiers::ALT);
        assert!(col(&c) >= chip_end(), "{}", col(&c));
        key(&mut c, KeyCode::Home);
        assert_eq!(col(&c), 0);
        key(&mut c, KeyCode::End);
        assert_eq!(col(&c), c.text().chars().count());
    }

    #[test]
    fn typing_next_to_a_chip_goes_beside_it() {
        let mut c = with_chip();
        for _ in 0.."now ".len() + 1 {
            key(&mut c, KeyCode::Left);
        }
        type_text(&mut c, "x");
        assert_eq!(c.text(), format!("see x{CHIP} now"));
        key(&mut c, KeyCode::Right);
        type_text(&mut c, "y");
        assert_eq!(c.text(), format!("see x{CHIP}y now"));
    }

    #[test]
    fn backspace_and_delete_take_the_whole_chip() {
        let mut c = with_chip();
        for _ in 0.."now ".len() {
            key(&mut c, KeyCode::Left);
        }
        key(&mut c, KeyCode::Backspace);
        assert_eq!(c.text(), "see  now");
        assert_eq!(col(&c), 4);
        let mut c = with_chip();
        for _ in 0.."now ".len() + 1 {
            key(&mut c, KeyCode::Left);
        }
        key(&mut c, KeyCode::Delete);
        assert_eq!(c.text(), "see  now");
        assert_eq!(col(&c), 4);
        // And the word deletions: ctrl+w back, alt+d forward.
        let mut c = with_chip();
        for _ in 0.."now ".len() {
            key(&mut c, KeyCode::Left);
        }
        press(&mut c, KeyCode::Char('w'), KeyModifiers::CONTROL);
        assert_eq!(c.text(), "see  now");
        let mut c = with_chip();
        for _ in 0.."now ".len() + 1 {
            key(&mut c, KeyCode::Left);
        }
        press(&mut c, KeyCode::Char('d'), KeyModifiers::ALT);
        assert_eq!(c.text(), "see  now");
        // One undo brings it back whole, and redo takes it whole again.
        press(&mut c, KeyCode::Char('_'), KeyModifiers::CONTROL);
        assert_eq!(c.text(), format!("see {CHIP} now"));
        press(
            &mut c,
            KeyCode::Char('z'),
            KeyModifiers::CONTROL | KeyModifiers::SHIFT,
        );
        assert_eq!(c.text(), "see  now");
        let mut c = with_chip();
        for _ in 0.."now ".len() {
            key(&mut c, KeyCode::Left);
        }
        key(&mut c, KeyCode::Backspace);
        press(&mut c, KeyCode::Char('_'), KeyModifiers::CONTROL);
        assert_eq!(c.text(), format!("see {CHIP} now"));
    }

    #[test]
    fn several_chips_each_stay_whole() {
        let mut c = Composer::new(&Theme::plain());
        c.insert_image(Path::new("/a/shot.png"), 640, 480);
        c.insert_image(Path::new("/b/shot.png"), 640, 480);
        c.insert_image(Path::new("/a/shot.png"), 640, 480);
        let second = "[image: shot.png 640×480 #2]";
        assert_eq!(c.text(), format!("{CHIP} {second} {CHIP} "));
        let images = c.images_in(&c.text());
        assert_eq!(images.len(), 2, "the same file is one image: {images:?}");
        assert_eq!(images[1].path, Path::new("/b/shot.png"));
        key(&mut c, KeyCode::Backspace);
        key(&mut c, KeyCode::Backspace);
        assert_eq!(c.text(), format!("{CHIP} {second} "));
        key(&mut c, KeyCode::Backspace);
        key(&mut c, KeyCode::Backspace);
        assert_eq!(c.text(), format!("{CHIP} "));
        assert_eq!(c.images_in(&c.text()).len(), 1);
    }

    #[test]
    fn chips_are_drawn_in_the_accent_colour() {
        let theme = Theme::colored();
        let mut c = Composer::new(&theme);
        type_text(&mut c, "a ");
        c.insert_image(Path::new("/pics/shot.png"), 640, 480);
        type_text(&mut c, "[image: typed by hand]");
        let area = Rect::new(0, 0, 80, 2);
        let mut buffer = Buffer::empty(area);
        c.render(area, &mut buffer, &theme);
        // The prompt sign "› " (accent too), "a ", then the chip.
        let chip = 4..4 + u16::try_from(CHIP.chars().count()).unwrap();
        for x in 0..60 {
            let styled = buffer[(x, 0)].fg == ratatui::style::Color::Cyan;
            let expected = x < 2 || chip.contains(&x);
            assert_eq!(styled, expected, "column {x}");
        }
    }

    #[test]
    fn a_recalled_prompt_has_its_chips_again() {
        let mut c = with_chip();
        let sent = key(&mut c, KeyCode::Enter);
        assert_eq!(sent, Action::Submit(format!("see {CHIP} now")));
        key(&mut c, KeyCode::Up);
        assert_eq!(c.text(), format!("see {CHIP} now"));
        for _ in 0.."now ".len() {
            key(&mut c, KeyCode::Left);
        }
        key(&mut c, KeyCode::Backspace);
        assert_eq!(c.text(), "see  now");
    }

    #[test]
    fn a_sent_chip_attaches_its_image_and_a_vanished_one_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let png = crate::agent::mentions::png_header_2x3();
        let file = dir.path().join("shot.png");
        std::fs::write(&file, &png).unwrap();
        let mut c = Composer::new(&Theme::plain());
        type_text(&mut c, "what is ");
        c.insert_image(&file, 2, 3);
        let Action::Submit(text) = key(&mut c, KeyCode::Enter) else {
            panic!("not sent");
        };
        let images = c.images_in(&text);
        let (message, attached) =
            crate::agent::mentions::expand_with(&text, &images, dir.path(), true, "m").unwrap();
        use crate::protocol::message::Content;
        assert_eq!(
            message.content[0],
            Content::text("what is [image: shot.png 2×3] ")
        );
        assert!(
            matches!(&message.content[1], Content::Image { mime_type, .. } if mime_type == "image/png")
        );
        assert_eq!(
            crate::tui::attach::describe(&attached[0]),
            "[image: shot.png 2×3]"
        );
        std::fs::remove_file(&file).unwrap();
        let gone =
            crate::agent::mentions::expand_with(&text, &images, dir.path(), true, "m").unwrap_err();
        assert!(
            gone.to_string()
                .starts_with("[image: shot.png 2×3] cannot be sent: its file"),
            "{gone}"
        );
    }
}
