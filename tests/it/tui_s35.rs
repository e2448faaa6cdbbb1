//! Sessions you can manage and background shells' reporting (issue 35, s35): a background
//! shell the user stops from `/ps` is told to the model once, with the next request.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // test code fails loudly

use crate::support;

use agent::protocol::event::AgentEvent;
use serde_json::json;
use std::time::{Duration, Instant};
use support::chat;
use support::harness::{Harness, result_of};
use support::server::Reply;

/// The conversation of the `n`th request the model got, one line per message.
fn conversation(server: &support::server::FakeServer, n: usize) -> String {
    let bodies = server.bodies();
    support::harness::transcript(&bodies[n]).join("\n")
}

/// A background shell the user stops (`/ps`) is reported to the model with the next
/// request — that the user stopped it, with its last output — exactly once: the model does
/// not go on believing it runs.
#[tokio::test]
async fn a_background_shell_the_user_stops_is_reported_once_with_the_next_request() {
    let mut h = Harness::start_with(vec![], |c| {
        c.tools = agent::tools::Tools::from_names(agent::tools::ALL_TOOLS).unwrap();
    })
    .await;
    h.server.push(Reply::sse(chat::tool_call(
        "c1",
        "bash",
        json!({"command": "echo booting; echo serving-on-4711; exec sleep 600", "background": true}),
    )));
    h.server.push(Reply::sse(chat::text("The server runs.")));
    h.server.push(Reply::sse(chat::text("It was stopped.")));
    h.server.push(Reply::sse(chat::text("Still stopped.")));
    h.prompt("start the server");
    let events = h.until_end().await;
    let (text, is_error) = result_of(&events, "c1");
    assert!(!is_error, "{text}");
    assert!(text.contains("[shell_1: running]"), "{text}");

    // Its output is in (read or not, the note quotes its last lines).
    let shells = h.agent.background_shells();
    let deadline = Instant::now() + Duration::from_secs(120);
    let mut seen = text.clone();
    while !seen.contains("serving-on-4711") {
        assert!(Instant::now() < deadline, "no output: {seen}");
        seen.push_str(&shells.take_new_output("shell_1").unwrap().text);
        tokio::time::sleep(Duration::from_millis(20)).await;
    }

    // The user stops it from /ps.
    let status = shells.stop_by_user("shell_1").await;
    assert_eq!(status, Some(agent::tools::background::ShellStatus::Killed));

    h.prompt("is the server up?");
    h.until(|e| matches!(e, AgentEvent::AgentEnd { .. })).await;
    h.prompt("and now?");
    h.until(|e| matches!(e, AgentEvent::AgentEnd { .. })).await;
    // Requests 0 and 1 were the first run's; 2 follows the stop, 3 comes after it.
    for n in [2, 3] {
        let sent = conversation(&h.server, n);
        assert_eq!(
            sent.matches("[shell_1 was stopped by the user").count(),
            1,
            "request {n} tells it exactly once: {sent}"
        );
    }
    let sent = conversation(&h.server, 2);
    let note = &sent[sent.find("[shell_1 was stopped by the user").unwrap()..];
    let note = note.lines().next().unwrap();
    assert!(note.contains("serving-on-4711"), "its last output: {note}");
    // It rides on the user's next message.
    let asked = sent.find("user:is the server up?").unwrap();
    assert!(
        sent.find("[shell_1 was stopped by the user").unwrap() > asked,
        "{sent}"
    );
}
