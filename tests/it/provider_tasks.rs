//! A task that needs two tool rounds, completed against an Anthropic-style and a
//! Responses-style loopback server: through the Agent, and through the real binary
//! (`--provider anthropic --base-url ...`, and a config-file provider with
//! `api = "openai-responses"`). Each round's request must carry the previous rounds:
//! tool calls, their results, and the reasoning the model may verify.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // test code fails loudly

use crate::support;

use agent::llm::provider::Api;
use agent::llm::request::ThinkingLevel;
use serde_json::{Value, json};
use support::harness::{Harness, end_of};
use support::process::{command, run};
use support::server::{FakeServer, Reply};
use support::{anthropic, responses};

const TASK: &str = "add one to the number in input.txt and write it to output.txt";

fn anthropic_script() -> Vec<Reply> {
    vec![
        Reply::sse(
            anthropic::Stream::new()
                .thinking("I need the number first.", "sig-round-1")
                .tool_call("toolu_1", "read", json!({"path": "input.txt"}))
                .finish("tool_use"),
        ),
        Reply::sse(anthropic::tool_call(
            "toolu_2",
            "bash",
            json!({"command": "expr 42 + 1 > output.txt"}),
        )),
        Reply::sse(anthropic::text("Wrote 43 to output.txt.")),
    ]
}

fn responses_script() -> Vec<Reply> {
    vec![
        Reply::sse(
            responses::Stream::new()
                .reasoning("Read the file first.", "enc-round-1")
                .tool_call("call_1", "read", json!({"path": "input.txt"}))
                .finish(),
        ),
        Reply::sse(responses::tool_call(
            "call_2",
            "bash",
            json!({"command": "expr 42 + 1 > output.txt"}),
        )),
        Reply::sse(responses::text("Wrote 43 to output.txt.")),
    ]
}

/// The Anthropic requests of the task: round two and three see everything before them.
fn check_anthropic_rounds(bodies: &[Value]) {
    assert_eq!(bodies.len(), 3);
    let second = &bodies[1]["messages"];
    assert_eq!(second.as_array().unwrap().len(), 3, "{second}");
    assert_eq!(
        second[1]["content"][0],
        json!({"type": "thinking", "thinking": "I need the number first.",
               "signature": "sig-round-1"})
    );
    assert_eq!(
        second[1]["content"][1],
        json!({"type": "tool_use", "id": "toolu_1", "name": "read",
               "input": {"path": "input.txt"}})
    );
    assert_eq!(second[2]["role"], "user");
    assert_eq!(second[2]["content"][0]["type"], "tool_result");
    assert_eq!(second[2]["content"][0]["tool_use_id"], "toolu_1");
    assert_eq!(second[2]["content"][0]["content"][0]["text"], "42\n");
    let third = bodies[2]["messages"].as_array().unwrap();
    let roles: Vec<&str> = third.iter().map(|t| t["role"].as_str().unwrap()).collect();
    assert_eq!(roles, ["user", "assistant", "user", "assistant", "user"]);
    assert_eq!(third[4]["content"][0]["tool_use_id"], "toolu_2");
    assert_eq!(third[4]["content"][0]["is_error"], false);
}

/// The Responses requests of the task.
fn check_responses_rounds(bodies: &[Value]) {
    assert_eq!(bodies.len(), 3);
    let second = bodies[1]["input"].as_array().unwrap();
    let kinds: Vec<&str> = second.iter().map(|i| i["type"].as_str().unwrap()).collect();
    assert_eq!(
        kinds,
        [
            "message",
            "reasoning",
            "function_call",
            "function_call_output"
        ]
    );
    assert_eq!(second[1]["encrypted_content"], "enc-round-1");
    assert_eq!(
        second[1]["summary"],
        json!([{"type": "summary_text", "text": "Read the file first."}])
    );
    assert_eq!(second[2]["call_id"], "call_1");
    assert_eq!(second[2]["arguments"], "{\"path\":\"input.txt\"}");
    assert_eq!(
        second[3],
        json!({"type": "function_call_output", "call_id": "call_1", "output": "42\n"})
    );
    let third = bodies[2]["input"].as_array().unwrap();
    assert_eq!(third.len(), 6);
    assert_eq!(third[5]["call_id"], "call_2");
    assert!(bodies.iter().all(|b| b["store"] == false));
}

async fn run_agent_task(api: Api, script: Vec<Reply>) -> Harness {
    let mut h = Harness::start_api(api, script, |config| {
        config.thinking = ThinkingLevel::Low;
    })
    .await;
    std::fs::write(h.dir.path().join("input.txt"), "42\n").unwrap();
    h.prompt(TASK);
    let events = h.until_end().await;
    assert_eq!(end_of(&events), ("completed".to_string(), None));
    let messages = h.agent.messages();
    assert_eq!(messages.len(), 6, "user, 2 × (assistant, result), answer");
    assert_eq!(
        messages[5].as_assistant().unwrap().text(),
        "Wrote 43 to output.txt."
    );
    assert_eq!(
        std::fs::read_to_string(h.dir.path().join("output.txt")).unwrap(),
        "43\n"
    );
    h
}

#[tokio::test]
async fn the_agent_completes_a_two_round_task_over_anthropic() {
    let h = run_agent_task(Api::Anthropic, anthropic_script()).await;
    let bodies = h.server.bodies();
    check_anthropic_rounds(&bodies);
    assert_eq!(bodies[0]["thinking"]["type"], "enabled");
}

#[tokio::test]
async fn the_agent_completes_a_two_round_task_over_responses() {
    let h = run_agent_task(Api::OpenaiResponses, responses_script()).await;
    let bodies = h.server.bodies();
    check_responses_rounds(&bodies);
    assert_eq!(bodies[0]["reasoning"]["effort"], "low");
}

#[tokio::test]
async fn the_binary_completes_a_two_round_task_with_the_builtin_anthropic_provider() {
    let home = tempfile::tempdir().unwrap();
    let cwd = tempfile::tempdir().unwrap();
    std::fs::write(cwd.path().join("input.txt"), "42\n").unwrap();
    let server = FakeServer::start(anthropic_script()).await;
    let mut cmd = command(home.path(), cwd.path());
    cmd.env("ANTHROPIC_API_KEY", "sk-ant-test")
        .args(["--provider", "anthropic", "--base-url", &server.origin])
        .args(["--model", "claude-sonnet-4-5", "--thinking", "medium"])
        .args(["-p", "--permission-mode", "auto", TASK]);
    let out = run(cmd).await;
    assert_eq!(out.code, 0, "stderr: {}", out.stderr);
    assert_eq!(out.stdout, "Wrote 43 to output.txt.\n");
    assert_eq!(
        std::fs::read_to_string(cwd.path().join("output.txt")).unwrap(),
        "43\n"
    );
    let requests = server.requests();
    assert!(requests.iter().all(|r| r.path == "/v1/messages"));
    assert!(
        requests
            .iter()
            .all(|r| r.header("x-api-key") == Some("sk-ant-test"))
    );
    let bodies = server.bodies();
    check_anthropic_rounds(&bodies);
    // The catalog knows this model's output limit.
    assert_eq!(bodies[0]["max_tokens"], 64_000);
    assert_eq!(
        bodies[0]["thinking"],
        json!({"type": "enabled", "budget_tokens": 10_000})
    );
    assert!(bodies[0]["system"][0]["text"].as_str().unwrap().contains(
        "read, write, edit, bash, bash_output, kill_shell, grep, find, ls, todo_write, web_fetch"
    ));
}

#[tokio::test]
async fn the_binary_completes_a_two_round_task_with_a_configured_responses_provider() {
    let home = tempfile::tempdir().unwrap();
    let cwd = tempfile::tempdir().unwrap();
    std::fs::write(cwd.path().join("input.txt"), "42\n").unwrap();
    let server = FakeServer::start(responses_script()).await;
    std::fs::write(
        home.path().join("config.toml"),
        format!(
            "provider = \"my-responses\"\nmodel = \"gpt-5-mini\"\nthinking = \"low\"\n\n\
             [providers.my-responses]\napi = \"openai-responses\"\nbase_url = \"{}\"\n\
             api_key_env = \"AGENT_TEST_RESPONSES_KEY\"\n",
            server.v1()
        ),
    )
    .unwrap();
    let mut cmd = command(home.path(), cwd.path());
    cmd.env("AGENT_TEST_RESPONSES_KEY", "sk-resp-test").args([
        "--mode",
        "json",
        "--permission-mode",
        "auto",
        TASK,
    ]);
    let out = run(cmd).await;
    assert_eq!(out.code, 0, "stderr: {}", out.stderr);
    assert_eq!(
        std::fs::read_to_string(cwd.path().join("output.txt")).unwrap(),
        "43\n"
    );
    let requests = server.requests();
    assert!(requests.iter().all(|r| r.path == "/v1/responses"));
    assert!(
        requests
            .iter()
            .all(|r| r.header("authorization") == Some("Bearer sk-resp-test"))
    );
    let bodies = server.bodies();
    check_responses_rounds(&bodies);
    assert_eq!(bodies[0]["model"], "gpt-5-mini");
    assert_eq!(
        bodies[0]["reasoning"],
        json!({"effort": "low", "summary": "auto"})
    );

    let lines: Vec<Value> = out
        .stdout
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let end = lines.last().unwrap();
    assert_eq!(end["type"], "agent_end");
    assert_eq!(end["status"], "completed");
    // Usage is split into uncached input and cache reads, and priced from the catalog
    // (gpt-5-mini: $0.25 input, $0.025 cached input, $2 output per million tokens).
    let answer = &end["messages"][5];
    assert_eq!(answer["content"][0]["text"], "Wrote 43 to output.txt.");
    let usage = &answer["usage"];
    assert_eq!(
        (
            &usage["input"],
            &usage["cacheRead"],
            &usage["output"],
            &usage["totalTokens"]
        ),
        (&json!(10), &json!(20), &json!(12), &json!(42))
    );
    let total = usage["cost"]["total"].as_f64().unwrap();
    let expected = (10.0 * 0.25 + 20.0 * 0.025 + 12.0 * 2.0) / 1e6;
    assert!((total - expected).abs() < 1e-12, "{total} vs {expected}");
}

#[tokio::test]
async fn the_builtin_openai_responses_provider_uses_the_openai_key_and_gpt_5() {
    let home = tempfile::tempdir().unwrap();
    let cwd = tempfile::tempdir().unwrap();
    let server = FakeServer::start(vec![Reply::sse(responses::text("hello"))]).await;
    let mut cmd = command(home.path(), cwd.path());
    cmd.env("OPENAI_API_KEY", "sk-openai-test")
        .env("OPENAI_BASE_URL", server.v1())
        .args(["--provider", "openai-responses", "-p", "hi"]);
    let out = run(cmd).await;
    assert_eq!(out.code, 0, "stderr: {}", out.stderr);
    assert_eq!(out.stdout, "hello\n");
    let request = &server.requests()[0];
    assert_eq!(request.path, "/v1/responses");
    assert_eq!(
        request.header("authorization"),
        Some("Bearer sk-openai-test")
    );
    assert_eq!(request.body["model"], "gpt-5");
}
