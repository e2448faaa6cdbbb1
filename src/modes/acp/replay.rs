//! `session/load`: the conversation of a resumed session, as the `session/update`
//! notifications that would have shown it live — the user's messages, the answers and
//! their thinking, each tool call with its result.

use super::link::Link;
use super::tool_view;
use crate::protocol::message::{AssistantContent, Content, Message};
use agent_client_protocol::v1::schema::{
    ContentBlock, ContentChunk, ImageContent, SessionUpdate, ToolCall, ToolCallStatus,
    ToolCallUpdate, ToolCallUpdateFields,
};
use serde_json::Value;
use std::collections::HashMap;
use std::path::Path;
use std::sync::Arc;

pub fn replay(link: &Link, history: &[Arc<Message>], cwd: &Path) {
    for update in updates(history, cwd) {
        link.send(update);
    }
}

pub fn updates(history: &[Arc<Message>], cwd: &Path) -> Vec<SessionUpdate> {
    let mut out = Vec::new();
    // Each call's name and arguments, for its result.
    let mut calls: HashMap<&str, (&str, &Value)> = HashMap::new();
    for message in history {
        match message.as_ref() {
            Message::User(user) => {
                for block in &user.content {
                    out.push(SessionUpdate::UserMessageChunk(ContentChunk::new(
                        match block {
                            Content::Text { text } => ContentBlock::from(text.clone()),
                            Content::Image { data, mime_type } => {
                                ContentBlock::Image(ImageContent::new(data, mime_type))
                            }
                        },
                    )));
                }
            }
            Message::Assistant(assistant) => {
                for block in &assistant.content {
                    match block {
                        AssistantContent::Thinking {
                            thinking,
                            redacted: false,
                            ..
                        } => out.push(SessionUpdate::AgentThoughtChunk(ContentChunk::new(
                            ContentBlock::from(thinking.clone()),
                        ))),
                        AssistantContent::Thinking { .. } => {}
                        AssistantContent::WebSearch(search) => {
                            out.push(super::web_search::update(search))
                        }
                        AssistantContent::Text { text } => {
                            out.push(SessionUpdate::AgentMessageChunk(ContentChunk::new(
                                ContentBlock::from(text.clone()),
                            )))
                        }
                        AssistantContent::ToolCall(call) => {
                            calls.insert(&call.id, (&call.name, &call.arguments));
                            out.push(SessionUpdate::ToolCall(
                                ToolCall::new(
                                    call.id.clone(),
                                    tool_view::title(&call.name, &call.arguments),
                                )
                                .name(call.name.clone())
                                .kind(tool_view::kind(&call.name))
                                .status(ToolCallStatus::Pending)
                                .locations(tool_view::locations(
                                    &call.name,
                                    &call.arguments,
                                    None,
                                    cwd,
                                ))
                                .raw_input(call.arguments.clone()),
                            ));
                        }
                    }
                }
                if let Some(refusal) = &assistant.refusal {
                    out.push(SessionUpdate::AgentMessageChunk(ContentChunk::new(
                        ContentBlock::from(refusal.clone()),
                    )));
                }
            }
            Message::ToolResult(result) => {
                let (name, args) = calls
                    .get(result.tool_call_id.as_str())
                    .copied()
                    .unwrap_or((result.tool_name.as_str(), &Value::Null));
                let status = if result.is_error {
                    ToolCallStatus::Failed
                } else {
                    ToolCallStatus::Completed
                };
                out.push(SessionUpdate::ToolCallUpdate(ToolCallUpdate::new(
                    result.tool_call_id.clone(),
                    ToolCallUpdateFields::new()
                        .status(status)
                        .content(tool_view::result_content(
                            name,
                            args,
                            &result.content,
                            result.details.as_ref(),
                            result.is_error,
                            cwd,
                        )),
                )));
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::protocol::message::{AssistantMessage, ToolResultMessage, UserMessage};
    use serde_json::json;

    #[test]
    fn a_conversation_replays_as_the_updates_that_showed_it() {
        let mut answer = AssistantMessage::empty("p", "m");
        answer.content = vec![
            AssistantContent::Thinking {
                thinking: "hmm".into(),
                signature: None,
                redacted: false,
            },
            AssistantContent::Text {
                text: "listing".into(),
            },
            AssistantContent::ToolCall(crate::protocol::message::ToolCall {
                id: "c1".into(),
                name: "bash".into(),
                arguments: json!({"command": "ls"}),
                invalid_arguments: None,
            }),
        ];
        let history = vec![
            Arc::new(Message::User(UserMessage::text("list files"))),
            Arc::new(Message::Assistant(answer)),
            Arc::new(Message::ToolResult(ToolResultMessage {
                tool_call_id: "c1".into(),
                tool_name: "bash".into(),
                content: vec![Content::text("a.txt")],
                details: None,
                is_error: false,
                timestamp: 0,
            })),
        ];
        let kinds: Vec<String> = updates(&history, Path::new("/r"))
            .iter()
            .map(|u| {
                serde_json::to_value(u).unwrap()["sessionUpdate"]
                    .as_str()
                    .unwrap()
                    .to_string()
            })
            .collect();
        assert_eq!(
            kinds,
            [
                "user_message_chunk",
                "agent_thought_chunk",
                "agent_message_chunk",
                "tool_call",
                "tool_call_update"
            ]
        );
    }
}
