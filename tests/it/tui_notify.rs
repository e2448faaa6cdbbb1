//! `[tui] notify` in a real terminal: while the terminal says it is not focused (the focus-out
//! report, `CSI O`), the end of a run and a call waiting for approval reach it as the chosen
//! bytes — OSC 9, OSC 777 or the bell —, and nothing is sent while it is focused.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // test code fails loudly

use crate::support;

use serde_json::json;
use support::chat;
use support::env::{Env, env};
use support::server::{FakeServer, Reply};

const FOCUS_OUT: &[u8] = b"\x1b[O";
const FOCUS_IN: &[u8] = b"\x1b[I";

fn configure(env: &Env, notify: &str) {
    std::fs::write(
        env.home.path().join("config.toml"),
        format!("[tui]\nnotify = \"{notify}\"\n"),
    )
    .unwrap();
}

#[tokio::test]
async fn tui_notify_tells_an_unfocused_terminal_by_osc9() {
    let env = env();
    configure(&env, "osc9");
    let server = FakeServer::start(vec![
        Reply::sse(chat::text("First answer.")),
        Reply::sse(chat::tool_call("c1", "bash", json!({"command": "true"}))),
        Reply::sse(chat::text("Second answer.")),
    ])
    .await;
    let mut tui = env.start_with(&server, &[], &[("AGENT_APPROVAL_GRACE_MS", "0")]);
    tui.wait_for_text("Ask anything").await;
    // It asks for focus reports.
    assert!(tui.wrote(b"\x1b[?1004h"));
    // Focused: nothing.
    tui.ask("one", "First answer.").await;
    assert!(!tui.wrote(b"\x1b]9;"));
    // Not focused: the approval, then the end.
    tui.send(FOCUS_OUT);
    tui.type_text("two");
    tui.enter();
    tui.wait_for_text("y allow once").await;
    tui.wait_for("the approval notification", |_| {
        tui.wrote(b"\x1b]9;agent: approve bash?\x07")
    })
    .await;
    tui.send(FOCUS_IN);
    tui.send(FOCUS_OUT);
    tui.send(b"y");
    tui.wait_for_text("Second answer.").await;
    tui.wait_for("the end notification", |_| {
        tui.wrote(b"\x1b]9;agent: done\x07")
    })
    .await;
    tui.quit().await;
    // Focus reports are switched off again.
    assert!(tui.wrote(b"\x1b[?1004l"));
}

#[tokio::test]
async fn tui_notify_rings_the_bell_or_sends_osc777_as_configured() {
    for (notify, expected) in [
        ("osc777", &b"\x1b]777;notify;agent;agent: done\x07"[..]),
        ("bell", &b"\x07"[..]),
    ] {
        let env = env();
        configure(&env, notify);
        let server = FakeServer::start(vec![Reply::sse(chat::text("Answered."))]).await;
        let mut tui = env.start(&server, &[]);
        tui.wait_for_text("Ask anything").await;
        let before = tui.count(expected);
        tui.send(FOCUS_OUT);
        tui.ask("go", "Answered.").await;
        tui.wait_for("the notification", |_| tui.count(expected) > before)
            .await;
        tui.quit().await;
    }
}

#[tokio::test]
async fn tui_notify_off_sends_nothing() {
    let env = env();
    configure(&env, "off");
    let server = FakeServer::start(vec![Reply::sse(chat::text("Quietly."))]).await;
    let mut tui = env.start(&server, &[]);
    tui.wait_for_text("Ask anything").await;
    let bells = tui.count(b"\x07");
    tui.send(FOCUS_OUT);
    tui.ask("go", "Quietly.").await;
    tui.quit().await;
    assert!(!tui.wrote(b"\x1b]9;") && !tui.wrote(b"\x1b]777;"));
    assert_eq!(tui.count(b"\x07"), bells);
}
