//! Issue 35 §1 in the real interface in a pseudo-terminal: leaving the ctrl+r history search
//! (esc, ctrl+c, ctrl+g put the draft back), the transcript search finding an earlier match
//! from the end, and /help listing the keys a newcomer needs in aligned columns.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // test code fails loudly

use crate::support;

use support::chat;
use support::env::env;
use support::pty::Tui;

async fn ready(tui: &Tui) {
    tui.wait_for_text("Ask anything").await;
}

/// Wait until the composer's row reads `› text` and no search bar is drawn.
async fn draft_back(tui: &Tui, text: &str) {
    let row = format!("› {text}");
    tui.wait_for(&format!("the search to end with `{text}` back"), |_| {
        let screen = tui.screen();
        !screen.contains("search:")
            && screen.lines().any(|l| {
                let l = l.trim_end();
                l == row.trim_end() || (text.is_empty() && l.starts_with("›  Ask anything"))
            })
    })
    .await;
}

#[tokio::test]
async fn ctrl_r_search_is_left_with_esc_ctrl_c_or_ctrl_g_and_the_draft_comes_back() {
    let env = env();
    let server = chat::answering(&["Answer one.", "Answer two."]).await;
    let mut tui = env.start(&server, &[]);
    ready(&tui).await;
    tui.type_text("first prompt");
    tui.enter();
    tui.wait_for_text("Answer one.").await;
    tui.wait_until_idle().await;

    for (key, name) in [
        (&b"\x1b"[..], "esc"),
        (b"\x03", "ctrl+c"),
        (b"\x07", "ctrl+g"),
    ] {
        tui.type_text("my draft");
        draft_back(&tui, "my draft").await;
        tui.send(b"\x12"); // ctrl+r
        tui.type_text("fir");
        tui.wait_for_text("search: fir").await;
        tui.send(key);
        draft_back(&tui, "my draft").await;
        let screen = tui.screen();
        assert!(
            !screen.contains("again to quit"),
            "{name} armed quitting:\n{screen}"
        );
        tui.send(b"\x15"); // ctrl+u empties the line for the next round
        draft_back(&tui, "").await;
    }

    // With an empty draft, the esc that leaves the search does not count towards esc esc.
    tui.send(b"\x12");
    tui.type_text("fir");
    tui.wait_for_text("search: fir").await;
    tui.send(b"\x1b");
    draft_back(&tui, "").await;
    tui.send(b"\x1b"); // only now armed: the hint, not the rewind list
    tui.wait_for_text("esc again to rewind").await;
    tui.type_text("x");
    draft_back(&tui, "x").await;
    let screen = tui.screen();
    assert!(!screen.contains("Rewind to before"), "{screen}");

    // The draft still goes out as typed.
    tui.send(b"\x15");
    tui.type_text("second");
    tui.enter();
    tui.wait_for_text("Answer two.").await;
    tui.quit().await;
}

#[tokio::test]
async fn transcript_search_from_the_end_finds_an_early_match() {
    let env = env();
    let long: String = (0..120).map(|i| format!("filler line {i}\n\n")).collect();
    let server = chat::answering(&["The needle is here.", &long]).await;
    let mut tui = env.start(&server, &[]);
    ready(&tui).await;
    tui.type_text("first");
    tui.enter();
    tui.wait_for_text("The needle is here.").await;
    tui.wait_until_idle().await;
    tui.type_text("second");
    tui.enter();
    tui.wait_for_text("filler line 119").await;
    tui.wait_until_idle().await;

    tui.send(b"\x0f"); // ctrl+o
    tui.wait_for_text("/ search").await;
    tui.send(b"/");
    tui.type_text("needle");
    tui.enter();
    tui.wait_for("the search's answer", |_| {
        let screen = tui.screen();
        !screen.contains("enter searches")
            && (screen.contains("The needle is here.") || screen.contains("match for"))
    })
    .await;
    let screen = tui.screen();
    assert!(
        screen.contains("The needle is here.") && !screen.contains("no later match"),
        "{screen}"
    );
    tui.send(b"q");
    tui.wait_for_text("Ask anything").await;
    tui.quit().await;
}

#[tokio::test]
async fn help_lists_the_keys_a_newcomer_needs_and_aligns_its_columns() {
    let env = env();
    let server = chat::answering(&["unused"]).await;
    let mut tui = env.start(&server, &[]);
    ready(&tui).await;
    tui.type_text("/help");
    tui.wait_for_text("Keys and commands").await; // the popup: enter runs it
    tui.enter();
    let text = tui.wait_for_text("ctrl+z").await;
    for key in ["shift+tab", "ctrl+r", "ctrl+v", "ctrl+_"] {
        assert!(
            text.lines().any(|l| l.trim_start().starts_with(key)),
            "{key}:\n{text}"
        );
    }
    assert!(
        text.lines().any(|l| l.trim_start().starts_with("@ ")),
        "@:\n{text}"
    );
    // Every row's description starts in one column, `/permissions` (the longest name)
    // included.
    let column = |name: &str, description: &str| {
        text.lines()
            .find(|l| l.trim_start().starts_with(name))
            .and_then(|l| l.find(description))
            .unwrap_or_else(|| panic!("no {name} row:\n{text}"))
    };
    let model = column("/model ", "Show or switch the model");
    assert_eq!(column("/permissions ", "Mode, sandbox"), model, "{text}");
    assert_eq!(column("/help ", "Keys and commands"), model, "{text}");
    tui.quit().await;
}
