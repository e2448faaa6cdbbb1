//! The `ask_user` tool: the model asks the user one to four questions, each with options
//! and/or a free answer, and the answer is the call's result. It lives in the engine (like
//! `task`) because it is answered the way approvals are: a `user_question` event goes to the
//! front end, the `answer_question` command (`Agent::answer_question`) comes back. Where
//! nobody can answer (`-p`, json) the result says so at once and the model goes on; a run
//! stopped while a question is open ends the call as cancelled.

use super::Agent;
use super::state::{Shared, lock};
use crate::protocol::event::{AgentEvent, RunState};
use crate::protocol::outcome::CommandError;
use crate::protocol::question::{Answer, Question, QuestionAnswer, check_answer};
use crate::tools::{CANCELLED_TEXT, Subject, Tool, ToolContext, ToolOutput};
use futures_util::future::BoxFuture;
use serde::Deserialize;
use serde_json::{Value, json};
use std::sync::{Arc, OnceLock, Weak};
use tokio::sync::oneshot;

pub const TOOL: &str = crate::tools::ASK_USER_TOOL;

/// What the model is told when nobody can answer.
pub const NO_USER: &str = "No user is here to answer (a non-interactive run): decide \
    yourself, go on, and say in your answer what you assumed.";

const MAX_QUESTIONS: usize = 4;
const MAX_OPTIONS: usize = 6;
const MAX_HEADER: usize = 16;

/// A question waiting for the user's answer.
pub(crate) struct PendingQuestion {
    pub sender: oneshot::Sender<QuestionAnswer>,
    pub questions: Vec<Question>,
}

/// The tool, bound to its agent once the agent exists.
#[derive(Default)]
pub struct AskUserTool {
    agent: OnceLock<Weak<Shared>>,
}

impl AskUserTool {
    pub(crate) fn bind(&self, shared: &Arc<Shared>) {
        let _ = self.agent.set(Arc::downgrade(shared));
    }
}

#[derive(Deserialize)]
struct Args {
    questions: Vec<AskedQuestion>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
struct AskedQuestion {
    #[serde(default)]
    id: Option<String>,
    #[serde(default)]
    header: Option<String>,
    question: String,
    #[serde(default)]
    options: Vec<crate::protocol::question::QuestionOption>,
    #[serde(default)]
    multi_select: bool,
}

impl Tool for AskUserTool {
    fn name(&self) -> &str {
        TOOL
    }

    fn description(&self) -> &str {
        "Ask the user one to four questions and wait for the answers: to settle a decision \
         only they can make (a choice between approaches, a name, which of several things \
         they meant) before you go on. Give each question options to choose from when there \
         are a few likely answers (the user can always answer in their own words instead); \
         give none for an open question. Do not ask what you can find out yourself with the \
         other tools, and do not ask for permission to use tools (that is asked for you)."
    }

    fn parameters(&self) -> Value {
        json!({
            "type": "object",
            "properties": {
                "questions": {
                    "type": "array",
                    "minItems": 1,
                    "maxItems": MAX_QUESTIONS,
                    "items": {
                        "type": "object",
                        "properties": {
                            "id": {"type": "string", "description": "A short id for the answer (default q1, q2, …)"},
                            "header": {"type": "string", "maxLength": MAX_HEADER, "description": "A label of at most 16 characters, e.g. `Database`"},
                            "question": {"type": "string", "description": "The question, ending with a question mark"},
                            "options": {
                                "type": "array",
                                "maxItems": MAX_OPTIONS,
                                "items": {
                                    "type": "object",
                                    "properties": {
                                        "label": {"type": "string", "description": "The answer, a few words"},
                                        "description": {"type": "string", "description": "What choosing it means"}
                                    },
                                    "required": ["label"],
                                    "additionalProperties": false
                                }
                            },
                            "multiSelect": {"type": "boolean", "description": "Several options may be chosen"}
                        },
                        "required": ["question"],
                        "additionalProperties": false
                    }
                }
            },
            "required": ["questions"],
            "additionalProperties": false
        })
    }

    /// Asking changes nothing: it runs in every mode (plan mode included) without asking.
    fn read_only(&self) -> bool {
        true
    }

    fn subject(&self) -> Subject {
        Subject::None
    }

    fn summarize(&self, args: &Value) -> String {
        let questions = args["questions"]
            .as_array()
            .map(Vec::as_slice)
            .unwrap_or(&[]);
        questions
            .iter()
            .map(|q| {
                q["header"]
                    .as_str()
                    .or(q["question"].as_str())
                    .unwrap_or("?")
            })
            .collect::<Vec<_>>()
            .join(" · ")
    }

    fn execute(&self, args: Value, ctx: ToolContext) -> BoxFuture<'static, ToolOutput> {
        let shared = self.agent.get().and_then(Weak::upgrade);
        Box::pin(async move {
            let questions = match questions(args) {
                Ok(questions) => questions,
                Err(why) => return ToolOutput::error(format!("Invalid `ask_user` call: {why}.")),
            };
            let Some(shared) = shared else {
                return ToolOutput::text(NO_USER);
            };
            ask(&shared, questions, &ctx).await
        })
    }
}

/// The questions of a call, checked, with their ids filled in.
fn questions(args: Value) -> Result<Vec<Question>, String> {
    let args: Args = serde_json::from_value(args).map_err(|e| e.to_string())?;
    if args.questions.is_empty() || args.questions.len() > MAX_QUESTIONS {
        return Err(format!("ask 1 to {MAX_QUESTIONS} questions"));
    }
    let mut questions: Vec<Question> = Vec::new();
    for (i, asked) in args.questions.into_iter().enumerate() {
        let id = asked
            .id
            .map(|id| id.trim().to_string())
            .filter(|id| !id.is_empty())
            .unwrap_or_else(|| format!("q{}", i + 1));
        if questions.iter().any(|q| q.id == id) {
            return Err(format!("two questions have the id `{id}`"));
        }
        if asked.question.trim().is_empty() {
            return Err(format!("question `{id}` is empty"));
        }
        if asked.options.len() > MAX_OPTIONS {
            return Err(format!(
                "question `{id}` has more than {MAX_OPTIONS} options"
            ));
        }
        for (n, option) in asked.options.iter().enumerate() {
            if option.label.trim().is_empty() {
                return Err(format!("option {} of question `{id}` has no label", n + 1));
            }
            if asked.options[..n].iter().any(|o| o.label == option.label) {
                return Err(format!(
                    "question `{id}` has the option `{}` twice",
                    option.label
                ));
            }
        }
        let header = asked
            .header
            .map(|h| h.trim().chars().take(MAX_HEADER).collect::<String>())
            .filter(|h| !h.is_empty());
        questions.push(Question {
            id,
            header,
            question: asked.question.trim().to_string(),
            options: asked.options,
            multi_select: asked.multi_select,
        });
    }
    Ok(questions)
}

/// Ask through the front end and wait for the answer, the run's stop, or nobody being left
/// to answer.
async fn ask(shared: &Arc<Shared>, questions: Vec<Question>, ctx: &ToolContext) -> ToolOutput {
    let receiver = {
        let mut state = lock(&shared.state);
        if !state.can_ask {
            return ToolOutput::text(NO_USER);
        }
        let (sender, receiver) = oneshot::channel();
        state.questions.insert(
            ctx.tool_call_id.clone(),
            PendingQuestion {
                sender,
                questions: questions.clone(),
            },
        );
        receiver
    };
    shared.enter(RunState::AwaitingHuman);
    shared.emit(AgentEvent::UserQuestion {
        tool_call_id: ctx.tool_call_id.clone(),
        agent_id: None,
        agent_name: None,
        questions: questions.clone(),
    });
    let first = questions
        .first()
        .map(|q| q.question.clone())
        .unwrap_or_default();
    shared.notify("permission_prompt", format!("The agent asks: {first}"));
    let answer = tokio::select! {
        () = ctx.cancel.cancelled() => {
            lock(&shared.state).questions.remove(&ctx.tool_call_id);
            return ToolOutput::error(CANCELLED_TEXT);
        }
        answer = receiver => answer,
    };
    shared.enter(RunState::ToolRunning);
    match answer {
        Ok(answer) => result(&questions, answer),
        // The front end went away (an RPC client closed its input).
        Err(_) => ToolOutput::text(NO_USER),
    }
}

/// The call's result: one line per question (`Database: Postgres`), the answers in
/// `details`.
fn result(questions: &[Question], answer: QuestionAnswer) -> ToolOutput {
    let (answers, message) = match answer {
        QuestionAnswer::Declined { message } => {
            let mut text = "The user chose not to answer. Decide yourself, go on, and say in \
                            your answer what you assumed."
                .to_string();
            if let Some(message) = message.filter(|m| !m.trim().is_empty()) {
                text.push_str(" The user says: ");
                text.push_str(message.trim());
            }
            return ToolOutput::text(text).with_details(json!({"declined": true}));
        }
        QuestionAnswer::Answered { answers, message } => (answers, message),
    };
    let mut lines: Vec<String> = questions
        .iter()
        .map(|question| {
            let answer = answers.iter().find(|a| a.id == question.id);
            format!("{}: {}", question.label(), shown(answer))
        })
        .collect();
    lines.extend(
        message
            .map(|m| m.trim().to_string())
            .filter(|m| !m.is_empty()),
    );
    ToolOutput::text(lines.join("\n")).with_details(json!({ "answers": answers }))
}

fn shown(answer: Option<&Answer>) -> String {
    let Some(answer) = answer else {
        return "(no answer)".to_string();
    };
    let mut parts: Vec<String> = answer.selected.clone();
    if let Some(other) = answer
        .other
        .as_deref()
        .map(str::trim)
        .filter(|o| !o.is_empty())
    {
        parts.push(format!("(in their own words) {other}"));
    }
    if parts.is_empty() {
        "(no answer)".to_string()
    } else {
        parts.join(", ")
    }
}

impl Agent {
    /// Answer a `user_question` (`agent_id`: the sub-agent that asked, as the event says:
    /// a child's id, or the path of ids down to a child's own child). An answer that does not fit the questions is refused and
    /// the question stays open.
    pub fn answer_question(
        &self,
        agent_id: Option<&str>,
        tool_call_id: &str,
        answer: QuestionAnswer,
    ) -> Result<(), CommandError> {
        if let Some(agent_id) = agent_id {
            return match self.descendant(agent_id) {
                Some(child) => child.answer_question(None, tool_call_id, answer),
                None => Err(CommandError::NoSuchQuestion(tool_call_id.to_string())),
            };
        }
        let pending = {
            let mut state = lock(&self.shared.state);
            let Some(pending) = state.questions.get(tool_call_id) else {
                drop(state);
                // Not ours: a question of a sub-agent's own child, relayed through it.
                return self
                    .running_children()
                    .iter()
                    .find(|child| child.has_question(tool_call_id))
                    .map_or_else(
                        || Err(CommandError::NoSuchQuestion(tool_call_id.to_string())),
                        |child| child.answer_question(None, tool_call_id, answer.clone()),
                    );
            };
            if let Some(why) = check_answer(&pending.questions, &answer) {
                return Err(CommandError::Answer(why));
            }
            state.questions.remove(tool_call_id)
        };
        match pending.map(|p| p.sender.send(answer)) {
            Some(Ok(())) => Ok(()),
            _ => Err(CommandError::NoSuchQuestion(tool_call_id.to_string())),
        }
    }
}

impl Agent {
    /// Whether a question of call `tool_call_id` waits here or below (a child's, relayed).
    fn has_question(&self, tool_call_id: &str) -> bool {
        lock(&self.shared.state)
            .questions
            .contains_key(tool_call_id)
            || self
                .running_children()
                .iter()
                .any(|child| child.has_question(tool_call_id))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn questions_are_checked_and_get_ids() {
        let asked = questions(json!({"questions": [
            {"question": "Which database?", "header": "A header longer than sixteen",
             "options": [{"label": "Postgres"}, {"label": "SQLite", "description": "a file"}]},
            {"id": "name", "question": "What name?"}
        ]}))
        .unwrap();
        assert_eq!(asked[0].id, "q1");
        assert_eq!(asked[0].header.as_deref(), Some("A header longer "));
        assert_eq!(asked[1].id, "name");
        assert!(asked[1].options.is_empty());
        for (bad, why) in [
            (json!({"questions": []}), "1 to 4"),
            (json!({"questions": [{"question": " "}]}), "empty"),
            (
                json!({"questions": [{"question": "a?", "options": [{"label": "x"}, {"label": "x"}]}]}),
                "twice",
            ),
            (
                json!({"questions": [{"id": "a", "question": "a?"}, {"id": "a", "question": "b?"}]}),
                "two questions",
            ),
            (
                json!({"questions": [{"question": "a?", "colour": 1}]}),
                "unknown field",
            ),
        ] {
            let error = questions(bad).err().unwrap_or_default();
            assert!(error.contains(why), "{error}");
        }
    }

    #[test]
    fn the_result_reads_one_line_per_question() {
        let asked = questions(json!({"questions": [
            {"id": "db", "header": "Database", "question": "Which?",
             "options": [{"label": "Postgres"}, {"label": "SQLite"}]},
            {"id": "name", "question": "What name?"}
        ]}))
        .unwrap();
        let output = result(
            &asked,
            QuestionAnswer::Answered {
                answers: vec![Answer {
                    id: "db".into(),
                    selected: vec!["SQLite".into()],
                    other: None,
                }],
                message: Some("A note.".into()),
            },
        );
        let text = crate::protocol::message::join_text(&output.content);
        assert_eq!(text, "Database: SQLite\nname: (no answer)\nA note.");
        assert!(!output.is_error);
        let declined = result(&asked, QuestionAnswer::Declined { message: None });
        assert!(
            crate::protocol::message::join_text(&declined.content).contains("chose not to answer")
        );
    }
}
