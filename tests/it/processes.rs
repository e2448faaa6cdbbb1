//! The processes a command starts do not outlive what the agent means them to, tested with
//! the real binary: killed with SIGKILL mid-command, its commands' whole trees die too
//! (also what moved to another process group or session); a terminal that hangs up under
//! `-p`, or a SIGHUP to `--mode rpc`, aborts the run like SIGINT — the tree is killed and
//! the call's result is written before the agent exits.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // test code fails loudly

use crate::support;

use serde_json::{Value, json};
use std::path::Path;
use std::time::Duration;
use support::chat;
use support::env::{Env, env};
use support::harness::{wait_for_pid, wait_until_dead};
use support::process::Rpc;
use support::server::{FakeServer, Reply};

/// A command whose processes get away from its process group — a `setsid` child it waits
/// for, a daemon that double-forked into a session of its own, a plain background child —
/// each writing its pid to a file, and which then waits for them.
const ESCAPING: &str = "echo $$ > shell.pid; \
    setsid sh -c 'echo $$ > session.pid; exec sleep 60' & \
    setsid -f sh -c 'echo $$ > daemon.pid; exec sleep 61'; \
    sleep 62 & echo $! > child.pid; \
    wait";

const PID_FILES: [&str; 4] = ["shell.pid", "session.pid", "daemon.pid", "child.pid"];

/// A server that asks for the escaping command, then (if asked again) says it is done.
async fn server() -> FakeServer {
    FakeServer::start(vec![
        Reply::sse(chat::tool_call(
            "c1",
            "bash",
            json!({ "command": ESCAPING }),
        )),
        Reply::sse(chat::text("done")),
    ])
    .await
}

async fn started_pids(cwd: &Path) -> Vec<(&'static str, i32)> {
    let mut pids = Vec::new();
    for file in PID_FILES {
        pids.push((file, wait_for_pid(&cwd.join(file)).await));
    }
    pids
}

async fn assert_all_dead(pids: &[(&str, i32)]) {
    for (file, pid) in pids {
        assert!(
            wait_until_dead(*pid).await,
            "{file}: process {pid} survived"
        );
    }
}

/// The tool result of call `c1` in the only session file.
fn result_in_session(env: &Env) -> Value {
    let text = std::fs::read_to_string(env.only_session()).unwrap();
    text.lines()
        .map(|line| serde_json::from_str::<Value>(line).unwrap())
        .find(|entry| entry["message"]["role"] == "toolResult")
        .unwrap_or_else(|| panic!("no tool result in the session:\n{text}"))["message"]
        .clone()
}

#[tokio::test]
async fn a_killed_agent_takes_its_commands_whole_tree_with_it() {
    let env = env();
    let server = server().await;
    let mut agent = env
        .agent(&server, &["-p", "--permission-mode", "auto", "go"])
        .spawn()
        .unwrap();
    let pids = started_pids(env.cwd.path()).await;
    agent.start_kill().unwrap();
    let status = agent.wait().await.unwrap();
    assert_eq!(
        std::os::unix::process::ExitStatusExt::signal(&status),
        Some(9)
    );
    assert_all_dead(&pids).await;
}

#[tokio::test]
async fn a_terminal_closing_under_a_print_run_aborts_it_and_writes_the_result() {
    use portable_pty::{CommandBuilder, PtySize, native_pty_system};
    let env = env();
    let server = server().await;
    let pair = native_pty_system()
        .openpty(PtySize {
            rows: 24,
            cols: 80,
            pixel_width: 0,
            pixel_height: 0,
        })
        .unwrap();
    let mut command = CommandBuilder::new(env!("CARGO_BIN_EXE_agent"));
    let base = server.v1();
    command.args([
        "--base-url",
        base.as_str(),
        "--model",
        "test-model",
        "-p",
        "--permission-mode",
        "auto",
        "go",
    ]);
    command.cwd(env.cwd.path());
    command.env("AGENT_HOME", env.home.path());
    for var in ["OPENAI_API_KEY", "OPENAI_BASE_URL", "RUST_LOG"] {
        command.env_remove(var);
    }
    let mut agent = pair.slave.spawn_command(command).unwrap();
    drop(pair.slave);
    let pids = started_pids(env.cwd.path()).await;
    // The terminal window closes: the last handle on the pty's master side goes, the
    // kernel hangs up the terminal and sends SIGHUP; writes to it fail from then on.
    drop(pair.master);
    let status = tokio::task::spawn_blocking(move || agent.wait().unwrap())
        .await
        .unwrap();
    assert_eq!(status.exit_code(), 129);
    assert_all_dead(&pids).await;
    let result = result_in_session(&env);
    assert_eq!(result["isError"], true);
    let text = result["content"][0]["text"].as_str().unwrap();
    assert!(
        text.contains("[aborted by the user; killed the command and"),
        "{text}"
    );
}

#[tokio::test]
async fn sighup_to_rpc_mode_aborts_the_run_and_reports_the_result_before_exiting() {
    let env = env();
    let server = server().await;
    let mut rpc = Rpc::spawn(env.agent(&server, &["--mode", "rpc", "--permission-mode", "auto"]));
    rpc.send(json!({"type": "prompt", "message": "go"})).await;
    rpc.until(|l| l["type"] == "tool_execution_start").await;
    let pids = started_pids(env.cwd.path()).await;
    let agent_pid = i32::try_from(rpc.child.id().unwrap()).unwrap();
    // SAFETY: kill has no memory-safety preconditions; this is the agent the test started.
    unsafe {
        libc::kill(agent_pid, libc::SIGHUP);
    }
    let end = rpc.until(|l| l["type"] == "tool_execution_end").await;
    let text = end.last().unwrap()["result"]["content"][0]["text"]
        .as_str()
        .unwrap()
        .to_string();
    assert!(
        text.contains("[aborted by the user; killed the command and"),
        "{text}"
    );
    rpc.until(|l| l["type"] == "agent_end").await;
    let status = tokio::time::timeout(Duration::from_secs(20), rpc.child.wait())
        .await
        .unwrap()
        .unwrap();
    assert_eq!(status.code(), Some(129));
    assert_all_dead(&pids).await;
    assert_eq!(result_in_session(&env)["isError"], true);
}

#[tokio::test]
async fn the_interfaces_own_command_is_stopped_with_everything_it_started() {
    let env = env();
    let server = FakeServer::start(vec![]).await;
    let mut tui = env.start(&server, &[]);
    tui.wait_for_text("Ask anything").await;
    tui.type_text(&format!("!{ESCAPING}"));
    tui.enter();
    let pids = started_pids(env.cwd.path()).await;
    // esc stops the user's command as it stops a run: the same supervisor, the same sweep.
    tui.send(b"\x1b");
    assert_all_dead(&pids).await;
    tui.wait_for_text("aborted by the user; killed the command and")
        .await;
    tui.type_text("/quit");
    tui.enter();
    assert_eq!(tui.exit_code().await, 0);
    assert!(server.requests().is_empty(), "the model never saw it");
}

#[tokio::test]
async fn a_timed_out_command_takes_its_whole_tree_with_it_term_ignoring_processes_included() {
    let env = env();
    // The escaping command, plus a process that ignores SIGTERM.
    let command =
        format!("sh -c 'trap \"\" TERM; echo $$ > stubborn.pid; exec sleep 63' & {ESCAPING}");
    let server = FakeServer::start(vec![
        // Long enough for a loaded machine to start every process before the timeout.
        Reply::sse(chat::tool_call(
            "c1",
            "bash",
            json!({ "command": command, "timeout": 3 }),
        )),
        Reply::sse(chat::text("done")),
    ])
    .await;
    let status = env
        .agent(&server, &["-p", "--permission-mode", "auto", "go"])
        .status()
        .await
        .unwrap();
    assert!(status.success(), "{status}");
    let mut pids = Vec::new();
    for file in PID_FILES.iter().chain(&["stubborn.pid"]) {
        pids.push((*file, wait_for_pid(&env.cwd.path().join(file)).await));
    }
    assert_all_dead(&pids).await;
    let result = result_in_session(&env);
    let text = result["content"][0]["text"].as_str().unwrap();
    assert!(
        text.contains("[timed out after 3 s; killed the command and 4 processes it started, 2 of which had left its process group]"),
        "{text}"
    );
}

/// Commands are supervised by a fork of the agent's fork server, not by the agent's
/// binary started again for each (what that costs: docs/benchmarks.md); the tests above
/// hold the supervisor to its guarantees either way.
#[tokio::test]
async fn a_commands_supervisor_is_forked_not_the_binary_started_again() {
    let env = env();
    let server = FakeServer::start(vec![
        Reply::sse(chat::tool_call(
            "c1",
            "bash",
            json!({ "command": "tr '\\0' ' ' < /proc/$PPID/cmdline" }),
        )),
        Reply::sse(chat::text("done")),
    ])
    .await;
    let status = env
        .agent(&server, &["-p", "--permission-mode", "auto", "go"])
        .status()
        .await
        .unwrap();
    assert!(status.success(), "{status}");
    let result = result_in_session(&env);
    let text = result["content"][0]["text"].as_str().unwrap();
    // The supervisor's command line is the agent's own, inherited through the fork.
    assert!(text.contains("--permission-mode auto go"), "{text}");
    assert!(!text.contains("__agent-process-supervisor"), "{text}");
}
