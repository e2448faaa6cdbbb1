//! Opening and closing the full-screen views (the transcript view of ctrl+o, `/diff`, the
//! agent view), drawing the one on top, and what the footer says about the run going on
//! underneath. A tool call that needs approval closes them, so the question is never
//! hidden (`views::Views::push`).

use super::app::{App, Phase};
use super::screen::Painted;
use super::views::Cx;
use super::views::transcript::TranscriptView;
use ratatui::buffer::Buffer;

impl App {
    /// ctrl+o: close the full-screen view that is open, else open the transcript view.
    pub fn toggle_view(&mut self) {
        if !self.views.close_full_screen() {
            self.load_earlier_messages();
            self.views.push(Box::<TranscriptView>::default());
        }
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

    /// Draw the full-screen view over the whole (alternate) screen; `kept` says the buffer
    /// holds the last frame (see `Screen::draw_alternate`).
    pub fn render_view(&mut self, buffer: &mut Buffer, kept: bool) -> Painted {
        let status = self.view_status();
        let cx = Cx {
            log: &self.log,
            theme: &self.theme,
            status: &status,
            agent: &self.agent,
            subagents: &self.run.subagents,
        };
        match self.views.top_mut() {
            Some(view) => view.render(buffer, kept, &cx),
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
