//! Issue 35 §2 keymaps in the real interface in a pseudo-terminal: `[keys]` rebinds actions
//! (enter and shift+enter swapped), what cannot be used in `[keys]` is said at start with
//! the config file's line while the rest works, `/keys` lists the effective bindings and
//! `/help` is drawn from the keymap.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // test code fails loudly

use crate::support;

use support::chat;
use support::env::{Env, env};
use support::pty::Tui;

/// shift+enter as a terminal with the kitty keyboard protocol sends it.
const SHIFT_ENTER: &[u8] = b"\x1b[13;2u";
/// f2 as xterm sends it.
const F2: &[u8] = b"\x1bOQ";

async fn ready(tui: &Tui) {
    tui.wait_for_text("Ask anything").await;
}

fn write_config(env: &Env, text: &str) -> std::path::PathBuf {
    let path = env.home.path().join("config.toml");
    std::fs::write(&path, text).unwrap();
    path
}

/// The text of the last user message the model was sent.
fn last_user_text(server: &support::server::FakeServer) -> String {
    let bodies = server.bodies();
    let body = bodies.last().expect("a request");
    let user = body["messages"]
        .as_array()
        .unwrap()
        .iter()
        .rev()
        .find(|m| m["role"] == "user")
        .expect("a user message");
    match &user["content"] {
        serde_json::Value::String(text) => text.clone(),
        parts => parts
            .as_array()
            .unwrap()
            .iter()
            .filter_map(|p| p["text"].as_str())
            .collect::<Vec<_>>()
            .join(""),
    }
}

#[tokio::test]
async fn swapping_enter_and_shift_enter_sends_with_shift_enter() {
    let env = env();
    write_config(
        &env,
        "[keys]\n\"composer.submit\" = \"shift+enter\"\n\"composer.newline\" = \"enter\"\n",
    );
    let server = chat::answering(&["Got both lines."]).await;
    let mut tui = env.start(&server, &[]);
    ready(&tui).await;
    tui.type_text("first");
    tui.enter();
    tui.type_text("second");
    // enter made a new line: the draft is two rows, nothing was sent.
    tui.wait_for("a two-line draft", |_| {
        let screen = tui.screen();
        let lines: Vec<&str> = screen.lines().map(str::trim_end).collect();
        lines
            .windows(2)
            .any(|pair| pair[0] == "› first" && pair[1] == "  second")
    })
    .await;
    assert!(server.bodies().is_empty(), "enter sent the draft");
    tui.send(SHIFT_ENTER);
    tui.wait_for_text("Got both lines.").await;
    assert_eq!(last_user_text(&server), "first\nsecond");
    tui.wait_until_idle().await;
    tui.quit().await;
}

#[tokio::test]
async fn what_keys_cannot_use_is_said_at_start_with_its_line_and_the_rest_works() {
    let env = env();
    write_config(
        &env,
        "[keys]\n\"view.transcript\" = \"f2\"\n\"thinking.toggle\" = \"f2\"\n\"composer.sumbit\" = \"ctrl+s\"\n\"composer.newline\" = [\"ctrl+enterr\", \"ctrl+j\"]\n",
    );
    let server = chat::answering(&["unused"]).await;
    let mut tui = env.start(&server, &[]);
    ready(&tui).await;
    let text = tui
        .wait_for_text("config.toml:3: [keys] f2 is already `view.transcript` (line 2)")
        .await;
    assert!(
        text.contains("config.toml:4: [keys] `composer.sumbit` is not an action"),
        "{text}"
    );
    assert!(text.contains("did you mean"), "{text}");
    assert!(text.contains("config.toml:5: [keys]"), "{text}");
    assert!(text.contains("enterr"), "{text}");
    // The full path is named (the one in the home of this test).
    let home = env.home.path().display().to_string();
    let name = home.rsplit('/').next().unwrap();
    assert!(text.contains(name), "{name}:\n{text}");
    // The binding that could be used works: f2 opens the transcript view.
    tui.send(F2);
    tui.wait_for_text("esc closes").await;
    tui.send(b"\x1b");
    tui.wait_for("the view to close", |_| {
        !tui.screen().contains("esc closes")
    })
    .await;
    ready(&tui).await;
    tui.quit().await;
}

#[tokio::test]
async fn keys_lists_the_effective_bindings_with_a_rebinding_and_its_line() {
    let env = env();
    write_config(
        &env,
        "model = \"test-model\"\n\n[keys]\n\"composer.history_search\" = [\"ctrl+f\", \"f3\"]\n",
    );
    let server = chat::answering(&["unused"]).await;
    let mut tui = env.start(&server, &[]);
    ready(&tui).await;
    tui.type_text("/keys");
    tui.wait_for_text("Every key binding").await; // the popup: enter runs it
    tui.enter();
    let text = tui.wait_for_text("agent.next").await;
    // A row, and the line under it (where a rebinding says where it was set).
    let row = |name: &str| {
        let lines: Vec<&str> = text.lines().collect();
        let at = lines
            .iter()
            .position(|l| l.trim_start().starts_with(&format!("{name} ")))
            .unwrap_or_else(|| panic!("no {name} row:\n{text}"));
        // A long row wraps: the note is on one of the next two lines.
        let under = lines[at + 1..(at + 3).min(lines.len())].join("\n");
        (lines[at].to_string(), under)
    };
    let (search, under) = row("composer.history_search");
    assert!(search.contains("ctrl+f, f3"), "{search}");
    assert!(!search.contains("ctrl+r"), "{search}");
    assert!(under.contains("set at config.toml:4"), "{under}");
    let (submit, under) = row("composer.submit");
    assert!(submit.contains("enter"), "{submit}");
    assert!(!under.contains("config.toml"), "{under}");
    // Grouped by where they work.
    for heading in ["Composer", "Approval", "Transcript view", "Agent view"] {
        assert!(
            text.lines().any(|l| l.trim() == heading),
            "{heading}:\n{text}"
        );
    }
    tui.quit().await;
}

#[tokio::test]
async fn help_is_drawn_from_the_keymap() {
    let env = env();
    write_config(&env, "[keys]\n\"view.transcript\" = \"f2\"\n");
    let server = chat::answering(&["unused"]).await;
    let mut tui = env.start(&server, &[]);
    ready(&tui).await;
    tui.type_text("/help");
    tui.wait_for_text("Keys and commands").await; // the popup: enter runs it
    tui.enter();
    let text = tui
        .wait_for_text("[keys] in config.toml rebinds them")
        .await;
    let row = |chords: &str| {
        text.lines()
            .find(|l| l.trim_start().starts_with(&format!("{chords} ")))
            .unwrap_or_else(|| panic!("no {chords} row:\n{text}"))
            .to_string()
    };
    assert!(row("ctrl+r").contains("search earlier prompts"), "{text}");
    assert!(row("shift+tab").contains("next permission mode"), "{text}");
    // The rebinding is what /help says; ctrl+o is no longer the transcript view's.
    assert!(row("f2").contains("transcript view"), "{text}");
    assert!(
        !text.lines().any(|l| l.trim_start().starts_with("ctrl+o ")),
        "{text}"
    );
    tui.quit().await;
}
