//! What a resumed session costs before its first frame (issue 32, fourth part): the
//! interface lays out and draws its newest messages only as far as they fill a dozen
//! screens (`tui::REPLAY_ROWS`), the rest being in the transcript view; the engine of a
//! long session parses only its newest messages, and what it walked past is read back with
//! the older part — by the compaction before the next request, among others.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // test code fails loudly

use crate::support;

use agent::protocol::message::{
    AssistantContent, AssistantMessage, Message, StopReason, UserMessage,
};
use agent::session::format::{Header, NewEntry, encode};
use std::io::Write;
use std::path::Path;
use support::env::env;
use support::server::FakeServer;

/// A session of `turns` turns for `cwd` under `sessions`, each answer some 25 rows long
/// on an 80-column terminal, and every question and answer numbered (`question 007`).
fn write_long_answers(sessions: &Path, cwd: &Path, turns: usize) {
    let path = agent::session::store::new_path(sessions, cwd, "rows0000000000000000000", 1_000);
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    let mut out = std::io::BufWriter::new(std::fs::File::create(&path).unwrap());
    let header = Header::new("rows0000000000000000000", &cwd.to_string_lossy(), 1_000);
    writeln!(out, "{}", serde_json::to_string(&header).unwrap()).unwrap();
    let filler = "lorem ipsum dolor sit amet ".repeat(70);
    let mut parent: Option<String> = None;
    for n in 0..turns * 2 {
        let timestamp = 2_000 + i64::try_from(n).unwrap();
        let message = if n % 2 == 0 {
            let mut user = UserMessage::text(format!("question {:03}", n / 2));
            user.timestamp = timestamp;
            Message::User(user)
        } else {
            let mut answer = AssistantMessage::empty("test", "test-model");
            answer.content.push(AssistantContent::Text {
                text: format!("answer {:03} {filler}", n / 2),
            });
            answer.stop_reason = StopReason::Stop;
            answer.timestamp = timestamp;
            Message::Assistant(answer)
        };
        let id = format!("r{n:07}");
        let line = encode(
            NewEntry::Message(&message),
            &id,
            parent.as_deref(),
            timestamp,
        )
        .unwrap();
        out.write_all(&line).unwrap();
        parent = Some(id);
    }
    out.flush().unwrap();
}

#[tokio::test]
async fn a_resumed_session_is_replayed_as_far_as_a_dozen_screens_and_the_view_has_the_rest() {
    let env = env();
    // 60 turns: some 1,500 rows of answers, far over what is replayed, and fewer than the
    // 200 messages a resumed session shows at most.
    write_long_answers(&env.home.path().join("sessions"), env.cwd.path(), 60);
    let server = FakeServer::start(vec![]).await;
    let mut tui = env.start(&server, &["-c"]);
    let terminal = tui.wait_for_text("Resumed ").await;
    assert!(terminal.contains("answer 059"), "{terminal}");
    assert!(terminal.contains("question 059"), "{terminal}");
    // Not laid out, nor drawn into the scrollback: the first questions (the note names the
    // very first one); what is not shown is said.
    let replayed: Vec<&str> = terminal
        .lines()
        .filter(|l| !l.contains("Resumed "))
        .collect();
    for first in ["question 000", "question 030"] {
        assert!(!replayed.iter().any(|l| l.contains(first)), "{terminal}");
    }
    let told = terminal
        .lines()
        .find(|l| l.contains("earlier messages in this session"))
        .unwrap_or_else(|| panic!("no note of the earlier messages:\n{terminal}"));
    let earlier: usize = told
        .split_whitespace()
        .find_map(|word| word.parse().ok())
        .unwrap_or_else(|| panic!("{told}"));
    assert!((60..120).contains(&earlier), "{told}");
    // The transcript view holds them all.
    tui.send(b"\x0f");
    tui.wait_for_text("Transcript (").await;
    tui.send(b"/question 000\r");
    tui.wait_for("the first question in the view", |s| {
        s.lines().any(|l| l.contains("question 000"))
    })
    .await;
    tui.send(b"\x1b");
    tui.wait_for("the view to close", |s| !s.contains("Transcript ("))
        .await;
    tui.send(b"\x04");
    assert_eq!(tui.exit_code().await, 0);
}
