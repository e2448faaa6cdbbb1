//! The model's questions (`ask_user`, the engine's `user_question`) in ACP. A single
//! question whose options allow one choice goes to the editor as `session/request_permission`
//! (the closest request every editor shows: one option per answer, `allow_once` kind, and
//! `reject_once` "Skip" to decline); the chosen option is the answer. What that request
//! cannot carry — several questions, several choices, an answer in the user's own words —
//! is declined at once with a note, so the model decides and goes on. (ACP's elicitation
//! requests would carry all of it; they are not stable in the protocol version used here.)

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
    pub questions: Vec<Question>,
}

/// What the model is told when the editor cannot show the questions.
const CANNOT_SHOW: &str = "the editor can only show one question with options to choose one \
    of; ask one such question, or decide yourself";

/// Ask the editor, and hand its answer to the engine.
pub async fn ask(link: Arc<Link>, agent: Arc<Agent>, asking: Asking, asked: Asked) {
    let answer = match single_choice(&asked.questions) {
        Some(question) => request(&link, &asking, &asked, question).await,
        None => Some(QuestionAnswer::Declined {
            message: Some(CANNOT_SHOW.to_string()),
        }),
    };
    let Some(answer) = answer else {
        // The call ended meanwhile: nothing waits for the answer.
        return;
    };
    let command = Command::AnswerQuestion {
        tool_call_id: asked.tool_call_id,
        agent_id: asked.agent_id,
        answer,
    };
    if let Err(error) = agent.execute(command, Control::new()).await {
        tracing::debug!(%error, "an answer came too late");
    }
}

/// The one question a permission request can carry.
fn single_choice(questions: &[Question]) -> Option<&Question> {
    match questions {
        [question] if !question.options.is_empty() && !question.multi_select => Some(question),
        _ => None,
    }
}

/// Send the question as a permission request; `None` when the call ended first.
async fn request(
    link: &Link,
    asking: &Asking,
    asked: &Asked,
    question: &Question,
) -> Option<QuestionAnswer> {
    let call = ToolCallUpdate::new(
        asked.shown_id.clone(),
        ToolCallUpdateFields::new()
            .title(question.question.clone())
            .status(ToolCallStatus::Pending)
            .content(vec![ToolCallContent::from(format!(
                "The agent asks: {}",
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
    asking.lock().remove(&asked.shown_id)?;
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
        Some(option) => QuestionAnswer::Answered {
            answers: vec![Answer {
                id: question.id.clone(),
                selected: vec![option.label.clone()],
                other: None,
            }],
        },
        None => QuestionAnswer::Declined { message: None },
    })
}
