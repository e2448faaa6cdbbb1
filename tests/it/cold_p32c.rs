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
    tui.close_view(b"\x1b", "Transcript (").await;
    tui.quit().await;
}

/// A front end that never starts the count of a long session's older part (the interface
/// starts it after its first frame): a run starts it before its first request, so the
/// usage totals still hold every message, and the compaction before the request still
/// reads the older part back.
#[tokio::test]
async fn a_run_counts_the_older_part_when_its_front_end_did_not() {
    use crate::cold_context::{TURNS, write_session};
    use agent::agent::Agent;
    use std::time::{Duration, Instant};
    use support::chat;
    use support::harness::{Harness, end_of, transcript};
    use support::server::Reply;

    let home = tempfile::tempdir().unwrap();
    let cwd = home.path().join("work");
    std::fs::create_dir_all(&cwd).unwrap();
    let sessions = home.path().join("sessions");
    write_session(&sessions, &cwd);
    let opened = agent::session::open_lazy(agent::session::Choice::Continue, &sessions, &cwd)
        .await
        .unwrap();
    let cold = opened.cold.clone().expect("an older part");
    // Opening parsed a screen's worth of messages, not the 4 MB it walked.
    assert!(
        opened.history.len() < 210,
        "{} parsed",
        opened.history.len()
    );
    let server = FakeServer::start(vec![
        Reply::sse(chat::text("the summary")),
        Reply::sse(chat::text("fits now")),
    ])
    .await;
    let dir = tempfile::tempdir().unwrap();
    let mut config = support::harness::config(&server.v1(), dir.path());
    config.model.context_window = 200_000;
    config.compaction.enabled = true;
    config.compaction.keep_recent_tokens = 2_000;
    config.history = opened.history;
    config.cold = opened.cold;
    config.session = opened.writer;
    let agent = Agent::new(config);
    let events = agent.subscribe();
    let mut h = Harness {
        server,
        agent,
        events,
        dir,
        home: None,
        states: Vec::new(),
    };
    h.prompt("next");
    let events = h.until_end().await;
    assert_eq!(end_of(&events).0, "completed");
    assert!(cold.is_found());
    let started = Instant::now();
    while h.agent.snapshot().usage.output < 3 * TURNS as u64 {
        assert!(
            started.elapsed() < Duration::from_secs(300),
            "usage not counted"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    // Every answer's usage (3 output tokens each), the summary's and the answer's.
    assert!(h.agent.snapshot().usage.output >= 3 * TURNS as u64);
    let bodies = h.server.bodies();
    assert_eq!(bodies.len(), 2, "a summary request, then the answer");
    // The request after the compaction keeps the user's original request, the first
    // message of the older part, read back from the file.
    let sent = transcript(&bodies[1]);
    assert!(
        sent[1].contains("The user's original request, verbatim:\n\nquestion 0 lorem"),
        "{}",
        &sent[1][..sent[1].len().min(400)]
    );
    assert!(sent.last().unwrap().contains("next"));
}
