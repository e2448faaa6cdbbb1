//! Issue 35, TUI rendering in a real terminal: resizing while an answer streams or a tool
//! runs leaves each line in the scrollback once. vt100 does not reflow rows on a resize,
//! so these tests run the interface in `tmux`, which does (as most terminals do), and read
//! its whole history with `capture-pane`.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // test code fails loudly

use crate::support;

use support::chat;
use support::env::env;
use support::pty::{Terminal, Tui};
use support::server::{FakeServer, Gate, Reply};
use support::tmux::{Tmux, rewrapped, status_at, words};

#[tokio::test]
async fn resizing_while_streaming_leaves_no_copy_of_the_partial_line() {
    let env = env();
    let words = words(300);
    let deltas: Vec<&str> = words.iter().map(String::as_str).collect();
    // Frame 0 is the role; frame 1 + i carries word i.
    let (first_stop, second_stop) = (Gate::new(), Gate::new());
    let reply = Reply::sse(chat::text_deltas(&deltas))
        .pause_before(1 + 15, &first_stop)
        .pause_before(1 + 130, &second_stop);
    // A first answer fills the screen: the live area then sits at its bottom, where a
    // terminal that rewraps pushes rows into its scrollback rather than down.
    let filler: Vec<String> = (0..30).map(|i| format!("filler {i}")).collect();
    let first = Reply::sse(chat::text(&filler.join("\n\n")));
    let server = FakeServer::start(vec![first, reply]).await;
    let Some(tmux) = Tmux::start(&env, &server, 100, 40, &[]) else {
        return;
    };
    tmux.wait_for("the prompt", |s| s.contains("Ask anything"))
        .await;
    tmux.type_text("fill the screen");
    tmux.key("Enter");
    tmux.wait_for("the first answer", |s| s.contains("filler 29"))
        .await;
    tmux.wait_for("the run to end", |s| !s.contains("esc to interrupt"))
        .await;
    tmux.type_text("tell me a long story");
    tmux.key("Enter");

    // The answer stops with a partial line on screen: narrower, then wider again.
    tmux.wait_for("the partial line", |s| rewrapped(s, 100, "w014"))
        .await;
    tmux.resize(60);
    tmux.wait_for("the partial line rewrapped at 60 columns", |s| {
        rewrapped(s, 60, "w014")
    })
    .await;
    tmux.resize(100);
    tmux.wait_for("the partial line rewrapped at 100 columns", |s| {
        s.lines().any(|row| row.trim_end().chars().count() > 60) && rewrapped(s, 100, "w014")
    })
    .await;

    // More of it: the partial paragraph is many rows, each cut in two at 60 columns.
    first_stop.open();
    tmux.wait_for("the second stop", |s| rewrapped(s, 100, "w129"))
        .await;
    tmux.resize(60);
    tmux.wait_for("the paragraph rewrapped at 60 columns", |s| {
        rewrapped(s, 60, "w129")
    })
    .await;
    tmux.resize(100);
    tmux.wait_for("the paragraph rewrapped at 100 columns", |s| {
        rewrapped(s, 100, "w129") && s.lines().any(|row| row.trim_end().chars().count() > 90)
    })
    .await;
    // Then several sizes at once.
    for cols in [70, 50, 100] {
        tmux.resize(cols);
    }
    tmux.wait_for("the partial line rewrapped at 100 columns", |s| {
        rewrapped(s, 100, "w129") && s.lines().any(|row| row.trim_end().chars().count() > 90)
    })
    .await;
    second_stop.open();
    tmux.wait_for("the end of the answer", |s| s.contains("w299"))
        .await;
    tmux.wait_for("the run to end", |s| !s.contains("esc to interrupt"))
        .await;

    tmux.wait_each_once(&words).await;
}

/// The row of the visible screen the composer is on (`› …`), trimmed.
fn composer_row(screen: &str) -> String {
    screen
        .lines()
        .rev()
        .find(|row| row.starts_with('›'))
        .unwrap_or_default()
        .trim_end()
        .to_string()
}

#[tokio::test]
async fn a_late_answer_to_the_colour_query_never_reaches_the_composer() {
    let env = env();
    let server = chat::answering(&["ok"]).await;
    let base = server.v1();
    // A terminal that answers nothing in time: the interface asks, waits 150 ms, goes on.
    let tui = Tui::spawn_with_terminal(
        &["--base-url", &base, "--model", "test-model"],
        env.home.path(),
        env.cwd.path(),
        support::pty::ROWS,
        support::pty::COLS,
        &[("NO_COLOR", "")],
        Terminal {
            silent: true,
            ..Terminal::default()
        },
    );
    tui.wait_for_text("Ask anything").await;
    assert!(tui.wrote(b"\x1b]11;?"), "the colour was asked for");

    // Then the answers come: ended by ST, with the device attributes after it…
    tui.send(b"\x1b]11;rgb:ffff/ffff/ffff\x1b\\\x1b[?62;22c");
    tui.type_text("abc");
    let screen = tui
        .wait_for("the typed keys", |_| {
            composer_row(&tui.screen()).ends_with("abc")
        })
        .await;
    assert_eq!(composer_row(&tui.screen()), "› abc", "{screen}");
    // …and ended by BEL, in the middle of typing.
    tui.send(b"\x1b]11;rgb:0000/0000/0000\x07");
    tui.type_text("d");
    tui.wait_for("the typed keys", |_| {
        composer_row(&tui.screen()).ends_with("d")
    })
    .await;
    assert_eq!(composer_row(&tui.screen()), "› abcd", "{}", tui.screen());
    // Alt+] typed by a person still reaches the interface (the composer keeps the text).
    tui.send(b"\x1b]");
    tui.type_text("e");
    tui.wait_for("the typed keys", |_| {
        composer_row(&tui.screen()).ends_with("e")
    })
    .await;
    assert!(!tui.screen().contains("rgb:"), "{}", tui.screen());
}

#[tokio::test]
async fn after_theme_the_composer_placeholder_takes_the_new_colours() {
    let env = env();
    let server = chat::answering(&["ok"]).await;
    // Colours on (the test terminal sets NO_COLOR): the dark theme dims secondary text,
    // high-contrast draws it in grey.
    let tui = env.start_with(&server, &[], &[("NO_COLOR", "")]);
    let placeholder = |tui: &Tui| {
        let (row, col) = tui.find("Ask anything").expect("the placeholder shows");
        tui.fg_at(row, col)
    };
    tui.wait_for_text("Ask anything").await;
    assert_eq!(placeholder(&tui), vt100::Color::Default, "{}", tui.screen());

    tui.type_text("/theme high-contrast");
    tui.enter();
    tui.wait_for_text("Theme: high-contrast").await;
    tui.wait_for("the placeholder back", |_| {
        tui.find("Ask anything").is_some()
    })
    .await;
    assert_eq!(placeholder(&tui), vt100::Color::Idx(7), "{}", tui.screen());
    // The prompt sign follows too.
    let (row, col) = tui.find("›  Ask").expect("the prompt sign");
    assert_ne!(tui.fg_at(row, col), vt100::Color::Default);
}

fn numbered(n: usize) -> String {
    (1..=n)
        .map(|i| format!("pasted line {i}"))
        .collect::<Vec<_>>()
        .join("\n")
}

/// Every user message's text of a request body, in order.
fn user_texts(body: &serde_json::Value) -> Vec<String> {
    body["messages"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|m| m["role"] == "user")
        .map(|m| match &m["content"] {
            serde_json::Value::String(text) => text.clone(),
            parts => parts
                .as_array()
                .unwrap()
                .iter()
                .filter_map(|p| p["text"].as_str())
                .collect::<Vec<_>>()
                .join(""),
        })
        .collect()
}

#[tokio::test]
async fn a_resumed_long_paste_is_collapsed_and_the_model_still_gets_it_whole() {
    let env = env();
    let server = chat::answering(&["Read them all.", "Still there."]).await;
    let mut tui = env.start(&server, &[]);
    tui.wait_for_text("Ask anything").await;
    tui.type_text("count these: ");
    tui.send(format!("\x1b[200~{}\x1b[201~", numbered(30)).as_bytes());
    tui.wait_for_text("› count these: [pasted 30 lines]").await;
    tui.enter();
    tui.wait_for_text("Read them all.").await;
    tui.wait_until_idle().await;
    tui.quit().await;

    // Resumed: the message is its first lines and a note, not 30 lines.
    let mut tui = env.start(&server, &["-c"]);
    tui.wait_for_text("Read them all.").await;
    let transcript = tui.transcript();
    assert!(
        transcript.contains("› count these: pasted line 1\n  pasted line 2\n  pasted line 3…"),
        "{transcript}"
    );
    assert!(
        transcript.contains("… 27 more lines (ctrl+o shows the whole message)"),
        "{transcript}"
    );
    assert!(!transcript.contains("pasted line 20"), "{transcript}");

    // The model still gets the whole message.
    tui.type_text("and now?");
    tui.enter();
    tui.wait_for_text("Still there.").await;
    tui.wait_until_idle().await;
    let sent = user_texts(&server.bodies()[1]);
    assert_eq!(
        sent,
        [
            format!("count these: {}", numbered(30)),
            "and now?".to_string()
        ]
    );

    // The transcript view shows it whole.
    tui.send(b"\x0f"); // ctrl+o
    tui.wait_for_text("pasted line 20").await;
    tui.send(b"q");
    tui.wait_for("the transcript view to close", |_| {
        tui.screen().contains("Ask anything")
    })
    .await;
    tui.quit().await;
}

#[tokio::test]
async fn resizing_while_a_tool_runs_leaves_its_rows_once() {
    let env = env();
    let command = format!(
        "printf 'out-%s\\n' r35-tool-output-line-long-enough-to-be-cut-at-sixty-columns-xxxx; {}",
        support::harness::after_file("go", "echo finished")
    );
    let server = FakeServer::start(vec![
        Reply::sse(chat::tool_call(
            "c1",
            "bash",
            serde_json::json!({ "command": command }),
        )),
        Reply::sse(chat::text("All done.")),
    ])
    .await;
    let Some(tmux) = Tmux::start(&env, &server, 100, 40, &["--permission-mode", "auto"]) else {
        return;
    };
    tmux.wait_for("the prompt", |s| s.contains("Ask anything"))
        .await;
    tmux.type_text("run it");
    tmux.key("Enter");
    tmux.wait_for("the tool's output", |s| s.contains("out-r35-tool"))
        .await;
    tmux.resize(60);
    tmux.wait_for("the live area drawn at 60 columns", |s| status_at(s, 60))
        .await;
    tmux.resize(100);
    tmux.wait_for("the live area drawn at 100 columns", |s| status_at(s, 100))
        .await;
    std::fs::write(env.cwd.path().join("go"), "").unwrap();
    tmux.wait_for("the answer", |s| s.contains("All done."))
        .await;
    tmux.wait_for("the run to end", |s| !s.contains("esc to interrupt"))
        .await;

    let history = tmux.history();
    assert_eq!(
        history.matches("printf 'out-").count(),
        1,
        "the call is shown once:\n{history}"
    );
    assert!(
        history.matches("out-r35-tool").count() <= 1,
        "its output is shown at most once:\n{history}"
    );
}
