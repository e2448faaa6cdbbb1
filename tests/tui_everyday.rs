//! The interface's everyday helpers in a pseudo-terminal against the loopback model server:
//! the task list pinned above the composer, plan mode, background shells in `/ps`.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // test code fails loudly

mod support;

use serde_json::json;
use support::chat;
use support::env::env;
use support::harness::{after_file, transcript, wait_for_pid, wait_until_dead};
use support::pty::Tui;
use support::server::{FakeServer, Reply};

async fn ready(tui: &Tui) {
    tui.wait_for_text("Ask anything").await;
}

#[tokio::test]
async fn the_task_list_is_pinned_above_the_composer_while_the_run_goes_on() {
    let env = env();
    let todos = json!([
        {"content": "read the code", "status": "completed"},
        {"content": "fix the parser", "status": "in_progress"},
        {"content": "run the tests", "status": "pending"}
    ]);
    let server = FakeServer::start(vec![
        Reply::sse(chat::tool_call("c1", "todo_write", json!({"todos": todos}))),
        Reply::sse(chat::tool_call(
            "c2",
            "bash",
            json!({"command": after_file("go", "echo fixed")}),
        )),
        Reply::sse(chat::text("All done.")),
    ])
    .await;
    let mut tui = env.start(&server, &["--permission-mode", "auto"]);
    ready(&tui).await;
    tui.type_text("fix it");
    tui.enter();
    let screen = tui
        .wait_for("the task panel", |s| {
            s.contains("Tasks 1/3 done") && s.contains("Running bash")
        })
        .await;
    for row in ["✔ read the code", "▶ fix the parser", "☐ run the tests"] {
        assert!(screen.contains(row), "{screen}");
    }
    // Pinned: below the running tool, just above the status of the run.
    let panel = screen.find("Tasks 1/3 done").unwrap();
    assert!(screen.find("Running bash").unwrap() > panel, "{screen}");
    std::fs::write(env.cwd.path().join("go"), "").unwrap();
    tui.wait_for_text("All done.").await;
    // The run is over: the panel goes.
    tui.wait_for("the panel to go", |s| !s.contains("Tasks 1/3 done"))
        .await;
    tui.send(b"\x04");
    assert_eq!(tui.exit_code().await, 0);
}

#[tokio::test]
async fn plan_mode_ends_with_a_plan_to_approve_then_runs_it() {
    let env = env();
    let server = FakeServer::start(vec![
        Reply::sse(chat::tool_call(
            "c1",
            "bash",
            json!({"command": "touch early.txt"}),
        )),
        Reply::sse(chat::text("Plan:\n\n1. Create made.txt")),
        Reply::sse(chat::tool_call(
            "c2",
            "bash",
            json!({"command": "touch made.txt"}),
        )),
        Reply::sse(chat::text("Carried out.")),
    ])
    .await;
    let mut tui = env.start(&server, &["--permission-mode", "auto"]);
    ready(&tui).await;
    // shift+tab cycles ask → auto → plan.
    tui.send(b"\x1b[Z");
    tui.wait_for_text("plan mode").await;
    tui.type_text("make the file");
    tui.enter();
    let screen = tui.wait_for_text("Carry out this plan?").await;
    assert!(screen.contains("1. Create made.txt"), "{screen}");
    assert!(screen.contains("plan mode"), "{screen}");
    assert!(!env.cwd.path().join("early.txt").exists());
    let t = transcript(&server.bodies()[1]);
    assert!(t.iter().any(|m| m.contains("plan mode")), "{t:?}");
    // ↓ enter: "Yes, in auto mode".
    tui.send(b"\x1b[B");
    tui.enter();
    tui.wait_for_text("Carried out.").await;
    assert!(env.cwd.path().join("made.txt").exists());
    let t = transcript(&server.bodies()[2]);
    assert_eq!(
        t.last().unwrap(),
        &format!("user:{}", agent::agent::plan_mode::APPROVED)
    );
    let screen = tui.wait_for_text("auto mode").await;
    assert!(screen.contains("Plan approved"), "{screen}");
    tui.send(b"\x04");
    assert_eq!(tui.exit_code().await, 0);
}

#[tokio::test]
async fn slash_plan_turns_plan_mode_on_and_off() {
    let env = env();
    let server = FakeServer::start(vec![]).await;
    let mut tui = env.start(&server, &[]);
    ready(&tui).await;
    tui.type_text("/plan");
    tui.enter();
    tui.wait_for_text("Plan mode: the agent only looks").await;
    tui.wait_for_text("plan mode").await;
    tui.type_text("/plan");
    tui.enter();
    tui.wait_for_text("Plan mode off: back to ask mode.").await;
    tui.send(b"\x04");
    assert_eq!(tui.exit_code().await, 0);
}

#[tokio::test]
async fn slash_ps_lists_background_shells_and_kills_the_chosen_one() {
    let env = env();
    let server = FakeServer::start(vec![
        Reply::sse(chat::tool_call(
            "c1",
            "bash",
            json!({"command": "echo $$ > shell.pid; echo serving; sleep 1000", "background": true}),
        )),
        Reply::sse(chat::text("The server runs in the background.")),
    ])
    .await;
    let mut tui = env.start(&server, &["--permission-mode", "auto"]);
    ready(&tui).await;
    tui.type_text("start the server");
    tui.enter();
    tui.wait_for_text("The server runs in the background.")
        .await;
    let pid = wait_for_pid(&env.cwd.path().join("shell.pid")).await;
    tui.wait_for("the run to end", |s| !s.contains("esc to interrupt"))
        .await;
    tui.type_text("/ps");
    tui.enter();
    let screen = tui.wait_for_text("Background shells — enter kills").await;
    assert!(
        screen.contains("shell_1  echo $$ > shell.pid; echo serving; sleep 1000"),
        "{screen}"
    );
    assert!(screen.contains("running"), "{screen}");
    tui.enter();
    tui.wait_for_text("shell_1: killed.").await;
    assert!(wait_until_dead(pid).await, "the shell survived /ps");
    tui.type_text("/ps");
    tui.enter();
    tui.wait_for_text("· killed").await;
    tui.send(b"\x1b");
    tui.wait_for("the menu to close", |s| !s.contains("Background shells —"))
        .await;
    tui.send(b"\x04");
    assert_eq!(tui.exit_code().await, 0);
}
