//! The coding tools driven by the agent loop against the loopback model server, in real
//! temporary directories with real processes: bash's timeout, daemons, huge and non-UTF-8
//! output; edit's diff and all-or-nothing rule; schema checks before a tool runs.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // test code fails loudly

use crate::support;

use agent::protocol::event::AgentEvent;
use agent::protocol::message::join_text;
use agent::tools::ToolSettings;
use serde_json::{Value, json};
use std::time::Duration;
use support::chat;
use support::harness::{Harness, end_of, process_alive, wait_for_pid, wait_until_dead};
use support::server::Reply;

/// The result of call `id` in a run's events: (text, isError, details).
fn result_of(events: &[AgentEvent], id: &str) -> (String, bool, Option<Value>) {
    events
        .iter()
        .find_map(|e| match e {
            AgentEvent::ToolExecutionEnd {
                tool_call_id,
                result,
                is_error,
                ..
            } if tool_call_id == id => Some((
                join_text(&result.content),
                *is_error,
                result.details.clone(),
            )),
            _ => None,
        })
        .unwrap_or_else(|| panic!("no result for {id}"))
}

/// Run one tool call and a closing answer; the run's events.
async fn run_one(h: &mut Harness, name: &str, args: Value) -> Vec<AgentEvent> {
    h.server.push(Reply::sse(chat::tool_call("c1", name, args)));
    h.server.push(Reply::sse(chat::text("done")));
    h.prompt("go");
    let events = h.until_end().await;
    assert_eq!(end_of(&events).0, "completed");
    events
}

async fn harness(adjust: impl FnOnce(&mut agent::agent::AgentConfig)) -> Harness {
    Harness::start_with(vec![], |c| {
        c.tools = agent::tools::Tools::from_names(agent::tools::ALL_TOOLS).unwrap();
        adjust(c);
    })
    .await
}

#[tokio::test]
async fn a_background_daemon_holding_the_output_pipe_does_not_hang_bash() {
    let mut h = harness(|_| {}).await;
    // The daemon inherits stdout and keeps it open for 30 s; the command itself ends as soon
    // as the daemon is `sleep` (not still the shell that forked it, named `bash`).
    let events = run_one(
        &mut h,
        "bash",
        json!({"command": "sleep 30 & echo $! > daemon.pid; \
            until [ \"$(cat /proc/$!/comm)\" = sleep ]; do :; done; echo started"}),
    )
    .await;
    let daemon = wait_for_pid(&h.dir.path().join("daemon.pid")).await;
    let (text, is_error, details) = result_of(&events, "c1");
    // What it left running is the user's, and the model is told about it.
    assert_eq!(
        text,
        format!("started\n\n[left running in the background: pid {daemon} (sleep)]\n[exit code 0]")
    );
    assert!(!is_error);
    let details = details.unwrap();
    assert_eq!(details["exitCode"], 0);
    assert_eq!(
        details["leftRunning"],
        json!([{"pid": daemon, "name": "sleep"}])
    );
    assert!(process_alive(daemon));
    // SAFETY: kill has no memory-safety preconditions; this is the daemon the test started.
    unsafe {
        libc::kill(daemon, libc::SIGKILL);
    }
}

/// A command whose processes get away from its process group: a `setsid` child it waits
/// for, a daemon that double-forked into a session of its own (its parent gone), and a
/// plain background child. Each writes its pid to a file.
const ESCAPING: &str = "echo $$ > shell.pid; \
    setsid sh -c 'echo $$ > session.pid; exec sleep 30' & \
    setsid -f sh -c 'echo $$ > daemon.pid; exec sleep 31'; \
    sleep 32 & echo $! > child.pid; \
    while [ ! -s session.pid ] || [ ! -s daemon.pid ]; do sleep 0.01; done; \
    echo waiting; wait";

const ESCAPED_PIDS: [&str; 4] = ["shell.pid", "session.pid", "daemon.pid", "child.pid"];

#[tokio::test]
async fn a_timeout_kills_everything_the_command_started_even_outside_its_group() {
    // Long enough for a loaded machine to start every process before the timeout.
    let mut h = harness(|c| c.tool_settings.bash_timeout = Duration::from_secs(3)).await;
    let events = run_one(&mut h, "bash", json!({ "command": ESCAPING })).await;
    let (text, is_error, details) = result_of(&events, "c1");
    assert!(is_error);
    assert!(text.starts_with("waiting\n"), "{text}");
    // bash, the setsid shell's sleep, the daemon's sleep and the background sleep (the
    // waiting `sh -c` became `sleep` with exec).
    assert!(
        text.ends_with(
            "[timed out after 3 s; killed the command and 3 processes it started, 2 of which had left its process group]"
        ),
        "{text}"
    );
    let details = details.unwrap();
    assert_eq!(details["exitCode"], Value::Null);
    assert_eq!(details["killed"].as_array().unwrap().len(), 4, "{details}");
    for file in ESCAPED_PIDS {
        let pid = wait_for_pid(&h.dir.path().join(file)).await;
        assert!(wait_until_dead(pid).await, "{file}: {pid} survived");
    }
}

#[tokio::test]
async fn dropping_a_running_command_kills_everything_it_started() {
    use agent::tools::{Tool, ToolContext};
    let dir = tempfile::tempdir().unwrap();
    let ctx = ToolContext {
        tool_call_id: String::new(),
        cwd: dir.path().to_path_buf(),
        cancel: tokio_util::sync::CancellationToken::new(),
        on_update: std::sync::Arc::new(|_| {}),
        settings: std::sync::Arc::new(support::harness::tool_settings()),
        hidden: None,
        files: Default::default(),
        spill: Default::default(),
        shells: Default::default(),
        session_net: Default::default(),
    };
    let running = agent::tools::bash::BashTool.execute(json!({ "command": ESCAPING }), ctx);
    let dropped = tokio::spawn(running);
    let mut pids = Vec::new();
    for file in ESCAPED_PIDS {
        pids.push(wait_for_pid(&dir.path().join(file)).await);
    }
    // The agent quits mid-command: the call's future is dropped.
    dropped.abort();
    for (file, pid) in ESCAPED_PIDS.iter().zip(pids) {
        assert!(wait_until_dead(pid).await, "{file}: {pid} survived");
    }
}

#[tokio::test]
async fn what_a_finished_command_left_running_stays_only_when_the_agent_says_so() {
    use agent::tools::process;
    use std::ffi::OsStr;
    let dir = tempfile::tempdir().unwrap();
    let (_output, writer) = std::io::pipe().unwrap();
    let argv = [
        OsStr::new("bash"),
        OsStr::new("-c"),
        OsStr::new("sleep 30 & echo $! > background.pid"),
    ];
    let mut running = process::start(
        &support::harness::tool_settings().supervisor,
        &argv,
        None,
        std::os::fd::OwnedFd::from(writer),
        |command| {
            command.current_dir(dir.path());
        },
    )
    .await
    .unwrap();
    assert_eq!(running.exited().await, Some(process::Exit::Code(0)));
    let background = wait_for_pid(&dir.path().join("background.pid")).await;
    // The agent goes away just as the command ends (the command may even have died of
    // SIGPIPE on output nobody read any more): that is no leave to keep the rest running.
    drop(running);
    assert!(
        wait_until_dead(background).await,
        "{background} outlived the agent"
    );
}

#[tokio::test]
async fn output_followed_by_silence_is_shown_while_the_command_still_runs() {
    use agent::tools::{Tool, ToolContext};
    let dir = tempfile::tempdir().unwrap();
    let (updates, mut seen) = tokio::sync::mpsc::unbounded_channel();
    let ctx = ToolContext {
        tool_call_id: String::new(),
        cwd: dir.path().to_path_buf(),
        cancel: tokio_util::sync::CancellationToken::new(),
        on_update: std::sync::Arc::new(move |update| {
            let _ = updates.send(join_text(&update.content));
        }),
        settings: std::sync::Arc::new(support::harness::tool_settings()),
        hidden: None,
        files: Default::default(),
        spill: Default::default(),
        shells: Default::default(),
        session_net: Default::default(),
    };
    // One line at once, then nothing until the test lets the command go on.
    let command = format!(
        "echo started; {}",
        support::harness::after_file("go", "echo finished")
    );
    let running =
        tokio::spawn(agent::tools::bash::BashTool.execute(json!({ "command": command }), ctx));
    let shown = tokio::time::timeout(Duration::from_secs(20), async {
        loop {
            let text = seen
                .recv()
                .await
                .expect("the command ended without an update");
            if text.contains("started") {
                return text;
            }
        }
    })
    .await
    .expect("the first line was never shown while the command ran");
    assert!(!shown.contains("finished"), "{shown}");
    std::fs::write(dir.path().join("go"), "").unwrap();
    let result = running.await.unwrap();
    let text = join_text(&result.content);
    assert!(
        !result.is_error && text.contains("started\nfinished"),
        "{text}"
    );
}

#[tokio::test]
async fn the_model_given_timeout_overrides_the_default() {
    let mut h = harness(|_| {}).await;
    let events = run_one(
        &mut h,
        "bash",
        json!({"command": "sleep 30", "timeout": 0.5}),
    )
    .await;
    let (text, is_error, _) = result_of(&events, "c1");
    assert!(is_error);
    assert!(text.contains("[timed out after 0.5 s"), "{text}");
}

#[tokio::test]
async fn huge_output_keeps_the_tail_and_saves_everything_to_a_file() {
    let mut h = harness(|_| {}).await;
    let events = run_one(&mut h, "bash", json!({"command": "seq 1 100000"})).await;
    let (text, is_error, details) = result_of(&events, "c1");
    assert!(!is_error);
    assert!(text.contains("\n100000\n"), "the tail is shown");
    assert!(!text.starts_with("1\n2\n"), "the head is not");
    assert!(
        text.contains("[Output truncated: showing the last"),
        "{text}"
    );
    let path = details.unwrap()["fullOutputPath"]
        .as_str()
        .expect("a full-output file")
        .to_string();
    assert!(text.contains(&format!("Full output: {path}]")), "{text}");
    let full = std::fs::read_to_string(&path).unwrap();
    assert_eq!(full.lines().count(), 100000);
    assert!(full.starts_with("1\n2\n3\n"));
    std::fs::remove_file(path).unwrap();
}

#[tokio::test]
async fn many_short_lines_also_get_a_full_output_file() {
    // 3000 lines are well under 50 KB: the line limit alone truncates.
    let mut h = harness(|_| {}).await;
    let events = run_one(&mut h, "bash", json!({"command": "seq 1 3000"})).await;
    let (text, _, details) = result_of(&events, "c1");
    assert!(text.contains("showing the last 2000 lines"), "{text}");
    let path = details.unwrap()["fullOutputPath"]
        .as_str()
        .expect("a full-output file")
        .to_string();
    assert_eq!(
        std::fs::read_to_string(&path).unwrap().lines().count(),
        3000
    );
    std::fs::remove_file(path).unwrap();
}

#[tokio::test]
async fn exit_codes_are_reported_and_bad_utf8_is_shown_lossily() {
    let mut h = harness(|_| {}).await;
    let events = run_one(
        &mut h,
        "bash",
        json!({"command": "printf 'caf\\xe9\\n' >&2; exit 3"}),
    )
    .await;
    let (text, is_error, details) = result_of(&events, "c1");
    assert!(is_error);
    assert_eq!(text, "caf\u{fffd}\n\n[exit code 3]");
    assert_eq!(details.unwrap()["exitCode"], 3);
}

#[tokio::test]
async fn edit_reports_a_diff_and_leaves_the_file_alone_when_any_edit_fails() {
    let mut h = harness(|_| {}).await;
    let file = h.dir.path().join("app.py");
    std::fs::write(&file, "def total(xs):\r\n    return sum(xs) - 1\r\n").unwrap();
    let events = run_one(
        &mut h,
        "edit",
        json!({"path": "app.py", "edits": [
            {"oldText": "sum(xs) - 1", "newText": "sum(xs)"},
            {"oldText": "def totl(xs):", "newText": "def total(xs: list):"}
        ]}),
    )
    .await;
    let (text, is_error, _) = result_of(&events, "c1");
    assert!(is_error);
    assert!(
        text.contains("edit 2 of 2: oldText was not found"),
        "{text}"
    );
    assert!(text.contains("     1\tdef total(xs):"), "{text}");
    assert!(text.ends_with("No edits were applied."), "{text}");
    assert_eq!(
        std::fs::read(&file).unwrap(),
        b"def total(xs):\r\n    return sum(xs) - 1\r\n"
    );

    let events = run_one(
        &mut h,
        "edit",
        json!({"path": "app.py", "edits": [{"oldText": "sum(xs) - 1", "newText": "sum(xs)"}]}),
    )
    .await;
    let (text, is_error, details) = result_of(&events, "c1");
    assert!(!is_error, "{text}");
    assert_eq!(
        details.unwrap()["diff"],
        "--- a/app.py\n+++ b/app.py\n@@ -1,2 +1,2 @@\n def total(xs):\n-    return sum(xs) - 1\n+    return sum(xs)\n"
    );
    assert_eq!(
        std::fs::read(&file).unwrap(),
        b"def total(xs):\r\n    return sum(xs)\r\n"
    );
}

#[tokio::test]
async fn arguments_that_do_not_fit_the_schema_never_reach_the_tool() {
    let mut h = harness(|_| {}).await;
    std::fs::write(h.dir.path().join("keep.txt"), "original").unwrap();
    let events = run_one(
        &mut h,
        "write",
        json!({"path": "keep.txt", "contents": "typo in the key"}),
    )
    .await;
    let (text, is_error, _) = result_of(&events, "c1");
    assert!(is_error);
    assert!(
        text.starts_with("Invalid arguments for `write`, so it was not run:"),
        "{text}"
    );
    assert!(
        text.contains("\"content\" is a required property"),
        "{text}"
    );
    assert!(text.contains("contents"), "{text}");
    assert_eq!(
        std::fs::read_to_string(h.dir.path().join("keep.txt")).unwrap(),
        "original"
    );
    let events = run_one(&mut h, "grep", json!({"pattern": "x", "context": "three"})).await;
    let (text, is_error, _) = result_of(&events, "c1");
    assert!(is_error);
    assert!(
        text.contains("at /context: \"three\" is not of type \"integer\""),
        "{text}"
    );
}

#[tokio::test]
async fn write_creates_directories_and_read_finds_similar_names() {
    let mut h = harness(|_| {}).await;
    let events = run_one(
        &mut h,
        "write",
        json!({"path": "src/nested/config.json", "content": "{}\n"}),
    )
    .await;
    assert_eq!(
        result_of(&events, "c1").0,
        "Created src/nested/config.json (3 bytes, 1 line)."
    );
    let events = run_one(&mut h, "read", json!({"path": "src/nested/confg.json"})).await;
    let (text, is_error, _) = result_of(&events, "c1");
    assert!(is_error);
    assert_eq!(
        text,
        "File not found: src/nested/confg.json. Similar names in src/nested: config.json"
    );
}

#[test]
fn every_tool_is_registered_in_the_documented_order() {
    let tools = agent::tools::Tools::from_names(agent::tools::ALL_TOOLS).unwrap();
    assert_eq!(
        tools.names(),
        [
            "read",
            "write",
            "edit",
            "bash",
            "bash_output",
            "kill_shell",
            "grep",
            "find",
            "ls",
            "todo_write",
            "web_fetch"
        ]
    );
    let read_only: Vec<bool> = agent::tools::ALL_TOOLS
        .iter()
        .map(|name| tools.get(name).unwrap().read_only())
        .collect();
    assert_eq!(
        read_only,
        [
            true, false, false, false, true, true, true, true, true, true, true
        ]
    );
    assert_eq!(ToolSettings::default().max_parallel, 4);
}

#[tokio::test]
async fn write_refuses_a_file_changed_since_it_was_read_until_it_is_read_again() {
    let mut h = harness(|_| {}).await;
    let notes = h.dir.path().join("notes.txt");
    std::fs::write(&notes, "first\n").unwrap();
    for reply in [
        chat::tool_call("c1", "read", json!({"path": "notes.txt"})),
        // Something the model does not look at changes the file.
        chat::tool_call("c2", "bash", json!({"command": "echo added >> notes.txt"})),
        chat::tool_call(
            "c3",
            "write",
            json!({"path": "notes.txt", "content": "mine\n"}),
        ),
        chat::tool_call("c4", "read", json!({"path": "notes.txt"})),
        chat::tool_call(
            "c5",
            "write",
            json!({"path": "notes.txt", "content": "mine\n"}),
        ),
        chat::text("done"),
    ] {
        h.server.push(Reply::sse(reply));
    }
    h.prompt("go");
    let events = h.until_end().await;
    assert_eq!(end_of(&events).0, "completed");
    let (text, is_error, _) = result_of(&events, "c3");
    assert!(is_error);
    assert!(
        text.starts_with("Not written: notes.txt changed since you last read or wrote it"),
        "{text}"
    );
    let (text, _, _) = result_of(&events, "c4");
    assert_eq!(text, "first\nadded\n");
    let (text, is_error, _) = result_of(&events, "c5");
    assert!(!is_error, "{text}");
    assert_eq!(std::fs::read_to_string(&notes).unwrap(), "mine\n");
}

/// `agent --mode json ARGS... go` with `TMPDIR` set to `tmp`, asking for one command whose
/// output is too long to show whole: where its full output went.
async fn full_output_of_a_long_command(
    env: &support::env::Env,
    tmp: &std::path::Path,
    args: &[&str],
) -> std::path::PathBuf {
    let server = support::server::FakeServer::start(vec![
        Reply::sse(chat::tool_call(
            "c1",
            "bash",
            json!({"command": "seq 1 100000"}),
        )),
        Reply::sse(chat::text("done")),
    ])
    .await;
    let mut cmd = env.agent(&server, args);
    cmd.args(["--mode", "json", "--permission-mode", "auto", "go"])
        .env("TMPDIR", tmp);
    let out = support::process::run(cmd).await;
    assert_eq!(out.code, 0, "{}", out.stderr);
    let lines: Vec<Value> = out
        .stdout
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let end = lines
        .iter()
        .find(|l| l["type"] == "tool_execution_end")
        .expect("a tool result");
    let path = end["result"]["details"]["fullOutputPath"]
        .as_str()
        .unwrap_or_else(|| panic!("no full-output file: {end}"));
    path.into()
}

fn entries(dir: &std::path::Path) -> Vec<std::path::PathBuf> {
    std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect()
}

#[tokio::test]
async fn a_commands_full_output_is_kept_beside_its_session_and_not_in_tmp() {
    let env = support::env::env();
    let tmp = tempfile::tempdir().unwrap();
    let path = full_output_of_a_long_command(&env, tmp.path(), &[]).await;
    let session = env.only_session();
    let name = session.file_name().unwrap().to_str().unwrap();
    let beside = session.with_file_name(name.replace(".jsonl", ".files"));
    assert_eq!(path.parent(), Some(beside.as_path()));
    assert_eq!(
        std::fs::read_to_string(&path).unwrap().lines().count(),
        100000,
        "kept after the agent exits, as long as the session is"
    );
    assert!(entries(tmp.path()).is_empty(), "{:?}", entries(tmp.path()));
}

#[tokio::test]
async fn without_a_session_the_full_output_is_private_and_removed_at_exit() {
    let env = support::env::env();
    let tmp = tempfile::tempdir().unwrap();
    let path = full_output_of_a_long_command(&env, tmp.path(), &["--no-session"]).await;
    let dir = path.parent().unwrap();
    assert_eq!(dir.parent(), Some(tmp.path()), "{}", path.display());
    assert!(
        !path.exists() && !dir.exists(),
        "{} is left",
        path.display()
    );
    assert!(entries(tmp.path()).is_empty(), "{:?}", entries(tmp.path()));
    assert!(env.session_files().is_empty());
}
