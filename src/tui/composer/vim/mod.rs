//! Vim mode in the composer (`[tui] editor_mode = "vim"`, `/vim` toggles it): insert, normal
//! and visual modes over the composer's own text. Normal mode has the motions h j k l w b e
//! 0 $ gg G, the operators d c y with a motion (and dd cc yy), x, p P, u and ctrl+r, counts
//! (3w, d2w, 2dd) and `.`; i a I A o O enter insert mode, esc leaves it, and enter sends from
//! either. In normal mode esc does what it does at the composer in the default mode (stop the
//! run; esc esc on an empty composer rewinds), so the user can always stop a run.
//!
//! Written by hand: the vim editors for ratatui (edtui, modalkit) own their buffer and
//! widget, which would mean re-doing the composer's chips, `@` mentions, history, search and
//! height rules on a foreign buffer; vim-line is single-line, and ratatui-textarea (the
//! composer's widget) has a vim example but no vim API. So this is a small state machine
//! over the textarea's public API (`motion`, `operator`, `visual`). Not covered: text
//! objects, registers, marks, macros and `:` commands.

mod motion;
mod operator;
mod visual;

use super::{Action, Composer};
use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
use motion::Motion;
use operator::{Op, Register, Snapshot};

/// The largest count honoured (a typed `99999999dd` does no more than this).
const MAX_COUNT: usize = 10_000;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Mode {
    Insert,
    Normal,
    Visual,
}

/// What a normal-mode key is waiting for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Pending {
    None,
    /// `g` (for `gg`), perhaps after an operator.
    G(Option<Op>),
    /// An operator, waiting for its motion (its count is in `count`).
    Operator(Op),
}

pub struct Vim {
    mode: Mode,
    /// The count typed so far (before an operator, and before its motion: multiplied).
    count: Option<usize>,
    /// The count typed before the operator, once the operator is typed.
    op_count: Option<usize>,
    pending: Pending,
    register: Register,
    undo: Vec<Snapshot>,
    redo: Vec<Snapshot>,
    /// The keys of the normal-mode command being typed.
    typed: Vec<KeyEvent>,
    /// The keys of a change that goes on in insert mode (`cw…esc`, `o…esc`).
    recording: Option<Vec<KeyEvent>>,
    /// The keys of the last change, for `.`.
    last_change: Vec<KeyEvent>,
    replaying: bool,
}

impl Vim {
    /// Vim mode starts in insert mode: typing works at once.
    pub fn new() -> Vim {
        Vim {
            mode: Mode::Insert,
            count: None,
            op_count: None,
            pending: Pending::None,
            register: Register::default(),
            undo: Vec::new(),
            redo: Vec::new(),
            typed: Vec::new(),
            recording: None,
            last_change: Vec::new(),
            replaying: false,
        }
    }

    fn reset_command(&mut self) {
        self.count = None;
        self.op_count = None;
        self.pending = Pending::None;
        self.typed.clear();
    }

    /// The count of the command: the counts before the operator and before the motion
    /// multiplied (`2d3w` is six words), 1 without any.
    fn take_count(&mut self) -> usize {
        let count = self.count.take().unwrap_or(1) * self.op_count.take().unwrap_or(1);
        count.clamp(1, MAX_COUNT)
    }
}

impl Composer {
    /// Turn vim mode on (in insert mode) or off.
    pub fn set_vim(&mut self, on: bool) {
        self.vim = on.then(Vim::new);
        self.textarea.cancel_selection();
    }

    pub fn is_vim(&self) -> bool {
        self.vim.is_some()
    }

    /// The vim mode for the status line: `-- INSERT --`, `NORMAL`, `-- VISUAL --`; `None`
    /// when vim mode is off.
    pub fn mode_label(&self) -> Option<&'static str> {
        Some(match self.vim.as_ref()?.mode {
            Mode::Insert => "-- INSERT --",
            Mode::Normal => "NORMAL",
            Mode::Visual => "-- VISUAL --",
        })
    }

    /// The prompt sign: `› ` (vim's normal mode `N `, visual mode `V `).
    pub(super) fn prompt_sign(&self) -> &'static str {
        match self.vim.as_ref().map(|vim| vim.mode) {
            Some(Mode::Normal) => "N ",
            Some(Mode::Visual) => "V ",
            Some(Mode::Insert) | None => super::PROMPT,
        }
    }

    /// Whether esc is the composer's own (vim: back to normal mode, or a command typed half
    /// way is dropped) rather than the app's (stop the run, esc esc rewinds).
    pub fn claims_esc(&self) -> bool {
        self.vim.as_ref().is_some_and(|vim| {
            vim.mode != Mode::Normal || vim.pending != Pending::None || vim.count.is_some()
        })
    }

    /// After a send or a clear, vim mode starts the next text in insert mode.
    pub(super) fn vim_restart(&mut self) {
        if let Some(vim) = self.vim.as_mut() {
            vim.mode = Mode::Insert;
            vim.reset_command();
            vim.recording = None;
        }
    }

    /// A key in vim mode: `None` when the composer's default handling takes it (text typed
    /// in insert mode, enter…).
    pub(super) fn vim_key(&mut self, key: KeyEvent) -> Option<Action> {
        let vim = self.vim.as_mut()?;
        match vim.mode {
            // enter (alt+enter, shift+enter) as in the default mode: sends from normal mode too.
            Mode::Normal if key.code == KeyCode::Enter => {
                vim.reset_command();
                None
            }
            Mode::Insert => self.vim_insert_key(key),
            Mode::Normal => Some(self.vim_normal_key(key)),
            Mode::Visual => Some(self.vim_visual_key(key)),
        }
    }

    fn vim_insert_key(&mut self, key: KeyEvent) -> Option<Action> {
        let vim = self.vim.as_mut()?;
        if let Some(recording) = vim.recording.as_mut() {
            recording.push(key);
        }
        if key.code != KeyCode::Esc {
            return None;
        }
        vim.mode = Mode::Normal;
        if let Some(recording) = vim.recording.take() {
            vim.last_change = recording;
        }
        self.end_change();
        // As in vim, the cursor steps back onto the last character typed.
        if self.line_and_column().1 > 0 {
            self.textarea
                .move_cursor(ratatui_textarea::CursorMove::Back);
        }
        Some(Action::Edited)
    }

    fn vim_normal_key(&mut self, key: KeyEvent) -> Action {
        let before = self.before_key();
        let action = self.normal_command(key);
        self.after_key(before);
        self.keep_on_a_character();
        action
    }

    /// One key of a normal-mode command.
    fn normal_command(&mut self, key: KeyEvent) -> Action {
        let Some(vim) = self.vim.as_mut() else {
            return Action::Edited;
        };
        vim.typed.push(key);
        let ctrl = key.modifiers.contains(KeyModifiers::CONTROL);
        let pending = vim.pending;
        if key.code == KeyCode::Esc {
            vim.reset_command();
            return Action::Edited;
        }
        if let KeyCode::Char(c @ '0'..='9') = key.code
            && !ctrl
            && (c != '0' || vim.count.is_some())
            && !matches!(pending, Pending::G(_))
        {
            let digit = c
                .to_digit(10)
                .map_or(0, |d| usize::try_from(d).unwrap_or(0));
            let count = vim.count.unwrap_or(0).saturating_mul(10) + digit;
            vim.count = Some(count.min(MAX_COUNT));
            return Action::Edited;
        }
        match pending {
            Pending::G(op) => {
                self.after_g(key, op);
                return Action::Edited;
            }
            Pending::Operator(op) => {
                self.after_operator(key, op);
                return Action::Edited;
            }
            Pending::None => {}
        }
        if ctrl {
            if key.code == KeyCode::Char('r') {
                let count = self.vim_count();
                for _ in 0..count {
                    self.vim_redo();
                }
            }
            self.vim_done(false);
            return Action::Edited;
        }
        if let Some(motion) = Motion::of(key.code) {
            let count = self.vim_count_given();
            self.vertical_or_move(motion, count);
            self.vim_done(false);
            return Action::Edited;
        }
        if key.code == KeyCode::Tab && self.expand_paste_at_cursor() {
            self.vim_done(false);
            return Action::Edited;
        }
        let KeyCode::Char(c) = key.code else {
            self.vim_done(false);
            return Action::Edited;
        };
        self.normal_char(c);
        Action::Edited
    }

    /// A normal-mode command that is a letter (not a motion).
    fn normal_char(&mut self, c: char) {
        let Some(vim) = self.vim.as_mut() else {
            return;
        };
        match c {
            'd' | 'c' | 'y' => {
                vim.op_count = vim.count.take();
                vim.pending = Pending::Operator(Op::of(c));
            }
            'g' => vim.pending = Pending::G(None),
            'G' => {
                let line = vim.count.take();
                self.go_to_line(line);
                self.vim_done(false);
            }
            'x' => {
                let count = self.vim_count();
                self.apply_operator(Op::Delete, Motion::Right, count);
                self.end_change();
                self.vim_done(true);
            }
            'p' | 'P' => {
                let count = self.vim_count();
                self.begin_change();
                self.put(c == 'p', count);
                self.end_change();
                self.vim_done(true);
            }
            'u' => {
                let count = self.vim_count();
                for _ in 0..count {
                    self.vim_undo();
                }
                self.vim_done(false);
            }
            '.' => self.repeat_change(),
            'i' | 'a' | 'I' | 'A' | 'o' | 'O' => {
                self.begin_change();
                self.enter_insert(c);
            }
            'v' => {
                self.textarea.start_selection();
                if let Some(vim) = self.vim.as_mut() {
                    vim.mode = Mode::Visual;
                }
                self.vim_done(false);
            }
            _ => self.vim_done(false),
        }
    }

    /// `i a I A o O`: into insert mode, the change recorded from here to esc.
    fn enter_insert(&mut self, c: char) {
        use ratatui_textarea::CursorMove;
        match c {
            'a' if !self.line_and_column().0.is_empty() => {
                self.textarea.move_cursor(CursorMove::Forward)
            }
            'I' => self.textarea.move_cursor(CursorMove::Head),
            'A' => self.textarea.move_cursor(CursorMove::End),
            'o' => {
                self.textarea.move_cursor(CursorMove::End);
                self.textarea.insert_newline();
            }
            'O' => {
                self.textarea.move_cursor(CursorMove::Head);
                self.textarea.insert_newline();
                self.textarea.move_cursor(CursorMove::Up);
            }
            _ => {}
        }
        self.start_insert_recording();
    }

    /// Insert mode from a normal-mode command: its keys so far start the recording.
    fn start_insert_recording(&mut self) {
        if let Some(vim) = self.vim.as_mut() {
            vim.mode = Mode::Insert;
            if !vim.replaying {
                vim.recording = Some(std::mem::take(&mut vim.typed));
            }
            vim.reset_command();
        }
    }

    /// A command ended: a change (`change`) is remembered for `.`.
    fn vim_done(&mut self, change: bool) {
        if let Some(vim) = self.vim.as_mut() {
            if change && !vim.replaying {
                vim.last_change = std::mem::take(&mut vim.typed);
            }
            vim.reset_command();
        }
    }

    /// The count typed (1 without one).
    fn vim_count(&mut self) -> usize {
        self.vim.as_mut().map_or(1, Vim::take_count)
    }

    /// The count typed, if one was.
    fn vim_count_given(&mut self) -> Option<usize> {
        let vim = self.vim.as_mut()?;
        (vim.count.is_some() || vim.op_count.is_some()).then(|| vim.take_count())
    }

    /// `.`: the last change again; a count given replaces the count it was typed with.
    fn repeat_change(&mut self) {
        let Some(vim) = self.vim.as_mut() else {
            return;
        };
        let count = vim.count.take();
        let mut keys = vim.last_change.clone();
        vim.reset_command();
        if keys.is_empty() {
            return;
        }
        if let Some(count) = count {
            let digits = keys
                .iter()
                .take_while(|k| {
                    matches!(k.code, KeyCode::Char('1'..='9')) || k.code == KeyCode::Char('0')
                })
                .count();
            let typed: Vec<KeyEvent> = count
                .to_string()
                .chars()
                .map(|c| KeyEvent::new(KeyCode::Char(c), KeyModifiers::NONE))
                .collect();
            keys.splice(..digits, typed);
        }
        vim.replaying = true;
        for key in keys.clone() {
            // A replayed change never sends.
            if key.code == KeyCode::Enter {
                continue;
            }
            self.handle_key(key);
        }
        if let Some(vim) = self.vim.as_mut() {
            vim.replaying = false;
            vim.last_change = keys;
            vim.reset_command();
        }
    }

    /// In normal mode the cursor is on a character, not after the last one.
    fn keep_on_a_character(&mut self) {
        if self.vim.as_ref().is_some_and(|v| v.mode == Mode::Normal) {
            let (line, col) = self.line_and_column();
            if col > 0 && col >= line.chars().count() {
                self.textarea
                    .move_cursor(ratatui_textarea::CursorMove::Back);
            }
        }
    }
}

#[cfg(test)]
pub(super) mod tests {
    use super::*;
    use crate::tui::theme::Theme;

    /// A composer in vim mode holding `text` (typed in insert mode), in normal mode.
    pub fn vim_with(text: &str) -> Composer {
        let mut c = Composer::new(&Theme::plain());
        c.set_vim(true);
        c.insert(text);
        normal(&mut c, "\x1b");
        c
    }

    /// Type `keys`: `\x1b` is esc, `\x12` ctrl+r, `\r` enter.
    pub fn normal(c: &mut Composer, keys: &str) -> Vec<Action> {
        keys.chars()
            .map(|k| {
                let key = match k {
                    '\x1b' => KeyEvent::new(KeyCode::Esc, KeyModifiers::NONE),
                    '\x12' => KeyEvent::new(KeyCode::Char('r'), KeyModifiers::CONTROL),
                    '\r' => KeyEvent::new(KeyCode::Enter, KeyModifiers::NONE),
                    c => KeyEvent::new(KeyCode::Char(c), KeyModifiers::NONE),
                };
                c.handle_key(key)
            })
            .collect()
    }

    #[test]
    fn modes_and_their_labels() {
        let mut c = Composer::new(&Theme::plain());
        assert_eq!(c.mode_label(), None);
        c.set_vim(true);
        assert_eq!(c.mode_label(), Some("-- INSERT --"));
        assert!(c.claims_esc());
        normal(&mut c, "hi\x1b");
        assert_eq!(c.mode_label(), Some("NORMAL"));
        assert!(!c.claims_esc(), "esc at rest in normal mode is the app's");
        normal(&mut c, "d");
        assert!(
            c.claims_esc(),
            "an operator typed half way is dropped by esc"
        );
        normal(&mut c, "\x1bv");
        assert_eq!(c.mode_label(), Some("-- VISUAL --"));
        normal(&mut c, "\x1b");
        assert_eq!(c.mode_label(), Some("NORMAL"));
        // Typing in normal mode types nothing.
        normal(&mut c, "zq");
        assert_eq!(c.text(), "hi");
        c.set_vim(false);
        assert_eq!(c.mode_label(), None);
    }

    #[test]
    fn enter_sends_from_normal_mode_and_the_next_text_starts_in_insert() {
        let mut c = vim_with("hello world");
        let sent = normal(&mut c, "0dwA!\x1b\r");
        assert_eq!(sent.last(), Some(&Action::Submit("world!".into())));
        assert_eq!(c.mode_label(), Some("-- INSERT --"));
        assert!(c.is_empty());
        // k on the first row recalls the prompt, as ↑ does.
        normal(&mut c, "\x1bk");
        assert_eq!(c.text(), "world!");
    }
}
