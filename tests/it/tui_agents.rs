//! Sub-agents in the real interface (pseudo-terminal, loopback model server routing each
//! child by its prompt): the live tree under the task cell, the agent view (ctrl+g) showing
//! a child's transcript, steering it and stopping it from there.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // test code fails loudly

use crate::support;

use support::delegation::{delegating_once, two_children_touching};
use support::env::env;
use support::harness::{after_file, transcript};

#[tokio::test]
async fn the_agent_tree_and_view_show_a_child_and_steer_it() {
    let env = env();
    let server = delegating_once(
        &after_file("go", "echo child-ran"),
        Some("child found it"),
        "All done.",
    )
    .await;
    let mut tui = env.start(&server, &["--permission-mode", "auto"]);
    tui.wait_for_text("Ask anything").await;
    tui.type_text("delegate it");
    tui.enter();
    // The live tree: the child's name, id and what it is doing, under the task cell.
    let screen = tui.wait_for_text("general a1 · bash").await;
    assert!(screen.contains("ctrl+g to view"), "{screen}");
    // The agent view: the child's own transcript.
    tui.send(b"\x07");
    let screen = tui.wait_for_text("agent a1 general").await;
    assert!(screen.contains("CHILD-A: go"), "{screen}");
    // Steer it from the view; the message reaches the child after its command.
    tui.send(b"s");
    tui.wait_for_text("steer a1:").await;
    tui.type_text("hurry up");
    tui.enter();
    // The message is with the child once the view's footer is back from the steer line
    // (the key is handled asynchronously: releasing the command earlier would race it).
    tui.wait_for("the steer delivered", |s| {
        !s.contains("steer a1:") && s.contains("agent a1 general")
    })
    .await;
    std::fs::write(env.cwd.path().join("go"), "").unwrap();
    tui.wait_for_text("child found it").await;
    tui.send(b"\x1b");
    let screen = tui.wait_for_text("All done.").await;
    assert!(!screen.contains("ctrl+g to view"), "{screen}");
    let bodies = server.bodies();
    let child_second = bodies
        .iter()
        .filter(|b| transcript(b)[1] == "user:CHILD-A: go")
        .nth(1)
        .unwrap();
    assert_eq!(transcript(child_second).last().unwrap(), "user:hurry up");
    tui.quit().await;
}

#[tokio::test]
async fn x_in_the_agent_view_stops_only_that_child() {
    let env = env();
    let server = delegating_once(&after_file("never", "echo no"), None, "Parent went on.").await;
    let mut tui = env.start(&server, &["--permission-mode", "auto"]);
    tui.wait_for_text("Ask anything").await;
    tui.type_text("delegate it");
    tui.enter();
    tui.wait_for_text("general a1 · bash").await;
    tui.send(b"\x07");
    tui.wait_for_text("agent a1 general").await;
    tui.send(b"x");
    tui.send(b"q");
    let screen = tui.wait_for_text("Parent went on.").await;
    assert!(screen.contains("stopped by the user"), "{screen}");
    tui.quit().await;
}

/// Two sub-agents ask at the same time (with the same call id): the dialog shows one and says
/// another waits; each answer reaches the sub-agent that asked, and the second dialog follows.
#[tokio::test]
async fn approvals_of_two_sub_agents_queue_and_each_answer_reaches_its_asker() {
    let env = env();
    let server = two_children_touching("made it", "Both done.").await;
    let mut tui = env.start(&server, &[]);
    tui.wait_for_text("Ask anything").await;
    tui.type_text("delegate both");
    tui.enter();
    let screen = tui
        .wait_for("one dialog, one waiting", |s| {
            s.contains("y allow once") && s.contains("(1 more waiting)")
        })
        .await;
    let (first, second) = if screen.contains("touch a.txt") {
        ("a.txt", "b.txt")
    } else {
        ("b.txt", "a.txt")
    };
    // Past the dialog's grace period, so the key counts (the status line shows the parent
    // running its task calls; the dialog's own timer is on the working line).
    tui.wait_for_text("approval… 1s").await;
    tui.send(b"y");
    let screen = tui
        .wait_for("the second dialog", |s| {
            s.contains(&format!("touch {second}")) && s.contains("y allow once")
        })
        .await;
    assert!(!screen.contains("more waiting"), "{screen}");
    // The allowed command runs (in its sub-agent) while the second question waits.
    tokio::time::timeout(std::time::Duration::from_secs(20), async {
        while !env.cwd.path().join(first).exists() {
            tokio::time::sleep(std::time::Duration::from_millis(10)).await;
        }
    })
    .await
    .unwrap_or_else(|_| panic!("{first} was never made"));
    assert!(!env.cwd.path().join(second).exists());
    tui.wait_for_text("approval… 1s").await;
    tui.send(b"n");
    tui.wait_for_text("Both done.").await;
    assert!(env.cwd.path().join(first).exists());
    assert!(!env.cwd.path().join(second).exists());
    tui.quit().await;
}
