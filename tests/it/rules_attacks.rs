//! Permission rules attacked the way a hostile model would, through the real binary: tool
//! calls only, against `[permissions]` rules in the user's config (issue 28 §3). Each
//! attack worked before rules judged what runs: an allowed `git status` ran a program
//! through git's configuration, a `bash(rm *)` deny rule was stepped around, a read deny
//! rule was read through a hard link. The sandbox is off here, so that what is tested is
//! the rules alone.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // test code fails loudly

use crate::support;

use serde_json::json;
use support::chat;
use support::env::env;
use support::process::run;
use support::server::{FakeServer, Reply};

fn config(env: &support::env::Env, permissions: &str) {
    std::fs::write(
        env.home.path().join("config.toml"),
        format!("[permissions]\n{permissions}\n"),
    )
    .unwrap();
}

/// Everything the model was told, as one string.
fn told(server: &FakeServer) -> String {
    serde_json::to_string(&server.bodies()).unwrap()
}

#[tokio::test]
async fn an_allowed_command_given_what_changes_it_does_not_run_unasked() {
    let env = env();
    let cwd = env.cwd.path();
    assert!(
        std::process::Command::new("git")
            .args(["init", "-q"])
            .current_dir(cwd)
            .status()
            .unwrap()
            .success()
    );
    // Planted earlier, say by a sandboxed command.
    std::fs::write(cwd.join("evil.sh"), "touch pwned-bash-env\n").unwrap();
    config(&env, "allow = [\"bash(git status*)\", \"bash(echo *)\"]");
    let attacks = [
        "GIT_CONFIG_COUNT=1 GIT_CONFIG_KEY_0=core.fsmonitor \
         GIT_CONFIG_VALUE_0='touch pwned-fsmonitor' git status",
        "BASH_ENV=./evil.sh bash -c 'git status'",
        "PS4='$(touch pwned-ps4)' bash -x -c 'git status'",
        "for x in 'a[$(touch pwned-arith)]'; do echo $((x)); done",
        "env GIT_CONFIG_PARAMETERS=\"'core.fsmonitor=touch pwned-env'\" git status",
    ];
    let calls: Vec<(String, &str, serde_json::Value)> = attacks
        .iter()
        .enumerate()
        .map(|(i, command)| (format!("c{i}"), "bash", json!({ "command": command })))
        .collect();
    let calls: Vec<(&str, &str, serde_json::Value)> = calls
        .iter()
        .map(|(id, name, args)| (id.as_str(), *name, args.clone()))
        .collect();
    let server = FakeServer::start(vec![
        Reply::sse(chat::tool_calls(&calls)),
        Reply::sse(chat::text("done")),
    ])
    .await;
    let out = run(env.agent(
        &server,
        &["-p", "--permission-mode", "ask", "--sandbox", "off", "go"],
    ))
    .await;
    assert_eq!(out.code, 0, "{}", out.stderr);
    let planted: Vec<String> = std::fs::read_dir(cwd)
        .unwrap()
        .filter_map(|e| e.ok())
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|name| name.starts_with("pwned"))
        .collect();
    assert!(planted.is_empty(), "these ran: {planted:?}");
    let told = told(&server);
    for cause in [
        "`GIT_CONFIG_COUNT`, `GIT_CONFIG_KEY_0` and `GIT_CONFIG_VALUE_0` each changes git's",
        "`BASH_ENV` names a file a non-interactive bash runs first",
        "`PS4` is expanded when the shell uses it",
        "whose value `a[$(touch pwned-arith)]` has a subscript",
        "`GIT_CONFIG_PARAMETERS` changes git's configuration",
    ] {
        assert!(told.contains(cause), "{cause} not in {told}");
    }
    // The same command with a harmless variable still runs without asking.
    let env2 = support::env::env();
    assert!(
        std::process::Command::new("git")
            .args(["init", "-q"])
            .current_dir(env2.cwd.path())
            .status()
            .unwrap()
            .success()
    );
    config(&env2, "allow = [\"bash(git status*)\"]");
    let server = FakeServer::start(vec![
        Reply::sse(chat::tool_call(
            "c1",
            "bash",
            json!({"command": "RUST_LOG=debug git status --short"}),
        )),
        Reply::sse(chat::text("done")),
    ])
    .await;
    let out = run(env2.agent(&server, &["-p", "--sandbox", "off", "go"])).await;
    assert_eq!(out.code, 0, "{}", out.stderr);
    let result = result_of(&server, "c1");
    assert!(!result.contains("Permission denied"), "{result}");
    assert!(
        result.contains("[exit code 0]") || !result.contains("exit code"),
        "{result}"
    );
}

/// The result the model got for tool call `id`.
fn result_of(server: &FakeServer, id: &str) -> String {
    let bodies = server.bodies();
    let last = bodies.last().unwrap();
    last["messages"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["role"] == "tool" && m["tool_call_id"] == id)
        .map(|m| m["content"].as_str().unwrap_or_default().to_string())
        .unwrap_or_else(|| panic!("no result for {id} in {last}"))
}

#[tokio::test]
async fn a_deny_rule_is_not_stepped_around() {
    let env = env();
    let cwd = env.cwd.path();
    // Every other command is allowed: only the deny rule stands in the way.
    config(&env, "allow = [\"bash\"]\ndeny = [\"bash(rm *)\"]");
    let attacks = [
        "\\rm victim-0",
        "r''m victim-1",
        "/usr/bin/../bin/rm victim-2",
        "r{m,} victim-3",
        "setsid rm victim-4",
        "taskset 0x1 rm victim-5",
        "flock lock rm victim-6",
        "trap 'rm victim-7' EXIT",
        "source <(echo rm victim-8)",
        "x='a[$(rm victim-9)]'; echo $((x))",
        "env 'BASH_FUNC_ls%%=() { rm victim-10; }' bash -c ls",
        "$'\\x72m' victim-11",
    ];
    for i in 0..attacks.len() {
        std::fs::write(cwd.join(format!("victim-{i}")), "keep me").unwrap();
    }
    let calls: Vec<(String, serde_json::Value)> = attacks
        .iter()
        .enumerate()
        .map(|(i, command)| (format!("c{i}"), json!({ "command": command })))
        .collect();
    let calls: Vec<(&str, &str, serde_json::Value)> = calls
        .iter()
        .map(|(id, args)| (id.as_str(), "bash", args.clone()))
        .collect();
    let server = FakeServer::start(vec![
        Reply::sse(chat::tool_calls(&calls)),
        Reply::sse(chat::text("done")),
    ])
    .await;
    let out = run(env.agent(&server, &["-p", "--sandbox", "off", "go"])).await;
    assert_eq!(out.code, 0, "{}", out.stderr);
    for (i, attack) in attacks.iter().enumerate() {
        assert!(
            cwd.join(format!("victim-{i}")).exists(),
            "`{attack}` removed victim-{i}"
        );
    }
    let told = told(&server);
    assert!(
        told.contains("the rule `bash(rm *)`"),
        "no deny rule named in {told}"
    );
    assert!(
        told.contains("cannot be checked before it runs asks"),
        "no unverifiable command explained in {told}"
    );
}

#[tokio::test]
async fn a_path_rule_is_not_read_through_a_hard_link() {
    let env = env();
    let cwd = env.cwd.path();
    std::fs::write(cwd.join("secret.txt"), "TOKEN=hunter2-do-not-show\n").unwrap();
    std::fs::write(cwd.join("notes.txt"), "TOKEN is documented here\n").unwrap();
    config(&env, "deny = [\"read(secret.txt)\"]");
    let server = FakeServer::start(vec![
        Reply::sse(chat::tool_call(
            "c1",
            "bash",
            json!({"command": "ln secret.txt x && mkdir -p deep && ln secret.txt deep/y"}),
        )),
        Reply::sse(chat::tool_calls(&[
            ("c2", "read", json!({"path": "x"})),
            ("c3", "read", json!({"path": "deep/y"})),
            ("c4", "grep", json!({"pattern": "TOKEN"})),
            ("c5", "find", json!({"pattern": "*"})),
            ("c6", "ls", json!({"path": "deep"})),
        ])),
        Reply::sse(chat::text("done")),
    ])
    .await;
    let out = run(env.agent(
        &server,
        &["-p", "--permission-mode", "auto", "--sandbox", "off", "go"],
    ))
    .await;
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert!(cwd.join("x").exists() && cwd.join("deep/y").exists());
    let told = told(&server);
    assert!(!told.contains("hunter2"), "the secret was shown: {told}");
    assert!(
        told.contains("the same file as") && told.contains("a hard link or another path to it"),
        "{told}"
    );
    assert!(told.contains("`read(secret.txt)`"), "{told}");
    // grep found notes.txt and left out the secret and both links.
    assert!(told.contains("notes.txt"), "{told}");
    assert!(
        told.contains(
            "[3 paths were left out: the user's [permissions] rules do not let you see them.]"
        ),
        "{told}"
    );
    // find and ls leave the links out too.
    let found = result_of(&server, "c5");
    assert!(!found.lines().any(|l| l == "x" || l == "deep/y"), "{found}");
    assert!(found.contains("notes.txt"), "{found}");
    let listed = result_of(&server, "c6");
    assert!(listed.starts_with("(empty directory)"), "{listed}");
    assert!(listed.contains("1 path was left out"), "{listed}");
}

/// Bash takes `PS4` from the environment only when it does not run as root: the same
/// attack as an unprivileged user, whose shell would run what `PS4` holds.
#[tokio::test]
async fn an_unprivileged_user_is_not_attacked_through_a_prompt() {
    if !std::path::Path::new("/usr/bin/setpriv").exists() {
        eprintln!("skipped: no setpriv to run the agent as an unprivileged user");
        return;
    }
    let env = env();
    let cwd = env.cwd.path();
    config(&env, "allow = [\"bash(ls*)\"]");
    for dir in [env.home.path(), cwd] {
        std::os::unix::fs::chown(dir, Some(65534), Some(65534)).unwrap();
    }
    std::os::unix::fs::chown(
        env.home.path().join("config.toml"),
        Some(65534),
        Some(65534),
    )
    .unwrap();
    let server = FakeServer::start(vec![
        Reply::sse(chat::tool_call(
            "c1",
            "bash",
            json!({"command": "PS4='$(touch pwned-ps4)' bash -x -c ls"}),
        )),
        Reply::sse(chat::text("done")),
    ])
    .await;
    let mut cmd = tokio::process::Command::new("/usr/bin/setpriv");
    cmd.args(["--reuid=65534", "--regid=65534", "--clear-groups"])
        .arg(env!("CARGO_BIN_EXE_agent"))
        .args(["--base-url", &server.v1(), "--model", "test-model"])
        .args(["-p", "--sandbox", "off", "go"])
        .current_dir(cwd)
        .env("AGENT_HOME", env.home.path())
        .env("HOME", env.home.path())
        .env_remove("OPENAI_API_KEY")
        .env_remove("ANTHROPIC_API_KEY")
        .env_remove("RUST_LOG")
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .kill_on_drop(true);
    let out = run(cmd).await;
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert!(!cwd.join("pwned-ps4").exists(), "PS4 ran its command");
    let result = result_of(&server, "c1");
    assert!(result.contains("`PS4` is expanded"), "{result}");
}

/// A bind mount of the denied file at another path (made as root in the agent's own mount
/// namespace, which the sandbox never lets a command do): the same file, one hard link.
#[tokio::test]
async fn a_path_rule_is_not_read_through_a_bind_mount() {
    let probe = std::process::Command::new("unshare")
        .args(["-m", "--propagation", "private", "true"])
        .status();
    if !probe.is_ok_and(|s| s.success()) {
        eprintln!("skipped: no mount namespace to bind-mount in");
        return;
    }
    let env = env();
    let cwd = env.cwd.path();
    std::fs::write(cwd.join("secret.txt"), "TOKEN=hunter2-do-not-show\n").unwrap();
    std::fs::write(cwd.join("other.txt"), "").unwrap();
    config(&env, "deny = [\"read(secret.txt)\"]");
    let server = FakeServer::start(vec![
        Reply::sse(chat::tool_calls(&[
            ("c1", "read", json!({"path": "other.txt"})),
            ("c2", "grep", json!({"pattern": "hunter2"})),
        ])),
        Reply::sse(chat::text("done")),
    ])
    .await;
    let mut cmd = tokio::process::Command::new("unshare");
    cmd.args(["-m", "--propagation", "private", "sh", "-c"])
        .arg("mount --bind secret.txt other.txt && exec \"$@\"")
        .arg("sh")
        .arg(env!("CARGO_BIN_EXE_agent"))
        .args(["--base-url", &server.v1(), "--model", "test-model"])
        .args(["-p", "--permission-mode", "auto", "--sandbox", "off", "go"])
        .current_dir(cwd)
        .env("AGENT_HOME", env.home.path())
        .env_remove("OPENAI_API_KEY")
        .env_remove("ANTHROPIC_API_KEY")
        .env_remove("RUST_LOG")
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .kill_on_drop(true);
    let out = run(cmd).await;
    assert_eq!(out.code, 0, "{}", out.stderr);
    let read = result_of(&server, "c1");
    assert!(
        !read.contains("hunter2") && read.contains("the same file as"),
        "{read}"
    );
    let grep = result_of(&server, "c2");
    assert!(!grep.contains("other.txt:"), "{grep}");
    assert!(grep.contains("2 paths were left out"), "{grep}");
}
