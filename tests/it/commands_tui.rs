//! The interface's keys are the engine's commands: each operation is typed as keys in the
//! real interface (a pseudo-terminal) and checked against the command the engine logged
//! (`support::commands`) and what it did (the request body, the session files, the screen).
//! Also: `//text` sends `/text` (D6), alt+enter expands a custom command (D8), the
//! transcript view shows the conversation a fork or branch switch moved to (D14), and an
//! approval dialog drawn over a menu takes the keys (D23).
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // test code fails loudly

use crate::support;

use serde_json::{Value, json};
use support::chat;
use support::commands::{log, logged_commands, logged_results};
use support::env::env;
use support::harness::transcript;
use support::pty::Tui;
use support::server::{FakeServer, Gate, Reply};

async fn ready(tui: &Tui) {
    tui.wait_for_text("Ask anything").await;
}

/// Waits until `count` commands ended (the log is written as they do).
async fn until_done(tui: &Tui, home: &std::path::Path, count: usize) {
    tui.wait_for(&format!("{count} engine commands to end"), |_| {
        logged_results(home).len() >= count
    })
    .await;
}

/// The commands logged, without the `abort`s esc sends (esc stops whatever runs).
fn commands_but_aborts(home: &std::path::Path) -> Vec<Value> {
    logged_commands(home)
        .into_iter()
        .filter(|c| c["type"] != "abort")
        .collect()
}

fn prompt(text: &str, delivery: &str) -> Value {
    json!({"type": "prompt", "input": {"parts": [{"kind": "text", "text": text}]}, "delivery": delivery})
}

fn last_user(body: &Value) -> String {
    transcript(body)
        .into_iter()
        .rev()
        .find(|m| m.starts_with("user:"))
        .unwrap_or_default()
}

/// enter is a steering `prompt` (its `@path` attached, as it says), alt+enter a follow-up
/// that expands a custom command (D8), `//text` sends `/text` (D6), a slash word that names
/// no command is the user's text, and alt+↑ takes the queued message back (`unqueue_last`).
#[tokio::test]
async fn enter_alt_enter_and_alt_up_are_prompt_and_unqueue_commands() {
    let env = env();
    let commands = env.cwd.path().join(".agent/commands");
    std::fs::create_dir_all(&commands).unwrap();
    std::fs::write(commands.join("review.md"), "Review $1 with care.\n").unwrap();
    std::fs::write(env.cwd.path().join("notes.txt"), "abc").unwrap();
    let gate = Gate::new();
    let server = FakeServer::start(vec![
        Reply::sse(chat::text("Noted.")),
        Reply::sse(chat::text("Reviewed.")),
        Reply::sse(chat::text("Slashed.")),
        Reply::sse(chat::text("Tmp.")),
        Reply::sse(chat::text("Held.")).after(&gate),
    ])
    .await;
    let mut tui = env.start_with(&server, &[], &[("RUST_LOG", "debug")]);
    ready(&tui).await;
    let home = env.home.path();

    tui.type_text("read @notes.txt");
    tui.enter();
    tui.wait_for_text("Attached: notes.txt (3 B)").await;
    tui.wait_for_text("Noted.").await;
    tui.wait_until_idle().await;
    tui.type_text("/review main.rs");
    tui.send(b"\x1b\r");
    tui.wait_for_text("Reviewed.").await;
    tui.wait_until_idle().await;
    tui.type_text("//etc is odd");
    tui.enter();
    tui.wait_for_text("Slashed.").await;
    tui.wait_until_idle().await;
    tui.type_text("/tmp is full");
    tui.enter();
    tui.wait_for_text("Tmp.").await;
    tui.wait_until_idle().await;
    let bodies = server.bodies();
    let first = bodies[0]["messages"].to_string();
    assert!(
        first.contains("read @notes.txt") && first.contains("abc"),
        "{first}"
    );
    // D8 (alt+enter expands), D6 (`//` sends one slash), a slash word that is no command.
    let sent: Vec<String> = bodies[1..4].iter().map(last_user).collect();
    assert_eq!(
        sent,
        [
            "user:Review main.rs with care.",
            "user:/etc is odd",
            "user:/tmp is full"
        ]
    );

    // While a run is going, a follow-up is queued, and alt+↑ takes it back.
    tui.type_text("hold on");
    tui.enter();
    tui.wait_for("the run to start", |_| server.requests().len() == 5)
        .await;
    tui.type_text("later");
    tui.send(b"\x1b\r");
    tui.wait_for_text("follow-up: later").await;
    tui.send(b"\x1b[1;3A");
    tui.wait_for("the composer to hold `later` again", |s| {
        s.lines().any(|l| l.trim_end() == "› later")
    })
    .await;
    gate.open();
    tui.wait_for_text("Held.").await;
    tui.wait_until_idle().await;
    until_done(&tui, home, 7).await;
    assert_eq!(
        logged_commands(home),
        vec![
            prompt("read @notes.txt", "steer"),
            prompt("/review main.rs", "follow_up"),
            prompt("//etc is odd", "steer"),
            prompt("//tmp is full", "steer"),
            prompt("hold on", "steer"),
            prompt("later", "follow_up"),
            json!({"type": "unqueue_last"}),
        ],
        "{}",
        log(home)
    );
    assert_eq!(server.requests().len(), 5, "the follow-up was taken back");
    tui.send(b"\x03");
    tui.quit().await;
}

/// y and n in the approval dialog are `approve` commands with their decision.
#[tokio::test]
async fn approval_keys_are_approve_commands() {
    let env = env();
    let server = FakeServer::start(vec![
        Reply::sse(chat::tool_call(
            "c1",
            "bash",
            json!({"command": "touch yes"}),
        )),
        Reply::sse(chat::tool_call(
            "c2",
            "bash",
            json!({"command": "touch no"}),
        )),
        Reply::sse(chat::text("Done asking.")),
    ])
    .await;
    let mut tui = env.start_with(
        &server,
        &[],
        &[("AGENT_APPROVAL_GRACE_MS", "0"), ("RUST_LOG", "debug")],
    );
    ready(&tui).await;
    tui.type_text("make files");
    tui.enter();
    tui.wait_for_text("touch yes").await;
    tui.send(b"y");
    tui.wait_for_text("touch no").await;
    tui.send(b"n");
    tui.wait_for_text("Done asking.").await;
    tui.wait_until_idle().await;
    let home = env.home.path();
    until_done(&tui, home, 3).await;
    assert_eq!(
        logged_commands(home)[1..],
        [
            json!({"type": "approve", "toolCallId": "c1", "decision": "allow"}),
            json!({"type": "approve", "toolCallId": "c2", "decision": {"deny": null}}),
        ],
        "{}",
        log(home)
    );
    assert!(env.cwd.path().join("yes").exists());
    assert!(!env.cwd.path().join("no").exists());
    tui.quit().await;
}

/// The transcript view (ctrl+o) once it shows `expect`; closed again.
async fn transcript_view(tui: &Tui, expect: &str) -> String {
    tui.send(b"\x0f");
    let screen = tui
        .wait_for(&format!("the transcript view with `{expect}`"), |s| {
            s.contains("Transcript (") && s.contains(expect)
        })
        .await;
    tui.close_view(b"\x1b", "Transcript (").await;
    screen
}

/// `/rewind` to before the newest message, the conversation only.
async fn rewind_newest(tui: &Tui) {
    tui.type_text("/rewind");
    tui.enter();
    let menu = tui.wait_for_text("Rewind to before").await;
    if menu.contains("Undo last rewind") {
        tui.send(b"\x1b[B"); // the newest message is under it
    }
    tui.enter();
    tui.wait_for_text("Conversation only").await;
    // Checkpoints are on: "Conversation and code" first, then "Conversation only".
    tui.send(b"\x1b[B");
    tui.enter();
}

/// `/fork`, `/rewind`, esc esc (undo), `/tree`, `/new` and the `/resume` picker are the
/// engine's fork, rewind, undo_rewind, switch_branch, new_session and resume commands; after
/// a fork, an undo and a branch switch the transcript view shows the conversation the
/// session moved to, not the one it left as well (D14).
#[tokio::test]
async fn session_keys_are_engine_commands_and_the_transcript_follows_them() {
    let env = env();
    let server = chat::answering(&[
        "Answer one.",
        "Answer two.",
        "Answer three.",
        "Answer four.",
    ])
    .await;
    let mut tui = env.start_with(&server, &[], &[("RUST_LOG", "debug")]);
    ready(&tui).await;
    let home = env.home.path();
    tui.ask("first question", "Answer one.").await;
    tui.ask("second question", "Answer two.").await;
    env.only_session();

    // Fork before the second question: the fork holds the first exchange only.
    tui.type_text("/fork");
    tui.enter();
    tui.wait_for_text("Fork a new session from before").await;
    tui.send(b"\x1b[B"); // past "The whole conversation" to the newest message
    tui.enter();
    tui.wait_for_text("Forked: this is now session").await;
    tui.wait_for("the forked message back in the composer", |s| {
        s.lines().any(|l| l.trim_end() == "› second question")
    })
    .await;
    let view = transcript_view(&tui, "Answer one.").await;
    assert!(!view.contains("Answer two."), "D14, fork: {view}");
    assert_eq!(env.session_files().len(), 2);

    // In the fork: a message, rewound and the rewind undone.
    tui.ask("third question", "Answer three.").await;
    rewind_newest(&tui).await;
    tui.wait_for_text("Rewound:").await;
    tui.send(b"\x15");
    tui.send(b"\x1b");
    tui.wait_for_text("esc again to rewind").await;
    tui.send(b"\x1b");
    tui.wait_for_text("Undo last rewind").await;
    tui.enter();
    tui.wait_for_text("Rewind undone").await;
    let view = transcript_view(&tui, "Answer three.").await;
    assert_eq!(
        view.matches("Answer three.").count(),
        1,
        "D14, undo: {view}"
    );

    // Rewound again and another message: two branches; /tree goes back to the first.
    rewind_newest(&tui).await;
    tui.wait_for("the rewound message back in the composer", |s| {
        s.lines().any(|l| l.trim_end() == "› third question")
    })
    .await;
    tui.ask("fourth question", "Answer four.").await;
    tui.type_text("/tree");
    tui.enter();
    tui.wait_for_text("Branches of this session (2").await;
    tui.send(b"\x1b[A"); // from the current branch (fourth question) to the third
    tui.enter();
    tui.wait_for_text("Conversation only").await;
    tui.send(b"\x1b[B"); // the conversation only: the files stay as they are
    tui.enter();
    tui.wait_for_text("Switched branch").await;
    let view = transcript_view(&tui, "Answer three.").await;
    assert!(!view.contains("Answer four."), "D14, switch: {view}");

    // A new session, then the picker resumes an earlier one.
    tui.type_text("/new");
    tui.enter();
    tui.wait_for_text("Started a new session.").await;
    tui.type_text("/resume");
    tui.enter();
    tui.wait_for_text("Resume a session").await;
    tui.enter();
    tui.wait_for_text("Resumed").await;
    until_done(&tui, home, 11).await;
    let commands = commands_but_aborts(home);
    let kinds: Vec<&str> = commands
        .iter()
        .map(|c| c["type"].as_str().unwrap())
        .collect();
    assert_eq!(
        kinds,
        [
            "prompt",
            "prompt",
            "fork",
            "prompt",
            "rewind",
            "undo_rewind",
            "rewind",
            "prompt",
            "switch_branch",
            "new_session",
            "resume"
        ],
        "{}",
        log(home)
    );
    assert_eq!(commands[4]["restore"], "conversation", "{}", commands[4]);
    assert_eq!(commands[5], json!({"type": "undo_rewind", "force": false}));
    assert_eq!(commands[10]["model"], "keep_current");
    let resumed = std::path::PathBuf::from(commands[10]["target"]["path"].as_str().unwrap());
    assert!(env.session_files().contains(&resumed), "{resumed:?}");
    assert!(
        logged_results(home).iter().all(|r| r.ends_with(" ok")),
        "{}",
        log(home)
    );
    tui.quit().await;
}

/// With the project's hooks waiting for trust (a menu), the first approval dialog is drawn
/// over it and takes the keys: enter answers the approval, not the trust question (D23).
#[tokio::test]
async fn an_approval_over_the_trust_menu_takes_the_keys() {
    let env = env();
    let init = std::process::Command::new("git")
        .args(["init", "-q"])
        .current_dir(env.cwd.path())
        .status()
        .unwrap();
    assert!(init.success());
    let settings = json!({"hooks": {"PreToolUse": [{"matcher": "Bash",
        "hooks": [{"type": "command", "command": "touch hook-ran", "timeout": 10}]}]}});
    std::fs::create_dir_all(env.cwd.path().join(".claude")).unwrap();
    std::fs::write(
        env.cwd.path().join(".claude/settings.json"),
        settings.to_string(),
    )
    .unwrap();
    let server = FakeServer::start(vec![
        Reply::sse(chat::tool_call(
            "c1",
            "bash",
            json!({"command": "touch approved"}),
        )),
        Reply::sse(chat::text("All done.")),
    ])
    .await;
    let mut tui = env.start_with(&server, &["go"], &[("AGENT_APPROVAL_GRACE_MS", "0")]);
    // The question is asked (the dialog may cover its menu at once).
    tui.wait_for_text("define hooks").await;
    tui.wait_for_text("touch approved").await;
    tui.enter();
    tui.wait_for_text("All done.").await;
    let transcript = tui.transcript();
    assert!(
        !transcript.contains("hooks run from now on"),
        "enter answered the trust question under the dialog: {transcript}"
    );
    assert!(env.cwd.path().join("approved").exists());
    assert!(!env.cwd.path().join("hook-ran").exists());
    // The trust question is still open, and answered now.
    tui.wait_for_text("Run this project's hooks?").await;
    tui.send(b"\x1b");
    tui.wait_for_text("not run this time").await;
    tui.quit().await;
}

/// s (a message) and x in the agent view are the engine's steer_agent and abort_agent.
#[tokio::test]
async fn agent_view_keys_are_steer_agent_and_abort_agent() {
    let env = env();
    let server = support::delegation::delegating_once(
        &support::harness::after_file("never", "echo no"),
        None,
        "Parent went on.",
    )
    .await;
    let mut tui = env.start_with(
        &server,
        &["--permission-mode", "auto"],
        &[("RUST_LOG", "debug")],
    );
    ready(&tui).await;
    tui.type_text("delegate it");
    tui.enter();
    tui.wait_for_text("general a1 · bash").await;
    tui.send(b"\x07");
    tui.wait_for_text("agent a1 general").await;
    tui.send(b"s");
    tui.wait_for_text("steer a1:").await;
    tui.type_text("hurry up");
    tui.enter();
    tui.wait_for("the steer line to close", |s| {
        !s.contains("steer a1:") && s.contains("agent a1 general")
    })
    .await;
    tui.send(b"x");
    tui.send(b"q");
    tui.wait_for_text("Parent went on.").await;
    tui.wait_until_idle().await;
    let home = env.home.path();
    until_done(&tui, home, 3).await;
    assert_eq!(
        logged_commands(home)[1..],
        [
            json!({"type": "steer_agent", "agentId": "a1", "text": "hurry up"}),
            json!({"type": "abort_agent", "agentId": "a1"}),
        ],
        "{}",
        log(home)
    );
    tui.quit().await;
}
