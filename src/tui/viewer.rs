//! Opening and closing the transcript view (ctrl+o), its keys, and what its footer says
//! about the run going on underneath. A tool call that needs approval closes it, so the
//! question is never hidden.

use super::app::{App, Phase};
use super::screen::Painted;
use super::transcript::View;
use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
use ratatui::buffer::Buffer;

impl App {
    pub fn toggle_view(&mut self) {
        self.views.agent_focus = None;
        self.views.diff_log = None;
        self.views.view = match self.views.view.take() {
            Some(_) => None,
            None => {
                self.load_earlier_messages();
                Some(View::new())
            }
        };
        self.dirty = true;
    }

    /// The older part of a long resumed session, read back from the session file the
    /// first time the view opens (the view and its search cover the whole session).
    fn load_earlier_messages(&mut self) {
        if let Err(error) = self.log.load_earlier() {
            self.warning(&format!(
                "the earlier messages could not be read back from the session: {error}"
            ));
        }
    }

    pub fn view_key(&mut self, key: KeyEvent) {
        let theme = self.theme;
        let Some(view) = self.views.view.as_mut() else {
            return;
        };
        // The agent view shows a child's transcript; `/diff` its changes; the transcript
        // view, ours.
        let log = match (&self.views.agent_focus, &self.views.diff_log) {
            (Some(focus), _) => &focus.log,
            (None, Some(diff)) => diff,
            (None, None) => &self.log,
        };
        if let Some(input) = view.input.as_mut() {
            match key.code {
                KeyCode::Enter => view.submit_search(log, &theme),
                KeyCode::Esc => view.input = None,
                KeyCode::Backspace => {
                    input.pop();
                }
                KeyCode::Char(c) if !key.modifiers.contains(KeyModifiers::CONTROL) => input.push(c),
                _ => {}
            }
            return;
        }
        match key.code {
            KeyCode::Esc | KeyCode::Char('q') => {
                self.views.view = None;
                self.views.diff_log = None;
            }
            KeyCode::Up | KeyCode::Char('k') => view.scroll(log, -1, &theme),
            KeyCode::Down | KeyCode::Char('j') | KeyCode::Enter => view.scroll(log, 1, &theme),
            KeyCode::PageUp | KeyCode::Char('b') => view.page_up(log, &theme),
            KeyCode::PageDown | KeyCode::Char(' ') => view.page_down(log, &theme),
            KeyCode::Home | KeyCode::Char('g') => view.to_start(),
            KeyCode::End | KeyCode::Char('G') => view.to_end(),
            KeyCode::Char('/') => view.input = Some(String::new()),
            KeyCode::Char('n') => view.find(log, false, true, &theme),
            KeyCode::Char('N') => view.find(log, true, true, &theme),
            _ => {}
        }
    }

    /// Draw the open view over the whole (alternate) screen; `kept` says the buffer holds
    /// the last frame (see `Screen::draw_alternate`).
    pub fn render_view(&mut self, buffer: &mut Buffer, kept: bool) -> Painted {
        if self.views.agent_focus.is_some() {
            return self.render_agent_view(buffer, kept);
        }
        let status = self.view_status();
        let theme = self.theme;
        let log = self.views.diff_log.as_ref().unwrap_or(&self.log);
        match self.views.view.as_mut() {
            Some(view) => view.render(log, buffer, kept, &theme, &status),
            None => {
                buffer.reset();
                Painted::All
            }
        }
    }

    fn view_status(&self) -> String {
        let running = self.run.shells.len();
        match &self.run.working {
            Some((since, phase)) => {
                let what = match phase {
                    Phase::Tool(name) => format!("running {name}"),
                    Phase::Thinking => "thinking".to_string(),
                    Phase::Responding => "responding".to_string(),
                    Phase::Compacting => "compacting".to_string(),
                    Phase::Retrying { .. } => "retrying".to_string(),
                    Phase::Approval | Phase::Waiting => "working".to_string(),
                };
                format!("{what} {}s", since.elapsed().as_secs())
            }
            None if running > 0 => format!("{running} ! command running"),
            None => String::new(),
        }
    }
}
