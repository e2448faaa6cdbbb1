//! Hooks run as the agent's commands do (issue 28 §1, issue 29 item 3): inside the command
//! sandbox unless a hook opts out, and below the same supervisor, so nothing a hook starts
//! outlives it — a `setsid` child of a timed-out hook included — or outlives the agent, even
//! one killed with SIGKILL. A hook that runs outside the sandbox never runs a script a
//! sandboxed command rewrote.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // test code fails loudly

use crate::support;

use agent::extensions::hooks::HookEvent;
use agent::sandbox::{Sandbox, SandboxConfig, SandboxMode, Status};
use serde_json::{Value, json};
use std::path::Path;
use support::chat;
use support::env::env;
use support::harness::{Harness, result_of, wait_for_pid, wait_until_dead};
use support::hooks::{Scratch, hook, hook_errors, hooks};
use support::server::{FakeServer, Reply};
use tempfile::TempDir;

/// A directory outside the system temp directory (which sandboxed commands may write).
fn outside() -> TempDir {
    crate::support::sandbox::outside()
}

fn sandbox(cwd: &Path) -> Sandbox {
    let config = SandboxConfig {
        mode: SandboxMode::WorkspaceWrite,
        network: false,
        writable_roots: Vec::new(),
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

/// Two bash calls, then text: the first rewrites `check.sh` to `script`, the second is
/// `touch second`.
fn rewrite_then_call(script: &str) -> Vec<Reply> {
    vec![
        Reply::sse(chat::tool_call(
            "c1",
            "bash",
            json!({"command": format!("printf '%s\\n' '{script}' > check.sh")}),
        )),
        Reply::sse(chat::tool_call(
            "c2",
            "bash",
            json!({"command": "touch second"}),
        )),
        Reply::sse(chat::text("done")),
    ]
}

fn lines(path: &Path) -> usize {
    std::fs::read_to_string(path).map_or(0, |t| t.lines().count())
}

#[tokio::test]
async fn a_hook_runs_inside_the_command_sandbox_by_default() {
    let out = outside();
    let pwned = out.path().join("pwned");
    let mut h = Harness::start_with(
        rewrite_then_call(&format!(
            "echo ran >> hook.log; echo pwned > {}",
            pwned.display()
        )),
        |c| {
            std::fs::write(
                c.cwd.join("check.sh"),
                "cat > input.json; echo ran >> hook.log\n",
            )
            .unwrap();
            c.tool_settings.sandbox = sandbox(&c.cwd);
            c.hooks = hooks(
                vec![hook(HookEvent::PreToolUse, None, "sh ./check.sh", 30)],
                &c.cwd,
            );
        },
    )
    .await;
    h.prompt("go");
    let events = h.until_end().await;
    assert_eq!(
        lines(&h.dir.path().join("hook.log")),
        2,
        "the hook ran twice"
    );
    assert!(!pwned.exists(), "the rewritten script ran in the sandbox");
    let (text, _) = result_of(&events, "c2");
    assert!(text.contains("Permission denied"), "{text}");
    // Its stdin reached it inside the sandbox.
    let input: Value =
        serde_json::from_str(&std::fs::read_to_string(h.dir.path().join("input.json")).unwrap())
            .unwrap();
    assert_eq!(input["tool_name"], "bash");
}

#[tokio::test]
async fn an_unsandboxed_hook_never_runs_a_script_a_sandboxed_command_rewrote() {
    let out = outside();
    let log = out.path().join("ran.log");
    let pwned = out.path().join("pwned");
    let first = format!("cat > /dev/null; echo ran >> {}\n", log.display());
    let mut h = Harness::start_with(
        rewrite_then_call(&format!("echo pwned > {}", pwned.display())),
        |c| {
            std::fs::write(c.cwd.join("check.sh"), &first).unwrap();
            c.tool_settings.sandbox = sandbox(&c.cwd);
            c.hooks = hooks(
                vec![hook(HookEvent::PreToolUse, None, "sh ./check.sh", 30).unsandboxed()],
                &c.cwd,
            );
        },
    )
    .await;
    h.prompt("go");
    let events = h.until_end().await;
    assert_eq!(
        lines(&log),
        1,
        "the opted-out hook ran outside the sandbox once"
    );
    assert!(!pwned.exists(), "the rewritten script never ran");
    let errors = hook_errors(&events);
    assert_eq!(errors.len(), 1, "{errors:?}");
    assert!(errors[0].contains("check.sh changed"), "{errors:?}");
    let (text, is_error) = result_of(&events, "c2");
    assert!(is_error && text.contains("check.sh changed"), "{text}");
    assert!(
        !h.dir.path().join("second").exists(),
        "the guarded call was blocked"
    );
}

#[tokio::test]
async fn a_sandboxed_hook_is_not_run_where_the_sandbox_is_unavailable() {
    let s = Scratch::new();
    let mut h = Harness::start_with(
        vec![
            Reply::sse(chat::tool_call("c1", "bash", json!({"command": "true"}))),
            Reply::sse(chat::text("done")),
        ],
        |c| {
            c.tool_settings.sandbox = Sandbox {
                mode: SandboxMode::WorkspaceWrite,
                policy: None,
                status: Status::Unavailable("simulated".into()),
                ..Sandbox::default()
            };
            // Unavailable: commands ask, and here nobody can: an approving hook lets it run.
            c.hooks = hooks(
                vec![
                    hook(HookEvent::PostToolUse, None, &s.save_stdin("in.json"), 30),
                    hook(
                        HookEvent::PreToolUse,
                        None,
                        r#"echo '{"decision": "approve"}'"#,
                        30,
                    )
                    .unsandboxed(),
                ],
                &c.cwd,
            );
        },
    )
    .await;
    h.prompt("go");
    let events = h.until_end().await;
    let errors = hook_errors(&events);
    assert_eq!(errors.len(), 1, "{errors:?}");
    assert!(
        errors[0].starts_with("PostToolUse:") && errors[0].contains("sandbox = false"),
        "{errors:?}"
    );
    assert!(!s.path("in.json").exists(), "it never ran");
}

#[tokio::test]
async fn what_a_hook_started_dies_with_it_setsid_children_included() {
    let s = Scratch::new();
    // Times out, leaving a child in a session of its own.
    let hung = format!(
        "setsid sleep 300 & echo $! > '{}'; echo $$ > '{}'; exec sleep 300",
        s.path("hung-child.pid").display(),
        s.path("hung.pid").display()
    );
    // Ends at once, leaving a detached child behind.
    let quick = format!(
        "setsid sleep 300 </dev/null >/dev/null 2>&1 & echo $! > '{}'",
        s.path("left.pid").display()
    );
    let mut h = Harness::start_with(
        vec![
            Reply::sse(chat::tool_call("c1", "bash", json!({"command": "true"}))),
            Reply::sse(chat::text("done")),
        ],
        |c| {
            c.hooks = hooks(
                vec![
                    hook(HookEvent::PreToolUse, None, &hung, 5),
                    hook(HookEvent::PreToolUse, None, &quick, 30),
                ],
                &c.cwd,
            );
        },
    )
    .await;
    h.prompt("go");
    let events = h.until_end().await;
    let errors = hook_errors(&events);
    assert!(
        errors
            .iter()
            .any(|e| e.contains("did not finish within 5 s")),
        "{errors:?}"
    );
    for name in ["hung.pid", "hung-child.pid", "left.pid"] {
        let pid = wait_for_pid(&s.path(name)).await;
        assert!(wait_until_dead(pid).await, "{name}: {pid} still runs");
    }
}

#[tokio::test]
async fn hook_processes_die_with_the_agent_when_it_is_killed() {
    let env = env();
    let s = Scratch::new();
    let hook = format!(
        "setsid sleep 300 & echo $! > '{}'; echo $$ > '{}'; exec sleep 300",
        s.path("child.pid").display(),
        s.path("hook.pid").display()
    );
    std::fs::write(
        env.home.path().join("config.toml"),
        format!(
            "[[hooks.PreToolUse]]\ncommand = {}\ntimeout_secs = 300\n",
            toml_string(&hook)
        ),
    )
    .unwrap();
    let server = FakeServer::start(vec![
        Reply::sse(chat::tool_call("c1", "bash", json!({"command": "true"}))),
        Reply::sse(chat::text("done")),
    ])
    .await;
    let mut agent = env
        .agent(&server, &["-p", "--permission-mode", "auto", "go"])
        .spawn()
        .unwrap();
    let hook_pid = wait_for_pid(&s.path("hook.pid")).await;
    let child_pid = wait_for_pid(&s.path("child.pid")).await;
    let pid = i32::try_from(agent.id().unwrap()).unwrap();
    // SAFETY: kill has no memory-safety preconditions.
    unsafe { libc::kill(pid, libc::SIGKILL) };
    agent.wait().await.unwrap();
    assert!(
        wait_until_dead(hook_pid).await,
        "the hook died with the agent"
    );
    assert!(wait_until_dead(child_pid).await, "its setsid child too");
}

/// A TOML basic string holding `text` (JSON's escapes are TOML's).
fn toml_string(text: &str) -> String {
    serde_json::to_string(text).unwrap()
}
