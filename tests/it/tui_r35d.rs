//! Issue 35 §1.10, resizing as a user does it, in `tmux` (a terminal that rewraps its rows
//! when its width changes, as most do; vt100 does not): width changes one after another
//! while an answer streams slowly, a drag, a live area taller than the screen once
//! rewrapped, height changes, a resize during a tool call, under an approval dialog, while
//! a sub-agent runs and right after an answer ends. After each, every distinctive word is
//! in the pane's whole history (`capture-pane -S -`) exactly once: none is lost, none is
//! shown twice. A width change prints the conversation again after clearing the screen and
//! the scrollback, and asks the terminal nothing (a terminal that never answers a cursor
//! query does not hold it up).
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // test code fails loudly

use crate::support;

use std::time::Duration;
use support::chat;
use support::delegation::delegating_once;
use support::env::{Env, env};
use support::harness::after_file;
use support::pty::{Terminal, Tui};
use support::server::{FakeServer, Gate, Reply};
use support::tmux::{Tmux, not_once, rewrapped, status_at, words, words_whole};

/// Resize to each of `sizes` in turn, each time waiting until the live area is drawn at
/// the new width (its status row) and then for one frame more (the spinner turns): the
/// interface has followed this size before the next one comes, as when a person resizes
/// a window step by step.
async fn resize_through(tmux: &Tmux, sizes: &[u16]) {
    for &cols in sizes {
        tmux.resize(cols);
        let width = usize::from(cols);
        let drawn = tmux
            .wait_for(&format!("the live area drawn at {cols} columns"), |s| {
                status_at(s, width)
            })
            .await;
        tmux.wait_for(&format!("a second frame at {cols} columns"), |s| {
            s != drawn && status_at(s, width)
        })
        .await;
    }
}

/// A streamed answer of `words`, stopped before word `at` until `gate` opens.
fn stopping_answer(words: &[String], at: usize, gate: &Gate) -> Reply {
    let deltas: Vec<&str> = words.iter().map(String::as_str).collect();
    // Frame 0 is the role; frame 1 + i carries word i.
    Reply::sse(chat::text_deltas(&deltas)).pause_before(1 + at, gate)
}

/// `f000 f001 …`, one a paragraph: an answer that fills the screen, so the live area sits
/// at its bottom (where a terminal that rewraps pushes rows into its scrollback).
fn filler() -> (Vec<String>, Reply) {
    let words: Vec<String> = (0..30).map(|i| format!("f{i:03}")).collect();
    let reply = Reply::sse(chat::text(&words.join("\n\n")));
    (words, reply)
}

async fn ask(tmux: &Tmux, prompt: &str) {
    tmux.wait_for("the prompt", |s| s.contains("Ask anything"))
        .await;
    tmux.type_text(prompt);
    tmux.key("Enter");
}

/// The answer ended with `last` and the composer is back, drawn whole: a screen read
/// while the terminal is still taking in a frame (it reads the output in pieces) can miss
/// the spinner before the composer is drawn.
async fn wait_until_idle(tmux: &Tmux, last: &str) {
    tmux.wait_for("the end of the answer", |s| s.contains(last))
        .await;
    tmux.wait_for("the run to end", |s| {
        !s.contains("esc to interrupt") && s.contains("Ask anything") && s.contains("test-model")
    })
    .await;
}

/// The interface in tmux after a first answer that fills the screen; `None` without tmux.
async fn after_filler(
    env: &Env,
    server: &FakeServer,
    cols: u16,
    rows: u16,
    extra: &[&str],
) -> Option<Tmux> {
    let tmux = Tmux::start(env, server, cols, rows, extra)?;
    ask(&tmux, "fill the screen").await;
    wait_until_idle(&tmux, "f029").await;
    Some(tmux)
}

/// An answer of `count` words streaming under a screen filled by a first answer (100
/// columns, `rows` rows), held before word `stop_at` until `finish`.
struct Story {
    tmux: Tmux,
    words: Vec<String>,
    fill: Vec<String>,
    stop: Gate,
    _server: FakeServer,
}

impl Story {
    /// `None` without tmux. `pace`: a pause before each word.
    async fn start(
        env: &Env,
        count: usize,
        stop_at: usize,
        rows: u16,
        pace: Option<Duration>,
    ) -> Option<Story> {
        let words = words(count);
        let stop = Gate::new();
        let (fill, first) = filler();
        let mut answer = stopping_answer(&words, stop_at, &stop);
        if let Some(pace) = pace {
            answer = answer.slowly(pace);
        }
        let server = FakeServer::start(vec![first, answer]).await;
        let tmux = after_filler(env, &server, 100, rows, &[]).await?;
        ask(&tmux, "tell me a long story").await;
        Some(Story {
            tmux,
            words,
            fill,
            stop,
            _server: server,
        })
    }

    /// Let the answer end: every word of it and of the first answer is in the history
    /// exactly once.
    async fn finish(self) {
        self.stop.open();
        let last = self.words.last().map_or("", |word| word.trim());
        wait_until_idle(&self.tmux, last).await;
        let mut all = self.words;
        all.extend(self.fill);
        self.tmux.wait_each_once(&all).await;
    }
}

/// A full screen of 24 rows: the streamed paragraph, rewrapped at 30 columns, is taller
/// than the screen, and the terminal pushes its first rows into its scrollback.
#[tokio::test]
async fn a_paragraph_taller_than_the_screen_once_rewrapped_reaches_the_scrollback_once() {
    let env = env();
    let Some(story) = Story::start(&env, 300, 150, 24, None).await else {
        return;
    };
    story
        .tmux
        .wait_for("eight rows of the paragraph", |s| {
            status_at(s, 100) && rewrapped(s, 100, "w149")
        })
        .await;
    resize_through(&story.tmux, &[30, 100]).await;
    story.finish().await;
}

/// 100 → 60 → 100 → 45 columns, each drawn before the next, while an answer streams
/// slowly (r35c left a second copy of the partial line in tmux's history here).
#[tokio::test]
async fn widths_changed_one_after_another_while_an_answer_streams_leave_each_word_once() {
    let env = env();
    let pace = Some(Duration::from_millis(15));
    let Some(story) = Story::start(&env, 300, 250, 40, pace).await else {
        return;
    };
    story
        .tmux
        .wait_for("the answer streaming", |s| s.contains("w020"))
        .await;
    resize_through(&story.tmux, &[60, 100, 45]).await;
    story.finish().await;
}

/// A drag: ten widths within a moment, the interface following none of them in between.
#[tokio::test]
async fn a_drag_of_ten_width_changes_leaves_each_word_once() {
    let env = env();
    let Some(story) = Story::start(&env, 200, 120, 40, None).await else {
        return;
    };
    let tmux = &story.tmux;
    tmux.wait_for("the partial paragraph", |s| rewrapped(s, 100, "w119"))
        .await;
    for cols in [95, 88, 80, 71, 64, 57, 50, 62, 75, 83] {
        tmux.resize(cols);
    }
    tmux.wait_for("the paragraph drawn at 83 columns", |s| {
        status_at(s, 83) && rewrapped(s, 83, "w119")
    })
    .await;
    story.finish().await;
}

/// Rows as well as columns: taller, shorter, both at once.
#[tokio::test]
async fn height_changes_while_an_answer_streams_leave_each_word_once() {
    sizes_while_an_answer_streams_leave_each_word_once(&[
        (100, 30),
        (100, 50),
        (60, 20),
        (100, 40),
    ])
    .await;
}

/// Rows only: printed again too (the terminal's own moving of rows left a copy of the live
/// area in its scrollback).
#[tokio::test]
async fn height_only_changes_while_an_answer_streams_leave_each_word_once() {
    sizes_while_an_answer_streams_leave_each_word_once(&[
        (100, 30),
        (100, 50),
        (100, 12),
        (100, 40),
    ])
    .await;
}

/// The terminal takes each of `sizes` in turn (columns, rows) while an answer streams,
/// each drawn before the next: every word is in the history once at the end.
async fn sizes_while_an_answer_streams_leave_each_word_once(sizes: &[(u16, u16)]) {
    let env = env();
    let Some(story) = Story::start(&env, 200, 120, 40, None).await else {
        return;
    };
    let tmux = &story.tmux;
    tmux.wait_for("the partial paragraph", |s| rewrapped(s, 100, "w119"))
        .await;
    for &(cols, rows) in sizes {
        tmux.resize_to(cols, rows);
        let width = usize::from(cols);
        tmux.wait_for(&format!("the live area at {cols}x{rows}"), |s| {
            s.lines().count() == usize::from(rows)
                && status_at(s, width)
                && rewrapped(s, width, "w119")
        })
        .await;
    }
    story.finish().await;
}

/// The width changes twice the moment an answer ends, then the conversation goes on.
#[tokio::test]
async fn a_width_change_right_after_an_answer_ends_leaves_each_word_once() {
    let env = env();
    let words = words(150);
    let deltas: Vec<&str> = words.iter().map(String::as_str).collect();
    let (fill, first) = filler();
    let server = FakeServer::start(vec![
        first,
        Reply::sse(chat::text_deltas(&deltas)),
        Reply::sse(chat::text("zz1 zz2 zz3")),
    ])
    .await;
    let Some(tmux) = after_filler(&env, &server, 100, 40, &[]).await else {
        return;
    };
    ask(&tmux, "tell me a story").await;
    tmux.wait_for("the end of the answer", |s| s.contains("w149"))
        .await;
    tmux.resize(60);
    tmux.resize(100);
    wait_until_idle(&tmux, "w149").await;
    ask(&tmux, "and then").await;
    wait_until_idle(&tmux, "zz3").await;
    let mut all = words.clone();
    all.extend(fill);
    all.extend(["zz1", "zz2", "zz3"].map(String::from));
    tmux.wait_each_once(&all).await;
}

/// A command that prints `zq1z zq2z zq3z` (words its own text does not hold) and waits for
/// the file `go`.
fn waiting_command() -> String {
    format!("printf 'zq%sz\\n' 1 2 3; {}", after_file("go", "true"))
}

#[tokio::test]
async fn a_width_change_while_a_tool_runs_leaves_its_call_and_output_once() {
    let env = env();
    let (fill, first) = filler();
    let server = FakeServer::start(vec![
        first,
        Reply::sse(chat::tool_call(
            "c1",
            "bash",
            serde_json::json!({ "command": waiting_command() }),
        )),
        Reply::sse(chat::text("All done zz9.")),
    ])
    .await;
    let Some(tmux) = after_filler(&env, &server, 100, 40, &["--permission-mode", "auto"]).await
    else {
        return;
    };
    ask(&tmux, "run it").await;
    tmux.wait_for("the tool's output", |s| s.contains("zq3z"))
        .await;
    resize_through(&tmux, &[60, 100]).await;
    std::fs::write(env.cwd.path().join("go"), "").unwrap();
    wait_until_idle(&tmux, "zz9").await;
    let mut all = fill;
    all.extend(["zq1z", "zq2z", "zq3z", "zz9."].map(String::from));
    let history = tmux.wait_each_once(&all).await;
    assert_eq!(history.matches("printf 'zq").count(), 1, "{history}");
}

/// The approval dialog is up while the width changes: it stays, answers, and what was
/// there before it is shown once.
#[tokio::test]
async fn a_width_change_under_an_approval_dialog_keeps_it_and_each_row_once() {
    let env = env();
    let (fill, first) = filler();
    let server = FakeServer::start(vec![
        first,
        Reply::sse(chat::tool_call(
            "c1",
            "bash",
            serde_json::json!({ "command": "printf 'zq%sz\\n' 1 2 3" }),
        )),
        Reply::sse(chat::text("All done zz9.")),
    ])
    .await;
    let Some(tmux) = after_filler(&env, &server, 100, 40, &[]).await else {
        return;
    };
    ask(&tmux, "run it").await;
    tmux.wait_for("the approval dialog", |s| s.contains("allow once"))
        .await;
    tmux.resize(60);
    tmux.wait_for("the dialog drawn at 60 columns", |s| {
        s.contains("allow once") && status_at(s, 60)
    })
    .await;
    tmux.resize(100);
    tmux.wait_for("the dialog drawn at 100 columns", |s| {
        s.contains("allow once") && status_at(s, 100)
    })
    .await;
    tmux.key("y");
    wait_until_idle(&tmux, "zz9").await;
    let mut all = fill;
    all.extend(["zq1z", "zq2z", "zq3z", "zz9."].map(String::from));
    tmux.wait_each_once(&all).await;
}

#[tokio::test]
async fn a_width_change_while_a_sub_agent_runs_leaves_each_row_once() {
    let env = env();
    let server = delegating_once(&waiting_command(), Some("child found it"), "All done zz9.").await;
    let Some(tmux) = Tmux::start(&env, &server, 100, 40, &["--permission-mode", "auto"]) else {
        return;
    };
    ask(&tmux, "delegate it zz1").await;
    tmux.wait_for("the sub-agent running", |s| s.contains("general a1 · bash"))
        .await;
    resize_through(&tmux, &[60, 100]).await;
    std::fs::write(env.cwd.path().join("go"), "").unwrap();
    wait_until_idle(&tmux, "zz9").await;
    let history = tmux
        .wait_each_once(&["zz1".to_string(), "zz9.".to_string()])
        .await;
    assert_eq!(history.matches("job c1").count(), 1, "{history}");
}

/// The transcript view (ctrl+o) is up while the width changes: it is drawn again at the
/// new width on a cleared screen (tmux does not clear its alternate screen when asked to
/// enter it again), and the conversation below it is printed again when it closes.
#[tokio::test]
async fn a_width_change_under_the_transcript_view_redraws_it_and_the_conversation() {
    let env = env();
    let words = words(80);
    let deltas: Vec<&str> = words.iter().map(String::as_str).collect();
    let (fill, first) = filler();
    let server = FakeServer::start(vec![first, Reply::sse(chat::text_deltas(&deltas))]).await;
    let Some(tmux) = after_filler(&env, &server, 100, 40, &[]).await else {
        return;
    };
    ask(&tmux, "tell me a story").await;
    wait_until_idle(&tmux, "w079").await;
    tmux.key("C-o");
    tmux.wait_for("the transcript view", |s| s.contains("Transcript"))
        .await;
    tmux.resize(70);
    // The view laid out at 70 columns: its rows are wrapped at words, where the terminal's
    // own cut of the 100-column rows leaves pieces of words (`w01`).
    let laid_out = |s: &str| words_whole(s) && s.contains("w079") && s.contains("Transcript");
    let screen = tmux.wait_for("the view at 70 columns", laid_out).await;
    let wrong = not_once(&screen, &words);
    assert!(wrong.is_empty(), "{wrong:?}\n{screen}");
    tmux.key("Escape");
    tmux.wait_for("the composer at 70 columns", |s| {
        !s.contains("Transcript") && status_at(s, 70)
    })
    .await;
    let mut all = words.clone();
    all.extend(fill);
    tmux.wait_each_once(&all).await;
}

/// A terminal that never answers a cursor query: a width change and a height change are
/// followed all the same, and the terminal is not asked where its cursor is.
#[tokio::test]
async fn a_resize_asks_the_terminal_nothing() {
    let env = env();
    let server = chat::answering(&["ok"]).await;
    let base = server.v1();
    let mut tui = Tui::spawn_with_terminal(
        &["--base-url", &base, "--model", "test-model"],
        env.home.path(),
        env.cwd.path(),
        support::pty::ROWS,
        support::pty::COLS,
        &[("NO_COLOR", "1")],
        Terminal {
            silent: true,
            ..Terminal::default()
        },
    );
    tui.wait_for_text("Ask anything").await;
    let asked = tui.count(b"\x1b[6n");
    tui.resize(support::pty::ROWS, 70);
    tui.wait_for("the status line at 70 columns", |_| {
        tui.count(b"\x1b[3J") >= 1 && status_at(&tui.screen(), 70)
    })
    .await;
    tui.resize(20, 70);
    tui.wait_for("the conversation printed again for 20 rows", |_| {
        tui.count(b"\x1b[3J") >= 2
    })
    .await;
    tui.type_text("still here");
    tui.wait_for_text("› still here").await;
    assert_eq!(tui.count(b"\x1b[6n"), asked, "{}", tui.screen());
}
