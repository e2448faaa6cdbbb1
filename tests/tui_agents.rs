//! Sub-agents in the real interface (pseudo-terminal, loopback model server routing each
//! child by its prompt): the live tree under the task cell, the agent view (ctrl+g) showing
//! a child's transcript, steering it and stopping it from there.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // test code fails loudly

mod support;

use serde_json::json;
use support::chat;
use support::env::env;
use support::harness::{after_file, transcript};
use support::server::{FakeServer, Reply};

#[tokio::test]
async fn the_agent_tree_and_view_show_a_child_and_steer_it() {
    let env = env();
    let server = FakeServer::start(vec![
        Reply::sse(chat::tool_call(
            "c1",
            "task",
            json!({"description": "look around", "prompt": "CHILD-A: look"}),
        )),
        Reply::sse(chat::text("All done.")),
    ])
    .await;
    server.route(
        "CHILD-A",
        vec![
            Reply::sse(chat::tool_call(
                "b1",
                "bash",
                json!({"command": after_file("go", "echo child-ran")}),
            )),
            Reply::sse(chat::text("child found it")),
        ],
    );
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
    assert!(screen.contains("CHILD-A: look"), "{screen}");
    // Steer it from the view; the message reaches the child after its command.
    tui.send(b"s");
    tui.wait_for_text("steer a1:").await;
    tui.type_text("hurry up");
    tui.enter();
    std::fs::write(env.cwd.path().join("go"), "").unwrap();
    tui.wait_for_text("child found it").await;
    tui.send(b"\x1b");
    let screen = tui.wait_for_text("All done.").await;
    assert!(!screen.contains("ctrl+g to view"), "{screen}");
    let bodies = server.bodies();
    let child_second = bodies
        .iter()
        .filter(|b| transcript(b)[1] == "user:CHILD-A: look")
        .nth(1)
        .unwrap();
    assert_eq!(transcript(child_second).last().unwrap(), "user:hurry up");
    tui.send(b"\x04");
    assert_eq!(tui.exit_code().await, 0);
}

#[tokio::test]
async fn x_in_the_agent_view_stops_only_that_child() {
    let env = env();
    let server = FakeServer::start(vec![
        Reply::sse(chat::tool_call(
            "c1",
            "task",
            json!({"description": "long job", "prompt": "CHILD-A: wait"}),
        )),
        Reply::sse(chat::text("Parent went on.")),
    ])
    .await;
    server.route(
        "CHILD-A",
        vec![Reply::sse(chat::tool_call(
            "b1",
            "bash",
            json!({"command": after_file("never", "echo no")}),
        ))],
    );
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
    tui.send(b"\x04");
    assert_eq!(tui.exit_code().await, 0);
}
