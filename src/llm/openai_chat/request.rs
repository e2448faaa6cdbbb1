//! Converts the agent's history into a Chat Completions request body, with the model's output
//! limit (a server without a default of its own otherwise generates without end) and images
//! only for a model that takes them.

use crate::llm::provider::host_of;
use crate::llm::request::{
    IMAGE_PLACEHOLDER, ModelRequest, ThinkingLevel, call_arguments, text_bytes,
};
use crate::llm::wire_text::{DataUrl, Joined, JsonText, body_capacity};
use crate::protocol::message::{AssistantContent, Content, Message};
use serde::Serialize;
use serde_json::Value;
use std::borrow::Cow;

/// Which field carries the output limit. OpenAI itself deprecated `max_tokens` and its
/// reasoning models refuse it; the servers that mirror the API (llama.cpp, vLLM, Ollama,
/// LiteLLM, OpenRouter...) all read `max_tokens`, not all the newer name.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum OutputLimit {
    MaxTokens,
    MaxCompletionTokens,
}

impl OutputLimit {
    pub fn for_base_url(base_url: &str) -> Self {
        let host = host_of(base_url);
        if host == "api.openai.com" || host.ends_with(".openai.azure.com") {
            OutputLimit::MaxCompletionTokens
        } else {
            OutputLimit::MaxTokens
        }
    }
}

#[derive(Serialize)]
struct Body<'a> {
    model: &'a str,
    messages: Vec<ChatMessage<'a>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    max_tokens: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    max_completion_tokens: Option<u64>,
    stream: bool,
    stream_options: StreamOptions,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    tools: Vec<Tool<'a>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    reasoning_effort: Option<&'static str>,
    /// OpenAI's own API only: servers that mirror it may refuse fields they do not know.
    #[serde(skip_serializing_if = "Option::is_none")]
    prompt_cache_key: Option<&'a str>,
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
        content: Option<Joined<'a>>,
        #[serde(skip_serializing_if = "Vec::is_empty")]
        tool_calls: Vec<ToolCall<'a>>,
    },
    Tool {
        tool_call_id: &'a str,
        content: Joined<'a>,
    },
}

#[derive(Serialize)]
#[serde(untagged)]
enum UserContent<'a> {
    Text(&'a str),
    Parts(Vec<Part<'a>>),
}

#[derive(Serialize)]
#[serde(tag = "type", rename_all = "snake_case")]
enum Part<'a> {
    Text { text: &'a str },
    ImageUrl { image_url: ImageUrl<'a> },
}

#[derive(Serialize)]
struct ImageUrl<'a> {
    url: DataUrl<'a>,
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
    arguments: JsonText<'a>,
}

/// The JSON body of one streaming request, serialized from the borrowed history (no message
/// text is copied on the way) into a buffer sized for it.
pub fn build_body(
    request: &ModelRequest<'_>,
    output_limit: OutputLimit,
) -> Result<Vec<u8>, serde_json::Error> {
    let images = request.model.images;
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
        if let Message::ToolResult(result) = message.as_ref()
            && images
        {
            tool_images.extend(result.content.iter().filter_map(image_part));
        }
        convert(message, images, &mut messages);
    }
    flush_tool_images(&mut tool_images, &mut messages);
    let limit = request.model.max_output_tokens;
    let body = Body {
        model: &request.model.id,
        messages,
        max_tokens: (output_limit == OutputLimit::MaxTokens).then_some(limit),
        max_completion_tokens: (output_limit == OutputLimit::MaxCompletionTokens).then_some(limit),
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
        prompt_cache_key: request
            .cache_key
            .filter(|_| output_limit == OutputLimit::MaxCompletionTokens),
    };
    let mut out = Vec::with_capacity(body_capacity(text_bytes(request)));
    serde_json::to_writer(&mut out, &body)?;
    Ok(out)
}

fn convert<'a>(message: &'a Message, images: bool, out: &mut Vec<ChatMessage<'a>>) {
    match message {
        Message::User(user) => out.push(ChatMessage::User {
            content: user_content(&user.content, images),
        }),
        Message::Assistant(assistant) => {
            let mut text = Joined::default();
            let mut tool_calls = Vec::new();
            for block in &assistant.content {
                match block {
                    AssistantContent::Text { text: t } => text.push(t),
                    // Chat Completions has no field for replaying reasoning, and no web
                    // search of its own to replay one to.
                    AssistantContent::Thinking { .. } | AssistantContent::WebSearch(_) => {}
                    AssistantContent::ToolCall(call) => tool_calls.push(ToolCall {
                        id: &call.id,
                        kind: "function",
                        function: CallFunction {
                            name: &call.name,
                            arguments: match call_arguments(call) {
                                Cow::Borrowed(arguments) => JsonText(Some(arguments)),
                                // Nothing valid to send back: an empty object.
                                Cow::Owned(_) => JsonText(None),
                            },
                        },
                    }),
                }
            }
            // A refusal was the model's answer; every server takes it back as content.
            if let Some(refusal) = assistant.refusal.as_deref().filter(|r| !r.is_empty()) {
                if !text.is_empty() {
                    text.push("\n");
                }
                text.push(refusal);
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
        Message::ToolResult(result) => {
            let mut content = Joined::lines(&result.content);
            let has_images = result
                .content
                .iter()
                .any(|c| matches!(c, Content::Image { .. }));
            if has_images && !images {
                if !content.is_empty() {
                    content.push("\n");
                }
                content.push(IMAGE_PLACEHOLDER);
            }
            out.push(ChatMessage::Tool {
                tool_call_id: &result.tool_call_id,
                content,
            })
        }
    }
}

fn image_part(content: &Content) -> Option<Part<'_>> {
    match content {
        Content::Image { data, mime_type } => Some(Part::ImageUrl {
            image_url: ImageUrl {
                url: DataUrl { mime_type, data },
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

fn user_content(content: &[Content], images: bool) -> UserContent<'_> {
    if let [Content::Text { text }] = content {
        return UserContent::Text(text);
    }
    UserContent::Parts(
        content
            .iter()
            .map(|block| match block {
                Content::Text { text } => Part::Text { text },
                Content::Image { .. } if !images => Part::Text {
                    text: IMAGE_PLACEHOLDER,
                },
                Content::Image { data, mime_type } => Part::ImageUrl {
                    image_url: ImageUrl {
                        url: DataUrl { mime_type, data },
                    },
                },
            })
            .collect(),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn openai_itself_gets_the_newer_limit_field() {
        for url in [
            "https://api.openai.com/v1",
            "https://team.openai.azure.com/openai/v1",
        ] {
            assert_eq!(
                OutputLimit::for_base_url(url),
                OutputLimit::MaxCompletionTokens,
                "{url}"
            );
        }
        for url in [
            "http://127.0.0.1:8080/v1",
            "https://openrouter.ai/api/v1",
            "https://api.groq.com/openai/v1",
        ] {
            assert_eq!(
                OutputLimit::for_base_url(url),
                OutputLimit::MaxTokens,
                "{url}"
            );
        }
    }
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
        let model = ModelInfo {
            images: true,
            ..ModelInfo::unknown("m")
        };
        let request = ModelRequest {
            model: &model,
            system_prompt: "",
            messages: &messages,
            tools: &[],
            thinking: ThinkingLevel::Off,
            web_search: None,
            cache_key: None,
        };
        let body: Value =
            serde_json::from_slice(&build_body(&request, OutputLimit::MaxTokens).unwrap()).unwrap();
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
