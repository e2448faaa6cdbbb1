//! `/theme`: switch the interface's colours. `/theme NAME` switches now and keeps the choice
//! in the config file (`[tui] theme`); `/theme` alone opens the picker, which shows each theme
//! as it is selected. What is already in the terminal's scrollback keeps its colours; what is
//! drawn from now on (the live area, new output, the transcript view) takes the new ones.

use super::app::App;
use super::theme::palette::Palette;
use super::theme::registry;
use super::views::theme_picker::ThemePicker;

impl App {
    pub fn theme_command(&mut self, arg: &str) {
        let themes = registry::installed();
        if arg.is_empty() {
            return self.open_theme_picker();
        }
        match themes.get(arg) {
            Some(palette) => self.keep_theme(palette),
            None => self.warning(&format!(
                "No theme `{arg}`. Themes: {} (files in {})",
                themes.names().join(", "),
                self.settings.paths.home.join("themes").display()
            )),
        }
    }

    /// Shows everything from now on in `palette` (a preview, or a choice).
    pub fn set_palette(&mut self, palette: &'static Palette) {
        self.theme = self.theme.with_palette(palette);
        self.follow_theme();
        self.dirty = true;
    }

    /// What holds a theme of its own takes the one now in use: the answer streaming now.
    fn follow_theme(&mut self) {
        let theme = self.theme;
        if let Some(text) = self.run.stream.as_mut().and_then(|s| s.text.as_mut()) {
            text.set_theme(theme);
        }
    }

    /// `palette` from now on, and in the config file for the next start.
    pub fn keep_theme(&mut self, palette: &'static Palette) {
        self.set_palette(palette);
        let name = palette.name.clone();
        let path = self.settings.config_path.clone();
        let written =
            crate::mcp_command::edit(&path, |text| crate::config::tui::set_theme(text, &name));
        let colourless = if self.theme.color {
            ""
        } else {
            " (NO_COLOR is set: nothing is coloured)"
        };
        match written {
            Ok(()) => self.notice(&format!(
                "Theme: {name}, now and in {}{colourless}",
                path.display()
            )),
            Err(e) => self.warning(&format!(
                "Theme: {name} for this session, but it could not be written to the config: {e}"
            )),
        }
    }

    fn open_theme_picker(&mut self) {
        let picker = ThemePicker::new(registry::installed().all().to_vec(), self.theme.palette());
        self.views.push(Box::new(picker));
        self.dirty = true;
    }

    /// While the picker is open, everything is drawn in the theme it has selected.
    pub fn preview_theme(&mut self) {
        if let Some(picker) = self.views.find::<ThemePicker>() {
            self.theme = self.theme.with_palette(picker.palette_shown());
            self.follow_theme();
        }
    }

    /// The picker closed on `palette`: kept (enter), or the one it opened on (esc).
    pub fn theme_chosen(&mut self, palette: &'static Palette, keep: bool) {
        if keep {
            self.keep_theme(palette);
        } else {
            self.set_palette(palette);
        }
    }
}
