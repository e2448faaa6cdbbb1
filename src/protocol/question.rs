//! What the `ask_user` tool asks and what the user answers (docs/protocol.md §3.1
//! `user_question`, §3.4 `answer_question`): questions with options and/or a free answer,
//! and the answer to all of them — or that the user declined to answer.

use serde::{Deserialize, Serialize};

/// One question, as the model asked it (`id` filled in as `q1`, `q2`… when it gave none).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Question {
    pub id: String,
    /// A short label (≤ 16 characters), shown as the question's tab.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub header: Option<String>,
    pub question: String,
    /// The answers to choose from; none: only a free answer.
    #[serde(default)]
    pub options: Vec<QuestionOption>,
    /// Several options may be chosen.
    #[serde(default)]
    pub multi_select: bool,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct QuestionOption {
    pub label: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
}

/// The user's answer to a `user_question`. Serialized as `{"answered": {"answers": […],
/// "message"?: …}}` or `{"declined": {"message": …}}`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", rename_all_fields = "camelCase")]
pub enum QuestionAnswer {
    Answered {
        answers: Vec<Answer>,
        /// A note the model reads after the answers (e.g. a front end saying which
        /// questions it could not show).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        message: Option<String>,
    },
    /// The user chose not to answer (optionally saying why, or what to do instead).
    Declined {
        #[serde(default, skip_serializing_if = "Option::is_none")]
        message: Option<String>,
    },
}

/// The answer to one question: the labels of the chosen options, and a free answer.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Answer {
    pub id: String,
    #[serde(default)]
    pub selected: Vec<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub other: Option<String>,
}

impl Question {
    /// The label shown for the question: its header, or its id.
    pub fn label(&self) -> &str {
        self.header.as_deref().unwrap_or(&self.id)
    }
}

/// Why an answer cannot be taken for these questions (an unknown question or option, two
/// options for a single choice, nothing chosen at all); `None` when it can.
pub fn check_answer(questions: &[Question], answer: &QuestionAnswer) -> Option<String> {
    let QuestionAnswer::Answered { answers, .. } = answer else {
        return None;
    };
    if answers.is_empty() {
        return Some("the answer answers no question; to decline, say so".to_string());
    }
    for answer in answers {
        let Some(question) = questions.iter().find(|q| q.id == answer.id) else {
            let ids: Vec<&str> = questions.iter().map(|q| q.id.as_str()).collect();
            return Some(format!(
                "there is no question `{}` (the questions: {})",
                answer.id,
                ids.join(", ")
            ));
        };
        if let Some(label) = answer
            .selected
            .iter()
            .find(|label| !question.options.iter().any(|o| &o.label == *label))
        {
            return Some(format!(
                "question `{}` has no option `{label}`",
                question.id
            ));
        }
        if answer.selected.len() > 1 && !question.multi_select {
            return Some(format!(
                "question `{}` takes one option, not {}",
                question.id,
                answer.selected.len()
            ));
        }
        if answers.iter().filter(|a| a.id == answer.id).count() > 1 {
            return Some(format!("question `{}` is answered twice", question.id));
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn questions() -> Vec<Question> {
        serde_json::from_value(json!([
            {"id": "db", "question": "Which?", "options": [{"label": "Postgres"}, {"label": "SQLite"}]},
            {"id": "tests", "question": "Which tests?", "multiSelect": true,
             "options": [{"label": "unit"}, {"label": "e2e"}]}
        ]))
        .unwrap()
    }

    fn answered(answers: serde_json::Value) -> QuestionAnswer {
        QuestionAnswer::Answered {
            answers: serde_json::from_value(answers).unwrap(),
            message: None,
        }
    }

    #[test]
    fn answers_name_known_questions_and_options() {
        let q = questions();
        assert_eq!(
            check_answer(&q, &answered(json!([{"id": "db", "selected": ["SQLite"]}]))),
            None
        );
        assert_eq!(
            check_answer(
                &q,
                &answered(
                    json!([{"id": "tests", "selected": ["unit", "e2e"]}, {"id": "db", "other": "MySQL"}])
                )
            ),
            None
        );
        for (bad, why) in [
            (json!([{"id": "x", "selected": []}]), "no question `x`"),
            (
                json!([{"id": "db", "selected": ["Oracle"]}]),
                "no option `Oracle`",
            ),
            (
                json!([{"id": "db", "selected": ["Postgres", "SQLite"]}]),
                "takes one option",
            ),
            (json!([]), "answers no question"),
        ] {
            let error = check_answer(&q, &answered(bad)).unwrap_or_default();
            assert!(error.contains(why), "{error}");
        }
        assert_eq!(
            check_answer(&q, &QuestionAnswer::Declined { message: None }),
            None
        );
    }
}
