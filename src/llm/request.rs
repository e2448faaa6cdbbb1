//! What the loop asks of a provider: one model call's inputs, independent of the wire API.

use super::model::ModelInfo;
use crate::protocol::message::{AssistantContent, AssistantMessage, Content, Message, ToolCall};
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
use std::borrow::Cow;
use std::sync::Arc;

/// What stands in for an image sent to a model that does not take image input.
pub const IMAGE_PLACEHOLDER: &str =
    "[An image was here. It is not sent: this model does not take image input.]";

/// A tool as the model sees it.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct ToolSpec {
    pub name: String,
    pub description: String,
    /// JSON Schema of the arguments object.
    pub parameters: Value,
}

#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize, clap::ValueEnum)]
#[serde(rename_all = "lowercase")]
pub enum ThinkingLevel {
    #[default]
    Off,
    Minimal,
    Low,
    Medium,
    High,
}

impl ThinkingLevel {
    pub fn as_str(self) -> &'static str {
        match self {
            ThinkingLevel::Off => "off",
            ThinkingLevel::Minimal => "minimal",
            ThinkingLevel::Low => "low",
            ThinkingLevel::Medium => "medium",
            ThinkingLevel::High => "high",
        }
    }
}

pub struct ModelRequest<'a> {
    pub model: &'a ModelInfo,
    pub system_prompt: &'a str,
    pub messages: &'a [Arc<Message>],
    pub tools: &'a [ToolSpec],
    pub thinking: ThinkingLevel,
}

impl ModelRequest<'_> {
    /// The level to ask for, or `None` when no reasoning parameter may be sent: thinking is
    /// off, or the model is known not to take one.
    pub fn reasoning(&self) -> Option<ThinkingLevel> {
        match self.thinking {
            ThinkingLevel::Off => None,
            _ if !self.model.reasoning => None,
            level => Some(level),
        }
    }
}

/// Whether an earlier assistant message came from the provider and model being asked now:
/// only then are its signed thinking blocks / encrypted reasoning sent back (another model
/// cannot verify them).
pub fn same_model(message: &AssistantMessage, provider: &str, model: &str) -> bool {
    message.provider == provider && message.model == model
}

/// A call's arguments as the request replays them: the model's object, or `{}` for a call
/// whose argument text was cut off (by the output limit or an abort) or is not an object.
/// Such a call never ran and its result says so; its raw text would make the request
/// invalid JSON for the server, and every later request of the session with it.
pub fn call_arguments(call: &ToolCall) -> Cow<'_, Value> {
    if call.invalid_arguments.is_none() && call.arguments.is_object() {
        Cow::Borrowed(&call.arguments)
    } else {
        Cow::Owned(Value::Object(Map::new()))
    }
}

/// The bytes of text a request carries (the system prompt and every message): what the size
/// of its body follows, for sizing the buffer it is serialized into.
pub fn text_bytes(request: &ModelRequest<'_>) -> usize {
    request
        .messages
        .iter()
        .fold(request.system_prompt.len(), |sum, message| {
            sum.saturating_add(message_text_bytes(message))
        })
}

fn message_text_bytes(message: &Message) -> usize {
    let content = |content: &[Content]| -> usize {
        content
            .iter()
            .map(|block| match block {
                Content::Text { text } => text.len(),
                Content::Image { data, .. } => data.len(),
            })
            .sum()
    };
    match message {
        Message::User(user) => content(&user.content),
        Message::ToolResult(result) => content(&result.content),
        Message::Assistant(assistant) => assistant
            .content
            .iter()
            .map(|block| match block {
                AssistantContent::Text { text } => text.len(),
                AssistantContent::Thinking {
                    thinking,
                    signature,
                    ..
                } => thinking.len() + signature.as_ref().map_or(0, String::len),
                // The arguments' size is unknown until serialized; most are short.
                AssistantContent::ToolCall(call) => call.name.len() + 128,
            })
            .sum(),
    }
}
