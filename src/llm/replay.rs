//! The history as every wire API accepts it. A session can hold what no API takes back as
//! it is: a tool call whose result was never recorded (the agent stopped while it ran), a
//! result whose call is gone (cut away, or never there). Sent verbatim, one such message
//! fails every later request of the session (servers answer 400 or 500 to the same history
//! forever), so each request gets a history where every call is followed by exactly one
//! result: a missing one is filled in with an error result, a stray one is left out. Only
//! the pairing changes; messages are shared, not copied.

use crate::protocol::message::{Message, ToolResultMessage};
use std::sync::Arc;

/// What a call whose result is missing is answered with.
pub const MISSING_RESULT: &str =
    "No result was recorded for this call (the agent stopped before it finished).";

pub fn prepare(messages: &[Arc<Message>]) -> Vec<Arc<Message>> {
    let mut out = Vec::with_capacity(messages.len());
    let mut index = 0;
    while let Some(message) = messages.get(index) {
        index += 1;
        match message.as_ref() {
            Message::User(_) => out.push(message.clone()),
            Message::ToolResult(result) => {
                tracing::debug!(call = %result.tool_call_id, "a tool result without its call is not sent");
            }
            Message::Assistant(assistant) => {
                out.push(message.clone());
                let calls: Vec<_> = assistant.tool_calls().collect();
                let mut answered = vec![false; calls.len()];
                // The results that follow answer the calls, in any order, once each.
                while let Some(next) = messages.get(index) {
                    let Message::ToolResult(result) = next.as_ref() else {
                        break;
                    };
                    index += 1;
                    let call = calls
                        .iter()
                        .zip(answered.iter_mut())
                        .find(|(call, done)| !**done && call.id == result.tool_call_id);
                    match call {
                        Some((_, done)) => {
                            *done = true;
                            out.push(next.clone());
                        }
                        None => tracing::debug!(
                            call = %result.tool_call_id,
                            "a tool result that answers no call of the message before it is not sent"
                        ),
                    }
                }
                for (call, _) in calls.iter().zip(&answered).filter(|(_, done)| !**done) {
                    let mut missing = ToolResultMessage::error(call, MISSING_RESULT);
                    missing.timestamp = assistant.timestamp;
                    out.push(Arc::new(Message::ToolResult(missing)));
                }
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::protocol::message::{
        AssistantContent, AssistantMessage, Content, ToolCall, UserMessage,
    };
    use serde_json::json;

    fn user(text: &str) -> Arc<Message> {
        Arc::new(Message::User(UserMessage::text(text)))
    }

    fn calls(ids: &[&str]) -> Arc<Message> {
        let mut message = AssistantMessage::empty("p", "m");
        for id in ids {
            message.content.push(AssistantContent::ToolCall(ToolCall {
                id: id.to_string(),
                name: "read".into(),
                arguments: json!({}),
                invalid_arguments: None,
            }));
        }
        Arc::new(Message::Assistant(message))
    }

    fn result(id: &str) -> Arc<Message> {
        Arc::new(Message::ToolResult(ToolResultMessage {
            tool_call_id: id.into(),
            tool_name: "read".into(),
            content: vec![Content::text(format!("result of {id}"))],
            details: None,
            is_error: false,
            timestamp: 0,
        }))
    }

    fn shape(messages: &[Arc<Message>]) -> Vec<String> {
        messages
            .iter()
            .map(|m| match m.as_ref() {
                Message::User(u) => format!("user:{}", u.plain_text()),
                Message::Assistant(a) => format!("calls:{}", a.tool_calls().count()),
                Message::ToolResult(r) if r.is_error => format!("error:{}", r.tool_call_id),
                Message::ToolResult(r) => format!("result:{}", r.tool_call_id),
            })
            .collect()
    }

    #[test]
    fn a_whole_history_is_sent_as_it_is() {
        let history = vec![user("go"), calls(&["a", "b"]), result("b"), result("a")];
        let prepared = prepare(&history);
        assert_eq!(
            shape(&prepared),
            ["user:go", "calls:2", "result:b", "result:a"]
        );
        assert!(
            prepared
                .iter()
                .zip(&history)
                .all(|(a, b)| Arc::ptr_eq(a, b))
        );
    }

    #[test]
    fn missing_results_are_filled_in_and_stray_ones_left_out() {
        let history = vec![
            result("stray"),
            user("go"),
            calls(&["a", "b"]),
            result("a"),
            result("a"),
            user("and then?"),
            calls(&["c"]),
        ];
        assert_eq!(
            shape(&prepare(&history)),
            [
                "user:go",
                "calls:2",
                "result:a",
                "error:b",
                "user:and then?",
                "calls:1",
                "error:c"
            ]
        );
    }
}
