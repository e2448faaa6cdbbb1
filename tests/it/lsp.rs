//! Language servers at the protocol's edges, against `test_lsp_server` (tests/fixtures): the
//! engine waits for the diagnostics of the version it sent (a stale publication is not
//! taken), tells old problems from new, waits only so long, says when a server is busy
//! (progress), answers a server's configuration request, survives a server that crashes,
//! hangs at `initialize`, exits at start or floods diagnostics, notices a command changing
//! an open file, navigates with the `lsp` tool, and stops a server with what it started.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // test code fails loudly

use crate::support;

use agent::config::lsp::{LspSettings, LspTable, resolve};
use agent::lsp::Lsp;
use agent::protocol::event::AgentEvent;
use agent::protocol::message::join_text;
use serde_json::{Value, json};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use support::chat;
use support::harness::{Harness, end_of, wait_for_pid, wait_until_dead};
use support::server::Reply;

/// `[lsp]` with the fake server as `[lsp.fake]` for `.fk` files, started with `args`;
/// `lsp_keys` go into `[lsp]`, `server_keys` into `[lsp.fake]`.
fn settings(args: &[&str], lsp_keys: &str, server_keys: &str) -> LspSettings {
    let program = support::fixtures::program("test_lsp_server");
    let text = format!(
        "{lsp_keys}\n[fake]\ncommand = {}\nargs = {}\nfiletypes = [\"fk\"]\n\
         root_markers = [\"fake.root\"]\n{server_keys}\n",
        json!(program.display().to_string()),
        json!(args)
    );
    let table: LspTable = toml::from_str(&text).unwrap();
    resolve(&table, None, Path::new("/")).unwrap()
}

/// An agent with read, write, edit, bash and lsp, whose language servers are `settings`.
async fn harness(settings: LspSettings) -> (Harness, Arc<Lsp>) {
    harness_with(settings, |_| {}).await
}

async fn harness_with(
    settings: LspSettings,
    adjust: impl FnOnce(&mut agent::agent::AgentConfig),
) -> (Harness, Arc<Lsp>) {
    let made: Arc<Mutex<Option<Arc<Lsp>>>> = Arc::default();
    let slot = made.clone();
    let h = Harness::start_with(vec![], move |c| {
        adjust(c);
        c.tools =
            agent::tools::Tools::from_names(&["read", "write", "edit", "bash", "lsp"]).unwrap();
        let lsp = Lsp::new(settings, c.cwd.clone(), Vec::new());
        c.tool_settings.lsp = Some(lsp.clone());
        *slot.lock().unwrap() = Some(lsp);
    })
    .await;
    let lsp = made.lock().unwrap().take().unwrap();
    (h, lsp)
}

/// Run one tool call (and a closing answer); its result: text, error flag, details.
async fn call(h: &mut Harness, name: &str, args: Value) -> (String, bool, Option<Value>) {
    h.server.push(Reply::sse(chat::tool_call("c1", name, args)));
    h.server.push(Reply::sse(chat::text("done")));
    h.prompt("go");
    let events = h.until_end().await;
    assert_eq!(end_of(&events).0, "completed");
    events
        .iter()
        .find_map(|e| match e {
            AgentEvent::ToolExecutionEnd {
                result, is_error, ..
            } => Some((
                join_text(&result.content),
                *is_error,
                result.details.clone(),
            )),
            _ => None,
        })
        .unwrap()
}

fn edit(path: &str, old: &str, new: &str) -> Value {
    json!({"path": path, "edits": [{"oldText": old, "newText": new}]})
}

/// Wait (up to 20 s) until `condition` holds.
async fn until(what: &str, condition: impl Fn() -> bool) {
    for _ in 0..2000 {
        if condition() {
            return;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    panic!("timed out waiting until {what}");
}

/// Wait until the fake server has `path` open (the model read it).
async fn until_open(lsp: &Lsp, path: &Path) {
    until("the server has the file open", || {
        lsp.started()
            .iter()
            .any(|s| s.open_files().iter().any(|(p, _)| p == path))
    })
    .await;
}

fn status_of(lsp: &Lsp) -> String {
    lsp.views()
        .iter()
        .find(|v| v.name == "fake")
        .map(|v| v.status.clone())
        .unwrap_or_default()
}

#[tokio::test]
async fn an_edit_gets_the_diagnostics_of_its_version_and_a_fix_clears_them() {
    // `--stale-first`: on each change the server first publishes the old version's
    // diagnostics again; only those of the version sent may be taken.
    let (mut h, lsp) = harness(settings(&["--stale-first"], "", "")).await;
    let file = h.dir.path().join("a.fk");
    std::fs::write(&file, "start\nWARN: old smell\n").unwrap();
    let (text, _, _) = call(&mut h, "read", json!({"path": "a.fk"})).await;
    assert!(!text.contains("Language server"), "{text}");
    until_open(&lsp, &file).await;
    // The first diagnostics (of what was read) are in before the change.
    until("the first diagnostics came", || {
        lsp.totals() == Some((0, 1))
    })
    .await;

    let (text, is_error, details) = call(
        &mut h,
        "edit",
        edit("a.fk", "start\n", "start\nx ERROR: fooo\n"),
    )
    .await;
    assert!(!is_error, "{text}");
    assert!(
        text.contains(
            "Language server (fake): 1 error and 1 warning in a.fk:\n  error 2:3 [E1] fooo\n  \
             warning 3:1 [W1] old smell (already there before this change)"
        ),
        "{text}"
    );
    let lsp_details = &details.unwrap()["lsp"];
    assert_eq!(lsp_details["errors"], 1);
    assert_eq!(
        lsp_details["files"][0]["diagnostics"][0]["existedBefore"],
        false
    );
    assert_eq!(
        lsp_details["files"][0]["diagnostics"][1]["existedBefore"],
        true
    );

    let (text, _, details) = call(&mut h, "edit", edit("a.fk", "x ERROR: fooo\n", "")).await;
    assert!(
        text.contains("Language server (fake): 0 errors and 1 warning in a.fk:"),
        "{text}"
    );
    assert!(!text.contains("fooo"), "{text}");
    assert_eq!(details.unwrap()["lsp"]["errors"], 0);
    lsp.shut_down().await;
}

#[tokio::test]
async fn unversioned_diagnostics_count_once_they_follow_the_change() {
    let (mut h, lsp) = harness(settings(&["--unversioned"], "", "")).await;
    std::fs::write(h.dir.path().join("b.fk"), "fine\n").unwrap();
    let (text, _, _) = call(
        &mut h,
        "write",
        json!({"path": "b.fk", "content": "ERROR: broken\n"}),
    )
    .await;
    assert!(
        text.contains(
            "Language server (fake): 1 error and 0 warnings in b.fk:\n  error 1:1 [E1] broken"
        ),
        "{text}"
    );
    lsp.shut_down().await;
}

#[tokio::test]
async fn diagnostics_that_do_not_come_in_time_are_said_to_be_late() {
    let (mut h, lsp) = harness(settings(
        &["--delay-ms", "60000"],
        "diagnostics_wait_secs = 0.2",
        "",
    ))
    .await;
    let (text, is_error, details) = call(
        &mut h,
        "write",
        json!({"path": "c.fk", "content": "ERROR: x\n"}),
    )
    .await;
    assert!(!is_error);
    assert!(
        text.contains("Language server (fake): no diagnostics for c.fk yet: fake "),
        "{text}"
    );
    assert_eq!(details.unwrap()["lsp"]["files"][0]["status"], "late");
    lsp.shut_down().await;
}

#[tokio::test]
async fn a_busy_server_says_what_it_is_doing() {
    // The server reports `indexing` and holds it, publishing nothing meanwhile.
    let (mut h, lsp) = harness(settings(
        &["--progress", "--hold-progress"],
        "diagnostics_wait_secs = 0.5",
        "",
    ))
    .await;
    std::fs::write(h.dir.path().join("d.fk"), "x\n").unwrap();
    call(&mut h, "read", json!({"path": "d.fk"})).await;
    until("the server reports progress", || {
        lsp.views().iter().any(|v| v.busy == ["indexing 50%"])
    })
    .await;
    let (text, _, _) = call(&mut h, "write", json!({"path": "d.fk", "content": "y\n"})).await;
    assert!(
        text.contains("(it is busy: indexing 50%)"),
        "the wait says why: {text}"
    );
    lsp.shut_down().await;
}

#[tokio::test]
async fn a_server_asking_for_its_configuration_gets_its_section() {
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("log");
    let (mut h, lsp) = harness(settings(
        &["--ask-config", "--log", log.to_str().unwrap()],
        "",
        "settings = { fake = { prefix = \"cfg: \" }, other = 1 }",
    ))
    .await;
    std::fs::write(h.dir.path().join("e.fk"), "x\n").unwrap();
    call(&mut h, "read", json!({"path": "e.fk"})).await;
    until("the server learned its configuration", || {
        std::fs::read_to_string(&log).is_ok_and(|l| l.contains(r#"config={"prefix":"cfg: "}"#))
    })
    .await;
    let (text, _, _) = call(
        &mut h,
        "write",
        json!({"path": "e.fk", "content": "ERROR: configured\n"}),
    )
    .await;
    assert!(text.contains("[E1] cfg: configured"), "{text}");
    let log = std::fs::read_to_string(&log).unwrap();
    assert!(
        log.contains("textDocument/didSave"),
        "it asked for didSave: {log}"
    );
    lsp.shut_down().await;
}

#[tokio::test]
async fn a_server_that_worked_and_then_fails_to_start_again_is_retried_not_given_up() {
    let dir = tempfile::tempdir().unwrap();
    let pid_file = dir.path().join("pid");
    let refuse = dir.path().join("refuse");
    let (mut h, lsp) = harness(settings(
        &[
            "--crash-on-change",
            "--pid-file",
            pid_file.to_str().unwrap(),
            "--exit-at-initialize-if",
            refuse.to_str().unwrap(),
        ],
        "",
        "",
    ))
    .await;
    let file = h.dir.path().join("f.fk");
    std::fs::write(&file, "x\n").unwrap();
    call(&mut h, "read", json!({"path": "f.fk"})).await;
    until_open(&lsp, &file).await;
    let first = wait_for_pid(&pid_file).await;
    std::fs::remove_file(&pid_file).unwrap();
    // It crashes on the change, and its next start fails at `initialize` (as a cold start
    // on a loaded machine can run out of time).
    std::fs::write(&refuse, "").unwrap();
    call(
        &mut h,
        "write",
        json!({"path": "f.fk", "content": "ERROR: boom\n"}),
    )
    .await;
    assert!(wait_until_dead(first).await, "the crashed server is reaped");
    // The next use after the retry delay starts it again; that start fails.
    let cancel = tokio_util::sync::CancellationToken::new();
    for _ in 0..2000 {
        if pid_file.exists() {
            break;
        }
        lsp.diagnostics(&file, Duration::from_millis(10), &cancel)
            .await;
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    let second = wait_for_pid(&pid_file).await;
    assert_ne!(second, first);
    until("the second start failed", || status_of(&lsp) != "starting").await;
    assert!(wait_until_dead(second).await, "the failed start is reaped");
    // That failed start is one more crash, not the end: once starts work again, it is back.
    assert_eq!(status_of(&lsp), "restarting");
    std::fs::remove_file(&refuse).unwrap();
    let mut checked = None;
    for _ in 0..2000 {
        let reports = lsp
            .diagnostics(&file, Duration::from_secs(10), &cancel)
            .await;
        if let Some(report) = reports.first()
            && matches!(report.outcome, agent::lsp::report::Outcome::Checked { .. })
        {
            checked = Some(report.clone());
            break;
        }
        assert_ne!(status_of(&lsp), "failed", "{reports:?}");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let checked = checked.expect("the server was started again");
    assert!(
        matches!(
            checked.outcome,
            agent::lsp::report::Outcome::Checked { errors: 1, .. }
        ),
        "{checked:?}"
    );
    lsp.shut_down().await;
}

#[tokio::test]
async fn a_crashed_server_is_reported_and_started_again_later() {
    let dir = tempfile::tempdir().unwrap();
    let pid_file = dir.path().join("pid");
    let (mut h, lsp) = harness(settings(
        &[
            "--crash-on-change",
            "--pid-file",
            pid_file.to_str().unwrap(),
        ],
        "",
        "",
    ))
    .await;
    let file = h.dir.path().join("f.fk");
    std::fs::write(&file, "x\n").unwrap();
    call(&mut h, "read", json!({"path": "f.fk"})).await;
    until_open(&lsp, &file).await;
    let first = wait_for_pid(&pid_file).await;
    std::fs::remove_file(&pid_file).unwrap();
    let (text, is_error, _) = call(
        &mut h,
        "write",
        json!({"path": "f.fk", "content": "ERROR: boom\n"}),
    )
    .await;
    assert!(!is_error, "the write itself stands: {text}");
    assert!(
        text.contains("Language server (fake): f.fk was not checked: fake stopped (it exited (exit status: 3); its last words: fake server: crashing on a change, as asked); it is started again on a later use."),
        "{text}"
    );
    assert_eq!(status_of(&lsp), "restarting");
    assert!(wait_until_dead(first).await, "the crashed server is reaped");
    // After its delay, the next use starts it again: the file is opened afresh.
    let cancel = tokio_util::sync::CancellationToken::new();
    let mut checked = None;
    for _ in 0..2000 {
        let reports = lsp
            .diagnostics(&file, Duration::from_secs(10), &cancel)
            .await;
        if let Some(report) = reports.first()
            && matches!(report.outcome, agent::lsp::report::Outcome::Checked { .. })
        {
            checked = Some(report.clone());
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let checked = checked.expect("the server was started again");
    assert!(
        matches!(
            checked.outcome,
            agent::lsp::report::Outcome::Checked { errors: 1, .. }
        ),
        "{checked:?}"
    );
    assert_ne!(wait_for_pid(&pid_file).await, first, "a new process");
    lsp.shut_down().await;
}

#[tokio::test]
async fn a_server_that_hangs_at_initialize_is_given_up_on() {
    let (mut h, lsp) = harness(settings(
        &["--hang-initialize"],
        "diagnostics_wait_secs = 0.2",
        "startup_timeout_secs = 0.5",
    ))
    .await;
    let (text, _, _) = call(&mut h, "write", json!({"path": "g.fk", "content": "x\n"})).await;
    assert!(
        text.contains("no diagnostics for g.fk yet: fake is still starting"),
        "{text}"
    );
    until("the server is given up on", || status_of(&lsp) == "failed").await;
    let (text, _, _) = call(&mut h, "write", json!({"path": "g.fk", "content": "y\n"})).await;
    assert!(
        text.contains("g.fk was not checked: fake is not available: it did not start: it did not answer `initialize` within 0.5 s"),
        "{text}"
    );
    // Said once: the next change goes without a word about it.
    let (text, _, _) = call(&mut h, "write", json!({"path": "g.fk", "content": "z\n"})).await;
    assert!(!text.contains("Language server"), "{text}");
    lsp.shut_down().await;
}

#[tokio::test]
async fn a_server_that_cannot_start_says_why() {
    let (mut h, lsp) = harness(settings(&["--exit-at-start"], "", "")).await;
    let (text, _, _) = call(&mut h, "write", json!({"path": "h.fk", "content": "x\n"})).await;
    assert!(
        text.contains("h.fk was not checked: fake is not available: it did not start: "),
        "{text}"
    );
    assert!(
        text.contains("fake server: cannot start, as asked"),
        "{text}"
    );
    assert_eq!(status_of(&lsp), "failed");
    lsp.shut_down().await;
}

#[tokio::test]
async fn a_flood_of_diagnostics_is_counted_and_capped() {
    // The unoptimised fake takes a while to publish 10,000 of them on a busy machine: the wait
    // ends as soon as they are in, so a long bound costs nothing when they come quickly.
    let (mut h, lsp) = harness(settings(
        &["--flood", "10000"],
        "diagnostics_wait_secs = 30",
        "",
    ))
    .await;
    let (text, is_error, details) =
        call(&mut h, "write", json!({"path": "i.fk", "content": "x\n"})).await;
    assert!(!is_error);
    assert!(
        text.contains("Language server (fake): 10000 errors and 0 warnings in i.fk:"),
        "{text}"
    );
    assert!(text.contains("  … and 9980 more"), "{text}");
    assert_eq!(text.matches("[F] flood").count(), 20);
    assert_eq!(details.unwrap()["lsp"]["files"][0]["notShown"], 9980);
    assert_eq!(lsp.totals(), Some((10000, 0)));
    lsp.shut_down().await;
}

#[tokio::test]
async fn a_command_that_changes_an_open_file_gets_its_diagnostics() {
    let (mut h, lsp) = harness(settings(&[], "", "")).await;
    let file = h.dir.path().join("j.fk");
    std::fs::write(&file, "x\n").unwrap();
    call(&mut h, "read", json!({"path": "j.fk"})).await;
    until_open(&lsp, &file).await;
    let (text, _, _) = call(&mut h, "bash", json!({"command": "echo hello"})).await;
    assert!(!text.contains("Language server"), "nothing changed: {text}");
    let (text, _, _) = call(
        &mut h,
        "bash",
        json!({"command": "printf 'ERROR: from a command\\n' > j.fk"}),
    )
    .await;
    assert!(
        text.contains("Language server (fake): 1 error and 0 warnings in j.fk:\n  error 1:1 [E1] from a command"),
        "{text}"
    );
    let (text, _, _) = call(&mut h, "bash", json!({"command": "rm j.fk"})).await;
    assert!(!text.contains("Language server"), "{text}");
    until("the removed file is forgotten", || {
        lsp.totals() == Some((0, 0))
    })
    .await;
    lsp.shut_down().await;
}

#[tokio::test]
async fn the_lsp_tool_answers_with_places_and_their_lines() {
    let (mut h, lsp) = harness(settings(&[], "", "")).await;
    std::fs::write(
        h.dir.path().join("k.fk"),
        "def helper\n  call helper\ndef main\n  helper helper\n",
    )
    .unwrap();
    let ask = |operation: &str, extra: Value| {
        let mut args = json!({"operation": operation, "path": "k.fk"});
        args.as_object_mut()
            .unwrap()
            .extend(extra.as_object().unwrap().clone());
        args
    };
    let (text, is_error, _) = call(
        &mut h,
        "lsp",
        ask("definition", json!({"line": 2, "symbol": "helper"})),
    )
    .await;
    assert!(!is_error, "{text}");
    assert_eq!(text, "k.fk:1:5: def helper");
    let (text, _, _) = call(
        &mut h,
        "lsp",
        ask("references", json!({"line": 1, "column": 6})),
    )
    .await;
    assert_eq!(
        text,
        "k.fk:1:5: def helper\nk.fk:2:8: call helper\nk.fk:4:3: helper helper"
    );
    let (text, _, _) = call(
        &mut h,
        "lsp",
        ask("hover", json!({"line": 3, "symbol": "main"})),
    )
    .await;
    assert_eq!(text, "hover: `main`");
    let (text, _, _) = call(&mut h, "lsp", ask("document_symbols", json!({}))).await;
    assert_eq!(text, "function helper — k.fk:1:5\nfunction main — k.fk:3:5");
    let (text, _, _) = call(
        &mut h,
        "lsp",
        ask("workspace_symbols", json!({"query": "main"})),
    )
    .await;
    assert_eq!(text, "function main — k.fk:3:5");
    let (text, is_error, _) = call(
        &mut h,
        "lsp",
        ask("definition", json!({"line": 2, "symbol": "nowhere"})),
    )
    .await;
    assert!(is_error);
    assert_eq!(text, "`nowhere` is not on line 2: call helper");
    let (text, _, _) = call(&mut h, "lsp", ask("diagnostics", json!({}))).await;
    assert_eq!(
        text,
        "Language server (fake): no errors or warnings in k.fk."
    );
    let (text, is_error, _) = call(
        &mut h,
        "lsp",
        json!({"operation": "definition", "path": "notes.txt", "line": 1}),
    )
    .await;
    assert!(is_error, "{text}");
    std::fs::write(h.dir.path().join("notes.txt"), "x\n").unwrap();
    let (text, _, _) = call(
        &mut h,
        "lsp",
        json!({"operation": "definition", "path": "notes.txt", "line": 1}),
    )
    .await;
    assert!(
        text.starts_with("no language server is configured or installed for .txt files"),
        "{text}"
    );
    lsp.shut_down().await;
}

#[tokio::test]
async fn files_the_rules_hide_are_not_asked_about_nor_shown() {
    let (mut h, lsp) = harness_with(settings(&[], "", ""), |c| {
        let deny = vec!["read(secret/**)".to_string()];
        c.permission_rules = agent::tools::permission::PermissionRules {
            rules: agent::tools::rules::RuleSet::parse(&[], &[], &deny, &c.cwd).unwrap(),
            cwd: c.cwd.clone(),
        };
    })
    .await;
    let dir = h.dir.path().to_path_buf();
    std::fs::create_dir(dir.join("secret")).unwrap();
    std::fs::write(
        dir.join("secret/keys.fk"),
        "def token
  token
",
    )
    .unwrap();
    std::fs::write(
        dir.join("open.fk"),
        "uses token
",
    )
    .unwrap();
    // The server knows the hidden file (a real one indexes the whole workspace).
    lsp.touch(dir.join("secret/keys.fk"));
    until_open(&lsp, &dir.join("secret/keys.fk")).await;
    let (text, is_error, _) = call(
        &mut h,
        "lsp",
        json!({"operation": "document_symbols", "path": "secret/keys.fk"}),
    )
    .await;
    assert!(is_error, "{text}");
    assert!(text.contains("hidden by the permission rules"), "{text}");
    let (text, is_error, _) = call(
        &mut h,
        "lsp",
        json!({"operation": "references", "path": "open.fk", "line": 1, "symbol": "token"}),
    )
    .await;
    assert!(!is_error, "{text}");
    assert!(!text.contains("secret"), "{text}");
    assert!(
        text.starts_with("open.fk:1:6: uses token\n[2 paths were left out"),
        "{text}"
    );
    lsp.shut_down().await;
}

#[tokio::test]
async fn a_stopped_server_takes_what_it_started_along() {
    let dir = tempfile::tempdir().unwrap();
    let (child_file, pid_file, log) = (
        dir.path().join("child"),
        dir.path().join("pid"),
        dir.path().join("log"),
    );
    let (mut h, lsp) = harness(settings(
        &[
            "--spawn-child",
            child_file.to_str().unwrap(),
            "--pid-file",
            pid_file.to_str().unwrap(),
            "--log",
            log.to_str().unwrap(),
        ],
        "",
        "",
    ))
    .await;
    call(&mut h, "write", json!({"path": "l.fk", "content": "x\n"})).await;
    let server = wait_for_pid(&pid_file).await;
    // The child left the server's process group and session (`setsid`).
    let child = wait_for_pid(&child_file).await;
    lsp.shut_down().await;
    assert!(wait_until_dead(server).await, "the server is gone");
    assert!(wait_until_dead(child).await, "so is what it started");
    let log = std::fs::read_to_string(&log).unwrap();
    assert!(log.contains("shutdown"), "asked politely first: {log}");
    assert_eq!(status_of(&lsp), "stopped");
}

#[tokio::test]
async fn with_no_wait_changes_reach_the_server_but_results_carry_nothing() {
    let (mut h, lsp) = harness(settings(&[], "diagnostics_wait_secs = 0", "")).await;
    let file = h.dir.path().join("n.fk");
    let (text, _, details) = call(
        &mut h,
        "write",
        json!({"path": "n.fk", "content": "ERROR: unseen\n"}),
    )
    .await;
    assert!(!text.contains("Language server"), "{text}");
    assert!(details.is_none_or(|d| d.get("lsp").is_none()));
    until_open(&lsp, &file).await;
    until("the server's diagnostics are in", || {
        lsp.totals() == Some((1, 0))
    })
    .await;
    lsp.shut_down().await;
}

#[tokio::test]
async fn a_disabled_or_missing_server_is_listed_but_never_started() {
    let (mut h, lsp) = harness(settings(&[], "", "enabled = false")).await;
    let (text, _, _) = call(&mut h, "write", json!({"path": "m.fk", "content": "x\n"})).await;
    assert!(!text.contains("Language server"), "{text}");
    assert_eq!(status_of(&lsp), "disabled");
    assert!(!lsp.available());
    assert!(lsp.started().is_empty());
    let missing: LspTable =
        toml::from_str("[x]\ncommand = \"no-such-program-here\"\nfiletypes = [\"x\"]\n").unwrap();
    let missing = Lsp::new(
        resolve(&missing, None, Path::new("/")).unwrap(),
        PathBuf::from("/"),
        Vec::new(),
    );
    assert!(!missing.available());
    let view = missing.views().into_iter().find(|v| v.name == "x").unwrap();
    assert_eq!(view.status, "not installed");
}

/// `[lsp.fake]` as config.toml text, for the real binary.
fn config_text(args: &[&str]) -> String {
    format!(
        "[lsp.fake]\ncommand = {}\nargs = {}\nfiletypes = [\"fk\"]\n",
        json!(
            support::fixtures::program("test_lsp_server")
                .display()
                .to_string()
        ),
        json!(args)
    )
}

#[tokio::test]
async fn the_binary_offers_the_tool_reports_in_get_state_and_its_servers_die_with_it() {
    let env = support::env::env();
    let marks = tempfile::tempdir().unwrap();
    let pid_file = marks.path().join("pid");
    std::fs::write(
        env.home.path().join("config.toml"),
        config_text(&["--pid-file", pid_file.to_str().unwrap()]),
    )
    .unwrap();
    let server = support::server::FakeServer::start(vec![
        Reply::sse(chat::tool_call(
            "c1",
            "write",
            json!({"path": "a.fk", "content": "ERROR: from the binary\n"}),
        )),
        Reply::sse(chat::text("done")),
    ])
    .await;
    let mut rpc = support::process::Rpc::spawn(
        env.agent(&server, &["--mode", "rpc", "--permission-mode", "auto"]),
    );
    rpc.send(json!({"id": "s0", "type": "get_state"})).await;
    let idle = rpc.response("s0").await["data"]["lspServers"].clone();
    let fake = idle
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["name"] == "fake")
        .unwrap()
        .clone();
    assert_eq!(fake["status"], "idle");
    assert_eq!(fake["root"], Value::Null);

    rpc.send(json!({"id": "p1", "type": "prompt", "message": "go"}))
        .await;
    let lines = rpc.until(|l| l["type"] == "agent_end").await;
    let end = lines
        .iter()
        .find(|l| l["type"] == "tool_execution_end")
        .unwrap();
    assert_eq!(end["result"]["details"]["lsp"]["errors"], 1, "{end}");
    let offered: Vec<String> = server.bodies()[0]["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["function"]["name"].as_str().unwrap().to_string())
        .collect();
    assert!(offered.contains(&"lsp".to_string()), "{offered:?}");

    rpc.send(json!({"id": "s1", "type": "get_state"})).await;
    let servers = rpc.response("s1").await["data"]["lspServers"].clone();
    let fake = servers
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["name"] == "fake")
        .unwrap()
        .clone();
    assert_eq!(fake["status"], "ready");
    assert_eq!(fake["errors"], 1);
    assert_eq!(fake["openFiles"], 1);
    assert_eq!(
        fake["root"],
        json!(env.cwd.path().canonicalize().unwrap().display().to_string())
    );
    // Killed, the agent takes its server with it.
    let pid = wait_for_pid(&pid_file).await;
    let agent = i32::try_from(rpc.child.id().unwrap()).unwrap();
    unsafe { libc::kill(agent, libc::SIGKILL) };
    assert!(wait_until_dead(pid).await, "the server outlived the agent");
}

#[tokio::test]
async fn the_interface_shows_the_counts_and_lists_the_servers() {
    let env = support::env::env();
    std::fs::write(env.home.path().join("config.toml"), config_text(&[])).unwrap();
    let server = support::server::FakeServer::start(vec![
        Reply::sse(chat::tool_call(
            "c1",
            "write",
            json!({"path": "a.fk", "content": "fine\nWARN: smells\nERROR: broken\n"}),
        )),
        Reply::sse(chat::text("written")),
    ])
    .await;
    let mut tui = env.start(&server, &["--permission-mode", "auto"]);
    tui.wait_for_text("Ask anything").await;
    tui.type_text("write it");
    tui.enter();
    // The edit's cell ends with its counts; the status line shows them too.
    tui.wait_for_text("lsp: 1 error, 1 warning").await;
    tui.wait_for_text("written").await;
    tui.wait_for_text("lsp ✗1 ⚠1").await;
    tui.type_text("/lsp");
    tui.enter();
    let screen = tui.wait_for_text("fake ready").await;
    assert!(
        screen.contains("fake ready · root . · 1 open · ✗1 ⚠1"),
        "the server's row: {screen}"
    );
    tui.type_text("/quit");
    tui.enter();
    assert_eq!(tui.exit_code().await, 0);
}
