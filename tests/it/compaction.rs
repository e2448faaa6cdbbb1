//! Compaction always shrinks: a context overflow in a conversation shorter than
//! `keep_recent_tokens`, or one huge tool result among the recent messages, is compacted
//! instead of leaving the session stuck with "nothing to compact". A resumed session whose
//! stored usage is far below what it holds is compacted before its first request.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // test code fails loudly

use crate::support;

use agent::protocol::event::AgentEvent;
use agent::protocol::message::{
    AssistantContent, AssistantMessage, Message, StopReason, UserMessage,
};
use agent::session::format::NewEntry;
use agent::session::load::load;
use agent::session::{self, Choice};
use serde_json::json;
use std::path::PathBuf;
use support::chat;
use support::harness::{Harness, end_of, transcript};
use support::server::Reply;

/// An agent writing a session, with this window and `keep_recent_tokens`.
async fn harness(replies: Vec<Reply>, window: u64, keep_recent: u64) -> (Harness, PathBuf) {
    let home = tempfile::tempdir().unwrap().keep();
    let cwd = home.join("work");
    std::fs::create_dir_all(&cwd).unwrap();
    let opened = session::open(Choice::New, &home.join("sessions"), &cwd)
        .await
        .unwrap();
    let path = opened.path.clone().unwrap();
    let harness = Harness::start_with(replies, move |config| {
        config.model.context_window = window;
        config.compaction.reserve_tokens = 500;
        config.compaction.keep_recent_tokens = keep_recent;
        config.session = opened.writer;
    })
    .await;
    (harness, path)
}

fn compaction_end(events: &[AgentEvent]) -> serde_json::Value {
    events
        .iter()
        .find(|e| matches!(e, AgentEvent::AutoCompactionEnd { .. }))
        .map(|e| serde_json::to_value(e).unwrap())
        .expect("a compaction")
}

fn live(h: &Harness) -> Vec<Message> {
    h.agent.messages().iter().map(|m| (**m).clone()).collect()
}

fn reloaded(path: &std::path::Path) -> Vec<Message> {
    load(path)
        .unwrap()
        .context
        .into_iter()
        .map(|(_, m)| (*m).clone())
        .collect()
}

#[tokio::test]
async fn an_overflow_in_a_session_shorter_than_keep_recent_is_compacted() {
    let overflow = r#"{"error":{"message":"This model's maximum context length is 4096 tokens.","code":"context_length_exceeded"}}"#;
    let (mut h, path) = harness(
        vec![
            Reply::sse(chat::text("earlier answer")),
            Reply::status(400, overflow),
            Reply::sse(chat::text("summary of everything")),
            Reply::sse(chat::text("fits now")),
        ],
        200_000,
        20_000,
    )
    .await;
    h.prompt("q1");
    h.until_end().await;
    h.prompt("q2");
    let events = h.until_end().await;
    let end = compaction_end(&events);
    assert_eq!(end.get("errorMessage"), None, "{end}");
    assert_eq!(end_of(&events).0, "completed");
    let bodies = h.server.bodies();
    let summarised = bodies[2]["messages"][1]["content"].as_str().unwrap();
    assert!(
        summarised.contains("q1") && summarised.contains("q2"),
        "{summarised}"
    );
    let retried = transcript(&bodies[3]);
    assert_eq!(retried.len(), 2, "{retried:?}");
    assert!(retried[1].contains("summary of everything"), "{retried:?}");
    // The next session load rebuilds the same context.
    assert_eq!(reloaded(&path), live(&h));
}

#[tokio::test]
async fn a_huge_recent_tool_result_is_summarised_too() {
    let (mut h, path) = harness(
        vec![
            Reply::sse(chat::tool_call("c1", "read", json!({"path": "big.txt"}))),
            Reply::sse(chat::text("the summary")),
            Reply::sse(chat::text("done")),
        ],
        2_000,
        100,
    )
    .await;
    // About 3,000 tokens: over the 1,500 that fit before the threshold on its own.
    let big: String = (0..300)
        .map(|i| format!("line {i:04} of the file\n"))
        .collect();
    std::fs::write(h.dir.path().join("big.txt"), &big).unwrap();
    h.prompt("read big.txt");
    let events = h.until_end().await;
    assert_eq!(end_of(&events).0, "completed");
    let end = compaction_end(&events);
    assert_eq!(end.get("errorMessage"), None, "{end}");
    assert!(end["tokensAfter"].as_u64().unwrap() < 1_000, "{end}");
    let bodies = h.server.bodies();
    assert_eq!(bodies.len(), 3);
    let after = transcript(&bodies[2]);
    assert!(
        !after.iter().any(|m| m.contains("line 0299")),
        "the huge result is no longer sent: {after:?}"
    );
    assert!(after[1].contains("the summary"), "{after:?}");
    assert_eq!(reloaded(&path), live(&h));
}

#[tokio::test]
async fn a_resumed_session_with_low_stored_usage_is_compacted_before_the_request() {
    // A session on disk: 8 messages of ~4,000 characters each (~8,000 tokens by content),
    // whose answers report a usage of only 50 tokens each.
    let home = tempfile::tempdir().unwrap();
    let cwd = home.path().join("work");
    std::fs::create_dir_all(&cwd).unwrap();
    let sessions = home.path().join("sessions");
    let opened = session::open(Choice::New, &sessions, &cwd).await.unwrap();
    let writer = opened.writer.unwrap();
    for turn in 0..4 {
        let question = Message::User(UserMessage::text(format!(
            "question {turn} {}",
            "q".repeat(4_000)
        )));
        writer.append(NewEntry::Message(&question)).await.unwrap();
        let mut answer = AssistantMessage::empty("test", "test-model");
        answer.content.push(AssistantContent::Text {
            text: format!("answer {turn} {}", "a".repeat(4_000)),
        });
        answer.usage.total_tokens = 50;
        answer.stop_reason = StopReason::Stop;
        writer
            .append(NewEntry::Message(&Message::Assistant(answer)))
            .await
            .unwrap();
    }
    writer.sync().await.unwrap();
    drop(writer);
    let resumed = session::open(Choice::Continue, &sessions, &cwd)
        .await
        .unwrap();
    assert_eq!(resumed.history.len(), 8);
    let mut h = Harness::start_with(
        vec![
            Reply::sse(chat::text("the summary")),
            Reply::sse(chat::text("fits now")),
        ],
        move |config| {
            config.model.context_window = 4_000;
            config.compaction.reserve_tokens = 500;
            config.compaction.keep_recent_tokens = 100;
            config.history = resumed.history;
            config.session = resumed.writer;
        },
    )
    .await;
    h.prompt("next");
    let events = h.until_end().await;
    assert_eq!(end_of(&events).0, "completed");
    let end = compaction_end(&events);
    assert_eq!(end.get("errorMessage"), None, "{end}");
    let bodies = h.server.bodies();
    assert_eq!(bodies.len(), 2, "a summary request, then the answer");
    let sent = transcript(&bodies[1]);
    assert!(
        !sent.iter().any(|m| m.contains("answer 0")),
        "the oldest turns are summarised, not sent: {sent:?}"
    );
    // The user's original request is kept beside the summary, cut to what the window
    // allows (a sixteenth of it), the rest left to the summary.
    let kept = &sent[1];
    assert!(
        kept.contains("The user's original request, verbatim:\n\nquestion 0 q")
            && kept.contains("more characters, left out here"),
        "{kept}"
    );
    assert!(sent.iter().any(|m| m.contains("the summary")), "{sent:?}");
    let chars: usize = sent.iter().map(String::len).sum();
    assert!(chars < 16_000, "{chars} characters sent, of ~32,000 stored");
}

/// The summary request of a compaction has the retry policy of any request: an overflow
/// recovery behind a flaky connection (the summary request's connection closed before a
/// byte came back) still compacts and answers.
#[tokio::test]
async fn the_summary_request_is_retried_after_a_connection_error() {
    let overflow = r#"{"error":{"message":"This model's maximum context length is 4096 tokens.","code":"context_length_exceeded"}}"#;
    let (mut h, path) = harness(
        vec![
            Reply::sse(chat::text("earlier answer")),
            Reply::status(400, overflow),
            Reply::Hangup,
            Reply::sse(chat::text("summary of everything")),
            Reply::sse(chat::text("fits now")),
        ],
        200_000,
        20_000,
    )
    .await;
    h.prompt("q1");
    h.until_end().await;
    h.prompt("q2");
    let events = h.until_end().await;
    let end = compaction_end(&events);
    assert_eq!(end.get("errorMessage"), None, "{end}");
    assert_eq!(end_of(&events).0, "completed", "{events:?}");
    let bodies = h.server.bodies();
    assert_eq!(bodies.len(), 5);
    assert_eq!(bodies[2], bodies[3], "the same summary request, again");
    let retried = transcript(&bodies[4]);
    assert!(retried[1].contains("summary of everything"), "{retried:?}");
    assert_eq!(
        live(&h)
            .last()
            .and_then(|m| m.as_assistant())
            .map(|m| m.text()),
        Some("fits now".to_string())
    );
    assert_eq!(reloaded(&path), live(&h));
}
