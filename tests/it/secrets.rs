//! API keys stay secret: masked in provider errors, the log and session files (keys from
//! the environment and from `api_key_command` alike), gone from the agent's own
//! environment (a tool reading `/proc/<agent pid>/environ` finds nothing), and the log is
//! private whatever the umask.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // test code fails loudly

use crate::support;

use serde_json::json;
use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use support::env::env;
use support::process::{Rpc, run};
use support::server::{FakeServer, Reply};

const ENV_KEY: &str = "sk-test-env-secret-0123456789";
const COMMAND_KEY: &str = "sk-test-command-secret-987654";

fn echoing(key: &str) -> Reply {
    Reply::status(
        401,
        &json!({"error": {"message": format!("Incorrect API key provided: {key}.")}}).to_string(),
    )
}

fn mode(path: &Path) -> u32 {
    std::fs::metadata(path).unwrap().permissions().mode() & 0o777
}

/// Everything the agent wrote under its home: sessions and logs.
fn written_files(home: &Path) -> Vec<(std::path::PathBuf, String)> {
    let mut files = Vec::new();
    let mut dirs = vec![home.join("sessions"), home.join("logs")];
    while let Some(dir) = dirs.pop() {
        let Ok(entries) = std::fs::read_dir(dir) else {
            continue;
        };
        for entry in entries.flatten() {
            let path = entry.path();
            if path.is_dir() {
                dirs.push(path);
            } else {
                let text = String::from_utf8_lossy(&std::fs::read(&path).unwrap()).into_owned();
                files.push((path, text));
            }
        }
    }
    files
}

#[tokio::test]
async fn an_echoed_env_key_is_masked_in_errors_logs_and_sessions_and_the_log_is_private() {
    let env = env();
    let server = FakeServer::start(vec![echoing(ENV_KEY)]).await;
    let mut cmd = env.agent(&server, &["-p", "hello"]);
    cmd.env("OPENAI_API_KEY", ENV_KEY);
    // SAFETY: umask is async-signal-safe.
    unsafe {
        cmd.pre_exec(|| {
            libc::umask(0);
            Ok(())
        });
    }
    let out = run(cmd).await;
    assert_eq!(out.code, 1, "{}", out.stderr);
    assert_eq!(
        server.requests()[0].header("authorization"),
        Some(format!("Bearer {ENV_KEY}").as_str()),
        "the key still authenticates"
    );
    assert!(
        out.stderr
            .contains("Incorrect API key provided: [REDACTED]."),
        "{}",
        out.stderr
    );
    assert!(!out.stderr.contains(ENV_KEY), "{}", out.stderr);
    let files = written_files(env.home.path());
    let log = env.home.path().join("logs/agent.log");
    assert!(files.iter().any(|(path, _)| *path == log), "{files:?}");
    assert!(
        files
            .iter()
            .any(|(_, text)| text.contains("Incorrect API key provided: [REDACTED].")),
        "the error was written somewhere: {files:?}"
    );
    for (path, text) in &files {
        assert!(!text.contains(ENV_KEY), "{} holds the key", path.display());
    }
    assert_eq!(mode(&log), 0o600);
    assert_eq!(mode(&env.home.path().join("logs")), 0o700);
}

#[tokio::test]
async fn a_key_printed_by_api_key_command_is_masked_too() {
    let env = env();
    std::fs::write(
        env.home.path().join("config.toml"),
        format!("[providers.openai]\napi_key_command = \"echo {COMMAND_KEY}\"\n"),
    )
    .unwrap();
    let server = FakeServer::start(vec![echoing(COMMAND_KEY)]).await;
    let out = run(env.agent(&server, &["-p", "hello"])).await;
    assert_eq!(out.code, 1, "{}", out.stderr);
    assert_eq!(
        server.requests()[0].header("authorization"),
        Some(format!("Bearer {COMMAND_KEY}").as_str())
    );
    assert!(out.stderr.contains("[REDACTED]"), "{}", out.stderr);
    assert!(!out.stderr.contains(COMMAND_KEY), "{}", out.stderr);
    for (path, text) in written_files(env.home.path()) {
        assert!(
            !text.contains(COMMAND_KEY),
            "{} holds the key",
            path.display()
        );
    }
}

#[tokio::test]
async fn the_key_is_gone_from_the_agents_own_environment() {
    let env = env();
    let server = FakeServer::start(vec![Reply::sse(support::chat::text("ok"))]).await;
    let mut cmd = env.agent(&server, &["--mode", "rpc"]);
    cmd.env("OPENAI_API_KEY", ENV_KEY);
    let mut rpc = Rpc::spawn(cmd);
    rpc.send(json!({"id": "s", "type": "get_state"})).await;
    rpc.response("s").await;
    let pid = rpc.child.id().unwrap();
    let environ = std::fs::read(format!("/proc/{pid}/environ")).unwrap();
    let environ = String::from_utf8_lossy(&environ);
    assert!(environ.contains("AGENT_HOME="), "the block is readable");
    assert!(!environ.contains(ENV_KEY), "{environ}");
    // The key still works: it was kept, not lost.
    rpc.send(json!({"id": "p", "type": "prompt", "message": "hi"}))
        .await;
    rpc.until(|l| l["type"] == "agent_end").await;
    assert_eq!(
        server.requests()[0].header("authorization"),
        Some(format!("Bearer {ENV_KEY}").as_str())
    );
    assert_eq!(rpc.exit_code().await, 0);
}

const FLAG_KEY: &str = "sk-test-flag-secret-5550123";

/// A command that walks from itself up to pid 1, printing each process's command line and
/// environment (what a hostile model would try to find the agent's key).
const WALK_UP: &str = "p=$$; while [ \"$p\" -gt 1 ]; do echo \"== $p\"; tr '\\0' ' ' < /proc/$p/cmdline; echo; tr '\\0' ' ' < /proc/$p/environ; echo; p=$(awk '{print $4}' /proc/$p/stat); done > walk.txt 2>&1; echo walked";

#[tokio::test]
async fn a_key_given_with_api_key_is_gone_from_the_agents_command_line() {
    let env = env();
    let server = FakeServer::start(vec![
        Reply::sse(support::chat::tool_call(
            "c1",
            "bash",
            json!({ "command": WALK_UP }),
        )),
        Reply::sse(support::chat::text("done")),
    ])
    .await;
    let out = run(env.agent(
        &server,
        &[
            "-p",
            "--permission-mode",
            "auto",
            "--api-key",
            FLAG_KEY,
            "go",
        ],
    ))
    .await;
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert_eq!(
        server.requests()[0].header("authorization"),
        Some(format!("Bearer {FLAG_KEY}").as_str()),
        "the key still authenticates"
    );
    // Read straight from the file the sandboxed command wrote: no masking between.
    let walk = std::fs::read_to_string(env.cwd.path().join("walk.txt")).unwrap();
    assert!(
        walk.contains("--api-key") && walk.contains("--permission-mode auto"),
        "the walk reached the agent: {walk}"
    );
    assert!(!walk.contains(FLAG_KEY), "{walk}");
}

#[tokio::test]
async fn a_key_a_command_prints_is_masked_in_results_events_and_the_next_request() {
    let env = env();
    // Not `.env`: `[sandbox] deny_read` keeps that from commands (tests/it/sandbox_secrets.rs).
    std::fs::write(
        env.cwd.path().join("settings.txt"),
        format!("OPENAI_API_KEY={FLAG_KEY}\n"),
    )
    .unwrap();
    let replies = || {
        vec![
            Reply::sse(support::chat::tool_call(
                "c1",
                "bash",
                json!({"command": "cat settings.txt; printf 'echoed: %s\\n' \"$LEAK\""}),
            )),
            Reply::sse(support::chat::text("done")),
        ]
    };
    let server = FakeServer::start(replies()).await;
    let mut cmd = env.agent(
        &server,
        &[
            "--mode",
            "json",
            "--permission-mode",
            "auto",
            "--api-key",
            FLAG_KEY,
            "go",
        ],
    );
    // A variable the agent does not know to hide, holding the key.
    cmd.env("LEAK", FLAG_KEY);
    let out = run(cmd).await;
    assert_eq!(out.code, 0, "{}", out.stderr);
    let result = out
        .stdout
        .lines()
        .find(|l| l.contains("\"tool_execution_end\""))
        .expect("a tool result event");
    assert!(
        result.contains("OPENAI_API_KEY=[REDACTED]") && result.contains("echoed: [REDACTED]"),
        "{result}"
    );
    assert!(!out.stdout.contains(FLAG_KEY), "{}", out.stdout);
    let bodies = server.bodies();
    assert_eq!(bodies.len(), 2);
    let next = bodies[1].to_string();
    assert!(next.contains("echoed: [REDACTED]"), "{next}");
    assert!(!next.contains(FLAG_KEY), "{next}");
    for (path, text) in written_files(env.home.path()) {
        assert!(!text.contains(FLAG_KEY), "{} holds the key", path.display());
    }

    // RPC writes its events the same way; a prompt holding the key is masked on its way to
    // the provider too.
    let server = FakeServer::start(replies()).await;
    let mut cmd = env.agent(
        &server,
        &[
            "--mode",
            "rpc",
            "--permission-mode",
            "auto",
            "--api-key",
            FLAG_KEY,
        ],
    );
    cmd.env("LEAK", FLAG_KEY);
    let mut rpc = Rpc::spawn(cmd);
    rpc.send(json!({"id": "p", "type": "prompt", "message": format!("my key is {FLAG_KEY}")}))
        .await;
    let lines = rpc.until(|l| l["type"] == "agent_end").await;
    let text = serde_json::to_string(&lines).unwrap();
    assert!(text.contains("echoed: [REDACTED]"), "{text}");
    assert!(!text.contains(FLAG_KEY), "{text}");
    let first = server.bodies()[0].to_string();
    assert!(first.contains("my key is [REDACTED]"), "{first}");
    assert!(!first.contains(FLAG_KEY), "{first}");
}

#[tokio::test]
async fn acp_updates_never_carry_a_key() {
    let env = env();
    let server = FakeServer::start(vec![
        Reply::sse(support::chat::tool_call(
            "c1",
            "bash",
            // Prints the key, then waits until the test saw the partial result.
            json!({"command": format!(
                "printf 'echoed: %s\\n' \"$LEAK\"; {}",
                support::harness::after_file("go", "true")
            )}),
        )),
        Reply::sse(support::chat::text("done")),
    ])
    .await;
    let mut cmd = env.agent(&server, &["--mode", "acp", "--api-key", FLAG_KEY]);
    cmd.env("LEAK", FLAG_KEY);
    let mut acp = support::acp::Acp::spawn(cmd).await;
    let id = acp.open(env.cwd.path()).await.session_id;
    let answer = acp.prompt(&id, "run it");
    let (mut updates, _, responder) = acp.permission().await;
    support::acp::choose(responder, "allow_once");
    // The partial result, while the command runs: straight from the tool's output.
    let partial = acp
        .until(|u| u["sessionUpdate"] == "tool_call_update" && u.to_string().contains("echoed"))
        .await;
    std::fs::write(env.cwd.path().join("go"), "").unwrap();
    answer.await.unwrap().unwrap();
    updates.extend(partial);
    updates.extend(acp.drain());
    let text = serde_json::to_string(&updates).unwrap();
    assert!(text.contains("echoed: [REDACTED]"), "{text}");
    assert!(!text.contains(FLAG_KEY), "{text}");
}

/// A key a command prints while it still runs: the partial results every front end gets
/// (the interface draws them as they come) carry it masked, as the final result does.
#[tokio::test]
async fn a_key_in_a_running_commands_output_is_masked_in_its_partial_results() {
    use agent::protocol::event::AgentEvent;
    use agent::protocol::message::join_text;
    const LIVE_KEY: &str = "sk-test-live-output-secret-4242";
    agent::secrets::register(LIVE_KEY);
    let mut h = support::harness::Harness::start_with(vec![], |c| {
        c.tools = agent::tools::Tools::from_names(&["bash"]).unwrap();
    })
    .await;
    let go = h.dir.path().join("go");
    let command = format!(
        "printf 'key: {LIVE_KEY}\\n'; while [ ! -e {} ]; do sleep 0.02; done; echo end",
        go.display()
    );
    h.server.push(Reply::sse(support::chat::tool_call(
        "c1",
        "bash",
        json!({ "command": command }),
    )));
    h.server.push(Reply::sse(support::chat::text("done")));
    h.prompt("go");
    // The command waits until its output has been seen as a partial result.
    let partial = loop {
        if let AgentEvent::ToolExecutionUpdate { partial_result, .. } = h.next_event().await {
            let text = join_text(&partial_result.content);
            if text.contains("key: ") {
                break text;
            }
        }
    };
    std::fs::write(&go, "").unwrap();
    let events = h.until_end().await;
    assert!(partial.contains("key: [REDACTED]"), "{partial}");
    assert!(!partial.contains(LIVE_KEY), "{partial}");
    let result = events
        .iter()
        .find_map(|e| match e {
            AgentEvent::ToolExecutionEnd { result, .. } => Some(join_text(&result.content)),
            _ => None,
        })
        .unwrap();
    assert!(!result.contains(LIVE_KEY), "{result}");
}
