//! The direct reader gives exactly what the derived one gives, for every kind of line, and
//! takes the direct way for message lines as this program writes them.

use super::*;
use crate::protocol::message::{AssistantContent, Content, StopReason, ToolCall};
use crate::session::format::{NewEntry, encode};

fn messages() -> Vec<Message> {
    let mut user = UserMessage::text("a question with \"quotes\", a tab\t and ünïcode 😀");
    user.content.push(Content::Image {
        data: "aGVsbG8=".into(),
        mime_type: "image/png".into(),
    });
    let mut answer = AssistantMessage::empty("p", "m");
    answer.content.push(AssistantContent::Thinking {
        thinking: "hmm\nlet me see".into(),
        signature: Some("sig".into()),
        redacted: false,
    });
    answer.content.push(AssistantContent::Text {
        text: "line one\nline two".into(),
    });
    let call = ToolCall {
        id: "call1".into(),
        name: "bash".into(),
        arguments: serde_json::json!({"command": "ls -l", "n": [1, 2.5, -3], "x": null}),
        invalid_arguments: None,
    };
    answer
        .content
        .push(AssistantContent::ToolCall(call.clone()));
    answer.usage.input = 10;
    answer.usage.output = 5;
    answer.usage.cost.total = 0.25;
    answer.stop_reason = StopReason::ToolUse;
    answer.error_message = Some("partly".into());
    let mut result = ToolResultMessage::error(&call, "exit 0\nfiles");
    result.is_error = false;
    result.details = Some(serde_json::json!({"usage": {"input": 1}, "agentId": "a1"}));
    vec![
        Message::User(user),
        Message::Assistant(answer),
        Message::ToolResult(result),
    ]
}

fn same(line: &[u8]) {
    let direct = parse_entry(line);
    let derived = serde_json::from_slice::<Entry>(line);
    match (&direct, &derived) {
        (Ok(a), Ok(b)) => assert_eq!(a, b),
        (Err(a), Err(b)) => assert_eq!(a.to_string(), b.to_string()),
        _ => panic!(
            "{}: {direct:?} but {derived:?}",
            String::from_utf8_lossy(line)
        ),
    }
}

#[test]
fn message_lines_as_written_are_read_directly_and_the_same() {
    for (n, message) in messages().iter().enumerate() {
        let line = encode(NewEntry::Message(message), &format!("e{n}"), Some("p"), 7).unwrap();
        let line = line.strip_suffix(b"\n").unwrap();
        assert!(
            serde_json::from_slice::<MessageLine>(line).is_ok(),
            "{}",
            String::from_utf8_lossy(line)
        );
        same(line);
        let Entry::Message { message: read, .. } = parse_entry(line).unwrap() else {
            panic!("not a message");
        };
        assert_eq!(&read, message);
    }
    // The first entry has no parent.
    let line = encode(NewEntry::Message(&messages()[0]), "e", None, 1).unwrap();
    same(line.strip_suffix(b"\n").unwrap());
}

#[test]
fn other_lines_are_read_by_the_derived_reader_with_its_results_and_errors() {
    for line in [
        // Other entries.
        r#"{"type":"model_change","id":"a","parentId":null,"timestamp":1,"provider":"p","model":"m"}"#,
        r#"{"type":"goal","id":"a","parentId":"b","timestamp":1,"goal":null}"#,
        // The role, or the type, not first; a key with an escape.
        r#"{"type":"message","id":"a","parentId":null,"timestamp":1,"message":{"content":[{"type":"text","text":"hi"}],"role":"user","timestamp":2}}"#,
        r#"{"id":"a","type":"message","parentId":null,"timestamp":1,"message":{"role":"user","content":[],"timestamp":2}}"#,
        r#"{"type":"message","id":"a","parentId":null,"timestamp":1,"message":{"r\u006fle":"user","content":[],"timestamp":2}}"#,
        // Damaged: an unknown role, a missing field, a cut-off line, trailing bytes.
        r#"{"type":"message","id":"a","parentId":null,"timestamp":1,"message":{"role":"system","content":[],"timestamp":2}}"#,
        r#"{"type":"message","id":"a","parentId":null,"timestamp":1,"message":{"role":"user","timestamp":2}}"#,
        r#"{"type":"message","id":"a","parentId":null,"timestamp":1,"message":{"role":"user","con"#,
        r#"{"type":"message","id":"a","parentId":null,"timestamp":1,"message":{"role":"user","content":[],"timestamp":2}} x"#,
        r#"{"type":"message","id":"a","message":{"role":"user","content":[],"timestamp":2}}"#,
    ] {
        same(line.as_bytes());
    }
}
