//! Sessions by title in the interface: `/rename` shows and sets the session's title (the
//! engine's set_session_name), and the `agent -r` picker lists sessions by title with a
//! search line — fuzzy over titles, then through the sessions' contents.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // test code fails loudly

use crate::support;

use std::time::{Duration, Instant};
use support::chat;
use support::env::{Env, env};
use support::process::run;
use support::pty::Tui;
use support::server::FakeServer;

/// Wait (up to 120 s) until the visible screen (not the scrollback) satisfies `pred`.
async fn wait_screen(tui: &Tui, what: &str, pred: impl Fn(&str) -> bool) -> String {
    let deadline = Instant::now() + Duration::from_secs(120);
    loop {
        let screen = tui.screen();
        if pred(&screen) {
            return screen;
        }
        assert!(
            Instant::now() < deadline,
            "timed out waiting for {what}; the screen shows:\n{screen}"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

async fn headless(env: &Env, server: &FakeServer, prompt: &str) {
    let out = run(env.agent(server, &["-p", prompt])).await;
    assert_eq!(out.code, 0, "{}", out.stderr);
}

#[tokio::test]
async fn rename_shows_in_the_picker() {
    let env = env();
    let server = chat::answering(&["Looked at it.", "Other answer."]).await;
    let mut tui = env.start(&server, &[]);
    tui.wait_for_text("Ask anything").await;
    tui.type_text("first topic about parsers\nand more");
    tui.enter();
    tui.wait_for_text("Looked at it.").await;
    tui.wait_until_idle().await;
    // The title until renamed: the first prompt's first line.
    tui.type_text("/rename");
    tui.enter();
    tui.wait_for_text("Title: first topic about parsers — rename with /rename TITLE")
        .await;
    tui.type_text("/rename Parser work");
    tui.enter();
    tui.wait_for_text("Renamed this session: Parser work").await;
    tui.type_text("/rename");
    tui.enter();
    tui.wait_for_text("Title: Parser work").await;
    tui.quit().await;
    let text = std::fs::read_to_string(env.only_session()).unwrap();
    assert!(
        text.lines()
            .any(|l| l.starts_with("{\"type\":\"session_info\"")
                && l.contains("\"name\":\"Parser work\"")),
        "{text}"
    );

    // A second session; the picker shows both by title, with their sizes.
    headless(&env, &server, "second session here").await;
    let mut tui = env.start(&server, &["-r"]);
    let screen = wait_screen(&tui, "the picker", |s| {
        s.contains("Resume a session") && s.contains("Parser work")
    })
    .await;
    assert!(
        screen.contains("Parser work · just now · 2 messages"),
        "{screen}"
    );
    assert!(screen.contains("second session here · "), "{screen}");
    assert!(!screen.contains("first topic about parsers"), "{screen}");
    tui.send(b"\x1b");
    tui.wait_for_text("Ask anything").await;
    tui.quit().await;
}

#[tokio::test]
async fn the_picker_searches_titles_and_contents() {
    let env = env();
    let server = chat::answering(&[
        "Fixed.",
        "Written.",
        "Found the zebrafish-token leak in the cache.",
        "Back on memory.",
    ])
    .await;
    headless(&env, &server, "Fix the flaky build").await;
    headless(&env, &server, "Write release notes").await;
    headless(&env, &server, "Investigate memory use").await;
    let mut tui = env.start(&server, &["-r"]);
    wait_screen(&tui, "every session", |s| {
        s.contains("Fix the flaky build")
            && s.contains("Write release notes")
            && s.contains("Investigate memory use")
    })
    .await;

    // Fuzzy over titles: only the one whose title has the letters in order.
    tui.type_text("rls nts");
    let screen = wait_screen(&tui, "the title search", |s| {
        s.contains("search: rls nts") && !s.contains("Fix the flaky build")
    })
    .await;
    assert!(screen.contains("Write release notes"), "{screen}");
    assert!(!screen.contains("Investigate memory use"), "{screen}");

    // ctrl+u empties the search; words no title has are looked for in the contents.
    tui.send(b"\x15");
    wait_screen(&tui, "every session again", |s| {
        s.contains("Fix the flaky build") && s.contains("Write release notes")
    })
    .await;
    tui.type_text("zebrafish");
    let screen = wait_screen(&tui, "the content search", |s| {
        s.contains("search: zebrafish") && s.contains("in content")
    })
    .await;
    assert!(screen.contains("Investigate memory use"), "{screen}");
    assert!(!screen.contains("Write release notes"), "{screen}");
    assert!(!screen.contains("Fix the flaky build"), "{screen}");
    tui.enter();
    tui.wait_for_text("Resumed “Investigate memory use”").await;
    tui.type_text("go on");
    tui.enter();
    tui.wait_for_text("Back on memory.").await;
    tui.wait_until_idle().await;
    tui.quit().await;

    // Esc empties a search line first, then closes the picker.
    let mut tui = env.start(&server, &["-r"]);
    wait_screen(&tui, "the picker", |s| s.contains("Resume a session")).await;
    tui.type_text("xyz");
    wait_screen(&tui, "no match", |s| s.contains("no session matches")).await;
    tui.send(b"\x1b");
    wait_screen(&tui, "the cleared search", |s| {
        s.contains("Resume a session") && s.contains("Fix the flaky build")
    })
    .await;
    tui.send(b"\x1b");
    tui.wait_for_text("Ask anything").await;
    tui.quit().await;
}
