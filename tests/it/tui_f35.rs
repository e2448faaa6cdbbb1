//! Issue 35 §1 (f35) in the real interface in a pseudo-terminal: sub-agent lines (the live
//! row follows the child after its approval, a `task` cell reads as its description, the
//! agent view streams a running command's output and shows a queued steer at once), and
//! `/tree` (a new session has nothing to show, a tree with its branch point, switching to a
//! branch bringing its files back).
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // test code fails loudly

use crate::support;

use serde_json::json;
use support::chat;
use support::delegation::delegating_once;
use support::env::env;
use support::harness::after_file;
use support::server::{FakeServer, Reply};

/// Ask mode: the child's command needs approval. The parent's `task` cell reads `task
/// general: job c1` (never its arguments as JSON), and once the approval is answered the
/// child's row says it runs its command again, not "waiting for approval", while the
/// command runs.
#[tokio::test]
async fn the_subagent_row_follows_the_child_after_its_approval_and_the_task_cell_reads_as_its_description()
 {
    let env = env();
    let server = delegating_once(
        &after_file("go", "echo child-ran"),
        Some("child found it"),
        "All done.",
    )
    .await;
    let mut tui = env.start_with(&server, &[], &[("AGENT_APPROVAL_GRACE_MS", "0")]);
    tui.wait_for_text("Ask anything").await;
    tui.type_text("delegate it");
    tui.enter();
    tui.wait_for_text("y allow once").await;
    tui.send(b"y");
    // The command waits for `go`: the row must follow the child while it runs.
    let screen = tui
        .wait_for("the row back on the command", |s| {
            s.contains("general a1 · bash until") && !s.contains("y allow once")
        })
        .await;
    assert!(!screen.contains("waiting for approval"), "{screen}");
    assert!(screen.contains("task general: job c1"), "{screen}");
    std::fs::write(env.cwd.path().join("go"), "").unwrap();
    tui.wait_for_text("All done.").await;
    let transcript = tui.transcript();
    assert!(transcript.contains("task general: job c1"), "{transcript}");
    assert!(!transcript.contains("{\"description\""), "{transcript}");
    tui.quit().await;
}

/// The agent view (ctrl+g) shows what a child's running command printed so far, before the
/// command ends, and a steering message sent from it shows as queued at once (it reaches the
/// child only after that command).
#[tokio::test]
async fn the_agent_view_streams_a_running_command_and_shows_a_queued_steer() {
    let env = env();
    let server = delegating_once(
        // What it prints is not in the command's text (upper case there), so it can only
        // be seen as output.
        &format!(
            "echo ONE-OUT | tr A-Z a-z; {}",
            after_file("go", "echo TWO-OUT | tr A-Z a-z")
        ),
        Some("child found it"),
        "All done.",
    )
    .await;
    let mut tui = env.start(&server, &["--permission-mode", "auto"]);
    tui.wait_for_text("Ask anything").await;
    tui.type_text("delegate it");
    tui.enter();
    tui.wait_for_text("general a1 · bash").await;
    tui.send(b"\x07");
    let screen = tui
        .wait_for("the command's output so far", |s| {
            s.contains("agent a1 general") && s.contains("one-out")
        })
        .await;
    assert!(!screen.contains("two-out"), "{screen}");
    tui.send(b"s");
    tui.wait_for_text("steer a1:").await;
    tui.type_text("hurry up");
    tui.enter();
    let screen = tui.wait_for_text("queued steer: hurry up").await;
    assert!(!screen.contains("two-out"), "{screen}");
    std::fs::write(env.cwd.path().join("go"), "").unwrap();
    // Delivered: the queued line goes, the message is in the child's transcript.
    tui.wait_for("the steer delivered", |s| {
        s.contains("child found it") && !s.contains("queued steer")
    })
    .await;
    tui.send(b"\x1b");
    tui.wait_for_text("All done.").await;
    tui.quit().await;
}

/// `/tree` in a session that has no message yet (no session file either) says so, instead
/// of failing to read a file that is not there.
#[tokio::test]
async fn tree_on_a_new_session_says_it_has_no_messages_yet() {
    let env = env();
    let server = chat::answering(&[]).await;
    let mut tui = env.start(&server, &[]);
    tui.wait_for_text("Ask anything").await;
    tui.type_text("/tree");
    tui.enter();
    let screen = tui.wait_for_text("This session has no messages yet").await;
    assert!(!screen.contains("os error"), "{screen}");
    assert!(!screen.contains("Cannot read"), "{screen}");
    tui.quit().await;
}

/// Two branches after a first message: `/tree` shows the first message as the branch point
/// (`⑂ 2 branches`) with the two branches on connectors, the current one marked; switching
/// to the other one with "Conversation and code" brings back the file as that branch left
/// it.
#[tokio::test]
async fn tree_shows_where_branches_part_and_switching_brings_the_code_back() {
    let env = env();
    let cwd = env.cwd.path();
    let write = |id: &str, content: &str| {
        Reply::sse(chat::tool_call(
            id,
            "write",
            json!({"path": "a.txt", "content": content}),
        ))
    };
    let server = FakeServer::start(vec![
        Reply::sse(chat::text("Started.")),
        write("w1", "one"),
        Reply::sse(chat::text("Wrote one.")),
        write("w2", "two"),
        Reply::sse(chat::text("Wrote two.")),
    ])
    .await;
    let mut tui = env.start(&server, &["--permission-mode", "auto"]);
    tui.wait_for_text("Ask anything").await;
    for (prompt, answer) in [("start here", "Started."), ("make it one", "Wrote one.")] {
        tui.type_text(prompt);
        tui.enter();
        tui.wait_for_text(answer).await;
        tui.wait_until_idle().await;
    }
    assert_eq!(std::fs::read_to_string(cwd.join("a.txt")).unwrap(), "one");
    // Back to before "make it one", files too; then another branch from there.
    tui.type_text("/rewind");
    tui.enter();
    tui.wait_for_text("Rewind to before").await;
    tui.enter();
    tui.wait_for_text("Conversation and code").await;
    tui.enter();
    tui.wait_for_text("Rewound:").await;
    assert!(!cwd.join("a.txt").exists());
    tui.send(b"\x15");
    tui.type_text("make it two");
    tui.enter();
    tui.wait_for_text("Wrote two.").await;
    tui.wait_until_idle().await;
    assert_eq!(std::fs::read_to_string(cwd.join("a.txt")).unwrap(), "two");

    tui.type_text("/tree");
    tui.enter();
    let screen = tui.wait_for_text("Branches of this session (2").await;
    let row = |pred: &dyn Fn(&str) -> bool| screen.lines().any(pred);
    assert!(
        row(&|l| l.contains("● start here") && l.contains("⑂ 2 branches")),
        "{screen}"
    );
    assert!(row(&|l| l.contains("├─ ○ make it one")), "{screen}");
    // The current branch's message is the one chosen when the tree opens.
    assert!(
        row(&|l| l.starts_with("›") && l.contains("└─ ● make it two")),
        "{screen}"
    );
    tui.send(b"\x1b[A"); // up to the other branch
    tui.enter();
    tui.wait_for_text("Switch to the branch of").await;
    tui.enter(); // "Conversation and code"
    tui.wait_for_text("Switched branch:").await;
    let screen = tui.wait_for_text("files: 1 restored").await;
    assert_eq!(
        std::fs::read_to_string(cwd.join("a.txt")).unwrap(),
        "one",
        "{screen}"
    );
    tui.quit().await;
}

/// `/permissions` says what is true of the network: with `[sandbox] allow_local_binding` on
/// (the default) commands may listen on the session's own loopback, which plain "network
/// off" denied; with it off, the network is off.
#[tokio::test]
async fn permissions_say_when_loopback_listeners_are_allowed() {
    for (config, expected) in [
        ("", "the session's own loopback"),
        ("[sandbox]\nallow_local_binding = false\n", "network off · "),
    ] {
        let env = env();
        std::fs::write(env.home.path().join("config.toml"), config).unwrap();
        let server = chat::answering(&[]).await;
        let mut tui = env.start(&server, &[]);
        tui.wait_for_text("Ask anything").await;
        tui.type_text("/permissions");
        tui.enter();
        let screen = tui.wait_for_text("sandbox  ").await;
        if screen.contains("unavailable:") {
            support::skip::skip("the sandbox is unavailable on this machine");
            return;
        }
        if config.is_empty() && screen.contains("loopback listeners unavailable") {
            support::skip::skip("this kernel refuses the session's network namespace");
            return;
        }
        assert!(screen.contains(expected), "{config}: {screen}");
        tui.quit().await;
    }
}
