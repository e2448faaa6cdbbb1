//! The interface's side of the keymap (tui/keymap): `/keys`, the keymap `/help` shows, and
//! what is wrong in `[keys]` said at start with the config file's path and line.

use super::app::App;
use super::keymap::Keymap;

impl App {
    /// The keymap in force: the defaults with `[keys]` applied.
    pub(super) fn keymap(&self) -> Keymap {
        Keymap::from_config(&self.settings.keys, &self.settings.config_path).0
    }

    /// `/keys`: every action, its chords and what it does, grouped by where it works.
    pub(super) fn keys_command(&mut self) {
        let theme = self.theme;
        let rows =
            super::keymap::render::keys_rows(&self.keymap(), &self.settings.config_path, &theme);
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
