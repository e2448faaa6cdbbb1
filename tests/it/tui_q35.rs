//! In a real terminal: the model's question (`ask_user`) as a dialog — the question shown,
//! option 2 picked and sent as the tool result — and the approval dialog naming the rule
//! "allow for this session" adds, which `e` edits before allowing (and /permissions lists).
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // test code fails loudly

use crate::support;

use serde_json::json;
use support::chat;
use support::env::env;
use support::server::{FakeServer, Reply};

const NO_GRACE: &[(&str, &str)] = &[("AGENT_APPROVAL_GRACE_MS", "0")];

#[tokio::test]
async fn tui_the_model_asks_and_option_two_is_the_answer() {
    let env = env();
    let server = FakeServer::start(vec![
        Reply::sse(chat::tool_call(
            "q1",
            "ask_user",
            json!({"questions": [{
                "header": "Database", "question": "Which database should it use?",
                "options": [{"label": "Postgres"}, {"label": "SQLite", "description": "a file"}]
            }]}),
        )),
        Reply::sse(chat::text("Going with it.")),
    ])
    .await;
    let mut tui = env.start_with(&server, &[], NO_GRACE);
    tui.wait_for_text("Ask anything").await;
    tui.type_text("set it up");
    tui.enter();
    // The question is in the transcript (the call's line) before the dialog is drawn: wait
    // for what only the dialog shows.
    tui.wait_for_text("2. SQLite").await;
    let screen = tui.wait_for_text("3. Other:").await;
    assert!(screen.contains("Which database should it use?"), "{screen}");
    // The run waits for an answer, and the call reads as its question.
    let screen = tui.wait_for_text("Waiting for your answer").await;
    assert!(!screen.contains("approval"), "{screen}");
    assert!(
        screen.contains("ask_user Which database should it use?"),
        "{screen}"
    );
    tui.send(b"2");
    tui.wait_for_text("Going with it.").await;
    let sent: Vec<String> = server
        .requests()
        .iter()
        .map(|r| r.body.to_string())
        .collect();
    assert!(
        sent.last().unwrap().contains("Database: SQLite"),
        "the answer is the tool result: {sent:?}"
    );
    tui.quit().await;
}

#[tokio::test]
async fn tui_the_approval_names_the_rule_and_e_edits_it() {
    let env = env();
    let server = FakeServer::start(vec![
        Reply::sse(chat::tool_call(
            "c1",
            "bash",
            json!({"command": "echo hello there"}),
        )),
        Reply::sse(chat::text("Done.")),
    ])
    .await;
    let mut tui = env.start_with(
        &server,
        &["--permission-mode", "ask", "--sandbox", "off"],
        NO_GRACE,
    );
    tui.wait_for_text("Ask anything").await;
    tui.type_text("greet");
    tui.enter();
    tui.wait_for_text("a allow bash(echo hello*) for this session")
        .await;
    tui.send(b"e");
    tui.wait_for_text("Allow for this session: bash(echo hello*)")
        .await;
    // Make it broader, as the user chooses: `bash(echo *)`.
    for _ in 0.."hello*)".len() {
        tui.send(b"\x7f");
    }
    tui.type_text("*)");
    tui.wait_for_text("Allow for this session: bash(echo *)")
        .await;
    tui.enter();
    tui.wait_for_text("Done.").await;
    tui.wait_until_idle().await;
    tui.type_text("/permissions");
    tui.enter();
    tui.wait_for_text("bash(echo *)").await;
    tui.send(b"\x1b");
    tui.quit().await;
}
