//! `agent attach` in a terminal: the real interface, in pseudo-terminals, as a client of a
//! live session a real `agent --mode rpc` runs — two of them on one run (one prompts, both
//! see it stream, the second approves, the first stops it), leaving mid-stream and coming
//! back without a word lost or shown twice, and the owner's exit said in words.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // test code fails loudly

use crate::support;

use serde_json::json;
use std::path::Path;
use std::time::Duration;
use support::chat;
use support::env::{Env, env};
use support::process::Rpc;
use support::pty::{COLS, ROWS, Tui};
use support::server::{End, FakeServer, Reply};

/// `agent --mode rpc` and its session's id.
async fn owner(env: &Env, server: &FakeServer) -> (Rpc, String) {
    let mut rpc = Rpc::spawn(env.agent(server, &["--mode", "rpc"]));
    rpc.send(json!({"id": "state", "type": "get_state"})).await;
    let state = rpc.response("state").await;
    let id = state["data"]["sessionId"].as_str().unwrap().to_string();
    (rpc, id)
}

/// `agent attach ID` in a terminal of its own (no grace period for approval keys).
async fn attach(home: &Path, cwd: &Path, id: &str) -> Tui {
    let tui = Tui::spawn_sized(
        &["attach", id],
        home,
        cwd,
        ROWS,
        COLS,
        &[("AGENT_APPROVAL_GRACE_MS", "0")],
    );
    tui.wait_for_text("Attached to live session").await;
    tui
}

fn count(haystack: &str, needle: &str) -> usize {
    haystack.matches(needle).count()
}

#[tokio::test]
async fn attach_two_interfaces_share_a_run_and_either_drives_it() {
    let env = env();
    let mut stalled = chat::text_deltas(&["still ", "working"]);
    // Without the finish, the usage and `[DONE]`: the run stays busy until stopped.
    stalled.truncate(stalled.len() - 3);
    let server = FakeServer::start(vec![
        Reply::sse(chat::tool_call(
            "c1",
            "bash",
            json!({"command": "touch approved"}),
        )),
        Reply::sse(stalled).then(End::Stall),
    ])
    .await;
    let (mut rpc, id) = owner(&env, &server).await;
    let first = attach(env.home.path(), env.cwd.path(), &id).await;
    let second = attach(env.home.path(), env.cwd.path(), &id).await;
    first.type_text("make a file");
    first.enter();
    // Both show the question and the dialog.
    for tui in [&first, &second] {
        tui.wait_for("the approval dialog", |s| {
            s.contains("touch approved") && s.contains("y allow once")
        })
        .await;
    }
    assert!(second.transcript().contains("make a file"));
    // The second answers; the first's dialog closes, and both see the answer stream.
    second.send(b"y");
    for tui in [&first, &second] {
        tui.wait_for("the answer after the approval", |s| {
            s.contains("still working") && !s.contains("y allow once")
        })
        .await;
    }
    assert!(env.cwd.path().join("approved").exists());
    // The first stops the run; both say so.
    first.send(b"\x1b");
    for tui in [&first, &second] {
        tui.wait_for_text("Interrupted.").await;
    }
    let ended = rpc.until(|l| l["type"] == "agent_end").await;
    assert_eq!(ended.last().unwrap()["status"], "aborted");
    // Leaving stops nothing and ends with 0.
    for mut tui in [first, second] {
        tui.quit().await;
        assert!(tui.terminal_restored());
    }
    assert_eq!(rpc.exit_code().await, 0);
}

#[tokio::test]
async fn attach_leaving_and_coming_back_mid_stream_loses_and_repeats_nothing() {
    let env = env();
    let words: Vec<String> = (0..30).map(|i| format!("w{i:02} ")).collect();
    let deltas: Vec<&str> = words.iter().map(String::as_str).collect();
    let server = FakeServer::start(vec![
        Reply::sse(chat::text_deltas(&deltas)).slowly(Duration::from_millis(100)),
    ])
    .await;
    let (mut rpc, id) = owner(&env, &server).await;
    let mut leaver = attach(env.home.path(), env.cwd.path(), &id).await;
    rpc.send(json!({"id": "p", "type": "prompt", "message": "count for me"}))
        .await;
    leaver.wait_for_text("w03").await;
    // ctrl+d leaves; the run goes on.
    leaver.send(b"\x04");
    assert_eq!(leaver.exit_code().await, 0);
    let back = attach(env.home.path(), env.cwd.path(), &id).await;
    back.wait_for_text("w29").await;
    rpc.until(|l| l["type"] == "agent_end").await;
    let seen = back.wait_until_idle().await;
    // The question once, every word once, in order.
    assert_eq!(count(&seen, "count for me"), 1, "{seen}");
    for word in &words {
        assert_eq!(count(&seen, word.trim()), 1, "{word} in:\n{seen}");
    }
    let first = seen.find("w00").unwrap();
    let last = seen.find("w29").unwrap();
    assert!(first < last, "{seen}");
    let mut back = back;
    back.send(b"\x04");
    assert_eq!(back.exit_code().await, 0);
    assert_eq!(rpc.exit_code().await, 0);
}

#[tokio::test]
async fn attach_is_told_in_words_when_the_owner_exits() {
    let env = env();
    let server = FakeServer::start(vec![]).await;
    let (rpc, id) = owner(&env, &server).await;
    let mut tui = attach(env.home.path(), env.cwd.path(), &id).await;
    assert_eq!(rpc.exit_code().await, 0);
    assert_eq!(tui.exit_code().await, 0);
    assert!(tui.terminal_restored());
    let said = tui.transcript();
    assert!(
        said.contains("The live session ended: the session's process exited"),
        "{said}"
    );
}
