//! Sessions you can manage and background shells' reporting (issue 35, s35): a background
//! shell the user stops from `/ps` is told to the model once, with the next request;
//! `agent sessions gc` collects what deleted sessions left behind and nothing of a live one.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // test code fails loudly

use crate::support;

use agent::protocol::event::AgentEvent;
use serde_json::json;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};
use support::chat;
use support::harness::{Harness, result_of};
use support::process::Rpc;
use support::server::Reply;

/// The conversation of the `n`th request the model got, one line per message.
fn conversation(server: &support::server::FakeServer, n: usize) -> String {
    let bodies = server.bodies();
    support::harness::transcript(&bodies[n]).join("\n")
}

/// A background shell the user stops (`/ps`) is reported to the model with the next
/// request — that the user stopped it, with its last output — exactly once: the model does
/// not go on believing it runs.
#[tokio::test]
async fn a_background_shell_the_user_stops_is_reported_once_with_the_next_request() {
    let mut h = Harness::start_with(vec![], |c| {
        c.tools = agent::tools::Tools::from_names(agent::tools::ALL_TOOLS).unwrap();
    })
    .await;
    h.server.push(Reply::sse(chat::tool_call(
        "c1",
        "bash",
        json!({"command": "echo booting; echo serving-on-4711; exec sleep 600", "background": true}),
    )));
    h.server.push(Reply::sse(chat::text("The server runs.")));
    h.server.push(Reply::sse(chat::text("It was stopped.")));
    h.server.push(Reply::sse(chat::text("Still stopped.")));
    h.prompt("start the server");
    let events = h.until_end().await;
    let (text, is_error) = result_of(&events, "c1");
    assert!(!is_error, "{text}");
    assert!(text.contains("[shell_1: running]"), "{text}");

    // Its output is in (read or not, the note quotes its last lines).
    let shells = h.agent.background_shells();
    let deadline = Instant::now() + Duration::from_secs(120);
    let mut seen = text.clone();
    while !seen.contains("serving-on-4711") {
        assert!(Instant::now() < deadline, "no output: {seen}");
        seen.push_str(&shells.take_new_output("shell_1").unwrap().text);
        tokio::time::sleep(Duration::from_millis(20)).await;
    }

    // The user stops it from /ps.
    let status = shells.stop_by_user("shell_1").await;
    assert_eq!(status, Some(agent::tools::background::ShellStatus::Killed));

    h.prompt("is the server up?");
    h.until(|e| matches!(e, AgentEvent::AgentEnd { .. })).await;
    h.prompt("and now?");
    h.until(|e| matches!(e, AgentEvent::AgentEnd { .. })).await;
    // Requests 0 and 1 were the first run's; 2 follows the stop, 3 comes after it.
    for n in [2, 3] {
        let sent = conversation(&h.server, n);
        assert_eq!(
            sent.matches("[shell_1 was stopped by the user").count(),
            1,
            "request {n} tells it exactly once: {sent}"
        );
    }
    let sent = conversation(&h.server, 2);
    let note = &sent[sent.find("[shell_1 was stopped by the user").unwrap()..];
    let note = note.lines().next().unwrap();
    assert!(note.contains("serving-on-4711"), "its last output: {note}");
    // It rides on the user's next message.
    let asked = sent.find("user:is the server up?").unwrap();
    assert!(
        sent.find("[shell_1 was stopped by the user").unwrap() > asked,
        "{sent}"
    );
}

/// `agent sessions ARGS…` in the test's working directory.
async fn sessions(env: &support::env::Env, args: &[&str]) -> support::process::Output {
    let mut cmd = support::process::command(env.home.path(), env.cwd.path());
    cmd.arg("sessions").args(args);
    support::process::run(cmd).await
}

/// `agent -p PROMPT` in auto mode; it must succeed.
async fn print(env: &support::env::Env, server: &support::server::FakeServer, prompt: &str) {
    let out =
        support::process::run(env.agent(server, &["-p", "--permission-mode", "auto", prompt]))
            .await;
    assert_eq!(out.code, 0, "stderr: {}", out.stderr);
}

fn id_of(file: &Path) -> String {
    let name = file.file_stem().unwrap().to_str().unwrap();
    name.rsplit_once('_').unwrap().1.to_string()
}

/// Every path under `dir`, recursively.
fn every_path(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut pending = vec![dir.to_path_buf()];
    while let Some(dir) = pending.pop() {
        for entry in std::fs::read_dir(&dir).unwrap().flatten() {
            let path = entry.path();
            if entry.file_type().unwrap().is_dir() {
                pending.push(path.clone());
            }
            out.push(path);
        }
    }
    out.sort();
    out
}

/// The checkpoint objects holding exactly `content`.
fn objects_holding(home: &Path, content: &[u8]) -> usize {
    every_path(&home.join("checkpoints/objects"))
        .into_iter()
        .filter(|p| p.is_file() && std::fs::read(p).unwrap() == content)
        .count()
}

/// Make `paths` (and everything under them) look untouched for two days.
fn age(paths: &[PathBuf]) {
    let status = std::process::Command::new("touch")
        .args(["-h", "-d", "2 days ago"])
        .args(
            paths
                .iter()
                .filter(|p| p.exists())
                .flat_map(|p| every_path_and(p)),
        )
        .status()
        .unwrap();
    assert!(status.success());
}

fn every_path_and(path: &Path) -> Vec<PathBuf> {
    let mut all = vec![path.to_path_buf()];
    if path.is_dir() {
        all.extend(every_path(path));
    }
    all
}

/// Orphans — a session file deleted by hand (its tool outputs, its sub-agent's session and
/// its checkpoint log stay behind), and a deletion a crash stopped after its first step
/// (the tombstone `<stem>.deleted`) — are collected by `agent sessions gc`, with the
/// checkpoint objects only they used. A session a running agent holds, a fresh directory a
/// running agent may still write to, and the objects another session uses are untouched.
#[tokio::test]
async fn sessions_gc_collects_orphans_and_leaves_live_sessions_alone() {
    let env = support::env::env();
    let home = env.home.path();
    let server = support::server::FakeServer::start(vec![
        // A: a sub-agent, a spilled output, a file only it wrote.
        Reply::sse(chat::tool_call(
            "t1",
            "task",
            json!({"description": "look around", "prompt": "child job 5e1f"}),
        )),
        Reply::sse(chat::tool_call(
            "b1",
            "bash",
            json!({"command": "seq 1 100000"}),
        )),
        Reply::sse(chat::tool_call(
            "b2",
            "bash",
            json!({"command": "echo only-in-a-7f3e > a.txt"}),
        )),
        // Gone again: no later session sees it.
        Reply::sse(chat::tool_call(
            "b3",
            "bash",
            json!({"command": "rm a.txt"}),
        )),
        Reply::sse(chat::text("done A")),
        // C: a file only it wrote.
        Reply::sse(chat::tool_call(
            "c1",
            "bash",
            json!({"command": "echo only-in-c-81aa > c.txt"}),
        )),
        Reply::sse(chat::tool_call(
            "c2",
            "bash",
            json!({"command": "rm c.txt"}),
        )),
        Reply::sse(chat::text("done C")),
        // B: a file only it wrote; it stays open in a running agent.
        Reply::sse(chat::tool_call(
            "d1",
            "bash",
            json!({"command": "echo only-in-b-93bd > b.txt"}),
        )),
        Reply::sse(chat::text("done B")),
    ])
    .await;
    server.route("child job 5e1f", vec![Reply::sse(chat::text("child done"))]);
    print(&env, &server, "session A").await;
    let a_file = env.only_session();
    let a_id = id_of(&a_file);
    let a_dirs = [
        a_file.with_extension("files"),
        a_file.with_extension("agents"),
    ];
    assert!(a_dirs.iter().all(|d| d.is_dir()), "{a_dirs:?}");
    let child = every_path(&a_dirs[1])
        .into_iter()
        .find(|p| p.extension().is_some_and(|e| e == "jsonl"))
        .unwrap();
    let child_id = id_of(&child);
    print(&env, &server, "session C").await;
    let c_file = env
        .session_files()
        .into_iter()
        .find(|f| *f != a_file)
        .unwrap();
    let c_id = id_of(&c_file);
    let log = |id: &str| home.join(format!("checkpoints/sessions/{id}.jsonl"));
    assert!(log(&a_id).is_file() && log(&c_id).is_file());

    let mut rpc = Rpc::spawn(env.agent(&server, &["--mode", "rpc", "--permission-mode", "auto"]));
    rpc.send(json!({"id": "p", "type": "prompt", "message": "session B"}))
        .await;
    rpc.until(|l| l["type"] == "agent_end").await;
    let b_file = env
        .session_files()
        .into_iter()
        .find(|f| *f != a_file && *f != c_file)
        .unwrap();
    let b_id = id_of(&b_file);
    assert!(log(&b_id).is_file());

    // A's file deleted by hand two days ago; C's deletion stopped after its first step;
    // B's log untouched for two days too (its session is there: it is kept); a fresh
    // directory beside no session (a running agent's pasted image before its first
    // message) is kept.
    std::fs::remove_file(&a_file).unwrap();
    age(&[
        a_dirs[0].clone(),
        a_dirs[1].clone(),
        log(&a_id),
        log(&child_id),
        log(&b_id),
    ]);
    std::fs::rename(&c_file, c_file.with_extension("deleted")).unwrap();
    let fresh = a_file.with_file_name("2026-11-28T11-00-00-000Z_fresh0000001.files");
    std::fs::create_dir_all(&fresh).unwrap();
    std::fs::write(fresh.join("clipboard-1.png"), b"png").unwrap();

    let before = every_path(home);
    let dry = sessions(&env, &["gc", "--dry-run"]).await;
    assert_eq!(dry.code, 0, "{}", dry.stderr);
    for shown in [
        a_dirs[0].display().to_string(),
        child.display().to_string(),
        log(&a_id).display().to_string(),
        c_id.clone(),
    ] {
        assert!(dry.stdout.contains(&shown), "{shown}: {}", dry.stdout);
    }
    assert!(!dry.stdout.contains(&b_id), "{}", dry.stdout);
    assert_eq!(every_path(home), before, "a dry run removes nothing");

    let collected = sessions(&env, &["gc"]).await;
    assert_eq!(collected.code, 0, "{}", collected.stderr);
    let left: Vec<PathBuf> = every_path(home)
        .into_iter()
        .filter(|p| {
            let text = p.to_string_lossy();
            text.contains(&a_id) || text.contains(&child_id) || text.contains(&c_id)
        })
        .collect();
    assert!(
        left.is_empty(),
        "left behind: {left:?}\n{}",
        collected.stdout
    );
    assert_eq!(
        objects_holding(home, b"only-in-a-7f3e\n"),
        0,
        "{}",
        collected.stdout
    );
    assert_eq!(objects_holding(home, b"only-in-c-81aa\n"), 0);
    // The live session, its checkpoints and the fresh directory are untouched.
    assert!(b_file.is_file() && log(&b_id).is_file());
    assert_eq!(objects_holding(home, b"only-in-b-93bd\n"), 1);
    assert!(fresh.join("clipboard-1.png").is_file());

    // Nothing more to collect.
    let again = sessions(&env, &["gc"]).await;
    assert_eq!(again.code, 0, "{}", again.stderr);
    assert!(
        again.stdout.contains("Nothing left behind"),
        "{}",
        again.stdout
    );
    assert_eq!(rpc.exit_code().await, 0);
}

/// Wait (up to 120 s) until the visible screen satisfies `pred`.
async fn wait_screen(tui: &support::pty::Tui, what: &str, pred: impl Fn(&str) -> bool) -> String {
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

/// In the `agent -r` picker, the highlighted session is renamed in place (a rebound key:
/// `[keys] "picker.rename" = "f2"`) and deleted after a y/n question naming it — through
/// what `agent sessions rename|rm` use: `agent sessions list` shows the new title, and the
/// deleted session's file, tool outputs, sub-agent session, checkpoint log and the objects
/// only it used are gone. A session a running agent holds is refused, with the reason.
#[tokio::test]
async fn the_picker_renames_and_deletes_sessions() {
    let env = support::env::env();
    let home = env.home.path();
    std::fs::write(
        home.join("config.toml"),
        "[keys]\n\"picker.rename\" = \"f2\"\n",
    )
    .unwrap();
    let server = support::server::FakeServer::start(vec![
        Reply::sse(chat::tool_call(
            "t1",
            "task",
            json!({"description": "look around", "prompt": "child job 5e1f"}),
        )),
        Reply::sse(chat::tool_call(
            "b1",
            "bash",
            json!({"command": "seq 1 100000"}),
        )),
        Reply::sse(chat::tool_call(
            "b2",
            "bash",
            json!({"command": "echo only-in-a-7f3e > a.txt"}),
        )),
        Reply::sse(chat::tool_call(
            "b3",
            "bash",
            json!({"command": "rm a.txt"}),
        )),
        Reply::sse(chat::text("done A")),
        Reply::sse(chat::text("done B")),
        Reply::sse(chat::text("done C")),
    ])
    .await;
    server.route("child job 5e1f", vec![Reply::sse(chat::text("child done"))]);
    print(&env, &server, "Fix the flaky build").await;
    let a_file = env.only_session();
    let a_id = id_of(&a_file);
    let child = every_path(&a_file.with_extension("agents"))
        .into_iter()
        .find(|p| p.extension().is_some_and(|e| e == "jsonl"))
        .unwrap();
    assert!(a_file.with_extension("files").is_dir());
    let a_log = home.join(format!("checkpoints/sessions/{a_id}.jsonl"));
    assert!(a_log.is_file());
    assert_eq!(objects_holding(home, b"only-in-a-7f3e\n"), 1);
    print(&env, &server, "Write release notes").await;
    let b_file = env
        .session_files()
        .into_iter()
        .find(|f| *f != a_file)
        .unwrap();
    let mut rpc = Rpc::spawn(env.agent(&server, &["--mode", "rpc"]));
    rpc.send(json!({"id": "p", "type": "prompt", "message": "Busy elsewhere"}))
        .await;
    rpc.until(|l| l["type"] == "agent_end").await;
    let c_file = env
        .session_files()
        .into_iter()
        .find(|f| *f != a_file && *f != b_file)
        .unwrap();

    let mut tui = env.start(&server, &["-r"]);
    let screen = wait_screen(&tui, "the picker", |s| {
        s.contains("Fix the flaky build") && s.contains("Busy elsewhere")
    })
    .await;
    // The footer names the keys as bound.
    assert!(
        screen.contains("enter opens · f2 renames · ctrl+d deletes · esc cancels"),
        "{screen}"
    );

    // Rename: the title is edited in place.
    tui.type_text("release");
    wait_screen(&tui, "the search", |s| {
        s.contains("search: release") && !s.contains("Fix the flaky build")
    })
    .await;
    tui.send(b"\x1bOQ");
    wait_screen(&tui, "the title to edit", |s| {
        s.contains("new title: Write release notes▏")
    })
    .await;
    tui.send(b"\x15");
    tui.type_text("Shipping notes");
    tui.enter();
    wait_screen(&tui, "the new title", |s| {
        s.contains("Renamed to “Shipping notes”.") && s.contains("› Shipping notes")
    })
    .await;
    let listed = sessions(&env, &["list"]).await;
    assert!(
        listed.stdout.contains("Shipping notes"),
        "{}",
        listed.stdout
    );

    // Delete: asked first, naming the session; n keeps it.
    tui.send(b"\x15");
    tui.type_text("flaky");
    wait_screen(&tui, "the search", |s| {
        s.contains("› Fix the flaky build") && !s.contains("Shipping notes")
    })
    .await;
    tui.send(b"\x04");
    let screen = wait_screen(&tui, "the question", |s| {
        s.contains("y deletes · n keeps it")
    })
    .await;
    assert!(
        screen.contains(&format!("Delete “Fix the flaky build” ({a_id})?")),
        "{screen}"
    );
    tui.type_text("n");
    wait_screen(&tui, "the answer", |s| s.contains("Nothing was deleted.")).await;
    assert!(a_file.is_file());
    tui.send(b"\x04");
    wait_screen(&tui, "the question", |s| {
        s.contains("y deletes · n keeps it")
    })
    .await;
    tui.type_text("y");
    wait_screen(&tui, "the deletion", |s| {
        s.contains("Deleted “Fix the flaky build”.") && !s.contains("› Fix the flaky build")
    })
    .await;
    let named: Vec<PathBuf> = every_path(home)
        .into_iter()
        .filter(|p| {
            let text = p.to_string_lossy();
            text.contains(&a_id) || text.contains(&id_of(&child))
        })
        .collect();
    assert!(named.is_empty(), "left behind: {named:?}");
    assert_eq!(objects_holding(home, b"only-in-a-7f3e\n"), 0);
    assert!(b_file.is_file());

    // A session a running agent holds is refused, and stays.
    tui.send(b"\x15");
    tui.type_text("busy");
    wait_screen(&tui, "the search", |s| s.contains("› Busy elsewhere")).await;
    tui.send(b"\x04");
    wait_screen(&tui, "the question", |s| {
        s.contains("y deletes · n keeps it")
    })
    .await;
    tui.type_text("y");
    wait_screen(&tui, "the refusal", |s| {
        s.contains(
            "“Busy elsewhere” is open in a running agent: quit it first (nothing was deleted)",
        )
    })
    .await;
    assert!(c_file.is_file());
    assert_eq!(rpc.exit_code().await, 0);

    // /keys lists the picker's actions.
    tui.send(b"\x15");
    wait_screen(&tui, "the cleared search", |s| {
        s.contains("search: titles and contents")
    })
    .await;
    tui.send(b"\x1b");
    tui.wait_for_text("Ask anything").await;
    tui.type_text("/keys");
    tui.enter();
    tui.wait_for_text("picker.delete").await;
    tui.quit().await;
}

/// The search through the sessions' contents runs off the key path: with large sessions,
/// what is typed is drawn (titles matched) while the contents are still being searched,
/// and the session whose content matches follows when it is found.
#[tokio::test]
async fn the_picker_draws_the_query_before_the_content_matches_arrive() {
    let env = support::env::env();
    let server = chat::answering(&["PAD-ANSWER", "PAD-ANSWER", "PAD-ANSWER"]).await;
    for title in ["Topic one", "Topic two", "Topic three"] {
        support::process::run(env.agent(&server, &["-p", title])).await;
    }
    // Each session's answer becomes 40 MB of text; the oldest one's (searched last) ends
    // with the word searched for.
    let files = env.session_files();
    assert_eq!(files.len(), 3);
    for (n, file) in files.iter().enumerate() {
        let text = std::fs::read_to_string(file).unwrap();
        let mut pad = "lorem ipsum ".repeat(40 * 1024 * 1024 / 12);
        if n == 0 {
            pad.push_str("zebrafish");
        }
        std::fs::write(file, text.replace("PAD-ANSWER", &pad)).unwrap();
    }
    let mut tui = env.start(&server, &["-r"]);
    wait_screen(&tui, "the picker", |s| {
        s.contains("Topic one") && s.contains("Topic three")
    })
    .await;
    tui.type_text("zebrafish");
    let screen = wait_screen(&tui, "the query", |s| s.contains("search: zebrafish▏")).await;
    assert!(
        !screen.contains("in content"),
        "the query was drawn only once the contents were searched:\n{screen}"
    );
    assert!(screen.contains("searching contents…"), "{screen}");
    let screen = wait_screen(&tui, "the content match", |s| s.contains("in content")).await;
    assert!(screen.contains("Topic one"), "{screen}");
    assert!(!screen.contains("Topic two"), "{screen}");
    assert!(!screen.contains("searching contents…"), "{screen}");
    tui.send(b"\x15");
    wait_screen(&tui, "the cleared search", |s| {
        s.contains("search: titles and contents")
    })
    .await;
    tui.send(b"\x1b");
    tui.wait_for_text("Ask anything").await;
    tui.quit().await;
}
