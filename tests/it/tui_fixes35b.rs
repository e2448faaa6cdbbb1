//! Issue 35 §1.4 and §1.10 as a user sees them in the interface (a pseudo-terminal): a
//! rewound or forked message with an `@`-attachment comes back as typed, `/compact` asked
//! for compacts, the narrow status line keeps the context share, and exit says how to resume.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // test code fails loudly

use crate::support;

use support::chat;
use support::env::env;
use support::pty::Tui;

async fn ready(tui: &Tui) {
    tui.wait_for_text("Ask anything").await;
}

/// How many `<file` blocks the request body's messages hold.
fn attached_files(body: &serde_json::Value) -> usize {
    body["messages"].to_string().matches("<file path=").count()
}

/// The composer holds exactly `typed` again and nowhere on screen is the attached file's
/// text; sending it attaches the file once.
async fn composer_holds_what_was_typed(tui: &Tui, typed: &str) {
    let screen = tui
        .wait_for("the typed message back in the composer", |s| {
            s.lines().any(|l| l.trim_end() == format!("› {typed}"))
        })
        .await;
    assert!(!screen.contains("<file"), "{screen}");
    assert!(!screen.contains("abc-content"), "{screen}");
}

/// Rewinding to before a message that attached `@notes.txt` puts `read @notes.txt` back in
/// the composer, not the expanded `<file …>` text; resent, the file is attached once.
#[tokio::test]
async fn rewinding_a_message_with_an_attachment_gives_back_what_was_typed() {
    let env = env();
    std::fs::write(env.cwd.path().join("notes.txt"), "abc-content").unwrap();
    let server = chat::answering(&["Answer one.", "Answer two."]).await;
    let mut tui = env.start(&server, &[]);
    ready(&tui).await;
    tui.ask("read @notes.txt", "Answer one.").await;

    tui.type_text("/rewind");
    tui.enter();
    tui.wait_for_text("Rewind to before").await;
    tui.enter();
    tui.wait_for_text("Conversation only").await;
    tui.send(b"\x1b[B"); // past "Conversation and code"
    tui.enter();
    tui.wait_for_text("Rewound").await;
    composer_holds_what_was_typed(&tui, "read @notes.txt").await;

    tui.enter();
    tui.wait_for_text("Answer two.").await;
    tui.wait_until_idle().await;
    let bodies = server.bodies();
    assert_eq!(attached_files(&bodies[1]), 1, "{}", bodies[1]["messages"]);
    tui.quit().await;
}

/// The same for `/fork` from before the message.
#[tokio::test]
async fn forking_before_a_message_with_an_attachment_gives_back_what_was_typed() {
    let env = env();
    std::fs::write(env.cwd.path().join("notes.txt"), "abc-content").unwrap();
    let server = chat::answering(&["Answer one.", "Answer two."]).await;
    let mut tui = env.start(&server, &[]);
    ready(&tui).await;
    tui.ask("read @notes.txt", "Answer one.").await;

    tui.type_text("/fork");
    tui.enter();
    tui.wait_for_text("Fork a new session from before").await;
    tui.send(b"\x1b[B"); // past "The whole conversation" to the message
    tui.enter();
    tui.wait_for_text("Forked: this is now session").await;
    composer_holds_what_was_typed(&tui, "read @notes.txt").await;

    tui.enter();
    tui.wait_for_text("Answer two.").await;
    tui.wait_until_idle().await;
    let bodies = server.bodies();
    assert_eq!(attached_files(&bodies[1]), 1, "{}", bodies[1]["messages"]);
    tui.quit().await;
}

/// `/compact` asked for compacts a short conversation (two exchanges, far under the
/// automatic threshold) instead of answering "nothing to compact yet"; in an empty session it
/// says there is nothing to compact and asks the model nothing.
#[tokio::test]
async fn compact_asked_for_compacts_a_short_conversation() {
    let env = env();
    let server = chat::answering(&["Answer one.", "Answer two.", "The summary."]).await;
    let mut tui = env.start(&server, &[]);
    ready(&tui).await;
    tui.type_text("/compact");
    tui.enter();
    let screen = tui.wait_for_text("Nothing to compact").await;
    assert!(screen.contains("empty"), "{screen}");
    assert!(server.bodies().is_empty());

    tui.ask("first question", "Answer one.").await;
    tui.ask("second question", "Answer two.").await;
    tui.type_text("/compact");
    tui.enter();
    let screen = tui
        .wait_for("the compaction to end", |s| {
            s.contains("Compacted the conversation") || s.contains("compact yet")
        })
        .await;
    assert!(screen.contains("Compacted the conversation"), "{screen}");
    let bodies = server.bodies();
    assert_eq!(bodies.len(), 3);
    assert!(
        bodies[2].to_string().contains("first question"),
        "the summary request holds the first exchange: {}",
        bodies[2]
    );
    tui.quit().await;
}

/// At 36 columns the status line still shows the mode and the context share: the token
/// counts and the cost go first.
#[tokio::test]
async fn narrow_status_keeps_the_context_share() {
    let env = env();
    let server = support::server::FakeServer::start(vec![support::server::Reply::sse(
        chat::text_with_usage("Answer one.", 20_000, 20),
    )])
    .await;
    let base = server.v1();
    let mut tui = Tui::spawn_sized(
        &["--base-url", &base, "--model", "test-model"],
        env.home.path(),
        env.cwd.path(),
        support::pty::ROWS,
        36,
        &[],
    );
    ready(&tui).await;
    tui.ask("first question", "Answer one.").await;
    let screen = tui.screen();
    let status = screen
        .lines()
        .find(|l| l.contains(" mode"))
        .unwrap_or_else(|| panic!("no status line: {screen}"));
    assert!(status.contains("ctx "), "{status}");
    tui.quit().await;
}

/// Leaving the interface after a conversation says how to resume exactly this session:
/// `agent -c` when it is the directory's latest; nothing with `--no-session`.
#[tokio::test]
async fn exit_says_how_to_resume() {
    let env = env();
    let server = chat::answering(&["Answer one.", "Answer two."]).await;
    let mut tui = env.start(&server, &[]);
    ready(&tui).await;
    tui.ask("first question", "Answer one.").await;
    tui.quit().await;
    let transcript = tui.transcript();
    assert!(
        transcript.contains("Resume this session with: agent -c"),
        "{transcript}"
    );

    let mut tui = env.start(&server, &["--no-session"]);
    ready(&tui).await;
    tui.ask("second question", "Answer two.").await;
    tui.quit().await;
    let transcript = tui.transcript();
    assert!(!transcript.contains("Resume this session"), "{transcript}");
}
