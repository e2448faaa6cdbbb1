//! The Responses request body, used statelessly (`store: false`, the full history each
//! time): the system prompt as `instructions`, the history as input items (messages,
//! `function_call` items with their `call_id`, `function_call_output` items), tools as
//! non-strict functions, and the reasoning effort. Reasoning items come back only to the
//! model that produced them, with their id and encrypted content (the only way to replay
//! reasoning without server-side storage); other thinking is dropped. Replayed items carry
//! the fields the API's own input types require (`id`, `status`, `annotations`, `detail`).
//! With `[web] search` on, the built-in `web_search` tool is offered (with the sources of
//! each search included) and this provider's earlier `web_search_call` items go back as they
//! came; other searches are left out.

use super::signature;
use crate::llm::request::{
    IMAGE_PLACEHOLDER, ModelRequest, call_arguments, replayed_search, same_model, text_bytes,
};
use crate::llm::wire_text::{DataUrl, Joined, JsonText, body_capacity};
use crate::protocol::message::{AssistantContent, AssistantMessage, Content, Message};
use serde::Serialize;
use serde_json::Value;
use std::borrow::Cow;

#[derive(Serialize)]
struct Body<'a> {
    model: &'a str,
    #[serde(skip_serializing_if = "str::is_empty")]
    instructions: &'a str,
    input: Vec<Item<'a>>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    tools: Vec<Tool<'a>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    reasoning: Option<Reasoning>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    include: Vec<&'static str>,
    stream: bool,
    store: bool,
    /// Keeps a conversation's requests on the same prompt cache.
    #[serde(skip_serializing_if = "Option::is_none")]
    prompt_cache_key: Option<&'a str>,
}

#[derive(Serialize)]
#[serde(untagged)]
enum Tool<'a> {
    Function {
        #[serde(rename = "type")]
        kind: &'static str,
        name: &'a str,
        description: &'a str,
        parameters: &'a Value,
        /// Strict mode (the Responses default) rejects schemas with optional properties.
        strict: bool,
    },
    /// A built-in tool (`web_search`).
    BuiltIn {
        #[serde(rename = "type")]
        kind: &'static str,
    },
}

#[derive(Serialize)]
struct Reasoning {
    effort: &'static str,
    summary: &'static str,
}

#[derive(Serialize)]
#[serde(tag = "type", rename_all = "snake_case")]
enum Item<'a> {
    Message {
        role: &'static str,
        content: Vec<Part<'a>>,
    },
    /// An assistant message replayed as the output item it was.
    #[serde(rename = "message")]
    OutputMessage {
        id: String,
        role: &'static str,
        status: &'static str,
        content: Vec<Part<'a>>,
    },
    Reasoning {
        id: Cow<'a, str>,
        summary: Vec<Part<'a>>,
        encrypted_content: Cow<'a, str>,
    },
    FunctionCall {
        call_id: &'a str,
        name: &'a str,
        arguments: JsonText<'a>,
    },
    FunctionCallOutput {
        call_id: &'a str,
        output: Output<'a>,
    },
    /// An output item sent back as it came (a `web_search_call`).
    #[serde(untagged)]
    Verbatim(&'a Value),
}

#[derive(Serialize)]
#[serde(tag = "type", rename_all = "snake_case")]
enum Part<'a> {
    InputText {
        text: &'a str,
    },
    InputImage {
        image_url: DataUrl<'a>,
        detail: &'static str,
    },
    OutputText {
        text: &'a str,
        annotations: [(); 0],
    },
    SummaryText {
        text: &'a str,
    },
    Refusal {
        refusal: &'a str,
    },
}

#[derive(Serialize)]
#[serde(untagged)]
enum Output<'a> {
    Text(Joined<'a>),
    /// Text and images, for results that contain images.
    Parts(Vec<Part<'a>>),
}

/// The JSON body of one streaming request, serialized from the borrowed history (no message
/// text is copied on the way) into a buffer sized for it. `provider` is the name of the
/// provider being asked, to decide which reasoning items may be replayed.
pub fn build_body(
    request: &ModelRequest<'_>,
    provider: &str,
) -> Result<Vec<u8>, serde_json::Error> {
    let mut input = Vec::with_capacity(request.messages.len());
    let images = request.model.images;
    for message in request.messages {
        match message.as_ref() {
            Message::User(user) => {
                let content = input_parts(&user.content, images);
                if !content.is_empty() {
                    input.push(Item::Message {
                        role: "user",
                        content,
                    });
                }
            }
            Message::Assistant(assistant) => {
                assistant_items(request, assistant, provider, &mut input)
            }
            Message::ToolResult(result) => {
                let has_images = result
                    .content
                    .iter()
                    .any(|c| matches!(c, Content::Image { .. }));
                let output = if has_images {
                    Output::Parts(input_parts(&result.content, images))
                } else {
                    Output::Text(Joined::lines(&result.content))
                };
                input.push(Item::FunctionCallOutput {
                    call_id: &result.tool_call_id,
                    output,
                });
            }
        }
    }
    let reasoning = request.reasoning().map(|level| Reasoning {
        effort: level.as_str(),
        summary: "auto",
    });
    let mut include = match reasoning {
        Some(_) => vec!["reasoning.encrypted_content"],
        None => Vec::new(),
    };
    if request.web_search.is_some() {
        include.push("web_search_call.action.sources");
    }
    let body = Body {
        model: &request.model.id,
        instructions: request.system_prompt,
        input,
        tools: request
            .tools
            .iter()
            .map(|tool| Tool::Function {
                kind: "function",
                name: &tool.name,
                description: &tool.description,
                parameters: &tool.parameters,
                strict: false,
            })
            .chain(
                request
                    .web_search
                    .map(|_| Tool::BuiltIn { kind: "web_search" }),
            )
            .collect(),
        reasoning,
        include,
        stream: true,
        store: false,
        prompt_cache_key: request.cache_key,
    };
    let mut out = Vec::with_capacity(body_capacity(text_bytes(request)));
    serde_json::to_writer(&mut out, &body)?;
    Ok(out)
}

fn input_parts(content: &[Content], images: bool) -> Vec<Part<'_>> {
    content
        .iter()
        .filter_map(|block| match block {
            Content::Text { text } if text.is_empty() => None,
            Content::Text { text } => Some(Part::InputText { text }),
            Content::Image { .. } if !images => Some(Part::InputText {
                text: IMAGE_PLACEHOLDER,
            }),
            Content::Image { data, mime_type } => Some(Part::InputImage {
                image_url: DataUrl { mime_type, data },
                detail: "auto",
            }),
        })
        .collect()
}

/// An assistant message as output items, in the order the model produced them: reasoning
/// before the call it led to, consecutive text blocks in one message item. A message item
/// gets an id made from its position, which the API's input type asks for.
fn assistant_items<'a>(
    request: &ModelRequest<'_>,
    message: &'a AssistantMessage,
    provider: &str,
    input: &mut Vec<Item<'a>>,
) {
    let replay = same_model(message, provider, &request.model.id);
    let mut text: Vec<Part<'a>> = Vec::new();
    let flush = |text: &mut Vec<Part<'a>>, input: &mut Vec<Item<'a>>| {
        if !text.is_empty() {
            let id = format!("msg_{}", input.len());
            input.push(Item::OutputMessage {
                id,
                role: "assistant",
                status: "completed",
                content: std::mem::take(text),
            });
        }
    };
    for block in &message.content {
        match block {
            AssistantContent::Text { text: t } if !t.is_empty() => text.push(Part::OutputText {
                text: t,
                annotations: [],
            }),
            AssistantContent::Text { .. } => {}
            AssistantContent::Thinking {
                thinking,
                signature: Some(stored),
                redacted: false,
            } if replay => {
                // Only a reasoning item whose id is known can be sent back.
                let (Some(id), encrypted_content) = signature::decode(stored) else {
                    continue;
                };
                if encrypted_content.is_empty() {
                    continue;
                }
                flush(&mut text, input);
                let summary = match thinking.as_str() {
                    "" => Vec::new(),
                    text => vec![Part::SummaryText { text }],
                };
                input.push(Item::Reasoning {
                    id,
                    summary,
                    encrypted_content,
                });
            }
            AssistantContent::Thinking { .. } => {}
            AssistantContent::WebSearch(search) => {
                if let Some(items) =
                    replayed_search(request, message, search, provider, "openai-responses")
                {
                    flush(&mut text, input);
                    input.extend(items.iter().map(Item::Verbatim));
                }
            }
            AssistantContent::ToolCall(call) => {
                flush(&mut text, input);
                input.push(Item::FunctionCall {
                    call_id: &call.id,
                    name: &call.name,
                    arguments: match call_arguments(call) {
                        Cow::Borrowed(arguments) => JsonText(Some(arguments)),
                        // Nothing valid to send back: an empty object.
                        Cow::Owned(_) => JsonText(None),
                    },
                });
            }
        }
    }
    if let Some(refusal) = message.refusal.as_deref().filter(|r| !r.is_empty()) {
        text.push(Part::Refusal { refusal });
    }
    flush(&mut text, input);
}
