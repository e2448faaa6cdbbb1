//! The real binary, driven from outside as docs/protocol.md describes: `-p`, `--mode json`,
//! exit codes, and what a user sees when the config or a flag is wrong (`--mode rpc` is in
//! tests/it/rpc.rs).
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // test code fails loudly

use crate::support;

use serde_json::{Value, json};
use std::time::Duration;
use support::chat;
use support::env::{Env, env};
use support::process::{command, run};
use support::server::{FakeServer, Reply};

#[tokio::test]
async fn print_mode_completes_a_task_that_needs_two_tool_rounds() {
    let env = env();
    std::fs::write(env.cwd.path().join("input.txt"), "42\n").unwrap();
    let server = FakeServer::start(vec![
        Reply::sse(chat::tool_call("c1", "read", json!({"path": "input.txt"}))),
        Reply::sse(chat::tool_call(
            "c2",
            "bash",
            json!({"command": "expr 42 + 1 > output.txt"}),
        )),
        Reply::sse(chat::text("Wrote 43 to output.txt.")),
    ])
    .await;
    let out = run(env.agent(
        &server,
        &["-p", "--permission-mode", "auto", "add one to input.txt"],
    ))
    .await;
    assert_eq!(out.code, 0, "stderr: {}", out.stderr);
    assert_eq!(out.stdout, "Wrote 43 to output.txt.\n");
    assert_eq!(
        std::fs::read_to_string(env.cwd.path().join("output.txt")).unwrap(),
        "43\n"
    );
    let bodies = server.bodies();
    assert_eq!(bodies.len(), 3);
    assert_eq!(bodies[0]["messages"][1]["content"], "add one to input.txt");
    assert_eq!(bodies[1]["messages"][3]["content"], "42\n");
    // The default system prompt names the tools and the working directory.
    let system = bodies[0]["messages"][0]["content"].as_str().unwrap();
    assert!(
        system.contains("read, write, edit, bash, bash_output, kill_shell, grep, find, ls, todo_write, web_fetch"),
        "{system}"
    );
}

#[tokio::test]
async fn print_mode_reads_the_prompt_from_stdin() {
    let env = env();
    let server = chat::answering(&["pong"]).await;
    let mut cmd = env.agent(&server, &["-p"]);
    cmd.stdin(std::process::Stdio::piped());
    let mut child = cmd.spawn().unwrap();
    {
        use tokio::io::AsyncWriteExt;
        let mut stdin = child.stdin.take().unwrap();
        stdin.write_all(b"ping from a pipe").await.unwrap();
    }
    let output = child.wait_with_output().await.unwrap();
    assert_eq!(String::from_utf8_lossy(&output.stdout), "pong\n");
    assert_eq!(
        server.bodies()[0]["messages"][1]["content"],
        "ping from a pipe"
    );
}

#[tokio::test]
async fn print_mode_denies_mutating_tools_it_cannot_ask_about() {
    let env = env();
    let server = FakeServer::start(vec![
        Reply::sse(chat::tool_call(
            "c1",
            "bash",
            json!({"command": "touch made"}),
        )),
        Reply::sse(chat::text("I could not run it.")),
    ])
    .await;
    let out = run(env.agent(&server, &["-p", "make a file"])).await;
    assert_eq!(out.code, 0);
    assert!(!env.cwd.path().join("made").exists());
    assert!(
        out.stderr.contains("`bash` was not allowed to run"),
        "{}",
        out.stderr
    );
    let told = server.bodies()[1]["messages"][3]["content"]
        .as_str()
        .unwrap()
        .to_string();
    assert!(told.contains("--permission-mode auto"), "{told}");
}

#[tokio::test]
async fn print_mode_names_the_deny_rule_not_the_permission_mode() {
    let env = env();
    std::fs::write(
        env.home.path().join("config.toml"),
        "[permissions]\ndeny = [\"bash(touch *)\"]\n",
    )
    .unwrap();
    let server = FakeServer::start(vec![
        Reply::sse(chat::tool_call(
            "c1",
            "bash",
            json!({"command": "touch made"}),
        )),
        Reply::sse(chat::text("Not allowed.")),
    ])
    .await;
    let out = run(env.agent(&server, &["-p", "--permission-mode", "auto", "make a file"])).await;
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert!(!env.cwd.path().join("made").exists());
    assert!(
        out.stderr
            .contains("`bash` was not allowed to run (a [permissions] deny rule forbids it)"),
        "{}",
        out.stderr
    );
    assert!(
        !out.stderr.contains("--permission-mode auto"),
        "{}",
        out.stderr
    );
}

#[tokio::test]
async fn a_provider_failure_ends_with_one_clear_line() {
    let env = env();
    let server = FakeServer::start(vec![Reply::status(
        401,
        r#"{"error":{"message":"Incorrect API key provided"}}"#,
    )])
    .await;
    let mut cmd = env.agent(&server, &["-p", "hi"]);
    cmd.env("OPENAI_API_KEY", "sk-wrong");
    let out = run(cmd).await;
    assert_eq!(out.code, 1);
    assert_eq!(out.stdout, "");
    let last = out.stderr.lines().last().unwrap();
    assert_eq!(
        last,
        "agent: error: HTTP 401 Unauthorized: Incorrect API key provided (check OPENAI_API_KEY)"
    );
    assert_eq!(
        server.requests()[0].header("authorization"),
        Some("Bearer sk-wrong")
    );
}

#[tokio::test]
async fn a_missing_key_for_a_hosted_provider_names_the_variable() {
    let env = env();
    let mut cmd = command(env.home.path(), env.cwd.path());
    cmd.args(["-p", "hi"]);
    let out = run(cmd).await;
    assert_eq!(out.code, 1);
    assert!(out.stderr.trim_end().ends_with("no API key for provider `openai`: set the OPENAI_API_KEY environment variable, pass --api-key, or run `agent login --provider openai`"), "{}", out.stderr);
}

#[tokio::test]
async fn json_mode_writes_every_event_as_a_line() {
    let env = env();
    let server = FakeServer::start(vec![
        Reply::sse(chat::tool_call("c1", "bash", json!({"command": "echo hi"}))),
        Reply::sse(chat::text_deltas(&["do", "ne"])),
    ])
    .await;
    let out = run(env.agent(
        &server,
        &["--mode", "json", "--permission-mode", "auto", "go"],
    ))
    .await;
    assert_eq!(out.code, 0, "{}", out.stderr);
    for line in out.stdout.lines() {
        assert!(line.starts_with("{\"type\":\""), "`type` first: {line}");
    }
    let lines: Vec<Value> = out
        .stdout
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(lines[0]["type"], "session");
    assert!(lines[0]["id"].as_str().unwrap().len() >= 16);
    let session_file = lines[0]["path"].as_str().expect("a session file");
    assert!(std::path::Path::new(session_file).starts_with(env.home.path().join("sessions")));
    assert_eq!(lines[0]["cwd"], env.cwd.path().to_str().unwrap());
    assert_eq!(lines[1]["type"], "state");
    assert_eq!(lines[2]["type"], "agent_start");
    let types: Vec<&str> = lines.iter().map(|l| l["type"].as_str().unwrap()).collect();
    assert_eq!(types.last(), Some(&"agent_end"));
    let states: Vec<&str> = lines
        .iter()
        .filter(|l| l["type"] == "state")
        .map(|l| l["state"].as_str().unwrap())
        .collect();
    assert_eq!(
        states,
        [
            "preparing",
            "model_running",
            "tool_running",
            "model_running",
            "completed"
        ]
    );
    assert!(types.contains(&"tool_execution_start") && types.contains(&"tool_execution_end"));
    let deltas: Vec<&Value> = lines
        .iter()
        .filter(|l| l["type"] == "message_update")
        .collect();
    assert!(
        deltas.iter().all(|d| d.get("message").is_none()),
        "updates carry only the delta"
    );
    assert!(deltas.iter().any(|d| d["assistantMessageEvent"]
        == json!({"type": "text_delta", "contentIndex": 0, "delta": "ne"})));
    let end = lines.last().unwrap();
    assert_eq!(end["status"], "completed");
    assert_eq!(end["messages"].as_array().unwrap().len(), 4);
}

#[tokio::test]
async fn config_errors_name_the_file_and_key() {
    let env = env();
    std::fs::write(
        env.home.path().join("config.toml"),
        "[limits]\nmax_turns = \"lots\"\n",
    )
    .unwrap();
    let mut cmd = command(env.home.path(), env.cwd.path());
    cmd.args(["-p", "hi"]);
    let out = run(cmd).await;
    assert_eq!(out.code, 1);
    let path = env.home.path().join("config.toml");
    assert_eq!(out.stderr.lines().count(), 1, "{}", out.stderr);
    assert!(
        out.stderr.starts_with(&format!(
            "agent: config error in {}: `limits.max_turns`: ",
            path.display()
        )),
        "{}",
        out.stderr
    );
    assert!(out.stderr.contains("line 2"), "{}", out.stderr);

    std::fs::write(
        env.home.path().join("config.toml"),
        "provider = \"nowhere\"\n",
    )
    .unwrap();
    let mut cmd = command(env.home.path(), env.cwd.path());
    cmd.args(["-p", "hi"]);
    let out = run(cmd).await;
    assert_eq!(out.code, 1);
    assert!(
        out.stderr
            .contains("`provider`: unknown provider `nowhere` (known: openai, anthropic"),
        "{}",
        out.stderr
    );
}

#[tokio::test]
async fn bad_permission_rules_and_tool_settings_name_the_file_and_key() {
    let env = env();
    let path = env.home.path().join("config.toml");
    for (config, key, message) in [
        (
            "[permissions]\nallow = [\"read\", \"edit(src/[)\"]\n",
            "permissions.allow[1]",
            "`src/[` is not a valid glob",
        ),
        (
            "[permissions]\ndeny = [\"bash(rm -rf *\"]\n",
            "permissions.deny[0]",
            "`bash(rm -rf *` has no closing parenthesis",
        ),
        (
            "[tools]\nexecution = \"sideways\"\n",
            "tools.execution",
            "sideways",
        ),
        (
            "[guard]\nrepeat_threshold = 1\n",
            "guard.repeat_threshold",
            "must be at least 2",
        ),
    ] {
        std::fs::write(&path, config).unwrap();
        let mut cmd = command(env.home.path(), env.cwd.path());
        cmd.args(["-p", "hi"]);
        let out = run(cmd).await;
        assert_eq!(out.code, 1, "{config}");
        assert_eq!(out.stderr.lines().count(), 1, "{}", out.stderr);
        assert!(
            out.stderr.starts_with(&format!(
                "agent: config error in {}: `{key}`: ",
                path.display()
            )),
            "{}",
            out.stderr
        );
        assert!(out.stderr.contains(message), "{}", out.stderr);
    }
}

/// The tools a request offers the model, by name.
fn offered(body: &Value) -> Vec<String> {
    body["tools"]
        .as_array()
        .map(|tools| {
            tools
                .iter()
                .map(|t| t["function"]["name"].as_str().unwrap().to_string())
                .collect()
        })
        .unwrap_or_default()
}

/// A tool list means that list: `task` (sub-agents) is offered only when it is named, on
/// the command line as in `[tools] enabled`.
#[tokio::test]
async fn a_tool_list_offers_exactly_the_tools_it_names() {
    let env = env();
    let server = FakeServer::start(vec![
        Reply::sse(chat::text("a")),
        Reply::sse(chat::text("b")),
        Reply::sse(chat::text("c")),
    ])
    .await;
    assert_eq!(
        offered_by(&env, &server, &["--tools", "ls,read", "-p", "x"]).await,
        ["ls", "read"]
    );
    assert_eq!(
        offered_by(&env, &server, &["--tools", "ls,task", "-p", "x"]).await,
        ["ls", "task"]
    );
    std::fs::write(
        env.home.path().join("config.toml"),
        "[tools]\nenabled = [\"read\"]\n",
    )
    .unwrap();
    assert_eq!(offered_by(&env, &server, &["-p", "x"]).await, ["read"]);
}

/// The tools the model was offered by a run of `agent ARGS` that succeeds.
async fn offered_by(env: &Env, server: &FakeServer, args: &[&str]) -> Vec<String> {
    let out = run(env.agent(server, args)).await;
    assert_eq!(out.code, 0, "{args:?}: {}", out.stderr);
    offered(server.bodies().last().unwrap())
}

#[tokio::test]
async fn usage_errors_exit_with_2() {
    let env = env();
    for args in [
        vec!["--permission-mode", "yolo", "-p", "x"],
        vec!["--provider", "nowhere", "-p", "x"],
        vec!["--tools", "read,teleport", "-p", "x"],
        vec!["-r", "-p", "x"],
        vec!["-p"],
    ] {
        let mut cmd = command(env.home.path(), env.cwd.path());
        cmd.args(&args);
        let out = run(cmd).await;
        assert_eq!(out.code, 2, "{args:?}: {}", out.stderr);
        assert!(!out.stderr.is_empty());
    }
    let mut cmd = command(env.home.path(), env.cwd.path());
    cmd.arg("--version");
    let out = run(cmd).await;
    assert_eq!(out.code, 0);
    assert!(out.stdout.starts_with("agent "));
}

#[tokio::test]
async fn an_unknown_tool_is_named_with_every_tool_a_list_may_hold() {
    let env = env();
    let mut cmd = command(env.home.path(), env.cwd.path());
    cmd.args(["--tools", "read,tsk", "-p", "x"]);
    let out = run(cmd).await;
    assert_eq!(out.code, 2, "{}", out.stderr);
    let line = out.stderr.lines().last().unwrap_or_default();
    assert!(line.contains("unknown tool `tsk`"), "{line}");
    // `task` may be listed too (a list means that list), so it is among the names offered.
    let available = line.split("available: ").nth(1).unwrap_or_default();
    assert!(available.contains("read"), "{line}");
    assert!(available.contains("task"), "{line}");
}

#[tokio::test]
async fn sigint_aborts_a_headless_run_with_130() {
    let env = env();
    let server = FakeServer::start(vec![Reply::sse(chat::tool_call(
        "c1",
        "bash",
        json!({"command": "echo $$ > shell.pid; sleep 30"}),
    ))])
    .await;
    let mut child = env
        .agent(&server, &["-p", "--permission-mode", "auto", "wait"])
        .spawn()
        .unwrap();
    let shell = support::harness::wait_for_pid(&env.cwd.path().join("shell.pid")).await;
    unsafe {
        libc::kill(child.id().unwrap() as i32, libc::SIGINT);
    }
    let status = tokio::time::timeout(Duration::from_secs(20), child.wait())
        .await
        .unwrap()
        .unwrap();
    assert_eq!(status.code(), Some(130));
    assert!(
        support::harness::wait_until_dead(shell).await,
        "the command survived"
    );
}

#[tokio::test]
async fn the_log_records_state_transitions_and_never_the_key() {
    let env = env();
    let server = FakeServer::start(vec![
        Reply::sse(chat::tool_call("c1", "bash", json!({"command": "true"}))),
        Reply::status(500, "boom"),
        Reply::sse(chat::text("ok")),
    ])
    .await;
    let mut cmd = env.agent(
        &server,
        &[
            "-p",
            "--permission-mode",
            "auto",
            "--api-key",
            "sk-very-secret-42",
            "go",
        ],
    );
    cmd.env("RUST_LOG", "trace");
    let out = run(cmd).await;
    assert_eq!(out.code, 0, "{}", out.stderr);
    let log = std::fs::read_to_string(env.home.path().join("logs/agent.log")).unwrap();
    for needle in [
        "to=\"model_running\"",
        "to=\"tool_running\"",
        "to=\"retrying\"",
        "to=\"completed\"",
        "tool finished",
        "retrying model call",
    ] {
        assert!(log.contains(needle), "missing {needle} in the log");
    }
    assert!(log.contains("duration_ms="));
    assert!(
        !log.contains("sk-very-secret-42"),
        "the API key leaked into the log"
    );
    assert!(out.stderr.contains("retrying in"), "{}", out.stderr);
}

#[tokio::test]
async fn commands_never_see_the_provider_keys() {
    let env = env();
    let server = FakeServer::start(vec![
        Reply::sse(chat::tool_call(
            "c1",
            "bash",
            json!({"command": "echo \"key=[$OPENAI_API_KEY] other=[$UNRELATED_VAR]\""}),
        )),
        Reply::sse(chat::text("ok")),
    ])
    .await;
    let mut cmd = env.agent(
        &server,
        &["-p", "--permission-mode", "auto", "show the env"],
    );
    cmd.env("OPENAI_API_KEY", "sk-must-not-leak")
        .env("UNRELATED_VAR", "kept");
    let out = run(cmd).await;
    assert_eq!(out.code, 0, "{}", out.stderr);
    let result = server.bodies()[1]["messages"][3]["content"]
        .as_str()
        .unwrap()
        .to_string();
    assert!(result.starts_with("key=[] other=[kept]"), "{result}");
}

#[tokio::test]
async fn help_names_every_built_in_provider() {
    let env = env();
    let mut cmd = command(env.home.path(), env.cwd.path());
    cmd.arg("--help");
    let out = run(cmd).await;
    assert_eq!(out.code, 0, "stderr: {}", out.stderr);
    let help = out.stdout.split_whitespace().collect::<Vec<_>>().join(" ");
    for name in [
        "openai,",
        "anthropic,",
        "openai-responses,",
        "openrouter,",
        "ollama,",
        "lmstudio,",
        "llama.cpp,",
        "vllm)",
    ] {
        assert!(help.contains(name), "`{name}` missing from --help:\n{help}");
    }
}

#[tokio::test]
async fn help_names_the_environment_the_config_file_and_examples() {
    let env = env();
    let mut cmd = command(env.home.path(), env.cwd.path());
    cmd.arg("--help");
    let out = run(cmd).await;
    assert_eq!(out.code, 0, "stderr: {}", out.stderr);
    let help = out.stdout;
    for needed in [
        "OPENAI_API_KEY",
        "ANTHROPIC_API_KEY",
        "OPENROUTER_API_KEY",
        "AGENT_HOME",
        "NO_COLOR",
        "RUST_LOG",
        "Examples:",
        "agent -c",
        "agent -p",
    ] {
        assert!(
            help.contains(needed),
            "`{needed}` missing from --help:\n{help}"
        );
    }
    // The configuration file where this installation reads it, and no pointer to a file
    // that only a source checkout has.
    let config = env.home.path().join("config.toml");
    assert!(
        help.contains(&config.display().to_string()),
        "{} missing from --help:\n{help}",
        config.display()
    );
    assert!(!help.contains("config.example.toml"), "{help}");
}

/// Behind LiteLLM: the provider's `Retry-After` comes as `llm_provider-retry-after`, and a
/// wait longer than `max_retry_delay_ms` fails at once with it; the provider's message over
/// several lines still ends the run with exactly one explaining line on stderr (the events
/// keep the line breaks).
#[tokio::test]
async fn a_rate_limit_behind_litellm_waits_as_asked_and_ends_with_one_line() {
    use support::litellm::rate_limited;
    let message = "litellm.RateLimitError: OpenAIException - Rate limit reached.\nLimit: 10 RPM\n\nPlease slow down";
    let env = env();
    let server = FakeServer::start(vec![rate_limited(message, 86_400)]).await;
    let out = run(env.agent(&server, &["-p", "hi"])).await;
    assert_eq!(out.code, 1, "{}", out.stderr);
    assert_eq!(
        server.requests().len(),
        1,
        "not retried: the wait asked is too long"
    );
    let lines: Vec<&str> = out.stderr.lines().collect();
    let last = lines.last().unwrap();
    assert!(
        last.starts_with("agent: error: HTTP 429 Too Many Requests: litellm.RateLimitError")
            && last.contains("Rate limit reached. Limit: 10 RPM Please slow down")
            && last.contains("asks to wait"),
        "{}",
        out.stderr
    );
    assert!(
        !lines.iter().any(|l| l.starts_with("Please slow down")),
        "{}",
        out.stderr
    );

    let server = FakeServer::start(vec![rate_limited(message, 86_400)]).await;
    let out = run(env.agent(&server, &["--mode", "json", "hi"])).await;
    assert_eq!(out.code, 1, "{}", out.stderr);
    let end: Value = out
        .stdout
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).unwrap())
        .find(|e| e["type"] == "agent_end")
        .unwrap();
    assert!(
        end["error"]
            .as_str()
            .unwrap()
            .contains("reached.\nLimit: 10 RPM\n\nPlease"),
        "{end}"
    );
    let last = out.stderr.lines().last().unwrap();
    assert!(
        last.contains("Limit: 10 RPM Please slow down"),
        "{}",
        out.stderr
    );
    assert_eq!(
        out.stderr
            .lines()
            .filter(|l| l.contains("slow down"))
            .count(),
        1
    );
}

/// An installed agent has no config.example.toml: `agent config init` writes that text
/// where the agent reads its config (0600), once; `agent config path` says where, also
/// before the file exists, and both follow `--config`.
#[tokio::test]
async fn config_init_writes_a_commented_config_once() {
    use std::os::unix::fs::PermissionsExt;
    let env = env();
    let config = |args: &[&str]| {
        let mut cmd = command(env.home.path(), env.cwd.path());
        cmd.arg("config").args(args);
        run(cmd)
    };
    let file = env.home.path().join("config.toml");
    let path = config(&["path"]).await;
    assert_eq!(path.code, 0, "{}", path.stderr);
    assert_eq!(path.stdout, format!("{}\n", file.display()));
    assert!(!file.exists());

    let init = config(&["init"]).await;
    assert_eq!(init.code, 0, "{}", init.stderr);
    let text = std::fs::read_to_string(&file).unwrap();
    assert!(text.starts_with("# agent"), "{text}");
    assert!(text.contains("# permission_mode = \"ask\""), "{text}");
    let mode = std::fs::metadata(&file).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode, 0o600);
    // The agent starts with it: every key is commented out.
    let server = chat::answering(&["fine"]).await;
    let out = run(env.agent(&server, &["-p", "hi"])).await;
    assert_eq!(out.code, 0, "{}", out.stderr);

    // Not overwritten without --force.
    std::fs::write(&file, "model = \"mine\"\n").unwrap();
    let again = config(&["init"]).await;
    assert_eq!(again.code, 1);
    assert!(again.stderr.contains("--force"), "{}", again.stderr);
    assert_eq!(
        std::fs::read_to_string(&file).unwrap(),
        "model = \"mine\"\n"
    );
    let forced = config(&["init", "--force"]).await;
    assert_eq!(forced.code, 0, "{}", forced.stderr);
    assert_eq!(std::fs::read_to_string(&file).unwrap(), text);

    let other = env.cwd.path().join("conf/other.toml");
    let other_text = other.to_str().unwrap();
    let path = config(&["--config", other_text, "path"]).await;
    assert_eq!(path.stdout, format!("{other_text}\n"));
    let init = config(&["init", "--config", other_text]).await;
    assert_eq!(init.code, 0, "{}", init.stderr);
    assert_eq!(std::fs::read_to_string(&other).unwrap(), text);
}
