//! A long session that was never compacted is resumed lazily (issue 32): the engine parses
//! only its newest part and holds the older messages as places in the session file
//! (`session::cold`), and everything that needs them reads them back — the compaction
//! before the first request (and the user's original request it keeps), a request sent
//! whole when compaction is off, a rewind to a message of the older part, the usage
//! totals, `get_messages`.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // test code fails loudly

use crate::support;

use agent::protocol::message::{
    AssistantContent, AssistantMessage, Message, StopReason, UserMessage,
};
use agent::protocol::rpc::RestoreMode;
use agent::session::format::{Header, NewEntry, encode};
use agent::session::{self, Choice, Opened};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};
use support::chat;
use support::harness::{Harness, end_of, transcript};
use support::server::Reply;

/// Turns of the generated session: about 18 MB, over `cold::COLD_ABOVE_BYTES`.
pub(crate) const TURNS: usize = 6_000;

/// A session for `cwd` under `sessions` of `TURNS` turns (a question and an answer of about
/// 1.5 kB each, every answer reporting 3 output tokens), written as the agent writes one.
pub(crate) fn write_session(sessions: &Path, cwd: &Path) -> PathBuf {
    let path = session::store::new_path(sessions, cwd, "cold00000000000000000000", 1_000);
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    let mut out = std::io::BufWriter::new(std::fs::File::create(&path).unwrap());
    let header = Header::new("cold00000000000000000000", &cwd.to_string_lossy(), 1_000);
    writeln!(out, "{}", serde_json::to_string(&header).unwrap()).unwrap();
    let filler = "lorem ipsum dolor sit amet ".repeat(55);
    let mut parent: Option<String> = None;
    for n in 0..TURNS * 2 {
        let timestamp = 2_000 + i64::try_from(n).unwrap();
        let message = if n % 2 == 0 {
            let mut user = UserMessage::text(format!("question {} {filler}", n / 2));
            user.timestamp = timestamp;
            Message::User(user)
        } else {
            let mut answer = AssistantMessage::empty("test", "test-model");
            answer.content.push(AssistantContent::Text {
                text: format!("answer {} {filler}", n / 2),
            });
            answer.usage.output = 3;
            answer.usage.total_tokens = 3;
            answer.stop_reason = StopReason::Stop;
            answer.timestamp = timestamp;
            Message::Assistant(answer)
        };
        let id = format!("m{n:07}");
        out.write_all(
            &encode(
                NewEntry::Message(&message),
                &id,
                parent.as_deref(),
                timestamp,
            )
            .unwrap(),
        )
        .unwrap();
        parent = Some(id);
    }
    out.flush().unwrap();
    path
}

/// A long session written and opened lazily, as the command line opens one.
async fn opened() -> (tempfile::TempDir, PathBuf, Opened) {
    let home = tempfile::tempdir().unwrap();
    let cwd = home.path().join("work");
    std::fs::create_dir_all(&cwd).unwrap();
    let sessions = home.path().join("sessions");
    let path = write_session(&sessions, &cwd);
    let opened = session::open_lazy(Choice::Continue, &sessions, &cwd)
        .await
        .unwrap();
    (home, path, opened)
}

async fn start(opened: Opened, replies: Vec<Reply>, compaction: bool) -> Harness {
    Harness::start_with(replies, move |config| {
        config.model.context_window = 200_000;
        config.compaction.enabled = compaction;
        config.compaction.keep_recent_tokens = 2_000;
        config.history = opened.history;
        config.cold = opened.cold;
        config.session = opened.writer;
    })
    .await
}

#[tokio::test]
async fn a_long_session_resumes_with_its_older_part_unread_and_counted() {
    let (_home, path, opened) = opened().await;
    let cold = opened.cold.clone().expect("the older part is not parsed");
    assert!(cold.len() > TURNS, "{} messages unread", cold.len());
    assert_eq!(cold.len() + opened.history.len(), TURNS * 2);
    let h = start(opened, vec![], true).await;
    let snapshot = h.agent.snapshot();
    assert_eq!(snapshot.message_count, TURNS * 2);
    // Far over the window by the estimate, so the next request compacts first.
    assert!(
        snapshot.context_tokens > 4_000_000,
        "{}",
        snapshot.context_tokens
    );
    // The usage of the unread part is counted on the side, then added.
    let started = Instant::now();
    while h.agent.snapshot().usage.output < 3 * TURNS as u64 {
        assert!(
            started.elapsed() < Duration::from_secs(300),
            "usage not counted"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert_eq!(h.agent.snapshot().usage.output, 3 * TURNS as u64);
    // `get_messages` reads it back: the whole context, as the whole reader gives it.
    let whole = session::load::load(&path).unwrap().context;
    assert_eq!(h.agent.message_entries(), whole);
    // …without keeping it.
    assert!(h.agent.held_messages().len() < TURNS);
}

#[tokio::test]
async fn the_compaction_of_a_lazily_resumed_session_sees_every_message() {
    let (_home, path, opened) = opened().await;
    let mut h = start(
        opened,
        vec![
            Reply::sse(chat::text("the summary")),
            Reply::sse(chat::text("fits now")),
        ],
        true,
    )
    .await;
    h.prompt("next");
    let events = h.until_end().await;
    assert_eq!(end_of(&events).0, "completed");
    let bodies = h.server.bodies();
    assert_eq!(bodies.len(), 2, "a summary request, then the answer");
    let sent = transcript(&bodies[1]);
    // The user's original request is the first message of the unread part.
    assert!(
        sent[1].contains("The user's original request, verbatim:\n\nquestion 0 lorem"),
        "{}",
        &sent[1][..sent[1].len().min(400)]
    );
    assert!(sent.iter().any(|m| m.contains("the summary")));
    assert!(sent.len() < 100, "{} messages sent", sent.len());
    assert!(sent.last().unwrap().contains("next"));
    // The compaction is in the file: the session resumes from it.
    let reloaded = session::load::load(&path).unwrap();
    assert!(reloaded.context.len() < 100);
    assert!(h.agent.snapshot().message_count < 100);
}

#[tokio::test]
async fn with_compaction_off_every_message_is_read_back_and_sent() {
    let (_home, _path, opened) = opened().await;
    let mut h = start(opened, vec![Reply::sse(chat::text("all of it"))], false).await;
    h.prompt("next");
    let events = h.until_end().await;
    assert_eq!(end_of(&events).0, "completed");
    let sent = transcript(&h.server.bodies()[0]);
    assert_eq!(
        sent.len(),
        1 + TURNS * 2 + 1,
        "system, every message, the prompt"
    );
    assert!(
        sent[1].starts_with("user:question 0 lorem"),
        "{}",
        &sent[1][..40]
    );
    assert!(
        sent[TURNS * 2].starts_with("assistant:answer 5999"),
        "{}",
        &sent[TURNS * 2][..40]
    );
}

#[tokio::test]
async fn a_rewind_to_a_message_of_the_unread_part_goes_back_there() {
    let (_home, path, opened) = opened().await;
    let whole = session::load::load(&path).unwrap().context;
    let h = start(opened, vec![], true).await;
    let target = whole[20].0.clone();
    let rewound = h
        .agent
        .rewind(&target, RestoreMode::Conversation, false)
        .await
        .unwrap();
    assert_eq!(
        rewound.text.as_deref().map(|t| &t[..11]),
        Some("question 10")
    );
    assert_eq!(h.agent.snapshot().message_count, 20);
    assert_eq!(h.agent.message_entries(), whole[..20].to_vec());
    // The file says the same.
    let reloaded = session::load::load(&path).unwrap().context;
    assert_eq!(reloaded, whole[..20].to_vec());
}
