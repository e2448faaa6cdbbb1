//! Issue 35 in the real interface in a pseudo-terminal: a long bracketed paste is one chip in
//! the composer and in the transcript's echo while the model gets every line (§1.6), and the
//! composer's vim mode (§2.3).
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // test code fails loudly

use crate::support;

use support::chat;
use support::env::env;

/// The text of the last user message of a request body.
fn last_user_text(body: &serde_json::Value) -> String {
    let messages = body["messages"].as_array().unwrap();
    let user = messages.iter().rev().find(|m| m["role"] == "user").unwrap();
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

fn numbered(n: usize) -> String {
    (1..=n)
        .map(|i| format!("pasted line {i}"))
        .collect::<Vec<_>>()
        .join("\n")
}

#[tokio::test]
async fn a_long_paste_is_one_chip_and_is_sent_whole() {
    let env = env();
    let server = chat::answering(&["Read them all."]).await;
    let mut tui = env.start(&server, &[]);
    tui.wait_for_text("Ask anything").await;
    tui.type_text("count these: ");
    let paste = format!("\x1b[200~{}\x1b[201~", numbered(122));
    tui.send(paste.as_bytes());
    tui.wait_for_text("› count these: [pasted 122 lines]").await;
    // Backspace after the chip takes it whole; the same paste again is the same chip.
    tui.send(b"\x7f");
    tui.wait_for("the chip to go whole", |s| {
        !s.contains("[pasted") && s.contains("› count these:")
    })
    .await;
    tui.send(paste.as_bytes());
    tui.wait_for_text("› count these: [pasted 122 lines]").await;
    assert!(
        !tui.screen().contains("pasted line 100"),
        "{}",
        tui.screen()
    );
    tui.enter();
    tui.wait_for_text("Read them all.").await;
    tui.wait_until_idle().await;
    let sent = last_user_text(&server.bodies()[0]);
    assert!(
        sent.contains(&format!("count these: {}", numbered(122))),
        "the model gets every line: {sent}"
    );
    // The echo of the message is the chip, not 122 lines.
    let transcript = tui.transcript();
    assert!(
        transcript.contains("› count these: [pasted 122 lines]"),
        "{transcript}"
    );
    assert!(!transcript.contains("pasted line 100"), "{transcript}");
    tui.quit().await;
}

/// The composer's row as it reads: the prompt sign and the text.
async fn composer_reads(tui: &support::pty::Tui, row: &str) {
    tui.wait_for(&format!("the composer to read `{row}`"), |_| {
        tui.screen().lines().any(|l| l.trim_end() == row)
    })
    .await;
}

#[tokio::test]
async fn a_vim_edit_sequence_is_sent_and_esc_in_normal_mode_still_rewinds() {
    let env = env();
    std::fs::write(
        env.home.path().join("config.toml"),
        "[tui]\neditor_mode = \"vim\"\n",
    )
    .unwrap();
    let server = chat::answering(&["Edited.", "Second."]).await;
    let mut tui = env.start(&server, &[]);
    tui.wait_for_text("-- INSERT --").await;
    tui.type_text("hello world");
    composer_reads(&tui, "› hello world").await;
    tui.send(b"\x1b");
    tui.wait_for_text("NORMAL").await;
    composer_reads(&tui, "N hello world").await;
    tui.type_text("0dw");
    composer_reads(&tui, "N world").await;
    tui.type_text("A!");
    tui.wait_for_text("-- INSERT --").await;
    tui.send(b"\x1b");
    composer_reads(&tui, "N world!").await;
    tui.enter();
    tui.wait_for_text("Edited.").await;
    tui.wait_until_idle().await;
    assert_eq!(last_user_text(&server.bodies()[0]), "world!");
    // The next prompt starts in insert mode; esc goes to normal mode (not "esc again"),
    // and there esc is the default composer's esc: esc esc on an empty composer rewinds.
    tui.wait_for_text("-- INSERT --").await;
    tui.send(b"\x1b");
    tui.wait_for_text("NORMAL").await;
    assert!(!tui.screen().contains("esc again to rewind"));
    tui.send(b"\x1b");
    tui.wait_for_text("esc again to rewind").await;
    tui.send(b"\x1b");
    tui.wait_for_text("Rewind to before").await;
    tui.send(b"\x1b");
    tui.wait_for("the rewind list to close", |_| {
        !tui.screen().contains("Rewind to before")
    })
    .await;
    tui.quit().await;
}

#[tokio::test]
async fn slash_vim_toggles_vim_keys_for_the_session() {
    let env = env();
    let server = chat::answering(&["unused"]).await;
    let mut tui = env.start(&server, &[]);
    tui.wait_for_text("Ask anything").await;
    tui.type_text("/vim");
    tui.enter();
    tui.wait_for_text("Vim keys on for this session").await;
    tui.wait_for_text("-- INSERT --").await;
    tui.type_text("abc");
    tui.send(b"\x1b");
    composer_reads(&tui, "N abc").await;
    tui.wait_for_text("NORMAL").await;
    tui.type_text("hx");
    composer_reads(&tui, "N ac").await;
    tui.type_text("cc/vim");
    composer_reads(&tui, "› /vim").await;
    tui.enter();
    tui.wait_for_text("Vim keys off for this session").await;
    // The default keys again: letters type, esc is not a mode.
    tui.type_text("hx");
    composer_reads(&tui, "› hx").await;
    let screen = tui.screen();
    assert!(
        !screen.contains("NORMAL") && !screen.contains("-- INSERT --"),
        "{screen}"
    );
    assert!(server.bodies().is_empty(), "nothing was sent");
    tui.send(b"\x15\x04");
    assert_eq!(tui.exit_code().await, 0);
}
