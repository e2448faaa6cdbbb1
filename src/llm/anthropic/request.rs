//! The Messages request body: model, `max_tokens`, the system prompt as top-level `system`,
//! tools, the thinking budget, and the history converted to strictly alternating turns.
//! Conversion rules: tool calls become `tool_use` blocks and tool results `tool_result`
//! blocks, all results of one round (and any user message after them) share one user turn;
//! signed thinking is sent back only to the model that wrote it, other thinking becomes
//! plain text, and redacted thinking from another model is dropped. With `[web] search` on,
//! the server's `web_search` tool is offered and earlier searches of this provider go back
//! as the `server_tool_use` / `web_search_tool_result` blocks they came as (other searches
//! are left out). The system prompt and
//! the newest user turn carry cache breakpoints, so each request re-reads the previous
//! one's prefix from Anthropic's prompt cache.

use crate::llm::request::{
    IMAGE_PLACEHOLDER, ModelRequest, ThinkingLevel, call_arguments, replayed_search, same_model,
    text_bytes,
};
use crate::llm::wire_text::body_capacity;
use crate::protocol::message::{
    AssistantContent, AssistantMessage, Content, Message, ToolResultMessage,
};
use serde::Serialize;
use serde_json::Value;
use std::borrow::Cow;

/// Output tokens kept for the answer itself when a thinking budget is set.
const ANSWER_TOKENS: u64 = 4096;
/// The smallest thinking budget the API accepts.
const MIN_BUDGET: u64 = 1024;

#[derive(Serialize)]
struct Body<'a> {
    model: &'a str,
    max_tokens: u64,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    system: Vec<Block<'a>>,
    messages: Vec<Turn<'a>>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    tools: Vec<Tool<'a>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    thinking: Option<Thinking>,
    stream: bool,
}

#[derive(Serialize)]
#[serde(untagged)]
enum Tool<'a> {
    Function {
        name: &'a str,
        description: &'a str,
        input_schema: &'a Value,
    },
    /// Anthropic's own web search (a server tool).
    Server {
        #[serde(rename = "type")]
        kind: &'static str,
        name: &'static str,
        max_uses: u32,
    },
}

/// The version of the web search server tool asked for.
const WEB_SEARCH_TOOL: &str = "web_search_20250305";

#[derive(Serialize)]
struct Thinking {
    #[serde(rename = "type")]
    kind: &'static str,
    budget_tokens: u64,
}

#[derive(Serialize)]
struct Turn<'a> {
    role: &'static str,
    content: Vec<Block<'a>>,
}

#[derive(Serialize)]
#[serde(tag = "type", rename_all = "snake_case")]
enum Block<'a> {
    Text {
        text: &'a str,
        #[serde(skip_serializing_if = "Option::is_none")]
        cache_control: Option<CacheControl>,
    },
    Image {
        source: ImageSource<'a>,
        #[serde(skip_serializing_if = "Option::is_none")]
        cache_control: Option<CacheControl>,
    },
    Thinking {
        thinking: &'a str,
        signature: &'a str,
    },
    RedactedThinking {
        data: &'a str,
    },
    ToolUse {
        id: Cow<'a, str>,
        name: &'a str,
        input: Cow<'a, Value>,
    },
    ToolResult {
        tool_use_id: Cow<'a, str>,
        content: Vec<Block<'a>>,
        is_error: bool,
        #[serde(skip_serializing_if = "Option::is_none")]
        cache_control: Option<CacheControl>,
    },
    /// A provider block sent back as it came (a web search's).
    #[serde(untagged)]
    Verbatim(&'a Value),
}

#[derive(Serialize)]
struct ImageSource<'a> {
    #[serde(rename = "type")]
    kind: &'static str,
    media_type: &'a str,
    data: &'a str,
}

#[derive(Clone, Copy, Serialize)]
struct CacheControl {
    #[serde(rename = "type")]
    kind: &'static str,
}

const EPHEMERAL: CacheControl = CacheControl { kind: "ephemeral" };

/// Anthropic allows four cache breakpoints per request: the system prompt (whose prefix holds
/// the tools), the last user turn, and the latest tool results at least this long (bytes of
/// text) — a later request that no longer reaches back to the previous last user turn still
/// reads them from the cache.
const MAX_BREAKPOINTS: usize = 4;
const LONG_TOOL_RESULT: usize = 8 * 1024;

impl Block<'_> {
    fn has_breakpoint(&self) -> bool {
        match self {
            Block::Text { cache_control, .. }
            | Block::Image { cache_control, .. }
            | Block::ToolResult { cache_control, .. } => cache_control.is_some(),
            _ => false,
        }
    }

    /// A tool result's text, in bytes (0 for any other block).
    fn result_len(&self) -> usize {
        match self {
            Block::ToolResult { content, .. } => content
                .iter()
                .map(|block| match block {
                    Block::Text { text, .. } => text.len(),
                    _ => 0,
                })
                .sum(),
            _ => 0,
        }
    }

    /// Mark the block as the end of a cached prefix; `false` for blocks that cannot be.
    fn set_cache_breakpoint(&mut self) -> bool {
        match self {
            Block::Text { cache_control, .. }
            | Block::Image { cache_control, .. }
            | Block::ToolResult { cache_control, .. } => {
                *cache_control = Some(EPHEMERAL);
                true
            }
            _ => false,
        }
    }
}

/// The JSON body of one streaming request, serialized from the borrowed history (no message
/// text is copied on the way) into a buffer sized for it. `provider` is the name of the
/// provider being asked (the `provider` of the messages it produced), to decide what
/// thinking to replay.
pub fn build_body(
    request: &ModelRequest<'_>,
    provider: &str,
) -> Result<Vec<u8>, serde_json::Error> {
    let mut turns: Vec<Turn> = Vec::with_capacity(request.messages.len());
    let images = request.model.images;
    for message in request.messages {
        match message.as_ref() {
            Message::User(user) => {
                push_turn(&mut turns, "user", content_blocks(&user.content, images))
            }
            Message::Assistant(assistant) => {
                let blocks = assistant_blocks(request, assistant, provider);
                push_turn(&mut turns, "assistant", blocks);
            }
            Message::ToolResult(result) => {
                push_turn(&mut turns, "user", vec![tool_result(result, images)]);
            }
        }
    }
    end_continued_turn(&mut turns);
    if let Some(block) = turns
        .iter_mut()
        .rev()
        .find(|turn| turn.role == "user")
        .and_then(|turn| turn.content.last_mut())
    {
        block.set_cache_breakpoint();
    }
    let used = 1 + usize::from(!request.system_prompt.is_empty());
    let mut left = MAX_BREAKPOINTS.saturating_sub(used);
    for block in turns
        .iter_mut()
        .rev()
        .flat_map(|turn| turn.content.iter_mut().rev())
    {
        if left == 0 {
            break;
        }
        if block.result_len() >= LONG_TOOL_RESULT && !block.has_breakpoint() {
            block.set_cache_breakpoint();
            left -= 1;
        }
    }
    let system = match request.system_prompt {
        "" => Vec::new(),
        text => vec![Block::Text {
            text,
            cache_control: Some(EPHEMERAL),
        }],
    };
    let (max_tokens, thinking) = token_limits(request);
    let body = Body {
        model: &request.model.id,
        max_tokens,
        system,
        messages: turns,
        tools: request
            .tools
            .iter()
            .map(|tool| Tool::Function {
                name: &tool.name,
                description: &tool.description,
                input_schema: &tool.parameters,
            })
            .chain(request.web_search.map(|search| Tool::Server {
                kind: WEB_SEARCH_TOOL,
                name: "web_search",
                max_uses: search.max_uses,
            }))
            .collect(),
        thinking,
        stream: true,
    };
    let mut out = Vec::with_capacity(body_capacity(text_bytes(request)));
    serde_json::to_writer(&mut out, &body)?;
    Ok(out)
}

/// `max_tokens` and the thinking budget. `max_tokens` is the model's output limit, which
/// thinking counts against: the budget leaves `ANSWER_TOKENS` of it for the answer, and
/// `max_tokens` grows only when the limit is too small for even the minimum budget.
fn token_limits(request: &ModelRequest<'_>) -> (u64, Option<Thinking>) {
    let limit = request.model.max_output_tokens.max(1);
    let Some(level) = request.reasoning() else {
        return (limit, None);
    };
    let wanted = match level {
        ThinkingLevel::Off | ThinkingLevel::Minimal => MIN_BUDGET,
        ThinkingLevel::Low => 4096,
        ThinkingLevel::Medium => 10_000,
        ThinkingLevel::High => 32_000,
    };
    let budget = wanted
        .min(limit.saturating_sub(ANSWER_TOKENS))
        .max(MIN_BUDGET);
    let thinking = Thinking {
        kind: "enabled",
        budget_tokens: budget,
    };
    (limit.max(budget + ANSWER_TOKENS), Some(thinking))
}

/// A turn the provider paused (`pause_turn`) goes back as the last turn, for the model to
/// go on with; the API refuses a final assistant turn that ends in whitespace.
fn end_continued_turn(turns: &mut Vec<Turn<'_>>) {
    let Some(last) = turns.last_mut().filter(|turn| turn.role == "assistant") else {
        return;
    };
    if let Some(Block::Text { text, .. }) = last.content.last_mut() {
        *text = text.trim_end();
        if text.is_empty() {
            last.content.pop();
        }
    }
    if last.content.is_empty() {
        turns.pop();
    }
}

/// Append blocks as a turn of `role`, joining the previous turn when it has the same role
/// (the API wants user and assistant turns to alternate).
fn push_turn<'a>(turns: &mut Vec<Turn<'a>>, role: &'static str, blocks: Vec<Block<'a>>) {
    if blocks.is_empty() {
        return;
    }
    match turns.last_mut() {
        Some(last) if last.role == role => last.content.extend(blocks),
        _ => turns.push(Turn {
            role,
            content: blocks,
        }),
    }
}

fn content_blocks(content: &[Content], images: bool) -> Vec<Block<'_>> {
    content
        .iter()
        .filter_map(|block| match block {
            Content::Text { text } if text.is_empty() => None,
            Content::Text { text } => Some(Block::Text {
                text,
                cache_control: None,
            }),
            Content::Image { .. } if !images => Some(Block::Text {
                text: IMAGE_PLACEHOLDER,
                cache_control: None,
            }),
            Content::Image { data, mime_type } => Some(Block::Image {
                source: ImageSource {
                    kind: "base64",
                    media_type: mime_type,
                    data,
                },
                cache_control: None,
            }),
        })
        .collect()
}

fn tool_result(result: &ToolResultMessage, images: bool) -> Block<'_> {
    let mut content = content_blocks(&result.content, images);
    if content.is_empty() {
        // An error result must have content, and an empty text block is rejected.
        content.push(Block::Text {
            text: "(no output)",
            cache_control: None,
        });
    }
    Block::ToolResult {
        tool_use_id: tool_use_id(&result.tool_call_id),
        content,
        is_error: result.is_error,
        cache_control: None,
    }
}

fn assistant_blocks<'a>(
    request: &ModelRequest<'_>,
    message: &'a AssistantMessage,
    provider: &str,
) -> Vec<Block<'a>> {
    let replay = same_model(message, provider, &request.model.id);
    let mut blocks = Vec::with_capacity(message.content.len());
    for block in &message.content {
        match block {
            AssistantContent::Text { text } if text.is_empty() => {}
            AssistantContent::Text { text } => blocks.push(Block::Text {
                text,
                cache_control: None,
            }),
            AssistantContent::Thinking {
                signature: Some(data),
                redacted: true,
                ..
            } if replay => blocks.push(Block::RedactedThinking { data }),
            AssistantContent::Thinking { redacted: true, .. } => {}
            AssistantContent::Thinking {
                thinking,
                signature: Some(signature),
                ..
            } if replay && !signature.is_empty() => blocks.push(Block::Thinking {
                thinking,
                signature,
            }),
            // Unsigned (cut off) or another model's thinking: only its text can be kept.
            AssistantContent::Thinking { thinking, .. } if !thinking.is_empty() => {
                blocks.push(Block::Text {
                    text: thinking,
                    cache_control: None,
                })
            }
            AssistantContent::Thinking { .. } => {}
            AssistantContent::ToolCall(call) => blocks.push(Block::ToolUse {
                id: tool_use_id(&call.id),
                name: &call.name,
                input: call_arguments(call),
            }),
            AssistantContent::WebSearch(search) => {
                let replayed = replayed_search(request, message, search, provider, "anthropic");
                blocks.extend(replayed.unwrap_or_default().iter().map(Block::Verbatim));
            }
        }
    }
    // A refusal (from another API) was the model's answer.
    if let Some(refusal) = message.refusal.as_deref().filter(|r| !r.is_empty()) {
        blocks.push(Block::Text {
            text: refusal,
            cache_control: None,
        });
    }
    blocks
}

/// Tool-use ids must match `^[a-zA-Z0-9_-]+$`; ids from other providers (e.g.
/// `functions.read:0`) are mapped the same way on the call and on its result. A valid id
/// is sent as it is, not copied.
fn tool_use_id(id: &str) -> Cow<'_, str> {
    let valid = |c: char| c.is_ascii_alphanumeric() || c == '_' || c == '-';
    if !id.is_empty() && id.len() <= 64 && id.chars().all(valid) {
        return Cow::Borrowed(id);
    }
    let mut clean: String = id
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '_' || c == '-' {
                c
            } else {
                '_'
            }
        })
        .take(64)
        .collect();
    if clean.is_empty() {
        clean.push_str("call");
    }
    Cow::Owned(clean)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::llm::model::ModelInfo;

    fn request(model: &ModelInfo, thinking: ThinkingLevel) -> ModelRequest<'_> {
        ModelRequest {
            model,
            system_prompt: "",
            messages: &[],
            tools: &[],
            thinking,
            web_search: None,
            cache_key: None,
        }
    }

    #[test]
    fn breakpoints_mark_system_last_user_turn_and_the_latest_long_tool_results() {
        use crate::protocol::message::{
            AssistantContent, AssistantMessage, Content, ToolCall, ToolResultMessage, UserMessage,
        };
        let model = ModelInfo::unknown("claude-x");
        use std::sync::Arc;
        let mut messages = vec![Arc::new(Message::User(UserMessage::text("go")))];
        for (i, len) in [9_000, 9_000, 100, 9_000, 9_000].into_iter().enumerate() {
            let mut call = AssistantMessage::empty("anthropic", "claude-x");
            call.content.push(AssistantContent::ToolCall(ToolCall {
                id: format!("toolu_{i}"),
                name: "read".into(),
                arguments: serde_json::json!({}),
                invalid_arguments: None,
            }));
            messages.push(Arc::new(Message::Assistant(call)));
            messages.push(Arc::new(Message::ToolResult(ToolResultMessage {
                tool_call_id: format!("toolu_{i}"),
                tool_name: "read".into(),
                content: vec![Content::text("x".repeat(len))],
                details: None,
                is_error: false,
                timestamp: 0,
            })));
        }
        let request = ModelRequest {
            system_prompt: "be brief",
            messages: &messages,
            ..request(&model, ThinkingLevel::Off)
        };
        let body: Value =
            serde_json::from_slice(&build_body(&request, "anthropic").unwrap()).unwrap();
        let text = body.to_string();
        assert_eq!(text.matches("\"cache_control\"").count(), 4, "{text}");
        assert!(body["system"][0]["cache_control"].is_object());
        let marked: Vec<bool> = body["messages"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|m| m["role"] == "user")
            .skip(1)
            .map(|m| m["content"][0]["cache_control"].is_object())
            .collect();
        // The last turn (the last user turn), the two long results before it; not the first
        // long one (no breakpoint left), not the short one.
        assert_eq!(marked, vec![false, true, false, true, true], "{text}");
    }

    #[test]
    fn the_thinking_budget_fits_the_output_limit() {
        let mut model = ModelInfo::unknown("claude-x");
        model.max_output_tokens = 64_000;
        let (max, thinking) = token_limits(&request(&model, ThinkingLevel::High));
        assert_eq!(
            (max, thinking.map(|t| t.budget_tokens)),
            (64_000, Some(32_000))
        );
        model.max_output_tokens = 32_000;
        let (max, thinking) = token_limits(&request(&model, ThinkingLevel::High));
        assert_eq!(
            (max, thinking.map(|t| t.budget_tokens)),
            (32_000, Some(27_904))
        );
        model.max_output_tokens = 2_000;
        let (max, thinking) = token_limits(&request(&model, ThinkingLevel::Minimal));
        assert_eq!(
            (max, thinking.map(|t| t.budget_tokens)),
            (5_120, Some(1_024))
        );
        let (max, thinking) = token_limits(&request(&model, ThinkingLevel::Off));
        assert_eq!((max, thinking.is_none()), (2_000, true));
        model.reasoning = false;
        let (_, thinking) = token_limits(&request(&model, ThinkingLevel::High));
        assert!(
            thinking.is_none(),
            "a model known not to reason gets no budget"
        );
    }

    #[test]
    fn foreign_tool_ids_are_made_valid() {
        assert_eq!(tool_use_id("functions.read:0"), "functions_read_0");
        assert_eq!(tool_use_id("toolu_01AbC-d"), "toolu_01AbC-d");
        assert_eq!(tool_use_id(""), "call");
        assert_eq!(tool_use_id(&"x".repeat(100)).len(), 64);
    }
}
