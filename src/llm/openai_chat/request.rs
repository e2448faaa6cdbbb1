//! Converts the agent's history into a Chat Completions request body.

use crate::llm::request::{ModelRequest, ThinkingLevel};
use crate::protocol::message::{AssistantContent, Content, Message};
use serde::Serialize;
use serde_json::Value;

#[derive(Serialize)]
struct Body<'a> {
    model: &'a str,
    messages: Vec<ChatMessage<'a>>,
    stream: bool,
    stream_options: StreamOptions,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    tools: Vec<Tool<'a>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    reasoning_effort: Option<&'static str>,
}

#[derive(Serialize)]
struct StreamOptions {
    include_usage: bool,
}

#[derive(Serialize)]
struct Tool<'a> {
    #[serde(rename = "type")]
    kind: &'static str,
    function: Function<'a>,
}

#[derive(Serialize)]
struct Function<'a> {
    name: &'a str,
    description: &'a str,
    parameters: &'a Value,
}

#[derive(Serialize)]
#[serde(tag = "role", rename_all = "lowercase")]
enum ChatMessage<'a> {
    System {
        content: &'a str,
    },
    User {
        content: UserContent<'a>,
    },
    Assistant {
        content: Option<String>,
        #[serde(skip_serializing_if = "Vec::is_empty")]
        tool_calls: Vec<ToolCall<'a>>,
    },
    Tool {
        tool_call_id: &'a str,
        content: String,
    },
}

#[derive(Serialize)]
#[serde(untagged)]
enum UserContent<'a> {
    Text(String),
    Parts(Vec<Part<'a>>),
}

#[derive(Serialize)]
#[serde(tag = "type", rename_all = "snake_case")]
enum Part<'a> {
    Text { text: &'a str },
    ImageUrl { image_url: ImageUrl },
}

#[derive(Serialize)]
struct ImageUrl {
    url: String,
}

#[derive(Serialize)]
struct ToolCall<'a> {
    id: &'a str,
    #[serde(rename = "type")]
    kind: &'static str,
    function: CallFunction<'a>,
}

#[derive(Serialize)]
struct CallFunction<'a> {
    name: &'a str,
    arguments: String,
}

/// The JSON body of one streaming request.
pub fn build_body(request: &ModelRequest<'_>) -> Result<Vec<u8>, serde_json::Error> {
    let mut messages = Vec::with_capacity(request.messages.len() + 1);
    if !request.system_prompt.is_empty() {
        messages.push(ChatMessage::System {
            content: request.system_prompt,
        });
    }
    // Tool messages carry text only: images a tool returned follow its results as a
    // user message, which the model can see.
    let mut tool_images: Vec<Part<'_>> = Vec::new();
    for message in request.messages {
        if !matches!(message.as_ref(), Message::ToolResult(_)) {
            flush_tool_images(&mut tool_images, &mut messages);
        }
        if let Message::ToolResult(result) = message.as_ref() {
            tool_images.extend(result.content.iter().filter_map(image_part));
        }
        convert(message, &mut messages);
    }
    flush_tool_images(&mut tool_images, &mut messages);
    let body = Body {
        model: &request.model.id,
        messages,
        stream: true,
        stream_options: StreamOptions {
            include_usage: true,
        },
        tools: request
            .tools
            .iter()
            .map(|tool| Tool {
                kind: "function",
                function: Function {
                    name: &tool.name,
                    description: &tool.description,
                    parameters: &tool.parameters,
                },
            })
            .collect(),
        reasoning_effort: request.reasoning().map(ThinkingLevel::as_str),
    };
    serde_json::to_vec(&body)
}

fn convert<'a>(message: &'a Message, out: &mut Vec<ChatMessage<'a>>) {
    match message {
        Message::User(user) => out.push(ChatMessage::User {
            content: user_content(&user.content),
        }),
        Message::Assistant(assistant) => {
            let mut text = String::new();
            let mut tool_calls = Vec::new();
            for block in &assistant.content {
                match block {
                    AssistantContent::Text { text: t } => text.push_str(t),
                    // Chat Completions has no field for replaying reasoning.
                    AssistantContent::Thinking { .. } => {}
                    AssistantContent::ToolCall(call) => tool_calls.push(ToolCall {
                        id: &call.id,
                        kind: "function",
                        function: CallFunction {
                            name: &call.name,
                            arguments: match &call.invalid_arguments {
                                Some(raw) => raw.clone(),
                                None => call.arguments.to_string(),
                            },
                        },
                    }),
                }
            }
            // A response with no text and no calls (a failed attempt, reasoning only, an
            // empty completion) carries nothing the API accepts: `content` may only be null
            // next to tool calls.
            if text.is_empty() && tool_calls.is_empty() {
                return;
            }
            out.push(ChatMessage::Assistant {
                content: (!text.is_empty()).then_some(text),
                tool_calls,
            });
        }
        Message::ToolResult(result) => out.push(ChatMessage::Tool {
            tool_call_id: &result.tool_call_id,
            content: crate::protocol::message::join_text(&result.content),
        }),
    }
}

fn image_part(content: &Content) -> Option<Part<'_>> {
    match content {
        Content::Image { data, mime_type } => Some(Part::ImageUrl {
            image_url: ImageUrl {
                url: format!("data:{mime_type};base64,{data}"),
            },
        }),
        Content::Text { .. } => None,
    }
}

fn flush_tool_images<'a>(images: &mut Vec<Part<'a>>, out: &mut Vec<ChatMessage<'a>>) {
    if images.is_empty() {
        return;
    }
    let mut parts = vec![Part::Text {
        text: "The tool results above returned these images.",
    }];
    parts.append(images);
    out.push(ChatMessage::User {
        content: UserContent::Parts(parts),
    });
}

fn user_content(content: &[Content]) -> UserContent<'_> {
    if let [Content::Text { text }] = content {
        return UserContent::Text(text.clone());
    }
    UserContent::Parts(
        content
            .iter()
            .map(|block| match block {
                Content::Text { text } => Part::Text { text },
                Content::Image { data, mime_type } => Part::ImageUrl {
                    image_url: ImageUrl {
                        url: format!("data:{mime_type};base64,{data}"),
                    },
                },
            })
            .collect(),
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::llm::model::ModelInfo;
    use crate::protocol::message::{
        AssistantContent, AssistantMessage, ToolCall, ToolResultMessage, UserMessage,
    };
    use serde_json::{Value, json};
    use std::sync::Arc;

    #[test]
    fn images_from_tools_follow_the_results_as_a_user_message() {
        let mut call = AssistantMessage::empty("p", "m");
        call.content.push(AssistantContent::ToolCall(ToolCall {
            id: "c1".into(),
            name: "read".into(),
            arguments: json!({"path": "a.png"}),
            invalid_arguments: None,
        }));
        let result = ToolResultMessage {
            tool_call_id: "c1".into(),
            tool_name: "read".into(),
            content: vec![
                Content::text("Read image a.png"),
                Content::Image {
                    data: "AAAA".into(),
                    mime_type: "image/png".into(),
                },
            ],
            details: None,
            is_error: false,
            timestamp: 0,
        };
        let messages = vec![
            Arc::new(Message::User(UserMessage::text("look"))),
            Arc::new(Message::Assistant(call)),
            Arc::new(Message::ToolResult(result)),
            Arc::new(Message::User(UserMessage::text("and?"))),
        ];
        let model = ModelInfo::unknown("m");
        let request = ModelRequest {
            model: &model,
            system_prompt: "",
            messages: &messages,
            tools: &[],
            thinking: ThinkingLevel::Off,
        };
        let body: Value = serde_json::from_slice(&build_body(&request).unwrap()).unwrap();
        let roles: Vec<&str> = body["messages"]
            .as_array()
            .unwrap()
            .iter()
            .map(|m| m["role"].as_str().unwrap())
            .collect();
        assert_eq!(roles, ["user", "assistant", "tool", "user", "user"]);
        assert_eq!(body["messages"][2]["content"], "Read image a.png");
        assert_eq!(
            body["messages"][3]["content"][1],
            json!({"type": "image_url", "image_url": {"url": "data:image/png;base64,AAAA"}})
        );
    }
}
