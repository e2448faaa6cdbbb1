//! The core's side of the model's questions (`ask_user`; the dialog is `views::ask_user` on
//! the view stack): a `user_question` opens the dialog over whatever is open, and its reply
//! goes to the engine (`answer_question`) while the run's phase follows.

use super::app::{App, Phase};
use super::views::ask_user::{AskUser, Reply};
use crate::protocol::command::Command;
use crate::protocol::question::Question;

impl App {
    /// The model asks (`agent`: a sub-agent's id and name, its question relayed): show the
    /// dialog on top.
    pub(super) fn on_user_question(
        &mut self,
        tool_call_id: String,
        agent: Option<(String, Option<String>)>,
        questions: Vec<Question>,
    ) {
        // A question closes the full-screen views as it opens (`Views::push`): it must be
        // seen.
        let (agent_id, agent_name) = agent.unzip();
        let dialog = AskUser::new(tool_call_id, agent_id, questions).asked_by(agent_name.flatten());
        self.views.push(Box::new(dialog));
        self.set_phase(Phase::Approval);
        self.dirty = true;
    }

    /// The dialog's reply goes to the engine; the run goes on with the call (or the
    /// sub-agent's `task`).
    pub(super) fn answer_question(&mut self, reply: Reply) {
        let running = match reply.agent_id {
            Some(_) => crate::agent::children::TASK_TOOL.to_string(),
            None => crate::agent::ask_user::TOOL.to_string(),
        };
        let answer = Command::AnswerQuestion {
            tool_call_id: reply.tool_call_id,
            agent_id: reply.agent_id,
            answer: reply.answer,
        };
        match self.execute_now(answer) {
            Some(Err(error)) => self.warning(&format!("The answer was not taken: {error}")),
            _ => self.set_phase(Phase::Tool(running)),
        }
    }
}
