//! Opening and closing the full-screen views (the transcript view of ctrl+o, `/diff`, the
//! agent view), the agent view's pager keys, and what the footer says about the run going
//! on underneath. A tool call that needs approval closes them, so the question is never
//! hidden (`views::Views::push`).

use super::app::{App, Phase};
use super::screen::Painted;
use super::views::transcript::{TranscriptView, pager_key};
use super::views::{Cx, Next};
use crossterm::event::KeyEvent;
use ratatui::buffer::Buffer;

impl App {
    /// ctrl+o: close the full-screen view that is open, else open the transcript view.
    pub fn toggle_view(&mut self) {
        if !self.views.close_full_screen() {
            self.views.push(Box::<TranscriptView>::default());
        }
        self.dirty = true;
    }

    /// The agent view's pager keys (scrolling, search) over the child's transcript.
    pub fn view_key(&mut self, key: KeyEvent) {
        let (Some(view), Some(focus)) = (self.views.view.as_mut(), self.views.agent_focus.as_ref())
        else {
            return;
        };
        if pager_key(view, &focus.log, key, &self.theme) == Next::Close {
            self.views.view = None;
        }
    }

    /// Draw the full-screen view over the whole (alternate) screen; `kept` says the buffer
    /// holds the last frame (see `Screen::draw_alternate`).
    pub fn render_view(&mut self, buffer: &mut Buffer, kept: bool) -> Painted {
        if self.views.agent_focus.is_some() && self.views.view.is_some() {
            return self.render_agent_view(buffer, kept);
        }
        let status = self.view_status();
        let cx = Cx {
            log: &self.log,
            theme: &self.theme,
            status: &status,
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
