//! The real interface in a pseudo-terminal against the loopback model server: what a user
//! types and sees — streaming, steering, follow-ups, stopping, approvals, quitting, resuming.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // test code fails loudly

use crate::support;

use serde_json::json;
use std::time::Duration;
use support::chat;
use support::env::env;
use support::harness::{after_file, transcript, wait_for_pid, wait_until_dead};
use support::pty::Tui;
use support::server::{FakeServer, Reply};

async fn ready(tui: &Tui) {
    tui.wait_for_text("Ask anything").await;
}

#[tokio::test]
async fn a_prompt_streams_its_answer_into_the_transcript() {
    let env = env();
    let frames = chat::text_deltas(&[
        "The answer ",
        "streams ",
        "in place.\n\nSecond ",
        "paragraph.",
    ]);
    let server =
        FakeServer::start(vec![Reply::sse(frames).slowly(Duration::from_millis(30))]).await;
    let mut tui = env.start(&server, &[]);
    ready(&tui).await;
    tui.type_text("what is up?");
    tui.enter();
    let screen = tui.wait_for_text("Second paragraph.").await;
    assert!(screen.contains("› what is up?"), "{screen}");
    assert!(
        screen.contains("● The answer streams in place."),
        "{screen}"
    );
    tui.wait_until_idle().await;
    assert_eq!(transcript(&server.bodies()[0])[1], "user:what is up?");
    // ctrl+c twice quits with 0 and gives the terminal back.
    tui.send(b"\x03");
    tui.wait_for_text("press ctrl+c again to quit").await;
    tui.send(b"\x03");
    assert_eq!(tui.exit_code().await, 0);
    assert!(tui.terminal_restored());
    assert!(
        tui.transcript().contains("Second paragraph."),
        "the conversation stays in the scrollback"
    );
}

#[tokio::test]
async fn esc_stops_a_long_command_and_kills_it() {
    let env = env();
    let server = FakeServer::start(vec![Reply::sse(chat::tool_call(
        "c1",
        "bash",
        json!({"command": "echo $$ > shell.pid; sleep 30"}),
    ))])
    .await;
    let mut tui = env.start(&server, &["--permission-mode", "auto"]);
    ready(&tui).await;
    tui.type_text("wait a while");
    tui.enter();
    tui.wait_for_text("Running bash").await;
    let pid = wait_for_pid(&env.cwd.path().join("shell.pid")).await;
    tui.send(b"\x1b");
    let screen = tui.wait_for_text("Interrupted.").await;
    assert!(screen.contains("aborted by the user"), "{screen}");
    assert!(wait_until_dead(pid).await, "the command survived esc");
    tui.quit().await;
}

#[tokio::test]
async fn enter_during_a_tool_steers_and_skips_the_rest() {
    let env = env();
    let server = FakeServer::start(vec![
        Reply::sse(chat::tool_calls(&[
            (
                "c1",
                "bash",
                json!({"command": after_file("go", "echo first done")}),
            ),
            ("c2", "bash", json!({"command": "echo never"})),
        ])),
        Reply::sse(chat::text("Switching approach.")),
    ])
    .await;
    let mut tui = env.start(&server, &["--permission-mode", "auto"]);
    ready(&tui).await;
    tui.type_text("do two things");
    tui.enter();
    tui.wait_for_text("Running bash").await;
    tui.type_text("stop, do it differently");
    tui.enter();
    tui.wait_for_text("steer: stop, do it differently").await;
    std::fs::write(env.cwd.path().join("go"), "").unwrap();
    let screen = tui.wait_for_text("Switching approach.").await;
    assert!(
        screen.contains("Skipped due to queued user message."),
        "{screen}"
    );
    let t = transcript(&server.bodies()[1]);
    assert_eq!(t.last().unwrap(), "user:stop, do it differently");
    assert_eq!(
        t[t.len() - 2],
        "tool:c2:Skipped due to queued user message."
    );
    tui.quit().await;
}

#[tokio::test]
async fn alt_enter_queues_a_follow_up_for_after_the_answer() {
    let env = env();
    let server = FakeServer::start(vec![
        Reply::sse(chat::tool_call(
            "c1",
            "bash",
            json!({"command": after_file("go", "true")}),
        )),
        Reply::sse(chat::text("First task done.")),
        Reply::sse(chat::text("Second task done.")),
    ])
    .await;
    let mut tui = env.start(&server, &["--permission-mode", "auto"]);
    ready(&tui).await;
    tui.type_text("first task");
    tui.enter();
    tui.wait_for_text("Running bash").await;
    tui.type_text("second task");
    tui.send(b"\x1b\r");
    tui.wait_for_text("follow-up: second task").await;
    std::fs::write(env.cwd.path().join("go"), "").unwrap();
    tui.wait_for_text("Second task done.").await;
    let bodies = server.bodies();
    assert_eq!(bodies.len(), 3);
    assert!(
        !transcript(&bodies[1])
            .iter()
            .any(|m| m.contains("second task"))
    );
    let last = transcript(&bodies[2]);
    assert_eq!(
        &last[last.len() - 2..],
        ["assistant:First task done.:[]", "user:second task"]
    );
    tui.quit().await;
}

#[tokio::test]
async fn the_approval_dialog_allows_and_denies() {
    let env = env();
    let server = FakeServer::start(vec![
        Reply::sse(chat::tool_call(
            "c1",
            "bash",
            json!({"command": "touch allowed"}),
        )),
        Reply::sse(chat::tool_call(
            "c2",
            "bash",
            json!({"command": "touch denied"}),
        )),
        Reply::sse(chat::text("Done asking.")),
    ])
    .await;
    // No grace period: a key counts as soon as the dialog shows (the grace has its own test).
    let mut tui = env.start_with(&server, &[], &[("AGENT_APPROVAL_GRACE_MS", "0")]);
    ready(&tui).await;
    tui.type_text("make files");
    tui.enter();
    tui.wait_for_text("y allow once").await;
    // The status line names the state and counts how long it has lasted.
    tui.wait_for_text("awaiting human 1s").await;
    tui.send(b"y");
    tui.wait_for("the second request", |s| {
        s.contains("touch denied") && s.contains("y allow once")
    })
    .await;
    assert!(env.cwd.path().join("allowed").exists());
    tui.send(b"m");
    tui.wait_for_text("Tell the model why").await;
    tui.type_text("not that one");
    tui.enter();
    tui.wait_for_text("Done asking.").await;
    assert!(!env.cwd.path().join("denied").exists());
    let t = transcript(&server.bodies()[2]);
    assert_eq!(
        t.last().unwrap(),
        "tool:c2:The user denied this `bash` call. The user says: not that one"
    );
    tui.quit().await;
}

#[tokio::test]
async fn keys_typed_as_the_dialog_opens_go_to_the_composer() {
    let env = env();
    let server = FakeServer::start(vec![
        Reply::sse(chat::tool_call(
            "c1",
            "bash",
            json!({"command": "touch typed"}),
        )),
        Reply::sse(chat::text("Not run.")),
    ])
    .await;
    // A grace period no test outlasts: the key below is typed "as the dialog opens".
    let mut tui = env.start_with(&server, &[], &[("AGENT_APPROVAL_GRACE_MS", "600000")]);
    ready(&tui).await;
    tui.type_text("make a file");
    tui.enter();
    tui.wait_for_text("y allow once").await;
    tui.send(b"y");
    // Esc is never held back: it stops the run at once; the `y` waits in the composer.
    tui.send(b"\x1b");
    let screen = tui
        .wait_for("the run stopped, the key kept", |s| {
            s.contains("Interrupted.") && s.contains("› y")
        })
        .await;
    assert!(
        screen.contains("a tool is waiting for approval: y, a or n"),
        "{screen}"
    );
    assert!(!env.cwd.path().join("typed").exists());
    tui.send(b"\x03");
    tui.send(b"\x03");
    tui.send(b"\x03");
    assert_eq!(tui.exit_code().await, 0);
}

#[tokio::test]
async fn continue_replays_the_saved_transcript() {
    let env = env();
    let server = chat::answering(&["Remembered answer.", "Continuing."]).await;
    let mut tui = env.start(&server, &[]);
    ready(&tui).await;
    tui.type_text("remember this");
    tui.enter();
    tui.wait_for_text("Remembered answer.").await;
    tui.wait_until_idle().await;
    tui.quit().await;

    let mut tui = env.start(&server, &["-c"]);
    let screen = tui.wait_for_text("Remembered answer.").await;
    assert!(screen.contains("› remember this"), "{screen}");
    tui.type_text("and now?");
    tui.enter();
    tui.wait_for_text("Continuing.").await;
    let t = transcript(&server.bodies()[1]);
    assert_eq!(
        t,
        [
            "system",
            "user:remember this",
            "assistant:Remembered answer.:[]",
            "user:and now?"
        ]
    );
    tui.quit().await;
}

#[tokio::test]
async fn slash_commands_and_shell_commands() {
    let env = env();
    let server = FakeServer::start(vec![]).await;
    let mut tui = env.start(&server, &[]);
    ready(&tui).await;
    tui.type_text("/he");
    tui.wait_for_text("/help").await;
    tui.send(b"\t");
    tui.enter();
    let screen = tui.wait_for_text("show or hide thinking").await;
    assert!(screen.contains("/compact"), "{screen}");
    tui.type_text("/session");
    tui.enter();
    tui.wait_for_text("Session ").await;
    tui.type_text("!echo from-the-shell");
    tui.enter();
    tui.wait_for_text("from-the-shell").await;
    tui.type_text("/bogus");
    tui.enter();
    tui.wait_for_text("Unknown command /bogus").await;
    assert!(
        server.requests().is_empty(),
        "none of this reached the model"
    );
    // A prompt that merely starts with a slash is a prompt.
    server.push(Reply::sse(chat::text("Cleaned up.")));
    tui.type_text("/tmp is full, clean it");
    tui.enter();
    tui.wait_for_text("Cleaned up.").await;
    tui.wait_until_idle().await;
    assert_eq!(
        transcript(&server.bodies()[0])[1],
        "user:/tmp is full, clean it"
    );
    tui.type_text("/quit");
    tui.enter();
    assert_eq!(tui.exit_code().await, 0);
}

#[tokio::test]
async fn without_a_key_it_still_opens_and_says_how_to_connect() {
    let env = env();
    let mut tui = Tui::spawn(&[], env.home.path(), env.cwd.path());
    let screen = tui.wait_for_text("OPENAI_API_KEY").await;
    assert!(screen.contains("--provider ollama"), "{screen}");
    tui.wait_for("the probe to report", |s| {
        s.contains("local model server") || s.contains("Found ")
    })
    .await;
    tui.quit().await;
}

#[tokio::test]
async fn sigterm_gives_the_terminal_back() {
    let env = env();
    let server = FakeServer::start(vec![]).await;
    let mut tui = env.start(&server, &[]);
    ready(&tui).await;
    let pid = tui.pid().expect("a pid") as i32;
    unsafe {
        libc::kill(pid, libc::SIGTERM);
    }
    assert_eq!(tui.exit_code().await, 143);
    assert!(tui.terminal_restored());
}

#[tokio::test]
async fn a_small_terminal_and_a_resize_keep_everything_readable() {
    let env = env();
    let answer = "A long answer that has to wrap several times on a small terminal, and keeps going for a while.";
    let server = FakeServer::start(vec![
        Reply::sse(chat::text(answer)),
        Reply::sse(chat::text("After the resize.")),
    ])
    .await;
    let base = server.v1();
    let mut tui = Tui::spawn_sized(
        &["--base-url", &base, "--model", "test-model"],
        env.home.path(),
        env.cwd.path(),
        24,
        80,
        &[],
    );
    ready(&tui).await;
    tui.type_text("wrap please");
    tui.enter();
    let screen = tui.wait_for_text("going for a while.").await;
    assert!(screen.lines().all(|l| l.chars().count() <= 80));
    tui.wait_until_idle().await;
    tui.resize(30, 60);
    // The status line's right-aligned model name is cut off by the smaller terminal until
    // the interface has redrawn at the new width. Typing before that would insert history
    // rendered for the old width.
    tui.wait_for("a redraw at the new width", |s| {
        s.lines()
            .any(|l| l.contains("test-model") && l.chars().count() <= 60)
    })
    .await;
    tui.type_text("again");
    tui.enter();
    let screen = tui.wait_for_text("After the resize.").await;
    assert!(screen.lines().all(|l| l.chars().count() <= 60), "{screen}");
    tui.quit().await;
}

#[tokio::test]
async fn the_session_picker_resumes_an_earlier_conversation() {
    let env = env();
    let server = chat::answering(&["Alpha answer.", "Back in alpha."]).await;
    let mut tui = env.start(&server, &[]);
    ready(&tui).await;
    tui.type_text("alpha question");
    tui.enter();
    tui.wait_for_text("Alpha answer.").await;
    tui.wait_until_idle().await;
    tui.quit().await;

    // A fresh start, then /resume.
    let mut tui = env.start(&server, &[]);
    ready(&tui).await;
    tui.type_text("/resume");
    tui.enter();
    tui.wait_for_text("Resume a session").await;
    tui.wait_for_text("alpha question").await;
    tui.enter();
    let screen = tui
        .wait_for_text("Resumed “alpha question” · 2 messages")
        .await;
    assert!(screen.contains("Alpha answer."), "{screen}");
    tui.type_text("continue");
    tui.enter();
    tui.wait_for_text("Back in alpha.").await;
    let t = transcript(&server.bodies()[1]);
    assert_eq!(
        t,
        [
            "system",
            "user:alpha question",
            "assistant:Alpha answer.:[]",
            "user:continue"
        ]
    );
    tui.quit().await;

    // `agent -r` opens the picker at once.
    let mut tui = env.start(&server, &["-r"]);
    tui.wait_for_text("Resume a session").await;
    tui.send(b"\x1b");
    tui.wait_for_text("Ask anything").await;
    tui.quit().await;
}

/// The dialog shows the diff the engine worked out (`tool_approval_request.preview`), keys
/// masked as in tool output: a write over a file holding the API key does not put the key
/// on the screen.
#[tokio::test]
async fn the_approval_diff_is_the_engines_with_keys_masked() {
    let env = env();
    let key = "sk-approval-preview-secret-3141";
    std::fs::write(env.cwd.path().join("creds.env"), format!("KEY={key}\n")).unwrap();
    let server = FakeServer::start(vec![
        Reply::sse(chat::tool_call(
            "c1",
            "write",
            json!({"path": "creds.env", "content": "KEY=rotated\n"}),
        )),
        Reply::sse(chat::text("Rotated.")),
    ])
    .await;
    let mut tui = env.start_with(
        &server,
        &["--api-key", key],
        &[("AGENT_APPROVAL_GRACE_MS", "0")],
    );
    ready(&tui).await;
    tui.type_text("rotate the key");
    tui.enter();
    let screen = tui
        .wait_for("the write's diff", |s| {
            s.contains("Allow write?") && s.contains("+KEY=rotated")
        })
        .await;
    assert!(screen.contains("file  creds.env"), "{screen}");
    assert!(screen.contains("-KEY=[REDACTED]"), "{screen}");
    assert!(!screen.contains(key), "{screen}");
    tui.send(b"y");
    tui.wait_for_text("Rotated.").await;
    tui.wait_until_idle().await;
    tui.quit().await;
}

#[tokio::test]
async fn write_and_edit_approvals_show_the_diff_first() {
    let env = env();
    std::fs::write(env.cwd.path().join("notes.txt"), "old line\nkept line\n").unwrap();
    let server = FakeServer::start(vec![
        Reply::sse(chat::tool_call("c0", "read", json!({"path": "notes.txt"}))),
        Reply::sse(chat::tool_call(
            "c1",
            "write",
            json!({"path": "notes.txt", "content": "new line\nkept line\n"}),
        )),
        Reply::sse(chat::tool_call(
            "c2",
            "edit",
            json!({"path": "notes.txt", "edits": [{"oldText": "kept line", "newText": "edited line"}]}),
        )),
        Reply::sse(chat::tool_call(
            "c3",
            "write",
            json!({"path": "fresh.txt", "content": "brand new content\n"}),
        )),
        Reply::sse(chat::text("All written.")),
    ])
    .await;
    let mut tui = env.start_with(&server, &[], &[("AGENT_APPROVAL_GRACE_MS", "0")]);
    ready(&tui).await;
    tui.type_text("rewrite the notes");
    tui.enter();
    // The overwrite's diff is on screen before anything is written.
    let screen = tui
        .wait_for("the write's diff", |s| {
            s.contains("Allow write?") && s.contains("-old line") && s.contains("+new line")
        })
        .await;
    assert!(screen.contains("file  notes.txt"), "{screen}");
    assert_eq!(
        std::fs::read_to_string(env.cwd.path().join("notes.txt")).unwrap(),
        "old line\nkept line\n"
    );
    tui.send(b"y");
    tui.wait_for("the edit's diff", |s| {
        s.contains("Allow edit?") && s.contains("-kept line") && s.contains("+edited line")
    })
    .await;
    tui.send(b"y");
    tui.wait_for("the new file's content", |s| {
        s.contains("Allow write?") && s.contains("a new file:") && s.contains("+brand new content")
    })
    .await;
    tui.send(b"y");
    tui.wait_for_text("All written.").await;
    tui.wait_until_idle().await;
    // After the fact, the overwrite's cell in the transcript shows its diff too.
    let transcript = tui.transcript();
    let cell = transcript
        .find("● write notes.txt")
        .map(|at| &transcript[at..])
        .unwrap_or_else(|| panic!("no write cell in:\n{transcript}"));
    let cell: String = cell.lines().take(6).collect::<Vec<_>>().join("\n");
    assert!(
        cell.contains("-old line") && cell.contains("+new line"),
        "{cell}"
    );
    assert_eq!(
        std::fs::read_to_string(env.cwd.path().join("notes.txt")).unwrap(),
        "new line\nedited line\n"
    );
    tui.quit().await;
}

#[tokio::test]
async fn ctrl_t_expands_thoughts_already_shown() {
    let env = env();
    let server = FakeServer::start(vec![Reply::sse(chat::thinking_then_text(
        "The user wants a number; seven is a fine choice here.",
        "Seven.",
    ))])
    .await;
    let mut tui = env.start(&server, &[]);
    ready(&tui).await;
    tui.type_text("pick a number");
    tui.enter();
    tui.wait_for_text("Seven.").await;
    tui.wait_until_idle().await;
    let screen = tui.transcript();
    assert!(screen.contains("Thought (11 words)"), "{screen}");
    assert!(!screen.contains("seven is a fine choice"), "{screen}");
    tui.send(b"\x14");
    let screen = tui.wait_for_text("seven is a fine choice here.").await;
    assert!(screen.contains("✻ The user wants a number"), "{screen}");
    tui.quit().await;
}

#[tokio::test]
async fn the_transcript_view_shows_everything_and_the_run_goes_on() {
    let env = env();
    let words: Vec<String> = (0..40).map(|i| format!("word{i} ")).collect();
    let mut deltas: Vec<&str> = words.iter().map(String::as_str).collect();
    deltas.push("END-OF-ANSWER");
    let server = FakeServer::start(vec![
        Reply::sse(chat::text_deltas(&deltas)).slowly(Duration::from_millis(40)),
    ])
    .await;
    let mut tui = env.start(&server, &[]);
    ready(&tui).await;
    // A `!command` with more output than its cell shows.
    tui.type_text("!seq 1 300");
    tui.enter();
    let screen = tui.wait_for_text("earlier lines").await;
    let has_row = |s: &str, row: &str| s.lines().any(|l| l.trim_end() == row);
    assert!(!has_row(&screen, "    150"), "{screen}");
    tui.wait_until_idle().await;
    tui.type_text("stream please");
    tui.enter();
    tui.wait_for_text("word1").await;
    // ctrl+o while the answer streams.
    tui.send(b"\x0f");
    tui.wait_for_text("Transcript (").await;
    tui.send(b"g");
    tui.wait_for("the start of the output", |s| has_row(s, "  ⎿ 1"))
        .await;
    tui.send(b"/150\r");
    tui.wait_for("the match", |s| has_row(s, "    150")).await;
    tui.close_view(b"\x1b", "Transcript (").await;
    let screen = tui.wait_for_text("END-OF-ANSWER").await;
    tui.wait_until_idle().await;
    // The answer reached the scrollback whole, once.
    let transcript = tui.transcript();
    assert_eq!(transcript.matches("word0 word1").count(), 1, "{transcript}");
    assert!(screen.contains("● ! seq 1 300"), "{screen}");
    tui.quit().await;
}

/// `!command` is the engine's `run_shell` (the same command RPC `bash` runs), and esc
/// cancels that run.
#[tokio::test]
async fn a_shell_command_is_the_engines_run_shell_and_esc_cancels_it() {
    let env = env();
    let server = FakeServer::start(vec![]).await;
    let mut tui = env.start_with(&server, &[], &[("RUST_LOG", "debug")]);
    ready(&tui).await;
    tui.type_text("!echo via-engine; sleep 30");
    tui.enter();
    tui.wait_for("the live cell", |s| {
        s.contains("esc to cancel") && s.contains("via-engine")
    })
    .await;
    tui.send(b"\x1b");
    tui.wait_for_text("● ! echo via-engine; sleep 30").await;
    let home = env.home.path();
    assert_eq!(
        support::commands::logged_commands(home),
        vec![json!({"type": "run_shell", "command": "echo via-engine; sleep 30"})],
        "{}",
        support::commands::log(home)
    );
    assert_eq!(
        support::commands::logged_results(home),
        vec!["run_shell ok".to_string()]
    );
    let transcript = tui.transcript();
    assert!(transcript.contains("via-engine"), "{transcript}");
    tui.quit().await;
}

#[tokio::test]
async fn a_running_shell_command_has_a_live_cell_and_esc_cancels_it() {
    let env = env();
    let server = FakeServer::start(vec![]).await;
    let mut tui = env.start(&server, &[]);
    ready(&tui).await;
    tui.type_text("!echo started-here; sleep 30");
    tui.enter();
    let screen = tui
        .wait_for("the live cell", |s| {
            s.contains("esc to cancel") && s.contains("started-here")
        })
        .await;
    assert!(screen.contains("! echo started-here; sleep 30"), "{screen}");
    tui.send(b"\x1b");
    tui.wait_for("the cell to end", |s| !s.contains("esc to cancel"))
        .await;
    tui.wait_for_text("● ! echo started-here; sleep 30").await;
    tui.quit().await;
}
