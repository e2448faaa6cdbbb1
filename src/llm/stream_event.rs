//! `StreamEvent`: the one internal event type every wire API decoder produces. The assembler
//! turns these into an `AssistantMessage`, so the loop never knows which API is behind it.

use crate::protocol::message::{WebSearchResult, WebSearchStatus};

/// Why the provider says it stopped, before the agent's own policy is applied
/// (e.g. an assistant message with tool calls always gets `toolUse`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum FinishReason {
    Stop,
    ToolUse,
    Length,
    ContentFilter,
    /// The provider paused a long turn (Anthropic's `pause_turn`): the answer so far is
    /// complete as it is, and sending it back lets the model go on.
    Pause,
    /// A provider value with no mapping, kept verbatim.
    Other(String),
}

impl FinishReason {
    /// The conformance corpus's spelling of a stop reason.
    pub fn as_str(&self) -> &str {
        match self {
            FinishReason::Stop => "stop",
            FinishReason::ToolUse => "tool_use",
            FinishReason::Length => "length",
            FinishReason::ContentFilter => "content_filter",
            FinishReason::Pause => "pause_turn",
            FinishReason::Other(raw) => raw,
        }
    }
}

/// Token counts as the provider reports them. `input` follows the provider's convention
/// (OpenAI's includes cached tokens, Anthropic's does not); `input_includes_cache` says which.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct WireUsage {
    pub input: u64,
    pub output: u64,
    pub cache_read: u64,
    pub cache_write: u64,
    /// The part of `output` spent reasoning, when the provider reports it.
    pub reasoning: u64,
    pub input_includes_cache: bool,
}

/// Push `make(text)` when there is text: decoders skip empty deltas.
pub fn push_nonempty(
    make: fn(String) -> StreamEvent,
    text: Option<String>,
    out: &mut Vec<StreamEvent>,
) {
    if let Some(text) = text.filter(|t| !t.is_empty()) {
        out.push(make(text));
    }
}

/// A step of a provider-side web search: the call (with its query), then its outcome. Steps
/// with the same `id` make one `webSearch` block of the message.
#[derive(Clone, Debug, PartialEq)]
pub struct WebSearchStep {
    pub id: String,
    /// The wire API (`Api::as_str`) whose blocks `block` is.
    pub api: &'static str,
    pub query: Option<String>,
    pub status: WebSearchStatus,
    pub results: Option<Vec<WebSearchResult>>,
    pub error: Option<String>,
    /// A provider block or item as it came, kept for replay (appended to the block's).
    pub block: Option<serde_json::Value>,
}

#[derive(Clone, Debug, PartialEq)]
pub enum StreamEvent {
    Text(String),
    Thinking(String),
    /// Appended to the signature of the open thinking block; with no thinking block open
    /// (a block whose text is hidden or empty), it starts one with no text.
    ThinkingSignature(String),
    /// An opaque redacted-thinking blob (its own block, no text).
    RedactedThinking(String),
    /// A fragment of a tool call. `key` identifies the call within this response (the decoder
    /// resolves each API's indexing quirks). The first fragment of a key starts the call;
    /// `id`/`name` fill in whichever is still empty; `arguments` is appended.
    ToolCall {
        key: usize,
        id: Option<String>,
        name: Option<String>,
        arguments: String,
    },
    /// The complete argument text of a call, authoritative over the deltas (OpenAI Responses
    /// sends it in `.done` events, sometimes with no deltas before).
    ToolCallArguments {
        key: usize,
        arguments: String,
    },
    /// Refusal text (OpenAI structured outputs); not part of the answer text.
    Refusal(String),
    /// A content block the agent does not act on itself (e.g. Anthropic `server_tool_use`):
    /// its type, reported (a provider web search is reported and also decoded as
    /// `WebSearch`).
    OtherBlock(String),
    /// A step of a search the provider runs itself (`[web] search`).
    WebSearch(WebSearchStep),
    /// The provider closed a content block: the next delta starts a new block even if it is
    /// of the same kind (e.g. two thinking blocks, each with its own signature). Decoders of
    /// APIs without block boundaries never send it.
    BlockEnd,
    /// Usage so far; a later value replaces an earlier one.
    Usage(WireUsage),
    Finish(FinishReason),
    /// The provider reported an error inside the stream.
    Error(crate::llm::error_codes::StreamError),
    /// The final message, complete and authoritative (`agent proxy`'s `done`): it replaces
    /// what the events built.
    Final(Box<crate::protocol::message::AssistantMessage>),
    /// The stream's terminal marker (`[DONE]`, `message_stop`, `response.completed`...).
    Done,
}
