//! The assembler's block, event and stop-reason rules.

use super::*;
use AssistantMessageEvent as E;

fn call(key: usize, id: &str, name: &str, args: &str) -> StreamEvent {
    StreamEvent::ToolCall {
        key,
        id: Some(id.into()),
        name: Some(name.into()),
        arguments: args.into(),
    }
}

#[test]
fn builds_blocks_and_events_in_order() {
    let mut asm = Assembler::new("p", "m");
    let mut out = Vec::new();
    asm.apply(StreamEvent::Thinking("hmm".into()), &mut out);
    asm.apply(StreamEvent::Text("Hel".into()), &mut out);
    asm.apply(StreamEvent::Text("".into()), &mut out);
    asm.apply(StreamEvent::Text("lo".into()), &mut out);
    asm.apply(call(0, "c1", "read", "{\"path\":"), &mut out);
    asm.apply(call(0, "", "", "\"a\"}"), &mut out);
    asm.apply(call(1, "c2", "bash", ""), &mut out);
    asm.apply(StreamEvent::Finish(FinishReason::Stop), &mut out);
    let snapshot = asm.snapshot();
    let (message, _) = asm.finish(&mut out);
    assert_eq!(
        out,
        vec![
            E::ThinkingStart { content_index: 0 },
            E::ThinkingDelta {
                content_index: 0,
                delta: "hmm".into()
            },
            E::ThinkingEnd { content_index: 0 },
            E::TextStart { content_index: 1 },
            E::TextDelta {
                content_index: 1,
                delta: "Hel".into()
            },
            E::TextDelta {
                content_index: 1,
                delta: "lo".into()
            },
            E::TextEnd { content_index: 1 },
            E::ToolCallStart { content_index: 2 },
            E::ToolCallDelta {
                content_index: 2,
                delta: "{\"path\":".into()
            },
            E::ToolCallDelta {
                content_index: 2,
                delta: "\"a\"}".into()
            },
            E::ToolCallEnd { content_index: 2 },
            E::ToolCallStart { content_index: 3 },
            E::ToolCallEnd { content_index: 3 },
        ]
    );
    assert_eq!(message.text(), "Hello");
    // A tool call overrides the provider's "stop".
    assert_eq!(message.stop_reason, StopReason::ToolUse);
    let calls: Vec<_> = message.tool_calls().collect();
    assert_eq!(calls[0].id, "c1");
    assert_eq!(calls[0].arguments, serde_json::json!({"path": "a"}));
    assert_eq!(calls[1].arguments, serde_json::json!({}));
    let AssistantContent::ToolCall(partial) = &snapshot.content[2] else {
        panic!("expected a tool call");
    };
    assert_eq!(partial.arguments, serde_json::json!({"path": "a"}));
}

#[test]
fn truncated_arguments_are_flagged_not_guessed_and_stop_for_length() {
    let mut asm = Assembler::new("p", "m");
    let mut out = Vec::new();
    asm.apply(call(0, "c1", "read", "{\"path\": \"a\"}"), &mut out);
    asm.apply(call(1, "c2", "write", "{\"content\": \"abc"), &mut out);
    asm.apply(StreamEvent::Finish(FinishReason::Length), &mut out);
    let (message, report) = asm.finish(&mut out);
    let calls: Vec<_> = message.tool_calls().collect();
    assert_eq!(calls[0].invalid_arguments, None);
    assert_eq!(
        calls[1].invalid_arguments.as_deref(),
        Some("{\"content\": \"abc")
    );
    assert_eq!(report.finish, Some(FinishReason::Length));
    assert_eq!(message.stop_reason, StopReason::Length);

    // Calls that arrived whole before the limit are a normal tool round.
    let mut asm = Assembler::new("p", "m");
    asm.apply(call(0, "c1", "read", "{\"path\": \"a\"}"), &mut out);
    asm.apply(StreamEvent::Finish(FinishReason::Length), &mut out);
    assert_eq!(asm.finish(&mut out).0.stop_reason, StopReason::ToolUse);
}

#[test]
fn refusals_are_normal_stops_and_errors_error_stops() {
    let mut asm = Assembler::new("p", "m");
    let mut out = Vec::new();
    asm.apply(StreamEvent::Refusal("I can't".into()), &mut out);
    asm.apply(StreamEvent::Refusal(" help with that.".into()), &mut out);
    asm.apply(StreamEvent::Finish(FinishReason::Stop), &mut out);
    let (message, _) = asm.finish(&mut out);
    assert_eq!(message.stop_reason, StopReason::Stop);
    assert_eq!(message.error_message, None);
    assert_eq!(message.refusal.as_deref(), Some("I can't help with that."));
    assert_eq!(message.text(), "", "a refusal is not answer text");

    let mut asm = Assembler::new("p", "m");
    asm.apply(StreamEvent::Text("partial".into()), &mut out);
    asm.apply(
        StreamEvent::Usage(WireUsage {
            input: 100,
            output: 5,
            cache_read: 40,
            cache_write: 0,
            reasoning: 0,
            input_includes_cache: true,
        }),
        &mut out,
    );
    asm.apply(
        StreamEvent::Error(crate::llm::error_codes::StreamError::uncoded("overloaded")),
        &mut out,
    );
    let (message, _) = asm.finish(&mut out);
    assert_eq!(message.stop_reason, StopReason::Error);
    assert_eq!(message.error_message.as_deref(), Some("overloaded"));
    assert_eq!(message.text(), "partial");
    assert_eq!(message.usage.input, 60);
    assert_eq!(message.usage.total_tokens, 105);
}

#[test]
fn block_ends_keep_signed_thinking_blocks_apart() {
    let mut asm = Assembler::new("p", "m");
    let mut out = Vec::new();
    for event in [
        StreamEvent::Thinking("first".into()),
        StreamEvent::ThinkingSignature("sig-".into()),
        StreamEvent::ThinkingSignature("1".into()),
        StreamEvent::BlockEnd,
        StreamEvent::Thinking("second".into()),
        StreamEvent::ThinkingSignature("sig-2".into()),
        StreamEvent::BlockEnd,
        // Reasoning with no visible text still keeps its signature.
        StreamEvent::ThinkingSignature("sig-3".into()),
        StreamEvent::BlockEnd,
        StreamEvent::BlockEnd,
    ] {
        asm.apply(event, &mut out);
    }
    let (message, _) = asm.finish(&mut out);
    let blocks: Vec<_> = message
        .content
        .iter()
        .map(|block| match block {
            AssistantContent::Thinking {
                thinking,
                signature,
                ..
            } => (thinking.as_str(), signature.as_deref()),
            other => panic!("unexpected {other:?}"),
        })
        .collect();
    assert_eq!(
        blocks,
        vec![
            ("first", Some("sig-1")),
            ("second", Some("sig-2")),
            ("", Some("sig-3"))
        ]
    );
    let ends = out
        .iter()
        .filter(|e| matches!(e, E::ThinkingEnd { .. }))
        .count();
    assert_eq!(ends, 3, "each block ends once: {out:?}");
}

#[test]
fn final_arguments_stream_what_the_deltas_missed() {
    let mut asm = Assembler::new("p", "m");
    let mut out = Vec::new();
    asm.apply(call(0, "c1", "read", ""), &mut out);
    asm.apply(
        StreamEvent::ToolCallArguments {
            key: 0,
            arguments: "{\"path\":\"a\"}".into(),
        },
        &mut out,
    );
    asm.apply(call(1, "c2", "read", "{\"pa"), &mut out);
    asm.apply(
        StreamEvent::ToolCallArguments {
            key: 1,
            arguments: "{\"path\":\"b\"}".into(),
        },
        &mut out,
    );
    let (message, _) = asm.finish(&mut out);
    let deltas: Vec<_> = out
        .iter()
        .filter_map(|e| match e {
            E::ToolCallDelta {
                content_index,
                delta,
            } => Some((*content_index, delta.as_str())),
            _ => None,
        })
        .collect();
    assert_eq!(
        deltas,
        vec![(0, "{\"path\":\"a\"}"), (1, "{\"pa"), (1, "th\":\"b\"}")]
    );
    let args: Vec<_> = message.tool_calls().map(|c| c.arguments.clone()).collect();
    assert_eq!(
        args,
        vec![
            serde_json::json!({"path": "a"}),
            serde_json::json!({"path": "b"})
        ]
    );
}
