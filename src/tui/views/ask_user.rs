//! The model's question (`ask_user`, the engine's `user_question`) as a dialog on the view
//! stack: one tab per question, its options as a list (↑↓ or a digit picks; space toggles
//! where several may be chosen) and a last row `Other:` where the user types an answer of
//! their own; tab / shift+tab go between questions, enter answers (on the last question it
//! sends every answer), esc declines. It stays on top of what opens after it, as an
//! approval does, and closes when the call ends (the run stopped, or answered elsewhere).

use super::super::theme::Theme;
use super::super::wrap::{visible, wrap_text};
use super::approval::dialog_grace;
use super::{Next, View};
use crate::protocol::event::AgentEvent;
use crate::protocol::question::{Answer, Question, QuestionAnswer};
use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
use ratatui::text::{Line, Span};
use std::time::Instant;

/// The user's answer to the question of call `tool_call_id` (of sub-agent `agent_id`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Reply {
    pub tool_call_id: String,
    pub agent_id: Option<String>,
    pub answer: QuestionAnswer,
}

pub struct AskUser {
    tool_call_id: String,
    agent_id: Option<String>,
    /// The asking sub-agent's name, shown in the title.
    agent_name: Option<String>,
    questions: Vec<Question>,
    /// The question shown.
    current: usize,
    answers: Vec<Draft>,
    /// When it appeared: keys typed in the first moments were meant for the composer.
    pub opened: Instant,
}

/// What the user has chosen for one question so far.
#[derive(Default)]
struct Draft {
    /// The row the cursor is on: an option, or (the last row) `Other`.
    cursor: usize,
    chosen: Vec<bool>,
    other: String,
}

impl AskUser {
    pub fn new(tool_call_id: String, agent_id: Option<String>, questions: Vec<Question>) -> Self {
        let answers = questions
            .iter()
            .map(|q| Draft {
                cursor: 0,
                chosen: vec![false; q.options.len()],
                other: String::new(),
            })
            .collect();
        AskUser {
            tool_call_id,
            agent_id,
            agent_name: None,
            questions,
            current: 0,
            answers,
            opened: Instant::now(),
        }
    }

    /// The asking sub-agent's name (`agent_id` says which one asks).
    pub fn asked_by(mut self, agent_name: Option<String>) -> Self {
        self.agent_name = agent_name;
        self
    }

    /// Who asks, as the title says it.
    fn asker(&self) -> String {
        match (&self.agent_id, &self.agent_name) {
            (None, _) => "The agent asks".to_string(),
            (Some(id), Some(name)) => {
                format!("Sub-agent `{}` ({}) asks", visible(name), visible(id))
            }
            (Some(id), None) => format!("Sub-agent {} asks", visible(id)),
        }
    }

    fn question(&self) -> Option<(&Question, &Draft)> {
        Some((
            self.questions.get(self.current)?,
            self.answers.get(self.current)?,
        ))
    }

    /// Whether the cursor is on the `Other` row (keys are typed there).
    fn typing(&self) -> bool {
        self.question()
            .is_some_and(|(question, draft)| draft.cursor == question.options.len())
    }

    fn reply(&self, answer: QuestionAnswer) -> Next {
        Next::Reply(Reply {
            tool_call_id: self.tool_call_id.clone(),
            agent_id: self.agent_id.clone(),
            answer,
        })
    }

    /// Every question's answer as chosen so far.
    fn answered(&self) -> QuestionAnswer {
        let answers = self
            .questions
            .iter()
            .zip(&self.answers)
            .map(|(question, draft)| Answer {
                id: question.id.clone(),
                selected: question
                    .options
                    .iter()
                    .zip(&draft.chosen)
                    .filter(|(_, chosen)| **chosen)
                    .map(|(option, _)| option.label.clone())
                    .collect(),
                other: Some(draft.other.trim().to_string()).filter(|o| !o.is_empty()),
            })
            .collect();
        QuestionAnswer::Answered {
            answers,
            message: None,
        }
    }

    /// Choose option `index` of the shown question (toggle it where several may be chosen).
    fn choose(&mut self, index: usize) {
        let multi = self
            .questions
            .get(self.current)
            .is_some_and(|q| q.multi_select);
        let Some(draft) = self.answers.get_mut(self.current) else {
            return;
        };
        if index >= draft.chosen.len() {
            return;
        }
        draft.cursor = index;
        if multi {
            draft.chosen[index] = !draft.chosen[index];
        } else {
            draft.chosen.iter_mut().for_each(|c| *c = false);
            draft.chosen[index] = true;
            draft.other.clear();
        }
    }

    /// The next question, or every answer sent after the last.
    fn advance(&mut self) -> Next {
        if self.current + 1 < self.questions.len() {
            self.current += 1;
            Next::Stay
        } else {
            self.reply(self.answered())
        }
    }

    /// Enter: take the row under the cursor as the answer (a single choice), then go on.
    fn enter(&mut self) -> Next {
        let Some((question, draft)) = self.question() else {
            return Next::Stay;
        };
        let on_option = draft.cursor < question.options.len();
        let multi = question.multi_select;
        let nothing = !draft.chosen.contains(&true) && draft.other.trim().is_empty();
        if on_option && (!multi || nothing) {
            self.choose(draft.cursor);
        }
        self.advance()
    }

    fn move_cursor(&mut self, by: isize) {
        let rows = self
            .questions
            .get(self.current)
            .map_or(1, |q| q.options.len() + 1);
        if let Some(draft) = self.answers.get_mut(self.current) {
            draft.cursor = draft
                .cursor
                .saturating_add_signed(by)
                .min(rows.saturating_sub(1));
        }
    }

    fn switch_question(&mut self, forward: bool) {
        let count = self.questions.len().max(1);
        self.current = if forward {
            (self.current + 1) % count
        } else {
            (self.current + count - 1) % count
        };
    }

    /// A key while the cursor is on `Other`: the answer is typed there.
    fn type_key(&mut self, key: KeyEvent) -> Option<Next> {
        let multi = self
            .questions
            .get(self.current)
            .is_some_and(|q| q.multi_select);
        let draft = self.answers.get_mut(self.current)?;
        match key.code {
            KeyCode::Char(c) if !key.modifiers.contains(KeyModifiers::CONTROL) => {
                draft.other.push(c);
                if !multi {
                    draft.chosen.iter_mut().for_each(|c| *c = false);
                }
            }
            KeyCode::Backspace => {
                draft.other.pop();
            }
            KeyCode::Char('u') if key.modifiers.contains(KeyModifiers::CONTROL) => {
                draft.other.clear()
            }
            _ => return None,
        }
        Some(Next::Stay)
    }
}

impl View for AskUser {
    /// ↑↓ move, a digit picks, space toggles, enter answers, tab / shift+tab switch
    /// questions, esc declines; on `Other` the keys type the answer.
    fn key(&mut self, key: KeyEvent) -> Next {
        if self.opened.elapsed() < dialog_grace() && key.code != KeyCode::Esc {
            return Next::Early;
        }
        if self.typing()
            && let Some(next) = self.type_key(key)
        {
            return next;
        }
        match key.code {
            KeyCode::Esc => return self.reply(QuestionAnswer::Declined { message: None }),
            KeyCode::Enter => return self.enter(),
            KeyCode::Up => self.move_cursor(-1),
            KeyCode::Down => self.move_cursor(1),
            KeyCode::Tab => self.switch_question(true),
            KeyCode::BackTab => self.switch_question(false),
            KeyCode::Char(' ') => {
                let cursor = self.answers.get(self.current).map_or(0, |d| d.cursor);
                self.choose(cursor);
            }
            KeyCode::Char(c @ '1'..='9') => {
                let index = c
                    .to_digit(10)
                    .and_then(|d| usize::try_from(d).ok())
                    .map_or(0, |d| d.saturating_sub(1));
                let multi = self
                    .questions
                    .get(self.current)
                    .is_some_and(|q| q.multi_select);
                let options = self
                    .questions
                    .get(self.current)
                    .map_or(0, |q| q.options.len());
                if index < options {
                    self.choose(index);
                    if !multi {
                        return self.advance();
                    }
                } else if index == options {
                    // The digit of `Other`: type there.
                    self.move_cursor(isize::MAX);
                }
            }
            _ => {}
        }
        Next::Stay
    }

    /// A paste on `Other` is typed there, on one line.
    fn paste(&mut self, text: &str) -> bool {
        if !self.typing() {
            return true;
        }
        if let Some(draft) = self.answers.get_mut(self.current) {
            draft.other.push_str(&text.replace(['\r', '\n'], " "));
        }
        true
    }

    /// The call ended (the run stopped, or it was answered elsewhere): nothing waits.
    fn on_event(&mut self, event: &AgentEvent) -> Next {
        match event {
            AgentEvent::ToolExecutionEnd { tool_call_id, .. }
                if self.agent_id.is_none() && *tool_call_id == self.tool_call_id =>
            {
                Next::Close
            }
            // A sub-agent's call ended (it was stopped, or answered by another client).
            AgentEvent::SubagentEvent { .. }
                if self
                    .agent_id
                    .as_deref()
                    .is_some_and(|asker| ends_call_of(event, asker, &self.tool_call_id)) =>
            {
                Next::Close
            }
            AgentEvent::AgentEnd { .. } => Next::Close,
            _ => Next::Stay,
        }
    }

    fn asked_at(&self) -> Option<Instant> {
        Some(self.opened)
    }

    fn rows(&self, width: u16, _max_rows: u16, theme: &Theme) -> Vec<Line<'static>> {
        let Some((question, draft)) = self.question() else {
            return Vec::new();
        };
        let mut title = vec![
            Span::styled("? ", theme.warning()),
            Span::styled(self.asker(), theme.bold()),
        ];
        if self.questions.len() > 1 {
            title.push(Span::raw("  "));
            for (i, q) in self.questions.iter().enumerate() {
                let label = format!(" {} ", visible(q.label()));
                title.push(if i == self.current {
                    Span::styled(format!("[{}]", label.trim()), theme.accent())
                } else {
                    Span::styled(label, theme.dim())
                });
            }
        }
        let mut rows = vec![Line::from(title)];
        rows.extend(wrap_text(
            &visible(&question.question),
            theme.bold(),
            width,
            &[Span::raw("  ")],
            &[Span::raw("  ")],
        ));
        for (i, option) in question.options.iter().enumerate() {
            let mut spans = vec![cursor_mark(draft.cursor == i, theme)];
            if question.multi_select {
                let mark = if draft.chosen[i] { "[x] " } else { "[ ] " };
                spans.push(Span::raw(mark));
            }
            let style = if draft.chosen[i] {
                theme.accent()
            } else {
                theme.text()
            };
            spans.push(Span::styled(
                format!("{}. {}", i + 1, visible(&option.label)),
                style,
            ));
            if let Some(description) = &option.description {
                spans.push(Span::styled(
                    format!("  {}", visible(description)),
                    theme.dim(),
                ));
            }
            rows.push(Line::from(spans));
        }
        let typing = draft.cursor == question.options.len();
        let mut other = vec![
            cursor_mark(typing, theme),
            Span::styled(
                format!("{}. Other: ", question.options.len() + 1),
                theme.text(),
            ),
            Span::raw(draft.other.clone()),
        ];
        if typing {
            other.push(Span::styled("▏", theme.accent()));
        }
        rows.push(Line::from(other));
        let last = self.current + 1 == self.questions.len();
        let mut hint = String::from("  ↑↓ choose · enter ");
        hint.push_str(if last { "answer" } else { "next question" });
        if question.multi_select {
            hint.push_str(" · space toggles");
        }
        if self.questions.len() > 1 {
            hint.push_str(" · tab switches question");
        }
        hint.push_str(" · esc declines to answer");
        rows.push(Line::from(Span::styled(hint, theme.dim())));
        rows
    }
}

fn cursor_mark(here: bool, theme: &Theme) -> Span<'static> {
    if here {
        Span::styled("  › ", theme.accent())
    } else {
        Span::raw("    ")
    }
}

/// Whether `event` (a sub-agent's, wrapped once per level) is the end of call `call` of the
/// sub-agent at `path`: a child's id, or the ids down to a child's own child (`a1/a2`).
fn ends_call_of(event: &AgentEvent, path: &str, call: &str) -> bool {
    let AgentEvent::SubagentEvent {
        agent_id, event, ..
    } = event
    else {
        return false;
    };
    match path.split_once('/') {
        Some((child, below)) => agent_id == child && ends_call_of(event, below, call),
        None => {
            agent_id == path
                && matches!(event.as_ref(), AgentEvent::ToolExecutionEnd { tool_call_id, .. }
                    if tool_call_id == call)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::testing::{draw, key};
    use super::*;
    use serde_json::json;
    use std::time::Duration;

    fn dialog(questions: serde_json::Value) -> AskUser {
        let mut dialog = AskUser::new(
            "c1".into(),
            None,
            serde_json::from_value(questions).unwrap(),
        );
        dialog.opened = Instant::now()
            .checked_sub(Duration::from_secs(60))
            .unwrap_or_else(Instant::now);
        dialog
    }

    fn db() -> serde_json::Value {
        json!([{"id": "db", "header": "Database", "question": "Which database?",
                "options": [{"label": "Postgres"}, {"label": "SQLite", "description": "a file"}]}])
    }

    fn answer(next: Next) -> QuestionAnswer {
        match next {
            Next::Reply(reply) => reply.answer,
            other => panic!("no reply: {other:?}"),
        }
    }

    #[test]
    fn a_digit_or_the_arrows_pick_an_option() {
        let mut by_digit = dialog(db());
        let rows = draw(&by_digit, 60, 10).join("\n");
        assert!(rows.contains("Which database?"), "{rows}");
        assert!(rows.contains("2. SQLite  a file"), "{rows}");
        assert!(rows.contains("3. Other:"), "{rows}");
        let picked = answer(by_digit.key(key(KeyCode::Char('2'))));
        assert_eq!(
            picked,
            QuestionAnswer::Answered {
                answers: vec![Answer {
                    id: "db".into(),
                    selected: vec!["SQLite".into()],
                    other: None
                }],
                message: None,
            }
        );
        let mut by_arrows = dialog(db());
        assert_eq!(by_arrows.key(key(KeyCode::Down)), Next::Stay);
        assert_eq!(answer(by_arrows.key(key(KeyCode::Enter))), picked);
    }

    #[test]
    fn other_takes_a_typed_answer_and_esc_declines() {
        let mut typed = dialog(db());
        typed.key(key(KeyCode::Down));
        typed.key(key(KeyCode::Down));
        for c in "MySQL 8".chars() {
            assert_eq!(typed.key(key(KeyCode::Char(c))), Next::Stay);
        }
        let QuestionAnswer::Answered { answers, .. } = answer(typed.key(key(KeyCode::Enter)))
        else {
            panic!("declined")
        };
        assert_eq!(answers[0].other.as_deref(), Some("MySQL 8"));
        assert!(answers[0].selected.is_empty());
        let mut declined = dialog(db());
        assert_eq!(
            answer(declined.key(key(KeyCode::Esc))),
            QuestionAnswer::Declined { message: None }
        );
    }

    #[test]
    fn several_questions_are_answered_in_turn_and_multi_select_toggles() {
        let mut dialog = dialog(json!([
            {"id": "db", "question": "Which?", "options": [{"label": "a"}, {"label": "b"}]},
            {"id": "tests", "header": "Tests", "question": "Which tests?", "multiSelect": true,
             "options": [{"label": "unit"}, {"label": "e2e"}]}
        ]));
        assert_eq!(
            dialog.key(key(KeyCode::Char('1'))),
            Next::Stay,
            "next question"
        );
        let rows = draw(&dialog, 80, 10).join("\n");
        assert!(rows.contains("[Tests]"), "{rows}");
        dialog.key(key(KeyCode::Char('1')));
        dialog.key(key(KeyCode::Char('2')));
        let QuestionAnswer::Answered { answers, .. } = answer(dialog.key(key(KeyCode::Enter)))
        else {
            panic!("declined")
        };
        assert_eq!(answers[0].selected, vec!["a"]);
        assert_eq!(answers[1].selected, vec!["unit", "e2e"]);
    }

    #[test]
    fn a_sub_agents_question_names_it_and_closes_when_its_call_ends() {
        let mut dialog = AskUser::new(
            "c1".into(),
            Some("agent-1".into()),
            serde_json::from_value(db()).unwrap(),
        )
        .asked_by(Some("general".into()));
        let rows = draw(&dialog, 60, 10).join("\n");
        assert!(
            rows.contains("Sub-agent `general` (agent-1) asks"),
            "{rows}"
        );
        let end = AgentEvent::ToolExecutionEnd {
            tool_call_id: "c1".into(),
            tool_name: "ask_user".into(),
            result: crate::protocol::event::ToolResultPayload {
                content: Vec::new(),
                details: None,
            },
            is_error: true,
        };
        // The parent's own call of that id is another call.
        assert_eq!(dialog.on_event(&end), Next::Stay);
        let other_child = AgentEvent::SubagentEvent {
            agent_id: "agent-2".into(),
            parent_tool_call_id: "t2".into(),
            event: Box::new(end.clone()),
        };
        assert_eq!(dialog.on_event(&other_child), Next::Stay);
        let its_end = AgentEvent::SubagentEvent {
            agent_id: "agent-1".into(),
            parent_tool_call_id: "t1".into(),
            event: Box::new(end.clone()),
        };
        // Asked by a child's child (agent-9's agent-1): its end comes wrapped twice.
        let mut grandchilds = AskUser::new(
            "c1".into(),
            Some("agent-9/agent-1".into()),
            serde_json::from_value(db()).unwrap(),
        );
        let through_its_parent = AgentEvent::SubagentEvent {
            agent_id: "agent-9".into(),
            parent_tool_call_id: "t0".into(),
            event: Box::new(its_end.clone()),
        };
        assert_eq!(dialog.on_event(&its_end), Next::Close);
        assert_eq!(grandchilds.on_event(&through_its_parent), Next::Close);
        // The same call id of another of agent-9's children, or of agent-9 itself.
        let a_sibling = AgentEvent::SubagentEvent {
            agent_id: "agent-9".into(),
            parent_tool_call_id: "t0".into(),
            event: Box::new(other_child),
        };
        assert_eq!(grandchilds.on_event(&a_sibling), Next::Stay);
        let its_parents_own = AgentEvent::SubagentEvent {
            agent_id: "agent-9".into(),
            parent_tool_call_id: "t0".into(),
            event: Box::new(end),
        };
        assert_eq!(grandchilds.on_event(&its_parents_own), Next::Stay);
    }

    #[test]
    fn the_end_of_its_call_closes_it() {
        let mut dialog = dialog(db());
        let end = AgentEvent::ToolExecutionEnd {
            tool_call_id: "c1".into(),
            tool_name: "ask_user".into(),
            result: crate::protocol::event::ToolResultPayload {
                content: Vec::new(),
                details: None,
            },
            is_error: true,
        };
        assert_eq!(dialog.on_event(&end), Next::Close);
    }
}
