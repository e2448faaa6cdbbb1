//! Issue 35 §1 (f35) in the real interface in a pseudo-terminal: sub-agent lines (the live
//! row follows the child after its approval, a `task` cell reads as its description, the
//! agent view streams a running command's output and shows a queued steer at once).
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // test code fails loudly

use crate::support;

use support::delegation::delegating_once;
use support::env::env;
use support::harness::after_file;

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
    tui.send(b"\x04");
    assert_eq!(tui.exit_code().await, 0);
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
    tui.send(b"\x04");
    assert_eq!(tui.exit_code().await, 0);
}
