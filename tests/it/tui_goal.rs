//! Issue 34 §4 as a user sees it in the interface (a pseudo-terminal): `/compact` says how
//! many tokens the context held before and after, and `/goal TEXT` shows the goal in the
//! status line until the model marks it done.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // test code fails loudly

use crate::support;

use serde_json::json;
use support::chat;
use support::env::env;
use support::pty::Tui;
use support::server::{FakeServer, Gate, Reply};

async fn ready(tui: &Tui) {
    tui.wait_for_text("Ask anything").await;
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
    tui.ask("first question", "First answer.").await;
    tui.ask("second question", "Answer two.").await;
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
    tui.quit().await;
}

/// The status line: the last row that shows the permission mode.
fn status_row(screen: &str) -> String {
    screen
        .lines()
        .rev()
        .find(|l| l.contains(" mode"))
        .unwrap_or_default()
        .to_string()
}

#[tokio::test]
async fn goal_shows_in_the_status_line_until_the_model_marks_it_done() {
    let env = env();
    let gate = Gate::new();
    let server = FakeServer::start(vec![
        Reply::sse(chat::tool_call("g", "goal", json!({"status": "done"}))).after(&gate),
        Reply::sse(chat::text("Achieved it.")),
    ])
    .await;
    let mut tui = env.start(&server, &[]);
    ready(&tui).await;
    tui.type_text("/goal Make the parser robust");
    tui.enter();
    // The run the goal started waits for the model: the goal is in the status line. The
    // status line and the notice come from two events, drawn in one frame or in two.
    let screen = tui
        .wait_for("the goal in the status line and its notice", |s| {
            status_row(s).contains("goal: Make the parser robust") && s.contains("Goal set: ")
        })
        .await;
    assert!(
        screen.contains("Goal set: Make the parser robust"),
        "{screen}"
    );
    gate.open();
    tui.wait_for_text("Achieved it.").await;
    let screen = tui
        .wait_for("the goal gone from the status line", |s| {
            !status_row(s).contains("goal:") && !s.contains("esc to interrupt")
        })
        .await;
    assert!(
        screen.contains("The model marked the goal done."),
        "{screen}"
    );
    let bodies = server.bodies();
    assert_eq!(bodies.len(), 2);
    assert!(bodies[0].to_string().contains("Make the parser robust"));
    tui.type_text("/goal");
    tui.enter();
    tui.wait_for_text("No goal is set").await;
    tui.quit().await;
}
