//! Issue 34 §1: the usage ledger as every front end sees it — `usage_update` events and
//! `get_session_stats.usage` over RPC (per model, per sub-agent, per tool, cost), and the
//! final `--verbose` line of `-p`, which says "price unknown" rather than $0.

use crate::support::delegation::delegating_once;
use crate::support::env::env;
use crate::support::process::{Rpc, run};
use serde_json::json;

/// Prices for `test-model` (USD per million tokens) that make each call's cost visible.
const PRICED: &str =
    "[providers.openai.models.test-model]\ncost_input = 1000.0\ncost_output = 2000.0\n";

#[tokio::test]
async fn rpc_stats_break_usage_down_per_model_sub_agent_and_tool() {
    let env = env();
    std::fs::write(env.home.path().join("config.toml"), PRICED).unwrap();
    // Parent: task call, then an answer. Child: a bash call, then an answer. Each tool-call
    // reply reports 20 input / 10 output tokens; each text reply 10 input / one per word.
    let server = delegating_once("echo hello-from-child", Some("child done"), "parent done").await;
    let mut rpc = Rpc::spawn(env.agent(&server, &["--mode", "rpc", "--permission-mode", "auto"]));
    rpc.send(json!({"id": "p", "type": "prompt", "message": "delegate"}))
        .await;
    let lines = rpc.until(|l| l["type"] == "agent_end").await;
    let updates: Vec<_> = lines
        .iter()
        .filter(|l| l["type"] == "usage_update")
        .collect();
    assert!(
        updates.len() >= 4,
        "a usage_update after each of the four model calls: {updates:?}"
    );
    let last = &updates[updates.len() - 1]["usage"];
    assert_eq!(last["calls"], 4, "{last}");

    rpc.send(json!({"id": "st", "type": "get_session_stats"}))
        .await;
    let stats = rpc.response("st").await["data"].clone();
    let usage = &stats["usage"];
    assert_eq!(usage["calls"], 4, "{usage}");
    // Parent: 20 + 10 input, 10 + 2 output; child: 20 + 10 input, 10 + 2 output.
    assert_eq!(usage["total"]["input"], 60, "{usage}");
    assert_eq!(usage["total"]["output"], 24, "{usage}");
    let cost = usage["cost"].as_f64().expect("a known cost");
    let expected = (60.0 * 1000.0 + 24.0 * 2000.0) / 1_000_000.0;
    assert!((cost - expected).abs() < 1e-9, "{cost} vs {expected}");
    assert_eq!(usage["priceUnknown"], json!([]));
    let models = usage["models"].as_array().unwrap();
    assert_eq!(models.len(), 1, "{usage}");
    assert_eq!(models[0]["model"], "test-model");
    assert_eq!(models[0]["calls"], 4);
    let agents = usage["agents"].as_array().unwrap();
    assert_eq!(agents.len(), 1, "{usage}");
    assert_eq!(agents[0]["agentId"], "a1");
    assert_eq!(agents[0]["name"], "general");
    assert_eq!(
        agents[0]["calls"], 2,
        "the child's two calls, rolled up: {usage}"
    );
    assert_eq!(agents[0]["usage"]["input"], 30);
    let tools = usage["tools"].as_array().unwrap();
    let task = tools.iter().find(|t| t["tool"] == "task").expect("task");
    assert_eq!(task["calls"], 1);
    assert!(task["resultTokens"].as_u64().unwrap() > 0, "{usage}");
    // The parent's own tools only: the child's bash result is in the child's context.
    assert!(tools.iter().all(|t| t["tool"] != "bash"), "{usage}");
    // The old fields agree with the breakdown.
    assert_eq!(stats["tokens"]["input"], 60);

    rpc.send(json!({"id": "cx", "type": "get_context"})).await;
    let context = rpc.response("cx").await["data"].clone();
    let parts = context["parts"].as_array().unwrap();
    let tokens = |name: &str| {
        parts
            .iter()
            .find(|p| p["part"] == name)
            .and_then(|p| p["tokens"].as_u64())
            .unwrap_or_else(|| panic!("no {name}: {context}"))
    };
    assert!(tokens("system_prompt") > 0);
    assert!(tokens("tools_builtin") > tokens("messages"), "{context}");
    let sum: u64 = parts.iter().map(|p| p["tokens"].as_u64().unwrap()).sum();
    assert_eq!(context["total"], sum);
    assert_eq!(context["contextWindow"], 128_000);
    rpc.close_stdin();
    assert_eq!(rpc.exit_code().await, 0);
}

#[tokio::test]
async fn verbose_print_ends_with_a_usage_line_and_unknown_prices_are_not_zero() {
    let env = env();
    let server = crate::support::chat::answering(&["hi there"]).await;
    let out = run(env.agent(&server, &["-p", "--verbose", "hello"])).await;
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert_eq!(out.stdout.trim(), "hi there");
    let line = out
        .stderr
        .lines()
        .find(|l| l.starts_with("agent: usage:"))
        .unwrap_or_else(|| panic!("no usage line: {}", out.stderr));
    assert!(line.contains("1 calls, 10 input, 2 output"), "{line}");
    assert!(line.contains("price unknown (test-model)"), "{line}");
    assert!(!line.contains('$'), "{line}");

    // Priced, in json mode: the events on stdout, the line on stderr with the cost.
    std::fs::write(env.home.path().join("config.toml"), PRICED).unwrap();
    let server = crate::support::chat::answering(&["hi there"]).await;
    let out = run(env.agent(&server, &["--mode", "json", "--verbose", "hello"])).await;
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert!(
        out.stdout.contains("\"type\":\"usage_update\""),
        "{}",
        out.stdout
    );
    let line = out
        .stderr
        .lines()
        .find(|l| l.starts_with("agent: usage:"))
        .unwrap_or_else(|| panic!("no usage line: {}", out.stderr));
    assert!(
        line.contains("cost $0.0140"),
        "10×1000 + 2×2000 per million: {line}"
    );

    // Without --verbose, no line.
    let server = crate::support::chat::answering(&["hi there"]).await;
    let out = run(env.agent(&server, &["-p", "hello"])).await;
    assert!(!out.stderr.contains("agent: usage:"), "{}", out.stderr);
}

/// Issue 34 §3: every request of a session carries the session's id as OpenAI's
/// `prompt_cache_key` on the Responses API, so they share one prompt cache.
#[tokio::test]
async fn responses_requests_carry_the_session_as_prompt_cache_key() {
    use crate::support::responses::Stream;
    let env = env();
    let server = crate::support::server::FakeServer::start(vec![
        crate::support::server::Reply::sse(
            Stream::new().tool_call("call_1", "ls", json!({})).finish(),
        ),
        crate::support::server::Reply::sse(Stream::new().text("done").finish()),
    ])
    .await;
    std::fs::write(
        env.home.path().join("config.toml"),
        format!(
            "provider = \"resp\"\nmodel = \"gpt-5-mini\"\n\n[providers.resp]\n\
             api = \"openai-responses\"\nbase_url = \"{}\"\napi_key_env = \"AGENT_TEST_KEY\"\n",
            server.v1()
        ),
    )
    .unwrap();
    let mut cmd = crate::support::process::command(env.home.path(), env.cwd.path());
    cmd.env("AGENT_TEST_KEY", "sk-test").args([
        "--mode",
        "json",
        "--permission-mode",
        "auto",
        "look",
    ]);
    let out = run(cmd).await;
    assert_eq!(out.code, 0, "{}", out.stderr);
    let session: serde_json::Value =
        serde_json::from_str(out.stdout.lines().next().unwrap()).unwrap();
    let id = session["id"].as_str().unwrap();
    let bodies = server.bodies();
    assert_eq!(bodies.len(), 2);
    for body in &bodies {
        assert_eq!(body["prompt_cache_key"], id, "{body}");
    }
}
