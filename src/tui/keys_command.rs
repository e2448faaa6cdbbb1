//! The interface's side of the keymap (tui/keymap): the context a key is looked up in (what
//! has the keys), `/keys`, the keymap `/help` shows, and what is wrong in `[keys]` said at
//! start with the config file's path and line.

use super::app::App;
use super::keymap::{Context, Keymap};
use crossterm::event::{KeyCode, KeyEvent};

impl App {
    /// The keymap in force: the defaults with `[keys]` applied.
    pub(super) fn keymap(&self) -> &Keymap {
        &self.input.keymap
    }

    /// The key as the handlers should see it (`Keymap::translate` in `key_context`); `None`:
    /// nothing happens. Vim's insert and visual modes take esc as it comes (it goes back to
    /// normal mode, whatever `run.interrupt` is bound to).
    pub(super) fn keymapped(&self, key: KeyEvent) -> Option<KeyEvent> {
        let context = self.key_context();
        if context == Context::Composer
            && key.code == KeyCode::Esc
            && self.input.composer.claims_esc()
        {
            return Some(key);
        }
        self.input.keymap.translate(context, key)
    }

    /// Where a key is looked up: the view on top of the stack (full-screen views rank on
    /// top), else the composer (or its history search). Where text is being typed into a
    /// view (a search, a steer, a denial's message) only the global keys are bindable.
    pub(super) fn key_context(&self) -> Context {
        if let Some(top) = self.views.top() {
            return top.key_context();
        }
        if self.input.composer.is_searching() {
            Context::HistorySearch
        } else {
            Context::Composer
        }
    }

    /// `/keys`: every action, its chords and what it does, grouped by where it works.
    pub(super) fn keys_command(&mut self) {
        let theme = self.theme;
        let rows = super::keymap::render::keys_rows(
            &self.input.keymap,
            &self.settings.config_path,
            &theme,
        );
        self.push_rows(rows);
    }

    /// Say at start what in `[keys]` could not be used (a warning) or gave up a default
    /// chord (a note).
    pub(super) fn report_keymap(&mut self) {
        let (_, reports) = Keymap::from_config(&self.settings.keys, &self.settings.config_path);
        for report in reports {
            if report.problem {
                self.warning(&report.text);
            } else {
                self.notice(&report.text);
            }
        }
    }
}
