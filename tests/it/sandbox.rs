//! The command sandbox on this machine's real kernel (Landlock, seccomp, mount namespaces):
//! real commands below the real supervisor. Writes outside the workspace fail and the
//! result says why; writes inside work; `.git` stays read-only; a
//! TCP connection to a listener on 127.0.0.1 fails with the network off and works with it
//! on; children, grandchildren and processes that left the command's session inherit it;
//! an unavailable sandbox makes commands ask (denied without someone to answer); in ask
//! mode the user can run a stopped command again outside the sandbox.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // test code fails loudly

use crate::support;

use agent::agent::Approval;
use agent::protocol::event::AgentEvent;
use agent::protocol::message::join_text;
use agent::sandbox::{Sandbox, SandboxConfig, SandboxMode, Status};
use agent::tools::permission::PermissionMode;
use agent::tools::{Tool, ToolContext, ToolOutput};
use serde_json::{Value, json};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use support::chat;
use support::env::env;
use support::harness::Harness;
use support::process::run;
use support::server::{FakeServer, Reply};
use tempfile::TempDir;

/// A directory outside the system temp directory (which sandboxed commands may write).
fn scratch() -> TempDir {
    support::sandbox::outside()
}

fn sandbox(cwd: &Path, network: bool) -> Sandbox {
    let config = SandboxConfig {
        mode: SandboxMode::WorkspaceWrite,
        network,
        ..SandboxConfig::default()
    };
    let sandbox = Sandbox::start(&config, cwd);
    assert_eq!(
        sandbox.status,
        Status::Enforced,
        "this machine has Landlock"
    );
    sandbox
}

/// Run `command` with the bash tool in `cwd` under `sandbox`.
async fn bash(cwd: &Path, sandbox: Sandbox, command: &str) -> ToolOutput {
    let mut settings = support::harness::tool_settings();
    settings.sandbox = sandbox;
    let ctx = ToolContext {
        tool_call_id: String::new(),
        cwd: cwd.to_path_buf(),
        cancel: tokio_util::sync::CancellationToken::new(),
        on_update: Arc::new(|_| {}),
        settings: Arc::new(settings),
        hidden: None,
        files: Default::default(),
        spill: Default::default(),
        shells: Default::default(),
        session_net: Default::default(),
    };
    agent::tools::bash::BashTool
        .execute(json!({ "command": command }), ctx)
        .await
}

fn text(output: &ToolOutput) -> String {
    join_text(&output.content)
}

fn blocked(output: &ToolOutput) -> Option<String> {
    output
        .details
        .as_ref()?
        .pointer("/sandbox/blocked")?
        .as_str()
        .map(str::to_string)
}

#[tokio::test]
async fn writes_inside_work_and_writes_outside_fail_saying_why() {
    let workspace = scratch();
    let outside = scratch();
    let target = outside.path().join("escaped.txt");
    let output = bash(
        workspace.path(),
        sandbox(workspace.path(), false),
        &format!(
            "echo in > inside.txt && mkdir -p sub/dir && echo deep > sub/dir/f && \
             echo tmp > \"$(mktemp)\" && echo wrote; echo out > {}",
            target.display()
        ),
    )
    .await;
    let text = text(&output);
    assert!(output.is_error, "{text}");
    assert!(text.starts_with("wrote\n"), "{text}");
    assert_eq!(
        std::fs::read_to_string(workspace.path().join("sub/dir/f")).unwrap(),
        "deep\n"
    );
    assert!(!target.exists(), "the write outside went through");
    let boundary = format!("write outside the workspace: {}", target.display());
    assert_eq!(blocked(&output).as_deref(), Some(boundary.as_str()));
    assert!(
        text.contains(&format!("Blocked by the sandbox: {boundary}."))
            && text.contains("writable_roots")
            && text.contains("--sandbox off"),
        "{text}"
    );
    // Reading anywhere still works.
    let output = bash(
        workspace.path(),
        sandbox(workspace.path(), false),
        "head -c 4 /etc/passwd",
    )
    .await;
    assert!(!output.is_error, "{}", text_of(&output));
}

fn text_of(output: &ToolOutput) -> String {
    text(output)
}

#[tokio::test]
async fn git_stays_read_only_and_the_result_says_why_and_what_to_do() {
    let workspace = scratch();
    let git = workspace.path().join(".git");
    std::fs::create_dir_all(git.join("hooks")).unwrap();
    std::fs::write(git.join("config"), "[core]\n").unwrap();
    let output = bash(
        workspace.path(),
        sandbox(workspace.path(), false),
        "cat .git/config && echo ok; echo 'rm -rf ~' > .git/hooks/pre-commit",
    )
    .await;
    let text = text(&output);
    assert!(text.starts_with("[core]\nok\n"), "{text}");
    assert!(!git.join("hooks/pre-commit").exists());
    assert!(
        blocked(&output).is_some_and(|b| b.starts_with("write to .git, which stays read-only")),
        "{text}"
    );
    assert!(
        text.contains("git commands that change the repository")
            && text.contains("outside the sandbox"),
        "{text}"
    );
    let output = bash(
        workspace.path(),
        sandbox(workspace.path(), false),
        "echo idx > .git/index; echo '[alias] x = !sh' >> .git/config; mv .git/config .git/c2",
    )
    .await;
    assert_eq!(
        std::fs::read_to_string(git.join("config")).unwrap(),
        "[core]\n",
        "{}",
        text_of(&output)
    );
    assert!(!git.join("index").exists(), "{}", text_of(&output));
    assert!(
        blocked(&output).is_some_and(|b| b.starts_with("write to .git,")),
        "{}",
        text_of(&output)
    );
    // Nothing was mounted in the agent's own namespace.
    std::fs::write(git.join("hooks/post-checkout"), "#!/bin/sh\n").unwrap();
}

/// A command that connects to `port` on 127.0.0.1 with bash's /dev/tcp.
fn connect(port: u16) -> String {
    format!("exec 3<>/dev/tcp/127.0.0.1/{port} && echo connected")
}

#[tokio::test]
async fn a_tcp_connection_fails_with_the_network_off_and_works_with_it_on() {
    let workspace = scratch();
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    std::thread::spawn(move || while listener.accept().is_ok() {});

    let output = bash(
        workspace.path(),
        sandbox(workspace.path(), false),
        &connect(port),
    )
    .await;
    let text = text(&output);
    assert!(output.is_error && !text.contains("connected"), "{text}");
    assert_eq!(
        blocked(&output).as_deref(),
        Some("network disabled"),
        "{text}"
    );
    assert!(text.contains("network = true"), "{text}");

    let output = bash(
        workspace.path(),
        sandbox(workspace.path(), true),
        &connect(port),
    )
    .await;
    assert!(
        !output.is_error && text_of(&output).starts_with("connected"),
        "{}",
        text_of(&output)
    );
    // Unix sockets stay usable with the network off.
    let output = bash(
        workspace.path(),
        sandbox(workspace.path(), false),
        "python3 -c 'import socket; socket.socket(socket.AF_UNIX); socket.socketpair(); print(\"unix ok\")'",
    )
    .await;
    assert!(
        text_of(&output).starts_with("unix ok"),
        "{}",
        text_of(&output)
    );
}

#[tokio::test]
async fn children_grandchildren_and_escaped_processes_inherit_the_sandbox() {
    let workspace = scratch();
    let outside = scratch();
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    std::thread::spawn(move || while listener.accept().is_ok() {});
    let out = |name: &str| outside.path().join(name);
    let command = format!(
        "sh -c 'echo child > {child}; bash -c \"echo grandchild > {grandchild}; ({connect}) > net.txt 2>&1\"'; \
         setsid -w sh -c 'echo daemon > {daemon}'; \
         echo done",
        child = out("child").display(),
        grandchild = out("grandchild").display(),
        daemon = out("daemon").display(),
        connect = connect(port).replace('"', "\\\""),
    );
    let output = bash(workspace.path(), sandbox(workspace.path(), false), &command).await;
    for name in ["child", "grandchild", "daemon"] {
        assert!(!out(name).exists(), "{name} escaped: {}", text_of(&output));
    }
    let net = std::fs::read_to_string(workspace.path().join("net.txt")).unwrap();
    assert!(
        !net.contains("connected") && net.contains("Operation not permitted"),
        "{net}"
    );
    assert!(text_of(&output).contains("done"), "{}", text_of(&output));
}

#[tokio::test]
async fn without_the_sandbox_the_same_commands_work() {
    let workspace = scratch();
    let outside = scratch();
    let target: PathBuf = outside.path().join("free.txt");
    let output = bash(
        workspace.path(),
        Sandbox::default(),
        &format!("echo out > {}", target.display()),
    )
    .await;
    assert!(!output.is_error, "{}", text_of(&output));
    assert!(target.exists());
}

fn approval_request(event: &AgentEvent) -> Option<(String, String)> {
    match event {
        AgentEvent::ToolApprovalRequest {
            tool_call_id,
            reason,
            ..
        } => Some((tool_call_id.clone(), reason.clone())),
        _ => None,
    }
}

fn last_result(events: &[AgentEvent]) -> (String, bool, Option<Value>) {
    events
        .iter()
        .rev()
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

/// An agent in ask mode, its commands sandboxed, running `command` (once approved) for the
/// prompt "go".
async fn asking_to_run(command: &str) -> Harness {
    let h = Harness::start_with(
        vec![
            Reply::sse(chat::tool_call("c1", "bash", json!({ "command": command }))),
            Reply::sse(chat::text("done")),
        ],
        |c| {
            c.permission_mode = PermissionMode::Ask;
            c.can_ask = true;
            c.tool_settings.sandbox = sandbox(&c.cwd.clone(), false);
        },
    )
    .await;
    h.prompt("go");
    h
}

#[tokio::test]
async fn in_ask_mode_a_stopped_command_can_run_again_outside_the_sandbox() {
    let outside = scratch();
    let target = outside.path().join("after-approval.txt");
    let command = format!("echo ok > {}", target.display());
    let mut h = asking_to_run(&command).await;
    // First the ordinary approval: allowed, it runs in the sandbox and is stopped.
    let events = h.until(|e| approval_request(e).is_some()).await;
    let (id, _) = approval_request(events.last().unwrap()).unwrap();
    h.agent.approve(&id, Approval::Allow).unwrap();
    let events = h.until(|e| approval_request(e).is_some()).await;
    let (again, reason) = approval_request(events.last().unwrap()).unwrap();
    assert_eq!(again, id);
    assert!(
        reason.starts_with(&format!(
            "the sandbox stopped it (write outside the workspace: {})",
            target.display()
        )),
        "{reason}"
    );
    assert!(!target.exists());
    h.agent.approve(&id, Approval::Allow).unwrap();
    let events = h.until_end().await;
    let (text, is_error, _) = last_result(&events);
    assert!(!is_error, "{text}");
    assert!(text.contains("outside the sandbox"), "{text}");
    assert!(target.exists());
}

#[tokio::test]
async fn allow_without_sandbox_runs_the_call_outside_it() {
    let outside = scratch();
    let target = outside.path().join("unsandboxed.txt");
    let command = format!("echo ok > {}", target.display());
    let mut h = asking_to_run(&command).await;
    let events = h.until(|e| approval_request(e).is_some()).await;
    let (id, _) = approval_request(events.last().unwrap()).unwrap();
    h.agent.approve(&id, Approval::AllowUnsandboxed).unwrap();
    let events = h.until_end().await;
    let (text, is_error, _) = last_result(&events);
    assert!(!is_error, "{text}");
    assert!(target.exists());
}

#[tokio::test]
async fn an_unavailable_sandbox_is_said_once_and_commands_are_denied_without_an_approver() {
    let server = FakeServer::start(vec![
        Reply::sse(chat::tool_call("c1", "bash", json!({"command": "echo hi"}))),
        Reply::sse(chat::text("done")),
    ])
    .await;
    let env = env();
    let mut cmd = env.agent(&server, &["-p", "--permission-mode", "auto", "go"]);
    cmd.env(agent::sandbox::SIMULATE_UNAVAILABLE_ENV, "1");
    let output = run(cmd).await;
    assert_eq!(output.code, 0, "{}", output.stderr);
    assert_eq!(
        output
            .stderr
            .matches("the command sandbox is unavailable")
            .count(),
        1,
        "{}",
        output.stderr
    );
    let requests = server.requests();
    let last = requests.last().unwrap().body.to_string();
    assert!(
        last.contains("the command sandbox is unavailable") && last.contains("--sandbox off"),
        "{last}"
    );
    assert!(!last.contains("\\nhi\\n"), "{last}");

    // `--sandbox off` is the explicit way to run commands unsandboxed without asking.
    let server = FakeServer::start(vec![
        Reply::sse(chat::tool_call("c1", "bash", json!({"command": "echo hi"}))),
        Reply::sse(chat::text("done")),
    ])
    .await;
    let mut cmd = env.agent(
        &server,
        &["-p", "--permission-mode", "auto", "--sandbox", "off", "go"],
    );
    cmd.env(agent::sandbox::SIMULATE_UNAVAILABLE_ENV, "1");
    let output = run(cmd).await;
    assert_eq!(output.code, 0, "{}", output.stderr);
    assert!(!output.stderr.contains("sandbox"), "{}", output.stderr);
    let last = server.requests().last().unwrap().body.to_string();
    assert!(last.contains("hi\\n"), "{last}");
}

/// The bash tool as `user` in `cwd`, under the workspace-write sandbox (network off).
async fn run_as(user: support::sandbox::User, cwd: &Path, command: &str) -> ToolOutput {
    use support::sandbox as sb;
    sb::bash(user, cwd, sb::sandbox(cwd, &sb::config(false)), command).await
}

/// A refusal is explained whatever the exit code: each command here ends with `true`.
#[tokio::test]
async fn every_refusal_is_explained_with_its_boundary_even_when_the_command_succeeds() {
    use support::sandbox::{User, give, repository};
    for user in User::both() {
        let workspace = support::sandbox::scratch(user);
        let ws = std::fs::canonicalize(workspace.path()).unwrap();
        let outside = scratch();
        std::fs::set_permissions(
            outside.path(),
            std::os::unix::fs::PermissionsExt::from_mode(0o777),
        )
        .unwrap();
        let out = std::fs::canonicalize(outside.path()).unwrap();
        repository(&ws);
        std::fs::create_dir_all(ws.join("vendor")).unwrap();
        repository(&ws.join("vendor"));
        give(&ws, user);
        let cases: Vec<(String, String)> = vec![
            (
                format!(
                    "ln -s {out}/via-link link; echo hi > link; true",
                    out = out.display()
                ),
                format!(
                    "write outside the workspace: {}/via-link (through {}/link)",
                    out.display(),
                    ws.display()
                ),
            ),
            (
                format!("echo hi > /proc/$$/root{}/via-proc; true", out.display()),
                format!(
                    "write outside the workspace: {}/via-proc (through /proc/",
                    out.display()
                ),
            ),
            (
                "mv .git .g; true".to_string(),
                format!(
                    "write to .git, which stays read-only: {}/.git",
                    ws.display()
                ),
            ),
            (
                "mv vendor vendor2; true".to_string(),
                format!(
                    "move or remove {}/vendor, which holds paths that stay read-only",
                    ws.display()
                ),
            ),
            (
                "mknod made c 1 3; true".to_string(),
                format!("make a device node: {}/made", ws.display()),
            ),
        ];
        for (command, boundary) in cases {
            let output = run_as(user, &ws, &format!("echo uid=$(id -u); {command}")).await;
            let text = text_of(&output);
            support::sandbox::assert_ran_as(user, &text);
            assert!(text.contains("[exit code 0]") || !output.is_error, "{text}");
            let got = blocked(&output).unwrap_or_default();
            assert!(
                got.starts_with(&boundary),
                "{user:?}: `{command}`: {got:?}\n{text}"
            );
            assert!(
                text.contains(&format!("Blocked by the sandbox: {got}.")),
                "{user:?}: {text}"
            );
        }
    }
}

/// Opening a device is a device boundary, never the network.
#[tokio::test]
async fn opening_a_device_is_explained_as_a_device_not_the_network() {
    use support::sandbox::User;
    let workspace = scratch();
    let ws = std::fs::canonicalize(workspace.path()).unwrap();
    let planted = ws.join("planted");
    let c_path = std::ffi::CString::new(planted.as_os_str().as_encoded_bytes()).unwrap();
    // SAFETY: mknod on a NUL-terminated path; /dev/null's numbers.
    assert_eq!(
        unsafe { libc::mknod(c_path.as_ptr(), libc::S_IFCHR | 0o666, libc::makedev(1, 3)) },
        0
    );
    for command in [
        "cat planted; true",
        "python3 -c \"open('planted', 'w')\"; true",
    ] {
        let output = run_as(User::Me, &ws, command).await;
        assert_eq!(
            blocked(&output).as_deref(),
            Some(
                format!(
                    "open a device node in a writable root: {}",
                    planted.display()
                )
                .as_str()
            ),
            "{command}: {}",
            text_of(&output)
        );
    }
    // An `Operation not permitted` that names a path is not the network.
    let output = run_as(
        User::Me,
        &ws,
        "touch mine; python3 -c \"import os; os.chown('mine', 1, 1)\"; true",
    )
    .await;
    assert_ne!(
        blocked(&output).as_deref(),
        Some("network disabled"),
        "{}",
        text_of(&output)
    );
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } == 0 && Path::new("/dev/kmsg").exists() {
        let output = run_as(User::Me, &ws, "head -c 1 /dev/kmsg; true").await;
        assert_eq!(
            blocked(&output).as_deref(),
            Some("use a device the sandbox does not allow: /dev/kmsg"),
            "{}",
            text_of(&output)
        );
    }
}

/// Root in the sandbox has no privileges: a file it does not own is refused, and said so.
#[tokio::test]
async fn root_refused_for_want_of_privileges_is_told_so() {
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } != 0 {
        return;
    }
    let workspace = scratch();
    let ws = std::fs::canonicalize(workspace.path()).unwrap();
    let theirs = ws.join("theirs.txt");
    std::fs::write(&theirs, "x").unwrap();
    std::os::unix::fs::chown(&theirs, Some(65534), Some(65534)).unwrap();
    let output = run_as(support::sandbox::User::Me, &ws, "echo y > theirs.txt; true").await;
    assert_eq!(
        blocked(&output).as_deref(),
        Some(
            format!(
                "write to a file root may only write with privileges: {}",
                theirs.display()
            )
            .as_str()
        ),
        "{}",
        text_of(&output)
    );
}

/// A background shell's refusals are explained when its output is read.
#[tokio::test]
async fn a_background_shells_refusal_is_explained_when_its_output_is_read() {
    let workspace = scratch();
    let outside = scratch();
    let target = std::fs::canonicalize(outside.path())
        .unwrap()
        .join("bg.txt");
    let mut settings = support::harness::tool_settings();
    settings.sandbox = sandbox(workspace.path(), false);
    let ctx = ToolContext {
        tool_call_id: String::new(),
        cwd: workspace.path().to_path_buf(),
        cancel: tokio_util::sync::CancellationToken::new(),
        on_update: Arc::new(|_| {}),
        settings: Arc::new(settings),
        hidden: None,
        files: Default::default(),
        spill: Default::default(),
        shells: Default::default(),
        session_net: Default::default(),
    };
    let started = agent::tools::bash::BashTool
        .execute(
            json!({"command": format!("echo x > {}; true", target.display()), "background": true}),
            ctx.clone(),
        )
        .await;
    let id = started.details.as_ref().unwrap()["shellId"]
        .as_str()
        .unwrap()
        .to_string();
    let mut seen = text_of(&started);
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    while !seen.contains("Blocked by the sandbox") {
        assert!(std::time::Instant::now() < deadline, "{seen}");
        ctx.shells
            .wait_for_output(&id, std::time::Duration::from_millis(200))
            .await;
        let read = agent::tools::background::tools::BashOutputTool
            .execute(json!({"id": id}), ctx.clone())
            .await;
        seen.push_str(&text_of(&read));
    }
    assert!(
        seen.contains(&format!(
            "Blocked by the sandbox: write outside the workspace: {}",
            target.display()
        )),
        "{seen}"
    );
}
