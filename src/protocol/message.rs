//! Conversation messages as they appear in events, session files and `get_messages`
//! (docs/protocol.md §2). These types are the wire format: field names and tags are part of the
//! public contract, so they only change together with the spec.

use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::time::{SystemTime, UNIX_EPOCH};

/// Milliseconds since the Unix epoch, the timestamp unit of every message.
pub fn now_millis() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX))
        .unwrap_or(0)
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "role", rename_all = "camelCase")]
pub enum Message {
    User(UserMessage),
    Assistant(AssistantMessage),
    ToolResult(ToolResultMessage),
}

impl Message {
    pub fn timestamp(&self) -> i64 {
        match self {
            Message::User(m) => m.timestamp,
            Message::Assistant(m) => m.timestamp,
            Message::ToolResult(m) => m.timestamp,
        }
    }

    pub fn as_assistant(&self) -> Option<&AssistantMessage> {
        match self {
            Message::Assistant(m) => Some(m),
            _ => None,
        }
    }
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct UserMessage {
    pub content: Vec<Content>,
    pub timestamp: i64,
}

impl UserMessage {
    pub fn text(text: impl Into<String>) -> Self {
        UserMessage {
            content: vec![Content::Text { text: text.into() }],
            timestamp: now_millis(),
        }
    }

    /// The message's text blocks joined by newlines (what queues and prompts display).
    pub fn plain_text(&self) -> String {
        join_text(&self.content)
    }

    /// The first text block: what the user typed, without the files its `@path`s attached
    /// after it.
    pub fn typed_text(&self) -> &str {
        self.content
            .iter()
            .find_map(|c| match c {
                Content::Text { text } => Some(text.as_str()),
                _ => None,
            })
            .unwrap_or("")
    }
}

/// Content of user messages and tool results.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "camelCase")]
pub enum Content {
    Text {
        text: String,
    },
    Image {
        /// Base64-encoded bytes.
        data: String,
        #[serde(rename = "mimeType")]
        mime_type: String,
    },
}

impl Content {
    pub fn text(text: impl Into<String>) -> Self {
        Content::Text { text: text.into() }
    }
}

pub fn join_text(content: &[Content]) -> String {
    let mut out = String::new();
    for block in content {
        if let Content::Text { text } = block {
            if !out.is_empty() {
                out.push('\n');
            }
            out.push_str(text);
        }
    }
    out
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "camelCase")]
pub enum StopReason {
    #[default]
    Stop,
    Length,
    ToolUse,
    Error,
    Aborted,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct AssistantMessage {
    pub content: Vec<AssistantContent>,
    pub provider: String,
    pub model: String,
    pub usage: Usage,
    pub stop_reason: StopReason,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error_message: Option<String>,
    /// What the model said when it refused (OpenAI's `refusal`): its answer, shown as a
    /// refusal, and not part of the text.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub refusal: Option<String>,
    pub timestamp: i64,
}

impl AssistantMessage {
    pub fn empty(provider: &str, model: &str) -> Self {
        AssistantMessage {
            content: Vec::new(),
            provider: provider.to_string(),
            model: model.to_string(),
            usage: Usage::default(),
            stop_reason: StopReason::Stop,
            error_message: None,
            refusal: None,
            timestamp: now_millis(),
        }
    }

    /// All text blocks concatenated: what `-p` prints.
    pub fn text(&self) -> String {
        let mut out = String::new();
        for block in &self.content {
            if let AssistantContent::Text { text } = block {
                out.push_str(text);
            }
        }
        out
    }

    pub fn tool_calls(&self) -> impl Iterator<Item = &ToolCall> {
        self.content.iter().filter_map(|block| match block {
            AssistantContent::ToolCall(call) => Some(call),
            _ => None,
        })
    }

    pub fn has_tool_calls(&self) -> bool {
        self.tool_calls().next().is_some()
    }
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "camelCase")]
pub enum AssistantContent {
    Text {
        text: String,
    },
    Thinking {
        thinking: String,
        /// Provider signature that lets the same model verify replayed thinking; for a
        /// redacted block, the opaque data blob.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        signature: Option<String>,
        #[serde(default, skip_serializing_if = "std::ops::Not::not")]
        redacted: bool,
    },
    ToolCall(ToolCall),
    /// A search the provider ran itself (`[web] search`), with what it found.
    WebSearch(WebSearch),
}

/// A provider-side web search: what the model searched for, how it went, and the provider's
/// own blocks, which only the wire API they came from takes back (verbatim).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct WebSearch {
    /// The provider's id of the search (`srvtoolu_…`, `ws_…`).
    pub id: String,
    #[serde(default)]
    pub query: String,
    pub status: WebSearchStatus,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub results: Vec<WebSearchResult>,
    /// Why the search failed (the provider's error code), when it did.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// The wire API the blocks below belong to (`anthropic`, `openai-responses`).
    pub api: String,
    /// The provider's blocks or items as they came, replayed verbatim to the same provider.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub provider_blocks: Vec<Value>,
}

impl WebSearch {
    /// One line for people: `Searched the web: "query" — 5 results`.
    pub fn summary(&self) -> String {
        let query = self.query.replace(['\n', '\r'], " ");
        match self.status {
            WebSearchStatus::Completed => {
                let n = self.results.len();
                let results = if n == 1 { "result" } else { "results" };
                format!("Searched the web: \"{query}\" — {n} {results}")
            }
            WebSearchStatus::Failed => format!(
                "Web search failed: \"{query}\" — {}",
                self.error.as_deref().unwrap_or("no reason given")
            ),
            WebSearchStatus::InProgress => format!("Searching the web: \"{query}\""),
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum WebSearchStatus {
    /// Started, no outcome yet (or the stream ended before one came).
    InProgress,
    Completed,
    Failed,
}

impl WebSearchStatus {
    pub fn as_str(self) -> &'static str {
        match self {
            WebSearchStatus::InProgress => "in_progress",
            WebSearchStatus::Completed => "completed",
            WebSearchStatus::Failed => "failed",
        }
    }
}

/// One page a web search found.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct WebSearchResult {
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub title: String,
    pub url: String,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ToolCall {
    pub id: String,
    pub name: String,
    /// The parsed arguments; `{}` when the model's JSON could not be parsed.
    pub arguments: Value,
    /// The model's argument text when it was not valid JSON (e.g. cut off by a token limit).
    /// Such a call is never executed; it is answered with an error result.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub invalid_arguments: Option<String>,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ToolResultMessage {
    pub tool_call_id: String,
    pub tool_name: String,
    pub content: Vec<Content>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub details: Option<Value>,
    pub is_error: bool,
    pub timestamp: i64,
}

impl ToolResultMessage {
    pub fn error(call: &ToolCall, text: impl Into<String>) -> Self {
        ToolResultMessage {
            tool_call_id: call.id.clone(),
            tool_name: call.name.clone(),
            content: vec![Content::text(text)],
            details: None,
            is_error: true,
            timestamp: now_millis(),
        }
    }
}

/// Token counts of one model call. `input` excludes cache reads and writes, whatever the
/// provider's own convention, so the four counts add up to `total_tokens`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Usage {
    pub input: u64,
    pub output: u64,
    pub cache_read: u64,
    pub cache_write: u64,
    pub total_tokens: u64,
    /// The part of `output` the model spent reasoning, when the provider says (OpenAI);
    /// already counted in `output`.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub reasoning: u64,
    pub cost: Cost,
}

fn is_zero(count: &u64) -> bool {
    *count == 0
}

impl Usage {
    /// Counts come from the network: they saturate instead of overflowing.
    pub fn add(&mut self, other: &Usage) {
        self.input = self.input.saturating_add(other.input);
        self.output = self.output.saturating_add(other.output);
        self.cache_read = self.cache_read.saturating_add(other.cache_read);
        self.cache_write = self.cache_write.saturating_add(other.cache_write);
        self.total_tokens = self.total_tokens.saturating_add(other.total_tokens);
        self.reasoning = self.reasoning.saturating_add(other.reasoning);
        self.cost.input += other.cost.input;
        self.cost.output += other.cost.output;
        self.cost.cache_read += other.cost.cache_read;
        self.cost.cache_write += other.cost.cache_write;
        self.cost.total += other.cost.total;
    }

    /// Tokens were counted but no price was known for them: the cost is unknown, not 0
    /// (`ModelInfo::price` leaves a model without prices at 0).
    pub fn price_unknown(&self) -> bool {
        self.total_tokens > 0 && self.cost.total == 0.0
    }
}

/// Cost in US dollars, from the model table's per-million-token prices.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Cost {
    pub input: f64,
    pub output: f64,
    pub cache_read: f64,
    pub cache_write: f64,
    pub total: f64,
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn messages_serialize_as_in_the_protocol() {
        let msg = Message::Assistant(AssistantMessage {
            content: vec![
                AssistantContent::Thinking {
                    thinking: "hm".into(),
                    signature: None,
                    redacted: false,
                },
                AssistantContent::Text { text: "hi".into() },
                AssistantContent::ToolCall(ToolCall {
                    id: "call_1".into(),
                    name: "bash".into(),
                    arguments: json!({"command": "ls"}),
                    invalid_arguments: None,
                }),
            ],
            provider: "openai".into(),
            model: "gpt-4.1".into(),
            usage: Usage::default(),
            stop_reason: StopReason::ToolUse,
            error_message: None,
            refusal: None,
            timestamp: 1,
        });
        let value = serde_json::to_value(&msg).unwrap();
        assert_eq!(value["role"], "assistant");
        assert_eq!(value["stopReason"], "toolUse");
        assert_eq!(
            value["content"][0],
            json!({"type": "thinking", "thinking": "hm"})
        );
        assert_eq!(
            value["content"][2],
            json!({"type": "toolCall", "id": "call_1", "name": "bash", "arguments": {"command": "ls"}})
        );
        assert_eq!(value["usage"]["cacheRead"], 0);
        assert!(value.get("errorMessage").is_none());
        let back: Message = serde_json::from_value(value).unwrap();
        assert_eq!(back, msg);

        let result = Message::ToolResult(ToolResultMessage {
            tool_call_id: "call_1".into(),
            tool_name: "bash".into(),
            content: vec![Content::text("ok")],
            details: None,
            is_error: false,
            timestamp: 2,
        });
        let value = serde_json::to_value(&result).unwrap();
        assert_eq!(value["role"], "toolResult");
        assert_eq!(value["toolCallId"], "call_1");
        assert_eq!(value["isError"], false);
    }

    fn search(status: WebSearchStatus, results: usize) -> WebSearch {
        WebSearch {
            id: "srvtoolu_1".into(),
            query: "rust\nrelease".into(),
            status,
            results: (0..results)
                .map(|n| WebSearchResult {
                    title: format!("page {n}"),
                    url: format!("https://example.org/{n}"),
                })
                .collect(),
            error: (status == WebSearchStatus::Failed).then(|| "max_uses_exceeded".into()),
            api: "anthropic".into(),
            provider_blocks: vec![json!({"type": "server_tool_use"})],
        }
    }

    #[test]
    fn a_web_search_reads_as_one_line_and_round_trips() {
        assert_eq!(
            search(WebSearchStatus::Completed, 5).summary(),
            "Searched the web: \"rust release\" — 5 results"
        );
        assert_eq!(
            search(WebSearchStatus::Completed, 1).summary(),
            "Searched the web: \"rust release\" — 1 result"
        );
        assert_eq!(
            search(WebSearchStatus::Failed, 0).summary(),
            "Web search failed: \"rust release\" — max_uses_exceeded"
        );
        let block = AssistantContent::WebSearch(search(WebSearchStatus::Completed, 1));
        let value = serde_json::to_value(&block).unwrap();
        assert_eq!(
            value,
            json!({"type": "webSearch", "id": "srvtoolu_1", "query": "rust\nrelease",
                   "status": "completed",
                   "results": [{"title": "page 0", "url": "https://example.org/0"}],
                   "api": "anthropic", "providerBlocks": [{"type": "server_tool_use"}]})
        );
        assert_eq!(
            serde_json::from_value::<AssistantContent>(value).unwrap(),
            block
        );
    }
}
