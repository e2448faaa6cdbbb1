//! Background shells driven by the agent loop and by the real binary: `bash` with
//! `background: true` returns at once with an id, `bash_output` gives the new output and the
//! exit status, `kill_shell` kills the command and what it started, and nothing a
//! background shell started outlives the agent.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // test code fails loudly

use crate::support;

use agent::protocol::event::AgentEvent;
use agent::tools::background::ShellStatus;
use serde_json::json;
use std::time::Duration;
use support::chat;
use support::env::env;
use support::harness::{Harness, end_of, result_of, wait_for_pid, wait_until_dead};
use support::server::{Gate, Reply};

async fn harness() -> Harness {
    Harness::start_with(vec![], |c| {
        c.tools = agent::tools::Tools::from_names(agent::tools::ALL_TOOLS).unwrap();
    })
    .await
}

/// Wait (at most 20 s) until background shell `id` is no longer running.
async fn until_ended(h: &Harness, id: &str) -> ShellStatus {
    let shells = h.agent.background_shells();
    for _ in 0..2000 {
        let list = shells.list();
        let status = list
            .iter()
            .find(|s| s.id == id)
            .unwrap_or_else(|| panic!("no {id} in {list:?}"))
            .status;
        if status != ShellStatus::Running {
            return status;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    panic!("{id} is still running");
}

#[tokio::test]
async fn a_background_shell_returns_at_once_and_its_output_is_polled_until_it_exits() {
    let mut h = harness().await;
    let after_exit = Gate::new();
    let command = "echo ready; until [ -e go ]; do sleep 0.01; done; echo finished; exit 3";
    h.server.push(Reply::sse(chat::tool_call(
        "c1",
        "bash",
        json!({"command": command, "background": true}),
    )));
    h.server.push(
        Reply::sse(chat::tool_calls(&[
            ("c2", "bash_output", json!({"id": "shell_1"})),
            ("c3", "bash_output", json!({"id": "shell_1"})),
            ("c4", "bash_output", json!({"id": "shell_9"})),
        ]))
        .after(&after_exit),
    );
    h.server.push(Reply::sse(chat::text("done")));
    h.prompt("start the server");
    let started = h
        .until(|e| matches!(e, AgentEvent::ToolExecutionEnd { tool_call_id, .. } if tool_call_id == "c1"))
        .await;
    let (text, is_error) = result_of(&started, "c1");
    assert!(!is_error, "{text}");
    assert!(
        text.contains("Started in the background as shell_1"),
        "{text}"
    );
    assert!(text.contains("[shell_1: running]"), "{text}");
    // The call returned while the command still waits for `go`.
    std::fs::write(h.dir.path().join("go"), "").unwrap();
    let status = until_ended(&h, "shell_1").await;
    assert_eq!(
        status,
        ShellStatus::Exited(agent::tools::process::Exit::Code(3))
    );
    after_exit.open();
    let events = h.until_end().await;
    assert_eq!(end_of(&events).0, "completed");
    // All output not read yet, then the status; the next look has nothing new.
    let (polled, _) = result_of(&events, "c2");
    let first_look = format!("{text}\n{polled}");
    assert!(first_look.contains("ready"), "{first_look}");
    assert!(
        polled.contains("finished\n[shell_1: exited with code 3]"),
        "{polled}"
    );
    let (again, _) = result_of(&events, "c3");
    assert_eq!(again, "(no new output)\n[shell_1: exited with code 3]");
    let (unknown, is_error) = result_of(&events, "c4");
    assert!(is_error);
    assert_eq!(
        unknown,
        "No background shell `shell_9`. The shells are: shell_1."
    );
}

#[tokio::test]
async fn kill_shell_kills_the_command_and_everything_it_started() {
    let mut h = harness().await;
    let pids_written = Gate::new();
    let command = "sleep 1000 & echo $! > child.pid; echo $$ > shell.pid; echo up; wait";
    h.server.push(Reply::sse(chat::tool_call(
        "c1",
        "bash",
        json!({"command": command, "background": true}),
    )));
    h.server.push(
        Reply::sse(chat::tool_call(
            "c2",
            "kill_shell",
            json!({"id": "shell_1"}),
        ))
        .after(&pids_written),
    );
    // Read-only calls of one message run side by side: the look after the kill is a turn
    // of its own.
    h.server.push(Reply::sse(chat::tool_call(
        "c3",
        "bash_output",
        json!({"id": "shell_1", "filter": "^up$"}),
    )));
    h.server.push(Reply::sse(chat::text("stopped")));
    h.prompt("start and stop");
    let shell = wait_for_pid(&h.dir.path().join("shell.pid")).await;
    let child = wait_for_pid(&h.dir.path().join("child.pid")).await;
    pids_written.open();
    let events = h.until_end().await;
    assert_eq!(end_of(&events).0, "completed");
    let (killed, is_error) = result_of(&events, "c2");
    assert!(!is_error, "{killed}");
    assert_eq!(killed, "shell_1 was killed.");
    let (output, _) = result_of(&events, "c3");
    assert!(output.ends_with("[shell_1: killed]"), "{output}");
    assert!(
        wait_until_dead(shell).await,
        "the shell survived kill_shell"
    );
    assert!(
        wait_until_dead(child).await,
        "its child survived kill_shell"
    );
}

#[tokio::test]
async fn dropping_the_agent_kills_its_background_shells() {
    let mut h = harness().await;
    h.server.push(Reply::sse(chat::tool_call(
        "c1",
        "bash",
        json!({"command": "echo $$ > shell.pid; sleep 1000", "background": true}),
    )));
    h.server.push(Reply::sse(chat::text("left running")));
    h.prompt("start it");
    let events = h.until_end().await;
    assert_eq!(end_of(&events).0, "completed");
    let shell = wait_for_pid(&h.dir.path().join("shell.pid")).await;
    assert_eq!(
        h.agent.background_shells().list()[0].status,
        ShellStatus::Running
    );
    let Harness { agent, dir, .. } = h;
    drop(agent);
    assert!(wait_until_dead(shell).await, "the shell outlived the agent");
    drop(dir);
}

#[tokio::test]
async fn no_background_process_outlives_the_agent_process() {
    let env = env();
    let command = "sleep 1000 & echo $! > child.pid; echo $$ > shell.pid; wait";
    let server = support::server::FakeServer::start(vec![
        Reply::sse(chat::tool_call(
            "c1",
            "bash",
            json!({"command": command, "background": true}),
        )),
        // Both pids are written before the agent goes on (and exits).
        Reply::sse(chat::tool_call(
            "c2",
            "bash",
            json!({"command": "until [ -s shell.pid ]; do sleep 0.01; done"}),
        )),
        Reply::sse(chat::text("running in the background")),
    ])
    .await;
    let output = env
        .agent(&server, &["-p", "--permission-mode", "auto", "start it"])
        .output()
        .await
        .unwrap();
    assert!(output.status.success(), "{output:?}");
    let shell = wait_for_pid(&env.cwd.path().join("shell.pid")).await;
    let child = wait_for_pid(&env.cwd.path().join("child.pid")).await;
    assert!(wait_until_dead(shell).await, "the shell outlived the agent");
    assert!(wait_until_dead(child).await, "its child outlived the agent");
}

/// What a background command left running keeps writing after the command itself exited: all
/// of it is collected (the pipe is read to its end, so the writer never blocks on it).
#[tokio::test]
async fn output_written_after_the_command_exits_is_still_collected() {
    let mut h = harness().await;
    h.server.push(Reply::sse(chat::tool_call(
        "c1",
        "bash",
        json!({"command": "(sleep 1; seq 1 100000) & exit 0", "background": true}),
    )));
    h.server.push(Reply::sse(chat::text("done")));
    h.prompt("start it");
    let events = h.until_end().await;
    assert_eq!(end_of(&events).0, "completed");
    let shells = h.agent.background_shells();
    let mut text = String::new();
    for _ in 0..2000 {
        if let Some(new) = shells.take_new_output("shell_1") {
            text.push_str(&new.text);
        }
        if text.contains("\n100000\n") {
            break;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    let numbers: Vec<&str> = text.lines().filter(|l| l.parse::<u32>().is_ok()).collect();
    assert_eq!(numbers.len(), 100_000, "{} lines arrived", numbers.len());
    assert_eq!(numbers.last(), Some(&"100000"));
    shells.kill_all().await;
}

/// A sub-agent's background shells end with the sub-agent: nothing it started is left
/// running behind the parent, who cannot reach the child's shells.
#[tokio::test]
async fn a_sub_agents_background_shells_end_when_it_ends() {
    let mut h = Harness::start_with(
        vec![
            Reply::sse(chat::tool_call(
                "c1",
                "task",
                json!({"description": "serve", "prompt": "CHILD-A: serve"}),
            )),
            Reply::sse(chat::text("parent done")),
        ],
        |c| {
            c.tools = agent::tools::Tools::from_names(agent::tools::ALL_TOOLS).unwrap();
            c.agents = Some(agent::agent::children::AgentsSettings::default());
        },
    )
    .await;
    h.server.route(
        "CHILD-A",
        vec![
            Reply::sse(chat::tool_call(
                "b1",
                "bash",
                json!({"command": "echo $$ > shell.pid; sleep 1000", "background": true}),
            )),
            Reply::sse(chat::tool_call(
                "b2",
                "bash",
                json!({"command": "until [ -s shell.pid ]; do sleep 0.01; done"}),
            )),
            Reply::sse(chat::text("serving")),
        ],
    );
    h.prompt("delegate");
    let events = h.until_end().await;
    assert_eq!(end_of(&events).0, "completed");
    assert!(!result_of(&events, "c1").1, "{events:#?}");
    let shell = wait_for_pid(&h.dir.path().join("shell.pid")).await;
    // The parent is still here; the child is not, and neither is its shell.
    assert!(
        wait_until_dead(shell).await,
        "the sub-agent's shell outlived it"
    );
    assert!(h.agent.background_shells().list().is_empty());
}

/// Ended shells are kept up to `ENDED_KEPT`; starting one more forgets (and reaps) the
/// oldest ended one, and `bash_output` then says so. `/ps` elapsed stops at the exit.
#[tokio::test]
async fn ended_shells_past_the_cap_are_forgotten_and_their_elapsed_time_stops() {
    use agent::tools::background::ENDED_KEPT;
    let mut h = harness().await;
    let all_ended = Gate::new();
    let calls: Vec<(String, &str, serde_json::Value)> = (1..=ENDED_KEPT)
        .map(|n| {
            (
                format!("s{n}"),
                "bash",
                json!({"command": format!("echo hi {n}"), "background": true}),
            )
        })
        .collect();
    let calls: Vec<(&str, &str, serde_json::Value)> = calls
        .iter()
        .map(|(id, name, args)| (id.as_str(), *name, args.clone()))
        .collect();
    h.server.push(Reply::sse(chat::tool_calls(&calls)));
    h.server.push(
        Reply::sse(chat::tool_call(
            "more",
            "bash",
            json!({"command": "echo again", "background": true}),
        ))
        .after(&all_ended),
    );
    h.server.push(Reply::sse(chat::tool_calls(&[
        ("old", "bash_output", json!({"id": "shell_1"})),
        ("kept", "bash_output", json!({"id": "shell_2"})),
    ])));
    h.server.push(Reply::sse(chat::text("done")));
    h.prompt("start many");
    // The calls may run at once: wait for every one of them (shell ids go by start order).
    let ended = std::cell::Cell::new(0);
    let events_so_far = h
        .until(|e| {
            if matches!(e, AgentEvent::ToolExecutionEnd { .. }) {
                ended.set(ended.get() + 1);
            }
            ended.get() == ENDED_KEPT
        })
        .await;
    let started = h.agent.background_shells().list().len();
    assert_eq!(started, ENDED_KEPT, "{events_so_far:?}");
    for n in 1..=ENDED_KEPT {
        until_ended(&h, &format!("shell_{n}")).await;
    }
    // Ended: the elapsed time no longer grows.
    let elapsed = |h: &Harness| {
        h.agent
            .background_shells()
            .list()
            .into_iter()
            .find(|s| s.id == "shell_2")
            .unwrap()
            .elapsed
    };
    let first = elapsed(&h);
    tokio::time::sleep(Duration::from_millis(5)).await;
    assert_eq!(elapsed(&h), first);
    all_ended.open();
    let events = h.until_end().await;
    assert_eq!(end_of(&events).0, "completed");
    let (old, is_error) = result_of(&events, "old");
    assert!(is_error);
    assert_eq!(
        old,
        format!(
            "Background shell `shell_1` ended and was cleaned up: only the last {ENDED_KEPT} ended shells are kept."
        )
    );
    let (kept, is_error) = result_of(&events, "kept");
    assert!(!is_error, "{kept}");
    let ids: Vec<String> = h
        .agent
        .background_shells()
        .list()
        .into_iter()
        .map(|s| s.id)
        .collect();
    assert!(!ids.contains(&"shell_1".to_string()), "{ids:?}");
    assert_eq!(ids.len(), ENDED_KEPT);
}

/// What the model was sent in the last request, as text.
fn last_conversation(server: &support::server::FakeServer) -> String {
    let bodies = server.bodies();
    support::harness::transcript(bodies.last().unwrap()).join("\n")
}

/// A background command the sandbox stops at once (a server that cannot make its socket) is
/// reported as ended — with its exit code and the sandbox's cause — not as running.
#[tokio::test]
async fn a_background_shell_that_fails_at_once_is_reported_exited_with_the_sandbox_cause() {
    let env = env();
    // bash makes the socket itself: no interpreter start-up to wait for. Without loopback
    // listeners even a socket on 127.0.0.1 is refused.
    std::fs::write(
        env.home.path().join("config.toml"),
        "[sandbox]\nallow_local_binding = false\n",
    )
    .unwrap();
    let command = "echo starting; exec 3<>/dev/tcp/127.0.0.1/9";
    let server = support::server::FakeServer::start(vec![
        Reply::sse(chat::tool_call(
            "c1",
            "bash",
            json!({"command": command, "background": true}),
        )),
        Reply::sse(chat::text("told")),
    ])
    .await;
    let output = env
        .agent(
            &server,
            &[
                "-p",
                "--permission-mode",
                "auto",
                "--sandbox",
                "workspace-write",
                "serve",
            ],
        )
        .output()
        .await
        .unwrap();
    assert!(output.status.success(), "{output:?}");
    let sent = last_conversation(&server);
    let result = sent
        .lines()
        .skip_while(|line| !line.starts_with("tool:c1:"))
        .collect::<Vec<_>>()
        .join("\n");
    assert!(
        result.contains("shell_1 exited at once with code 1"),
        "{sent}"
    );
    assert!(result.contains("network disabled"), "{sent}");
    assert!(!result.contains("Started in the background"), "{sent}");
}

/// A background shell that ends later, while the model does something else, is reported to
/// the model once, with the next tool result (or the next message): exit code, last lines and
/// the sandbox's cause.
#[tokio::test]
async fn a_background_shell_that_exits_later_is_reported_once_with_the_next_result() {
    let env = env();
    let server_command = "until [ -e go ]; do sleep 0.05; done; echo $$ > pid; \
                          exec python3 -c 'import socket; socket.socket(socket.AF_NETLINK, socket.SOCK_RAW)'";
    let wait_for_its_end = "touch go; until [ -s pid ]; do sleep 0.05; done; \
                            while [ -e /proc/$(cat pid) ]; do sleep 0.05; done; echo gone";
    let server = support::server::FakeServer::start(vec![
        Reply::sse(chat::tool_call(
            "c1",
            "bash",
            json!({"command": server_command, "background": true}),
        )),
        Reply::sse(chat::tool_call(
            "c2",
            "bash",
            json!({"command": wait_for_its_end}),
        )),
        // A second result the note can ride on, should the shell's end be published only
        // after c2's result was made.
        Reply::sse(chat::tool_call("c3", "ls", json!({}))),
        Reply::sse(chat::text("told")),
    ])
    .await;
    let output = env
        .agent(
            &server,
            &[
                "-p",
                "--permission-mode",
                "auto",
                "--sandbox",
                "workspace-write",
                "serve",
            ],
        )
        .output()
        .await
        .unwrap();
    assert!(output.status.success(), "{output:?}");
    let sent = last_conversation(&server);
    let start = sent.lines().find(|l| l.starts_with("tool:c1:")).unwrap();
    assert!(
        start.contains("Started in the background as shell_1"),
        "{sent}"
    );
    assert_eq!(
        sent.matches("[shell_1 exited with code 1").count(),
        1,
        "told exactly once: {sent}"
    );
    let note = &sent[sent.find("[shell_1 exited with code 1").unwrap()..];
    let note = note.lines().next().unwrap();
    assert!(note.contains("Operation not permitted"), "{note}");
    assert!(note.contains("network disabled"), "{note}");
}

/// What a shell wrote just before it was killed is still read, not dropped with the pipe.
/// The test runtime has one thread: while the test waits for the command's line without
/// yielding, the shell's reader cannot take it, so at the kill the line is still in the
/// pipe (and the reader sees the kill and the line ready at once: 16 rounds).
#[tokio::test]
async fn output_still_in_the_pipe_when_a_shell_is_killed_is_kept() {
    use agent::tools::background::{BackgroundShells, StartOptions};
    let dir = tempfile::tempdir().unwrap();
    let supervisor = std::path::PathBuf::from(env!("CARGO_BIN_EXE_agent"));
    for round in 0..16 {
        let shells = BackgroundShells::default();
        let marker = dir.path().join(format!("written{round}"));
        let command = format!(
            "echo last words {round}; touch '{}'; sleep 60",
            marker.display()
        );
        let options = StartOptions {
            supervisor: &supervisor,
            sandbox: None,
            cwd: dir.path(),
            hidden_env: &[],
            session_net: None,
        };
        let id = shells.start(&command, options).await.unwrap();
        let waited = std::time::Instant::now();
        while !marker.exists() {
            assert!(
                waited.elapsed() < Duration::from_secs(120),
                "the command never ran"
            );
            std::thread::sleep(Duration::from_millis(5));
        }
        assert_eq!(shells.kill(&id).await, Some(ShellStatus::Killed));
        let output = shells.take_new_output(&id).unwrap();
        assert!(
            output.text.contains(&format!("last words {round}")),
            "round {round}: {:?}",
            output.text
        );
    }
}
