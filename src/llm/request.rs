//! What the loop asks of a provider: one model call's inputs, independent of the wire API.

use super::model::ModelInfo;
use crate::protocol::message::{
    AssistantContent, AssistantMessage, Content, Message, ToolCall, WebSearch, WebSearchStatus,
};
use serde::Serialize;
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

pub use crate::protocol::command::ThinkingLevel;

/// The provider's own web search, offered to the model beside the tools (`[web] search`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct WebSearchTool {
    /// Searches per request at most (Anthropic's `max_uses`).
    pub max_uses: u32,
}

pub struct ModelRequest<'a> {
    pub model: &'a ModelInfo,
    pub system_prompt: &'a str,
    pub messages: &'a [Arc<Message>],
    pub tools: &'a [ToolSpec],
    pub thinking: ThinkingLevel,
    /// `None`: no web search is offered (the default), and none is replayed.
    pub web_search: Option<WebSearchTool>,
    /// Routes requests of one conversation to the same prompt cache (OpenAI's
    /// `prompt_cache_key`): the session's id. `None`: not sent.
    pub cache_key: Option<&'a str>,
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

/// The provider blocks of a web search to send back: only to the provider and wire API that
/// produced them, only while web search is on (the blocks call a tool the request must
/// offer), and only for a search that got its outcome (a call without its result is
/// rejected). Everything else about the search is left out of the request.
pub fn replayed_search<'a>(
    request: &ModelRequest<'_>,
    message: &AssistantMessage,
    search: &'a WebSearch,
    provider: &str,
    api: &str,
) -> Option<&'a [Value]> {
    let replay = request.web_search.is_some()
        && message.provider == provider
        && search.api == api
        && search.status != WebSearchStatus::InProgress
        && !search.provider_blocks.is_empty();
    replay.then_some(search.provider_blocks.as_slice())
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
                // Mostly the results' encrypted content, a few KB per page.
                AssistantContent::WebSearch(search) => {
                    search.query.len() + 4096 * search.provider_blocks.len().max(1)
                }
            })
            .sum(),
    }
}
