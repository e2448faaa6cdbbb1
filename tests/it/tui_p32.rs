//! The interface on a long never-compacted session (issue 32): it opens on the newest
//! messages with the older part unread, and the transcript view, opened, holds the whole
//! session — its search finds the very first message.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // test code fails loudly

use crate::cold_context::{TURNS, write_session};
use crate::support;

use support::env::env;
use support::server::FakeServer;

#[tokio::test]
async fn a_long_session_opens_on_its_end_and_the_transcript_view_reads_the_rest() {
    let env = env();
    write_session(&env.home.path().join("sessions"), env.cwd.path());
    let server = FakeServer::start(vec![]).await;
    let mut tui = env.start(&server, &["-c"]);
    let screen = tui.wait_for_text("Resumed ").await;
    assert!(screen.contains("answer 5999"), "{screen}");
    // Once the engine has found the older part (after the first frame; on a quick machine
    // before the note), the interface says how many messages there are in all and names
    // the first prompt (from the start of the file).
    let screen = tui
        .wait_for("the older part counted", |s| {
            s.contains(&format!("{} messages in this session", TURNS * 2))
                || s.contains(&format!("· {} messages ·", TURNS * 2))
        })
        .await;
    assert!(screen.contains("“question 0 lorem"), "{screen}");
    tui.send(b"\x0f");
    tui.wait_for_text("Transcript (").await;
    tui.send(b"/question 1 lorem\r");
    tui.wait_for("the first question found", |s| {
        s.lines().any(|l| l.contains("question 1 lorem"))
    })
    .await;
    tui.send(b"g");
    tui.wait_for("the start of the session", |s| {
        s.lines().any(|l| l.contains("question 0 lorem"))
    })
    .await;
    tui.close_view(b"\x1b", "Transcript (").await;
    tui.quit().await;
}
