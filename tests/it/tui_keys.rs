//! Keys and messages that match habits, in the real interface in a pseudo-terminal: prompt
//! history across restarts and ctrl+r, readline editing and undo, grapheme-wise editing,
//! the command popup, a long paste typed without bracketed paste, the permission mode, and
//! what resuming and compacting say.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // test code fails loudly

use crate::support;

use support::chat;
use support::env::env;
use support::pty::Tui;
use support::server::FakeServer;

async fn ready(tui: &Tui) {
    tui.wait_for_text("Ask anything").await;
}

/// The composer's row, as `› text` (trailing spaces trimmed); an empty composer shows its
/// placeholder.
async fn composer_shows(tui: &Tui, text: &str) {
    let row = format!("› {text}");
    tui.wait_for(&format!("the composer to show `{text}`"), |_| {
        tui.screen().lines().any(|l| {
            let l = l.trim_end();
            l == row || (text.is_empty() && l.starts_with("›  Ask anything"))
        })
    })
    .await;
}

#[tokio::test]
async fn prompt_history_survives_a_restart_and_ctrl_r_searches_it() {
    let env = env();
    let server = chat::answering(&["Answer one.", "Answer two.", "Answer three."]).await;
    let mut tui = env.start(&server, &[]);
    ready(&tui).await;
    for (prompt, answer) in [
        ("first prompt", "Answer one."),
        ("second prompt", "Answer two."),
    ] {
        tui.type_text(prompt);
        tui.enter();
        // The answer first: until the interface has read the enter key, it looks idle too
        // (and a prompt typed during the run would steer it instead).
        tui.wait_for_text(answer).await;
        tui.wait_until_idle().await;
    }
    tui.quit().await;

    let mut tui = env.start(&server, &[]);
    ready(&tui).await;
    tui.send(b"\x1b[A");
    composer_shows(&tui, "second prompt").await;
    tui.send(b"\x1b[A");
    composer_shows(&tui, "first prompt").await;
    tui.send(b"\x15"); // ctrl+u empties the line
    composer_shows(&tui, "").await;
    tui.send(b"\x12"); // ctrl+r
    tui.type_text("fir");
    tui.wait_for_text("search: fir").await;
    tui.enter();
    composer_shows(&tui, "first prompt").await;
    tui.enter();
    tui.wait_for_text("Answer three.").await;
    tui.quit().await;
}

#[tokio::test]
async fn readline_keys_undo_and_graphemes() {
    let env = env();
    let server = FakeServer::start(vec![]).await;
    let mut tui = env.start(&server, &[]);
    ready(&tui).await;
    tui.type_text("hello brave world");
    tui.send(b"\x17"); // ctrl+w: a word back
    composer_shows(&tui, "hello brave").await;
    tui.send(b"\x19"); // ctrl+y: yank it back
    composer_shows(&tui, "hello brave world").await;
    tui.send(b"\x01"); // ctrl+a, then type at the start
    tui.type_text(">");
    composer_shows(&tui, ">hello brave world").await;
    tui.send(b"\x0b"); // ctrl+k: to the end
    composer_shows(&tui, ">").await;
    tui.send(b"\x1f"); // ctrl+_: undo
    composer_shows(&tui, ">hello brave world").await;
    tui.send(b"\x05\x15"); // ctrl+e, ctrl+u: to the start
    composer_shows(&tui, "").await;
    // A flag is two code points, an accented letter two: one backspace each.
    tui.type_text("x🇫🇷e\u{301}y");
    tui.send(b"\x1b[D"); // ← over y
    tui.send(b"\x7f"); // backspace: the whole é
    composer_shows(&tui, "x🇫🇷y").await;
    // ← then → cross the whole flag; backspace takes all of it.
    tui.send(b"\x1b[D\x1b[C\x7f");
    composer_shows(&tui, "xy").await;
    tui.send(b"\x03\x03");
    assert_eq!(tui.exit_code().await, 0);
}

#[tokio::test]
async fn the_command_popup_closes_on_esc_and_enter_runs_its_command() {
    let env = env();
    let server = FakeServer::start(vec![]).await;
    let mut tui = env.start(&server, &[]);
    ready(&tui).await;
    tui.type_text("/");
    let screen = tui.wait_for_text("Show or switch the model").await;
    // The help column never touches the usage column.
    let row = screen
        .lines()
        .find(|l| l.contains("/model [provider/]model"))
        .unwrap_or_default();
    let gap = row
        .split_once("/model [provider/]model")
        .and_then(|(_, rest)| rest.split_once("Show or switch the model"))
        .map(|(between, _)| between);
    assert!(
        gap.is_some_and(|g| g.len() >= 2 && g.trim().is_empty()),
        "{screen}"
    );
    tui.send(b"\x1b");
    tui.wait_for("the popup to close", |s| !s.contains("Show or switch"))
        .await;
    composer_shows(&tui, "/").await;
    tui.type_text("mo");
    tui.wait_for_text("Show or switch the model").await;
    tui.enter();
    tui.wait_for_text("Model: openai/test-model").await;
    assert!(server.requests().is_empty());
    tui.quit().await;
}

#[tokio::test]
async fn a_long_paste_without_bracketed_paste_arrives_whole() {
    let env = env();
    let server = FakeServer::start(vec![]).await;
    let mut tui = env.start(&server, &[]);
    ready(&tui).await;
    // 3,000 bytes in one write, as a terminal without bracketed paste sends them.
    let text = format!("{}PASTE-END", "word ".repeat(600));
    tui.send(text.as_bytes());
    tui.wait_for_text("PASTE-END").await;
    tui.send(b"\x03\x03");
    assert_eq!(tui.exit_code().await, 0);
}

#[tokio::test]
async fn shift_tab_cycles_the_permission_mode_shown_in_the_status_line() {
    let env = env();
    let server = FakeServer::start(vec![]).await;
    let mut tui = env.start(&server, &[]);
    ready(&tui).await;
    tui.wait_for_text("ask mode").await;
    tui.send(b"\x1b[Z");
    tui.wait_for_text("auto mode").await;
    tui.send(b"\x1b[Z");
    tui.wait_for_text("plan mode").await;
    tui.send(b"\x1b[Z");
    tui.wait_for_text("read-only mode").await;
    tui.send(b"\x1b[Z");
    tui.wait_for_text("ask mode").await;
    tui.quit().await;
}

/// `/thinking`, shift+tab and `/model` are the engine's set_thinking,
/// set_permission_mode and set_model (one parser for levels: `HIGH` is `high`).
#[tokio::test]
async fn settings_keys_are_the_engines_commands() {
    let env = env();
    let server = FakeServer::start(vec![]).await;
    let mut tui = env.start_with(&server, &[], &[("RUST_LOG", "debug")]);
    ready(&tui).await;
    tui.wait_for_text("ask mode").await;
    tui.type_text("/thinking HIGH");
    tui.enter();
    tui.wait_for_text("Thinking: high").await;
    tui.send(b"\x1b[Z");
    tui.wait_for_text("auto mode").await;
    tui.type_text("/model other-model");
    tui.enter();
    tui.wait_for_text("Model: ").await;
    let home = env.home.path();
    tui.wait_for("the model switch to be logged", |_| {
        support::commands::logged_results(home).len() == 3
    })
    .await;
    assert_eq!(
        support::commands::logged_commands(home),
        vec![
            serde_json::json!({"type": "set_thinking", "level": "high"}),
            serde_json::json!({"type": "set_permission_mode", "mode": "auto"}),
            serde_json::json!({"type": "set_model", "model": "other-model"}),
        ],
        "{}",
        support::commands::log(home)
    );
    tui.quit().await;
}

#[tokio::test]
async fn resuming_says_which_session_and_compacting_says_one_thing() {
    let env = env();
    let server = chat::answering(&["Noted.", "The summary."]).await;
    let mut tui = env.start(&server, &[]);
    ready(&tui).await;
    tui.type_text("remember the parser bug");
    tui.enter();
    tui.wait_for_text("Noted.").await;
    tui.wait_until_idle().await;
    tui.quit().await;

    let mut tui = env.start_with(&server, &["-c"], &[("RUST_LOG", "debug")]);
    let screen = tui.wait_for_text("Resumed").await;
    assert!(
        screen.contains("Resumed “remember the parser bug” · 2 messages · last one just now"),
        "{screen}"
    );
    ready(&tui).await;
    tui.type_text("/compact");
    tui.enter();
    // Asked for, even one exchange is compacted (issue 35 §1.10).
    let screen = tui.wait_for_text("Compacted the conversation").await;
    tui.wait_until_idle().await;
    let screen = format!("{screen}{}", tui.transcript());
    assert!(!screen.contains("failed"), "{screen}");
    assert!(!screen.contains("Nothing"), "{screen}");
    assert_eq!(
        tui.transcript()
            .matches("Compacted the conversation")
            .count(),
        1
    );
    // `/compact` is the engine's compact command.
    let home = env.home.path();
    tui.wait_for("the compaction to be logged", |_| {
        support::commands::logged_results(home)
            .iter()
            .any(|r| r.starts_with("compact "))
    })
    .await;
    assert_eq!(
        support::commands::logged_commands(home),
        vec![serde_json::json!({"type": "compact"})],
        "{}",
        support::commands::log(home)
    );
    tui.quit().await;
}
