//! Custom commands, skills and project hooks in the real interface (a pseudo-terminal): the
//! `/` popup and `/help` list custom commands with their descriptions, a command runs as its
//! expanded prompt, `/skills` lists skills, and a project's hooks wait for the user's trust.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // test code fails loudly

use crate::support;

use serde_json::json;
use std::path::Path;
use support::chat;
use support::env::env;
use support::harness::transcript;
use support::pty::Tui;
use support::server::{FakeServer, Reply};

fn write(path: &Path, text: &str) {
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, text).unwrap();
}

async fn ready(tui: &Tui) {
    tui.wait_for_text("Ask anything").await;
}

#[tokio::test]
async fn custom_commands_complete_show_in_help_and_run() {
    let env = env();
    write(
        &env.cwd.path().join(".claude/commands/frontend/review.md"),
        "---\ndescription: Review a component\nargument-hint: <file>\n---\nReview $1 now.\n",
    );
    write(
        &env.cwd.path().join(".claude/skills/pdf/SKILL.md"),
        "---\nname: pdf\ndescription: Work with PDF files\n---\nUse pdftotext.\n",
    );
    let server = chat::answering(&["Reviewed."]).await;
    let mut tui = env.start(&server, &[]);
    ready(&tui).await;
    tui.type_text("/fro");
    let screen = tui.wait_for_text("Review a component").await;
    assert!(screen.contains("/frontend:review <file>"), "{screen}");
    // Tab completes the name; the argument follows.
    tui.send(b"\t");
    // The composer's line itself: the menu's line for the command says the name too.
    tui.wait_for("the name completed", |screen| {
        screen
            .lines()
            .any(|line| line.trim_end() == "› /frontend:review")
    })
    .await;
    tui.type_text("src/App.tsx");
    tui.enter();
    tui.wait_for_text("Reviewed.").await;
    assert_eq!(
        transcript(&server.bodies()[0])[1],
        "user:Review src/App.tsx now."
    );
    tui.type_text("/help");
    tui.enter();
    let screen = tui.wait_for_text("Custom commands").await;
    assert!(screen.contains("/skill:NAME"), "{screen}");
    tui.type_text("/skills");
    tui.enter();
    // The path is only in /skills' list (the popup shows the description too).
    let screen = tui.wait_for_text(".claude/skills/pdf/SKILL.md").await;
    assert!(screen.contains("Work with PDF files"), "{screen}");
    tui.type_text("/skill:nope");
    tui.enter();
    tui.wait_for_text("Unknown command /skill:nope").await;
    tui.quit().await;
}

#[tokio::test]
async fn project_hooks_run_only_after_the_user_trusts_them() {
    let env = env();
    let settings = json!({"hooks": {"PreToolUse": [{"matcher": "Bash", "hooks": [
        {"type": "command", "command": "touch hook-ran"}
    ]}]}});
    write(
        &env.cwd.path().join(".claude/settings.json"),
        &settings.to_string(),
    );
    let server = FakeServer::start(vec![
        Reply::sse(chat::tool_call("c1", "bash", json!({"command": "true"}))),
        Reply::sse(chat::text("first done")),
        Reply::sse(chat::tool_call("c2", "bash", json!({"command": "true"}))),
        Reply::sse(chat::text("second done")),
    ])
    .await;
    let mut tui = env.start(&server, &["--permission-mode", "auto"]);
    let screen = tui.wait_for_text("Run this project's hooks?").await;
    assert!(
        screen.contains("PreToolUse (Bash): touch hook-ran"),
        "{screen}"
    );
    // Down to "No", enter: not run, and remembered.
    tui.send(b"\x1b[B");
    tui.enter();
    tui.wait_for_text("The project's hooks are not run.").await;
    tui.type_text("go");
    tui.enter();
    tui.wait_for_text("first done").await;
    assert!(!env.cwd.path().join("hook-ran").exists());
    tui.quit().await;

    // Refused: not asked again while the hooks stay the same…
    let server = chat::answering(&["hello"]).await;
    let mut tui = env.start(&server, &[]);
    ready(&tui).await;
    tui.type_text("hi");
    tui.enter();
    let screen = tui.wait_for_text("hello").await;
    assert!(!screen.contains("Run this project's hooks?"), "{screen}");
    tui.quit().await;

    // …and asked again once they change; trusted, they run.
    let settings = json!({"hooks": {"PreToolUse": [{"matcher": "bash", "hooks": [
        {"type": "command", "command": "touch hook-ran"}
    ]}]}});
    write(
        &env.cwd.path().join(".claude/settings.json"),
        &settings.to_string(),
    );
    let server = FakeServer::start(vec![
        Reply::sse(chat::tool_call("c2", "bash", json!({"command": "true"}))),
        Reply::sse(chat::text("second done")),
    ])
    .await;
    let mut tui = env.start(&server, &["--permission-mode", "auto"]);
    tui.wait_for_text("Run this project's hooks?").await;
    tui.enter();
    tui.wait_for_text("The project's hooks run from now on.")
        .await;
    tui.type_text("go");
    tui.enter();
    tui.wait_for_text("second done").await;
    assert!(env.cwd.path().join("hook-ran").exists());
    tui.quit().await;
}
