//! The interface's everyday helpers in a pseudo-terminal against the loopback model server:
//! the task list pinned above the composer, plan mode, background shells in `/ps`, `@`
//! and pasted images (image chips; ctrl+v's clipboard image is in tui_clipboard.rs).
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // test code fails loudly

use crate::support;

use serde_json::json;
use support::chat;
use support::env::env;
use support::harness::{after_file, transcript, wait_for_pid, wait_until_dead};
use support::pty::Tui;
use support::server::{FakeServer, Reply};

async fn ready(tui: &Tui) {
    tui.wait_for_text("Ask anything").await;
}

#[tokio::test]
async fn the_task_list_is_pinned_above_the_composer_while_the_run_goes_on() {
    let env = env();
    let todos = json!([
        {"content": "read the code", "status": "completed"},
        {"content": "fix the parser", "status": "in_progress"},
        {"content": "run the tests", "status": "pending"}
    ]);
    let server = FakeServer::start(vec![
        Reply::sse(chat::tool_call("c1", "todo_write", json!({"todos": todos}))),
        Reply::sse(chat::tool_call(
            "c2",
            "bash",
            json!({"command": after_file("go", "echo fixed")}),
        )),
        Reply::sse(chat::text("All done.")),
    ])
    .await;
    let mut tui = env.start(&server, &["--permission-mode", "auto"]);
    ready(&tui).await;
    tui.type_text("fix it");
    tui.enter();
    let screen = tui
        .wait_for("the task panel", |s| {
            s.contains("Tasks 1/3 done") && s.contains("Running bash")
        })
        .await;
    for row in ["✔ read the code", "▶ fix the parser", "☐ run the tests"] {
        assert!(screen.contains(row), "{screen}");
    }
    // Pinned: below the running tool, just above the status of the run.
    let panel = screen.find("Tasks 1/3 done").unwrap();
    assert!(screen.find("Running bash").unwrap() > panel, "{screen}");
    std::fs::write(env.cwd.path().join("go"), "").unwrap();
    tui.wait_for_text("All done.").await;
    // The run is over: the panel goes.
    tui.wait_for("the panel to go", |s| !s.contains("Tasks 1/3 done"))
        .await;
    tui.quit().await;
}

#[tokio::test]
async fn plan_mode_ends_with_a_plan_to_approve_then_runs_it() {
    let env = env();
    let server = FakeServer::start(vec![
        Reply::sse(chat::tool_call(
            "c1",
            "bash",
            json!({"command": "touch early.txt"}),
        )),
        Reply::sse(chat::text("Plan:\n\n1. Create made.txt")),
        Reply::sse(chat::tool_call(
            "c2",
            "bash",
            json!({"command": "touch made.txt"}),
        )),
        Reply::sse(chat::text("Carried out.")),
    ])
    .await;
    let mut tui = env.start(&server, &["--permission-mode", "auto"]);
    ready(&tui).await;
    // shift+tab cycles ask → auto → plan.
    tui.send(b"\x1b[Z");
    tui.wait_for_text("plan mode").await;
    tui.type_text("make the file");
    tui.enter();
    let screen = tui.wait_for_text("Carry out this plan?").await;
    assert!(screen.contains("1. Create made.txt"), "{screen}");
    assert!(screen.contains("plan mode"), "{screen}");
    assert!(!env.cwd.path().join("early.txt").exists());
    let t = transcript(&server.bodies()[1]);
    assert!(t.iter().any(|m| m.contains("plan mode")), "{t:?}");
    // ↓ enter: "Yes, in auto mode".
    tui.send(b"\x1b[B");
    tui.enter();
    tui.wait_for_text("Carried out.").await;
    assert!(env.cwd.path().join("made.txt").exists());
    let t = transcript(&server.bodies()[2]);
    assert_eq!(
        t.last().unwrap(),
        &format!("user:{}", agent::agent::plan_mode::APPROVED)
    );
    let screen = tui.wait_for_text("auto mode").await;
    assert!(screen.contains("Plan approved"), "{screen}");
    tui.quit().await;
}

#[tokio::test]
async fn slash_plan_turns_plan_mode_on_and_off() {
    let env = env();
    let server = FakeServer::start(vec![]).await;
    let mut tui = env.start(&server, &[]);
    ready(&tui).await;
    tui.type_text("/plan");
    tui.enter();
    tui.wait_for_text("Plan mode: the agent only looks").await;
    tui.wait_for_text("plan mode").await;
    tui.type_text("/plan");
    tui.enter();
    tui.wait_for_text("Plan mode off: back to ask mode.").await;
    tui.quit().await;
}

#[tokio::test]
async fn slash_ps_lists_background_shells_and_kills_the_chosen_one() {
    let env = env();
    let server = FakeServer::start(vec![
        Reply::sse(chat::tool_call(
            "c1",
            "bash",
            json!({"command": "echo $$ > shell.pid; echo serving; sleep 1000", "background": true}),
        )),
        Reply::sse(chat::text("The server runs in the background.")),
    ])
    .await;
    let mut tui = env.start(&server, &["--permission-mode", "auto"]);
    ready(&tui).await;
    tui.type_text("start the server");
    tui.enter();
    tui.wait_for_text("The server runs in the background.")
        .await;
    let pid = wait_for_pid(&env.cwd.path().join("shell.pid")).await;
    tui.wait_until_idle().await;
    tui.type_text("/ps");
    tui.enter();
    let screen = tui.wait_for_text("Background shells — enter kills").await;
    assert!(
        screen.contains("shell_1  echo $$ > shell.pid; echo serving; sleep 1000"),
        "{screen}"
    );
    assert!(screen.contains("running"), "{screen}");
    tui.enter();
    tui.wait_for_text("shell_1: killed.").await;
    assert!(wait_until_dead(pid).await, "the shell survived /ps");
    tui.type_text("/ps");
    tui.enter();
    tui.wait_for_text("· killed").await;
    tui.send(b"\x1b");
    tui.wait_for("the menu to close", |s| !s.contains("Background shells —"))
        .await;
    tui.quit().await;
}

/// A 2×3 PNG's header: all the dimensions need.
const PNG_2X3: &[u8] = &[
    0x89, b'P', b'N', b'G', 0x0D, 0x0A, 0x1A, 0x0A, 0, 0, 0, 13, b'I', b'H', b'D', b'R', 0, 0, 0,
    2, 0, 0, 0, 3, 8, 6, 0, 0, 0,
];

#[tokio::test]
async fn at_opens_a_fuzzy_file_picker_and_the_chosen_file_is_attached() {
    let env = env();
    let src = env.cwd.path().join("src/tui");
    std::fs::create_dir_all(&src).unwrap();
    std::fs::write(src.join("composer.rs"), "pub struct Composer;\n").unwrap();
    std::fs::write(env.cwd.path().join("src/main.rs"), "fn main() {}\n").unwrap();
    std::fs::write(env.cwd.path().join(".gitignore"), "build/\n").unwrap();
    std::fs::create_dir_all(env.cwd.path().join("build")).unwrap();
    std::fs::write(env.cwd.path().join("build/composer_tui.rs"), "").unwrap();
    let server = FakeServer::start(vec![Reply::sse(chat::text("It is a struct."))]).await;
    let mut tui = env.start(&server, &[]);
    ready(&tui).await;
    tui.type_text("explain @tuicomp");
    let screen = tui.wait_for_text("› @src/tui/composer.rs").await;
    assert!(
        !screen.contains("build/"),
        "ignored files are not offered: {screen}"
    );
    tui.send(b"\t");
    tui.wait_for_text("explain @src/tui/composer.rs").await;
    tui.type_text("please");
    tui.enter();
    tui.wait_for_text("It is a struct.").await;
    tui.wait_for_text("Attached: src/tui/composer.rs (21 B)")
        .await;
    let parts = server.bodies()[0]["messages"][1]["content"].clone();
    assert_eq!(parts[0]["text"], "explain @src/tui/composer.rs please");
    assert_eq!(
        parts[1]["text"],
        "<file path=\"src/tui/composer.rs\">\npub struct Composer;\n</file>"
    );
    tui.quit().await;
}

#[tokio::test]
async fn a_pasted_image_path_is_a_chip_attached_or_refused_for_a_model_without_images() {
    let env = env();
    std::fs::write(env.cwd.path().join("shot.png"), PNG_2X3).unwrap();
    std::fs::write(
        env.home.path().join("config.toml"),
        "[providers.openai.models.seeing-model]\nimages = true\n",
    )
    .unwrap();
    let server = FakeServer::start(vec![
        Reply::sse(chat::text("A tiny picture.")),
        Reply::sse(chat::text("Typed works too.")),
    ])
    .await;
    let mut tui = env.start(&server, &[]);
    ready(&tui).await;
    let pasted = format!(
        "\x1b[200~{}\x1b[201~",
        env.cwd.path().join("shot.png").display()
    );
    tui.send(pasted.as_bytes());
    tui.wait_for_text("› [image: shot.png 2×3]").await;
    tui.type_text("what is this");
    tui.enter();
    // test-model takes no images: nothing is sent, the prompt stays.
    tui.wait_for_text("`test-model` does not take image input")
        .await;
    tui.wait_for_text("› [image: shot.png 2×3] what is this")
        .await;
    assert!(server.requests().is_empty());
    // A model that takes images gets it: the prompt comes back from the history with its
    // chip, and the chip is one element (backspace after it takes all of it).
    tui.send(b"\x15");
    tui.type_text("/model seeing-model");
    tui.enter();
    tui.wait_for_text("Model: openai/seeing-model").await;
    // ↑ ↑: past `/model seeing-model` to the refused prompt.
    tui.send(b"\x1b[A\x1b[A");
    tui.wait_for_text("› [image: shot.png 2×3] what is this")
        .await;
    tui.enter();
    tui.wait_for_text("A tiny picture.").await;
    tui.wait_for_text("Attached: [image: shot.png 2×3]").await;
    let parts = server.bodies()[0]["messages"][1]["content"].clone();
    assert_eq!(parts[0]["text"], "[image: shot.png 2×3] what is this");
    assert_eq!(
        parts[1]["image_url"]["url"].as_str().unwrap(),
        format!(
            "data:image/png;base64,{}",
            base64::Engine::encode(&base64::engine::general_purpose::STANDARD, PNG_2X3)
        ),
        "{parts}"
    );
    // The transcript shows the chip's text, as typed.
    let screen = tui.wait_until_idle().await;
    assert!(
        screen.contains("Ask anything"),
        "the composer is empty: {screen}"
    );
    assert!(
        screen.contains("[image: shot.png 2×3] what is this"),
        "{screen}"
    );
    // `@path` typed by hand attaches as before.
    tui.type_text("describe @shot.png");
    tui.enter();
    tui.wait_for_text("Typed works too.").await;
    let parts = server.bodies()[1]["messages"][3]["content"].clone();
    assert_eq!(parts[0]["text"], "describe @shot.png");
    assert!(
        parts[1]["image_url"]["url"]
            .as_str()
            .unwrap()
            .starts_with("data:image/png;base64,"),
        "{parts}"
    );
    tui.quit().await;
}

#[tokio::test]
async fn a_chip_is_deleted_whole_and_one_whose_file_vanished_is_kept_with_a_warning() {
    let env = env();
    std::fs::write(env.cwd.path().join("a.png"), PNG_2X3).unwrap();
    std::fs::write(env.cwd.path().join("b.png"), PNG_2X3).unwrap();
    std::fs::write(
        env.home.path().join("config.toml"),
        "[providers.openai.models.test-model]\nimages = true\n",
    )
    .unwrap();
    let server = FakeServer::start(vec![]).await;
    let mut tui = env.start(&server, &[]);
    ready(&tui).await;
    // Two files dropped at once, one of them quoted.
    let pasted = format!(
        "\x1b[200~'{}' {}\x1b[201~",
        env.cwd.path().join("a.png").display(),
        env.cwd.path().join("b.png").display()
    );
    tui.send(pasted.as_bytes());
    tui.wait_for_text("› [image: a.png 2×3] [image: b.png 2×3]")
        .await;
    // Backspace twice: the space, then the whole second chip.
    tui.send(b"\x7f\x7f");
    // (The space left after the first chip is seen below, when text is typed after it: a
    // blank at a row's end is erased, not written, so the screen's text has none there.)
    tui.wait_for("the second chip to go", |s| {
        s.contains("› [image: a.png 2×3]") && !s.contains("b.png")
    })
    .await;
    std::fs::remove_file(env.cwd.path().join("a.png")).unwrap();
    tui.type_text("look");
    tui.enter();
    tui.wait_for_text("[image: a.png 2×3] cannot be sent: its file")
        .await;
    tui.wait_for_text("› [image: a.png 2×3] look").await;
    assert!(server.requests().is_empty());
    tui.send(b"\x15\x04");
    assert_eq!(tui.exit_code().await, 0);
}

#[tokio::test]
async fn slash_copy_puts_the_last_answer_on_the_clipboard_with_osc_52() {
    use base64::Engine;
    let env = env();
    let server = FakeServer::start(vec![Reply::sse(chat::text("Use `cargo test`."))]).await;
    let mut tui = env.start(&server, &[]);
    ready(&tui).await;
    tui.type_text("/copy");
    tui.enter();
    tui.wait_for_text("Nothing to copy yet").await;
    tui.type_text("how do I test?");
    tui.enter();
    tui.wait_for_text("Use cargo test.").await;
    tui.wait_until_idle().await;
    tui.type_text("/copy");
    tui.enter();
    tui.wait_for_text("Copied the last answer (17 characters)")
        .await;
    let encoded = base64::engine::general_purpose::STANDARD.encode("Use `cargo test`.");
    assert!(tui.wrote(format!("\x1b]52;c;{encoded}\x07").as_bytes()));
    tui.quit().await;
}

#[tokio::test]
async fn slash_diff_shows_what_the_session_changed_per_file_in_colour() {
    let env = env();
    let cwd = env.cwd.path();
    std::fs::write(cwd.join("a.txt"), "one\ntwo\nthree\n").unwrap();
    std::fs::write(cwd.join("gone.txt"), "bye\n").unwrap();
    std::fs::write(cwd.join("same.txt"), "kept\n").unwrap();
    let server = FakeServer::start(vec![
        Reply::sse(chat::tool_call(
            "c1",
            "bash",
            json!({"command": "printf 'one\\nTWO\\nthree\\nfour\\n' > a.txt && rm gone.txt && printf 'fresh\\n' > new.txt"}),
        )),
        Reply::sse(chat::text("Changed them.")),
    ])
    .await;
    let base = server.v1();
    // In colour (the harness turns it off by default).
    let mut tui = Tui::spawn_sized(
        &[
            "--base-url",
            &base,
            "--model",
            "test-model",
            "--permission-mode",
            "auto",
        ],
        env.home.path(),
        cwd,
        30,
        100,
        &[("NO_COLOR", "")],
    );
    ready(&tui).await;
    // Nothing changed yet: said plainly.
    tui.type_text("/diff");
    tui.enter();
    tui.wait_for_text("No changes").await;
    tui.type_text("change the files");
    tui.enter();
    tui.wait_for_text("Changed them.").await;
    tui.type_text("/diff");
    tui.enter();
    let screen = tui
        .wait_for("the diff view", |s| {
            s.contains("Diff (") && s.contains("new.txt")
        })
        .await;
    assert!(
        screen.contains("3 files changed this session, +3 -2"),
        "{screen}"
    );
    assert!(screen.contains("a.txt  modified  +2 -1"), "{screen}");
    assert!(screen.contains("gone.txt  deleted  +0 -1"), "{screen}");
    assert!(screen.contains("new.txt  new file  +1 -0"), "{screen}");
    assert!(!screen.contains("same.txt"), "{screen}");
    assert!(screen.contains("@@ -1,3 +1,4 @@"), "{screen}");
    // Additions green, removals red.
    let (row, col) = tui.find("+TWO").unwrap();
    assert_eq!(tui.fg_at(row, col), vt100::Color::Idx(2));
    let (row, col) = tui.find("-two").unwrap();
    assert_eq!(tui.fg_at(row, col), vt100::Color::Idx(1));
    // q closes it; the conversation is back.
    tui.send(b"q");
    tui.wait_for("the view to close", |s| {
        !s.contains("Diff (") && s.contains("Ask anything")
    })
    .await;
    tui.quit().await;
}

#[tokio::test]
async fn slash_diff_falls_back_to_git_when_checkpoints_are_off() {
    let env = env();
    let cwd = env.cwd.path();
    std::fs::write(
        env.home.path().join("config.toml"),
        "[checkpoints]\nenabled = false\n",
    )
    .unwrap();
    let git = |args: &[&str]| {
        let status = std::process::Command::new("git")
            .args(["-c", "user.name=t", "-c", "user.email=t@t"])
            .args(args)
            .current_dir(cwd)
            .output()
            .unwrap();
        assert!(status.status.success(), "{status:?}");
    };
    std::fs::write(cwd.join("a.txt"), "one\n").unwrap();
    git(&["init", "-q"]);
    git(&["add", "a.txt"]);
    git(&["commit", "-qm", "start"]);
    // Changed before the session started: not the session's change.
    std::fs::write(cwd.join("a.txt"), "one\nbefore\n").unwrap();
    let server = FakeServer::start(vec![
        Reply::sse(chat::tool_call(
            "c1",
            "bash",
            json!({"command": "printf 'during\\n' >> a.txt"}),
        )),
        Reply::sse(chat::text("Appended.")),
    ])
    .await;
    let mut tui = env.start(&server, &["--permission-mode", "auto"]);
    ready(&tui).await;
    tui.type_text("append");
    tui.enter();
    tui.wait_for_text("Appended.").await;
    tui.type_text("/diff");
    tui.enter();
    let screen = tui.wait_for_text("Diff (").await;
    assert!(screen.contains("a.txt  modified  +1 -0"), "{screen}");
    assert!(screen.contains("+during"), "{screen}");
    assert!(!screen.contains("+before"), "{screen}");
    tui.close_view(b"q", "Diff (").await;
    tui.quit().await;
}
