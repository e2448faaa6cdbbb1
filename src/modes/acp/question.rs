//! The model's questions (`ask_user`, the engine's `user_question`) in ACP. Each question
//! whose options allow one choice goes to the editor as a `session/request_permission` of
//! its own, one after the other (the closest request every editor shows: titled with the
//! question, one `allow_once` option per answer and `reject_once` "Skip" to leave it to the
//! agent); the chosen options are the answers. What a permission request cannot carry — a
//! question where several options may be chosen, or one that wants an answer in the user's
//! own words — is not shown: the answer tells the model, question by question, that this
//! editor cannot answer that kind of question, so it decides and goes on. (ACP's
//! elicitation requests would carry all of it; they are not stable in the protocol version
//! used here.)

use super::link::Link;
use super::permission::Asking;
use crate::agent::Agent;
use crate::agent::commands::Control;
use crate::protocol::command::Command;
use crate::protocol::question::{Answer, Question, QuestionAnswer};
use agent_client_protocol::v1::schema::{
    PermissionOption, PermissionOptionKind, RequestPermissionOutcome, RequestPermissionRequest,
    ToolCallContent, ToolCallStatus, ToolCallUpdate, ToolCallUpdateFields,
};
use std::sync::Arc;

/// A question waiting for the editor's answer.
pub struct Asked {
    pub tool_call_id: String,
    /// The id the editor knows the call by.
    pub shown_id: String,
    pub agent_id: Option<String>,
    /// The asking sub-agent's name, said in the request.
    pub agent_name: Option<String>,
    pub questions: Vec<Question>,
}

/// What became of one question.
enum Reply {
    Chosen(String),
    /// The user chose "Skip", or the editor cancelled the request.
    Skipped,
    /// A permission request cannot carry it: why (the kind of question).
    NotShown(&'static str),
}

/// Ask the editor, and hand its answer to the engine.
pub async fn ask(link: Arc<Link>, agent: Arc<Agent>, asking: Asking, asked: Asked) {
    let mut replies = Vec::with_capacity(asked.questions.len());
    for (index, question) in asked.questions.iter().enumerate() {
        let reply = match not_shown(question) {
            Some(why) => Reply::NotShown(why),
            None => {
                let Some(reply) = request(&link, &asking, &asked, index, question).await else {
                    // The call ended meanwhile: nothing waits for the answer.
                    return;
                };
                reply
            }
        };
        replies.push(reply);
    }
    if asking.lock().remove(&asked.shown_id).is_none() {
        return;
    }
    let command = Command::AnswerQuestion {
        tool_call_id: asked.tool_call_id,
        agent_id: asked.agent_id,
        answer: answer(&asked.questions, replies),
    };
    if let Err(error) = agent.execute(command, Control::new()).await {
        tracing::debug!(%error, "an answer came too late");
    }
}

/// Why a permission request cannot carry `question` (`None`: it can).
fn not_shown(question: &Question) -> Option<&'static str> {
    if question.options.is_empty() {
        Some("it wants an answer in the user's own words")
    } else if question.multi_select {
        Some("several of its options may be chosen")
    } else {
        None
    }
}

/// The engine's answer: the chosen options, and a note naming each question the editor
/// could not show. Every question skipped (none left unshown): the user declined.
fn answer(questions: &[Question], replies: Vec<Reply>) -> QuestionAnswer {
    if replies.iter().all(|r| matches!(r, Reply::Skipped)) {
        return QuestionAnswer::Declined { message: None };
    }
    let mut not_shown = Vec::new();
    let answers = questions
        .iter()
        .zip(replies)
        .map(|(question, reply)| {
            let selected = match reply {
                Reply::Chosen(label) => vec![label],
                Reply::Skipped => Vec::new(),
                Reply::NotShown(why) => {
                    not_shown.push(format!("`{}` ({why})", question.label()));
                    Vec::new()
                }
            };
            Answer {
                id: question.id.clone(),
                selected,
                other: None,
            }
        })
        .collect();
    let message = (!not_shown.is_empty()).then(|| {
        format!(
            "This client (an ACP editor) cannot answer that kind of question, so the user was \
             not asked {}: it can only offer options of which one is chosen. Decide those \
             yourself, go on, and say in your answer what you assumed.",
            not_shown.join(", ")
        )
    });
    QuestionAnswer::Answered { answers, message }
}

/// Who asks, as the request says it.
fn asker(asked: &Asked) -> String {
    match (&asked.agent_id, &asked.agent_name) {
        (None, _) => "The agent asks".to_string(),
        (Some(id), Some(name)) => format!("Sub-agent `{name}` ({id}) asks"),
        (Some(id), None) => format!("Sub-agent {id} asks"),
    }
}

/// Send question `index` as a permission request; `None` when the call ended first.
async fn request(
    link: &Link,
    asking: &Asking,
    asked: &Asked,
    index: usize,
    question: &Question,
) -> Option<Reply> {
    let count = asked.questions.len();
    let title = if count > 1 {
        format!("{} ({} of {count})", question.question, index + 1)
    } else {
        question.question.clone()
    };
    let call = ToolCallUpdate::new(
        asked.shown_id.clone(),
        ToolCallUpdateFields::new()
            .title(title)
            .status(ToolCallStatus::Pending)
            .content(vec![ToolCallContent::from(format!(
                "{}: {}",
                asker(asked),
                question.question
            ))]),
    );
    let mut options: Vec<PermissionOption> = question
        .options
        .iter()
        .enumerate()
        .map(|(i, option)| {
            PermissionOption::new(
                format!("answer-{i}"),
                option.label.clone(),
                PermissionOptionKind::AllowOnce,
            )
        })
        .collect();
    options.push(PermissionOption::new(
        "skip",
        "Skip (let the agent decide)",
        PermissionOptionKind::RejectOnce,
    ));
    let sent = {
        let mut waiting = asking.lock();
        let handle = waiting.get_mut(&asked.shown_id)?;
        let sent = link.cx.send_request(RequestPermissionRequest::new(
            link.id.clone(),
            call,
            options,
        ));
        *handle = Some(sent.cancellation_handle());
        sent
    };
    let outcome = sent.block_task().await.map(|response| response.outcome);
    // Still asked about (the call has not ended), with no request shown now.
    *asking.lock().get_mut(&asked.shown_id)? = None;
    let chosen = match &outcome {
        Ok(RequestPermissionOutcome::Selected(selected)) => selected
            .option_id
            .to_string()
            .strip_prefix("answer-")
            .and_then(|i| i.parse::<usize>().ok())
            .and_then(|i| question.options.get(i)),
        _ => None,
    };
    Some(match chosen {
        Some(option) => Reply::Chosen(option.label.clone()),
        None => Reply::Skipped,
    })
}
