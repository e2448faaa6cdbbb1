//! Where a compaction cuts the history: everything before the cut is summarised, the rest
//! is kept verbatim. A tool call is never separated from its result, and the cut is chosen
//! so that compacting always shrinks the context — a conversation made of one huge paste
//! or one huge tool result can be compacted too, so an overflowing session is never stuck.

use super::compaction::estimate_tokens;
use crate::protocol::message::Message;
use std::sync::Arc;

/// The usual cut: about `keep_recent` tokens from the end, moved back so it starts a turn
/// (never a tool result). `None` when the recent part reaches back to the first message.
pub fn cut_index(messages: &[Arc<Message>], keep_recent: u64) -> Option<usize> {
    let mut kept = 0;
    let mut cut = messages.len();
    while cut > 0 && kept < keep_recent {
        cut -= 1;
        kept += estimate_tokens(&messages[cut]);
    }
    while cut > 0 && matches!(messages[cut].as_ref(), Message::ToolResult(_)) {
        cut -= 1;
    }
    (cut > 0).then_some(cut)
}

/// The tightest cut: keep only the newest messages that fit in `keep_recent` together,
/// moved forward so the kept part does not start with a tool result. Can keep nothing
/// (returns `messages.len()`: everything is summarised).
fn tight_cut(messages: &[Arc<Message>], keep_recent: u64) -> usize {
    let mut kept = 0u64;
    let mut cut = messages.len();
    while cut > 0 {
        let size = estimate_tokens(&messages[cut - 1]);
        if kept.saturating_add(size) > keep_recent {
            break;
        }
        kept += size;
        cut -= 1;
    }
    while cut < messages.len() && matches!(messages[cut].as_ref(), Message::ToolResult(_)) {
        cut += 1;
    }
    if cut == 0 { messages.len() } else { cut }
}

/// Where to cut, or `None` when there is nothing worth summarising.
///
/// - Normally `cut_index`.
/// - When what `cut_index` keeps is itself over `max_kept` (one huge tool result or paste
///   among the recent messages), or when it finds nothing older to summarise although the
///   conversation is larger than `keep_recent` (a huge first message), the tightest cut
///   instead: the huge part goes into the summary (the summariser sees it shortened).
/// - A conversation smaller than `keep_recent` is left alone, unless `must_shrink` (the
///   provider said it does not fit, so the estimate is off): then all of it is summarised.
pub fn choose_cut(
    messages: &[Arc<Message>],
    keep_recent: u64,
    max_kept: u64,
    must_shrink: bool,
) -> Option<usize> {
    if messages.is_empty() {
        return None;
    }
    let tokens = |part: &[Arc<Message>]| -> u64 { part.iter().map(|m| estimate_tokens(m)).sum() };
    if let Some(cut) = cut_index(messages, keep_recent)
        && tokens(&messages[cut..]) <= max_kept
    {
        return Some(cut);
    }
    if tokens(messages) <= keep_recent && !must_shrink {
        return None;
    }
    Some(tight_cut(messages, keep_recent))
}

/// Where a compaction the user asked for cuts: the usual cut when there is one, else
/// before the last user turn (only that turn is kept verbatim), else — one exchange, or
/// one message — everything is summarised. The automatic threshold does not apply: a user
/// who asks to compact gets a compaction whenever there is anything to compact. `None`
/// only for an empty conversation.
pub fn manual_cut(messages: &[Arc<Message>], keep_recent: u64, max_kept: u64) -> Option<usize> {
    if messages.is_empty() {
        return None;
    }
    if let Some(cut) = choose_cut(messages, keep_recent, max_kept, false) {
        return Some(cut);
    }
    let last_turn = messages
        .iter()
        .rposition(|m| matches!(m.as_ref(), Message::User(_)))
        .unwrap_or(0);
    Some(if last_turn > 0 {
        last_turn
    } else {
        messages.len()
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::protocol::message::{
        AssistantContent, AssistantMessage, Content, ToolCall, ToolResultMessage, UserMessage,
    };
    use serde_json::json;

    fn user(text: &str) -> Arc<Message> {
        Arc::new(Message::User(UserMessage::text(text)))
    }

    fn call(id: &str) -> Arc<Message> {
        let mut message = AssistantMessage::empty("p", "m");
        message.content.push(AssistantContent::ToolCall(ToolCall {
            id: id.into(),
            name: "read".into(),
            arguments: json!({"path": "src/lib.rs"}),
            invalid_arguments: None,
        }));
        Arc::new(Message::Assistant(message))
    }

    fn result(id: &str, size: usize) -> Arc<Message> {
        Arc::new(Message::ToolResult(ToolResultMessage {
            tool_call_id: id.into(),
            tool_name: "read".into(),
            content: vec![Content::text("x".repeat(size))],
            details: None,
            is_error: false,
            timestamp: 0,
        }))
    }

    #[test]
    fn the_cut_never_separates_a_call_from_its_result() {
        let messages = vec![
            user("start"),
            call("a"),
            result("a", 400),
            call("b"),
            result("b", 400),
            user("more"),
        ];
        // Keeping ~100 tokens lands on the second tool result: move back to its call.
        assert_eq!(cut_index(&messages, 100), Some(3));
        // ~150 tokens reach into the first round's result: keep that whole round.
        assert_eq!(cut_index(&messages, 150), Some(1));
        assert!(cut_index(&messages, 1_000_000).is_none());
        // The tight cut moves forward instead: the kept part fits.
        assert_eq!(tight_cut(&messages, 100), 5);
        assert_eq!(
            tight_cut(&messages, 0),
            6,
            "nothing fits: all is summarised"
        );
    }

    #[test]
    fn a_huge_recent_tool_result_goes_into_the_summary() {
        let messages = vec![user("read it"), call("a"), result("a", 40_000)];
        // The usual cut keeps the 10,000-token result: over what may be kept.
        assert_eq!(cut_index(&messages, 100), Some(1));
        assert_eq!(choose_cut(&messages, 100, 750, false), Some(3));
        // Within bounds, the usual cut stands.
        assert_eq!(choose_cut(&messages, 100, 20_000, false), Some(1));
    }

    #[test]
    fn a_huge_first_message_can_be_summarised() {
        let messages = vec![user(&"pasted ".repeat(20_000)), user("what is this?")];
        assert_eq!(cut_index(&messages, 100), None);
        assert_eq!(choose_cut(&messages, 100, 750, false), Some(1));
    }

    #[test]
    fn a_small_conversation_is_summarised_only_when_the_provider_says_it_does_not_fit() {
        let messages = vec![user("short"), call("a"), result("a", 40)];
        assert_eq!(choose_cut(&messages, 1_000, 2_000, false), None);
        assert_eq!(choose_cut(&messages, 1_000, 2_000, true), Some(3));
        // Asked for by the user, the same one exchange is summarised whole.
        assert_eq!(manual_cut(&messages, 1_000, 2_000), Some(3));
    }

    #[test]
    fn a_compaction_asked_for_keeps_only_the_last_turn_of_a_small_conversation() {
        let messages = vec![
            user("first"),
            call("a"),
            result("a", 40),
            user("second"),
            call("b"),
            result("b", 40),
        ];
        assert_eq!(choose_cut(&messages, 1_000, 2_000, false), None);
        assert_eq!(manual_cut(&messages, 1_000, 2_000), Some(3));
        assert_eq!(manual_cut(&[], 1_000, 2_000), None);
        assert_eq!(choose_cut(&[], 1_000, 2_000, true), None);
    }
}
