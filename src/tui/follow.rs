//! What the core does when a view on the stack says what comes next (`views::Next`): take
//! it off the stack, push or put another in its place, carry out a menu's choice, send an
//! approval's answer, stop the run — and engine events shown to every open view.

use super::app::App;
use super::views::Next;
use crate::protocol::event::AgentEvent;

impl App {
    /// Do what the view at `index` said. (`Early` and `Pass` are the key router's.)
    pub(super) fn follow(&mut self, index: usize, next: Next) {
        match next {
            Next::Stay | Next::Pass | Next::Early => {}
            Next::Close => drop(self.views.remove(index)),
            Next::Push(view) => self.views.push(view),
            Next::Execute(command) => {
                if let Some(Err(error)) = self.execute_now(command)
                    && let Some(view) = self.views.get_mut(index)
                {
                    view.command_failed(&error);
                }
            }
            Next::Replace(view) => self.views.replace(index, view),
            Next::Choose(choice) => {
                self.views.remove(index);
                self.choose(choice);
            }
            // Only the approval dialog answers, and it says `Settled`.
            Next::Answer(_) => {}
            Next::Settled(settled) => self.settled(index, settled),
            Next::Reply(reply) => {
                self.views.remove(index);
                self.answer_question(reply);
            }
            Next::Stop => {
                self.views.remove(index);
                // esc on the question stops the run.
                self.interrupt();
            }
        }
        self.dirty = true;
    }

    /// An engine event, shown to the open views first (a run ending closes its approval;
    /// a call answered elsewhere settles its request).
    pub(super) fn views_on_event(&mut self, event: &AgentEvent) {
        if self.views.is_empty() {
            return;
        }
        for (index, next) in self.views.on_event(event) {
            self.follow(index, next);
        }
    }
}
