//! Hooks through the real binary: `[[hooks.EVENT]]` in config.toml, and a project's
//! `.claude/settings.json` hooks, which run only once the user trusted the project (and
//! again only while they stay as trusted).
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // test code fails loudly

use crate::support;

use agent::extensions::hooks::trust::{ProjectHooks, TrustStore};
use serde_json::{Value, json};
use std::path::Path;
use support::chat;
use support::env::env;
use support::process::run;
use support::server::{FakeServer, Reply};

fn write(path: &Path, text: &str) {
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, text).unwrap();
}

fn bash_then_text() -> Vec<Reply> {
    vec![
        Reply::sse(chat::tool_call("c1", "bash", json!({"command": "echo hi"}))),
        Reply::sse(chat::text("done")),
    ]
}

/// A `.claude/settings.json` whose PreToolUse hook leaves a file behind.
fn project_settings(cwd: &Path, marker: &str) {
    let settings = json!({
        "hooks": {
            "PreToolUse": [{
                "matcher": "Bash",
                "hooks": [{"type": "command", "command": format!("touch {marker}"), "timeout": 10}]
            }]
        }
    });
    write(&cwd.join(".claude/settings.json"), &settings.to_string());
}

#[tokio::test]
async fn untrusted_project_hooks_do_not_run_and_headless_says_so_once() {
    let env = env();
    project_settings(env.cwd.path(), "hook-ran");
    let server = FakeServer::start(bash_then_text()).await;
    let out = run(env.agent(&server, &["-p", "--permission-mode", "auto", "go"])).await;
    assert_eq!(out.code, 0, "stderr: {}", out.stderr);
    assert!(
        !env.cwd.path().join("hook-ran").exists(),
        "an untrusted hook never runs"
    );
    assert_eq!(
        out.stderr.matches("not trusted").count(),
        1,
        "said once: {}",
        out.stderr
    );
    assert!(
        out.stderr.contains(".claude/settings.json"),
        "{}",
        out.stderr
    );
}

#[tokio::test]
async fn trusted_project_hooks_run_until_they_change() {
    let env = env();
    // The project's own repository, so that its root is the working directory wherever the
    // temp directory lies (inside someone's checkout, say).
    let init = std::process::Command::new("git")
        .args(["init", "-q"])
        .current_dir(env.cwd.path())
        .status()
        .unwrap();
    assert!(init.success());
    project_settings(env.cwd.path(), "hook-ran");
    let store = TrustStore::in_home(env.home.path());
    store
        .remember(&ProjectHooks::load(env.cwd.path()).unwrap(), true)
        .unwrap();
    let server = FakeServer::start(bash_then_text()).await;
    let out = run(env.agent(&server, &["-p", "--permission-mode", "auto", "go"])).await;
    assert_eq!(out.code, 0, "stderr: {}", out.stderr);
    assert!(
        env.cwd.path().join("hook-ran").exists(),
        "a trusted hook runs"
    );
    assert!(!out.stderr.contains("not trusted"), "{}", out.stderr);

    // Changed hooks are not the ones the user trusted.
    project_settings(env.cwd.path(), "changed-hook-ran");
    let server = FakeServer::start(bash_then_text()).await;
    let out = run(env.agent(&server, &["-p", "--permission-mode", "auto", "go"])).await;
    assert_eq!(out.code, 0, "stderr: {}", out.stderr);
    assert!(!env.cwd.path().join("changed-hook-ran").exists());
    assert!(out.stderr.contains("not trusted"), "{}", out.stderr);

    // A refusal is remembered as well: not run, and not reported as undecided.
    store
        .remember(&ProjectHooks::load(env.cwd.path()).unwrap(), false)
        .unwrap();
    let server = FakeServer::start(bash_then_text()).await;
    let out = run(env.agent(&server, &["-p", "--permission-mode", "auto", "go"])).await;
    assert_eq!(out.code, 0, "stderr: {}", out.stderr);
    assert!(!env.cwd.path().join("changed-hook-ran").exists());
    assert!(!out.stderr.contains("not trusted"), "{}", out.stderr);
}

#[tokio::test]
async fn config_hooks_run_and_json_mode_reports_them() {
    let env = env();
    let blocker = env.home.path().join("block.sh");
    write(
        &blocker,
        "#!/bin/sh\ncat > /dev/null\necho 'no network tools' >&2\nexit 2\n",
    );
    write(
        &env.home.path().join("config.toml"),
        &format!(
            "[[hooks.PreToolUse]]\nmatcher = \"bash\"\ncommand = \"sh '{}'\"\ntimeout_secs = 10\n",
            blocker.display()
        ),
    );
    let server = FakeServer::start(bash_then_text()).await;
    let out = run(env.agent(
        &server,
        &["--mode", "json", "--permission-mode", "auto", "go"],
    ))
    .await;
    assert_eq!(out.code, 0, "stderr: {}", out.stderr);
    let lines: Vec<Value> = out
        .stdout
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let start = lines.iter().find(|l| l["type"] == "hook_start").unwrap();
    assert_eq!(start["hookEventName"], "PreToolUse");
    let end = lines.iter().find(|l| l["type"] == "hook_end").unwrap();
    assert_eq!(end["decision"], "block");
    assert_eq!(end["exitCode"], 2);
    assert_eq!(end["reason"], "no network tools");
    let result = lines
        .iter()
        .find(|l| l["type"] == "tool_execution_end")
        .unwrap();
    assert_eq!(result["isError"], true);
    assert_eq!(result["result"]["details"]["denied"], "hook");
}

#[tokio::test]
async fn a_bad_hook_table_is_a_config_error_naming_the_key() {
    let env = env();
    write(
        &env.home.path().join("config.toml"),
        "[[hooks.PreToolUse]]\nmatcher = \"(bash\"\ncommand = \"true\"\n",
    );
    let server = FakeServer::start(vec![]).await;
    let out = run(env.agent(&server, &["-p", "go"])).await;
    assert_eq!(out.code, 1);
    assert!(
        out.stderr.contains("hooks.PreToolUse[0].matcher"),
        "{}",
        out.stderr
    );
    write(
        &env.home.path().join("config.toml"),
        "[[hooks.BeforeEverything]]\ncommand = \"true\"\n",
    );
    let out = run(env.agent(&server, &["-p", "go"])).await;
    assert_eq!(out.code, 1);
    assert!(out.stderr.contains("BeforeEverything"), "{}", out.stderr);
}
