//! Issue 34 §2: budgets that stop, through the real binary in `--mode json` against the
//! loopback model server, which counts the requests: a request that would cross a budget is
//! never sent, sub-agents spend (and are stopped by) their parent's budget, a token budget
//! works without prices and cuts each request's output limit, and a dollar budget without
//! prices refuses to start.

use crate::support::chat;
use crate::support::env::env;
use crate::support::process::run;
use crate::support::server::{FakeServer, Gate, Reply};
use serde_json::{Value, json};

/// `frames` with the usage frame replaced by one reporting `input` / `output` tokens.
fn costing(mut frames: Vec<String>, input: u64, output: u64) -> Vec<String> {
    let at = frames.len() - 2;
    frames[at] = chat::frame(json!({
        "id": "chatcmpl-test", "object": "chat.completion.chunk", "choices": [],
        "usage": {"prompt_tokens": input, "completion_tokens": output,
                  "total_tokens": input + output}
    }));
    frames
}

fn events(stdout: &str) -> Vec<Value> {
    stdout
        .lines()
        .filter_map(|l| serde_json::from_str(l).ok())
        .collect()
}

#[tokio::test]
async fn a_parent_and_two_children_all_stop_before_the_request_that_would_cross() {
    let env = env();
    // $10 per million input tokens, output free: 50,000 tokens cost $0.50.
    std::fs::write(
        env.home.path().join("config.toml"),
        "[providers.openai.models.test-model]\ncost_input = 10.0\ncost_output = 0.0\n",
    )
    .unwrap();
    let server = FakeServer::start(vec![
        // The parent starts two children at once ($0.50).
        Reply::sse(costing(
            chat::tool_calls(&[
                (
                    "c1",
                    "task",
                    json!({"description": "first", "prompt": "CHILD-A: go"}),
                ),
                (
                    "c2",
                    "task",
                    json!({"description": "second", "prompt": "CHILD-B: go"}),
                ),
            ]),
            50_000,
            10,
        )),
        // Must never be asked for.
        Reply::sse(chat::text("parent went on")),
    ])
    .await;
    // Each child's first answer ($0.60) waits until both children have sent their first
    // request: together they cross the $1 budget.
    let gate = Gate::new();
    for route in ["CHILD-A", "CHILD-B"] {
        server.route(
            route,
            vec![
                Reply::sse(costing(
                    chat::tool_call("b1", "bash", json!({"command": "echo hi"})),
                    60_000,
                    10,
                ))
                .after(&gate),
                Reply::sse(chat::text("child went on")),
            ],
        );
    }
    let cmd = env.agent(
        &server,
        &[
            "--mode",
            "json",
            "--permission-mode",
            "auto",
            "--max-budget-usd",
            "1",
            "delegate",
        ],
    );
    let running = tokio::spawn(run(cmd));
    server.wait_for_requests(3).await;
    gate.open();
    let out = running.await.unwrap();
    assert_eq!(out.code, 1, "{}", out.stderr);
    assert_eq!(
        server.requests().len(),
        3,
        "the parent's first request and each child's first, nothing after"
    );
    let events = events(&out.stdout);
    let end = events.iter().rfind(|e| e["type"] == "agent_end").unwrap();
    assert_eq!(end["status"], "limit", "{end}");
    let error = end["error"].as_str().unwrap();
    assert!(
        error.contains("run budget (--max-budget-usd, limits.budget_usd) of $1.0000"),
        "{error}"
    );
    // Both children ended at the limit, and the parent was told.
    let results: Vec<&Value> = events
        .iter()
        .filter(|e| e["type"] == "tool_execution_end" && e["toolName"] == "task")
        .collect();
    assert_eq!(results.len(), 2, "{results:?}");
    for result in results {
        assert_eq!(result["isError"], true);
        let text = result["result"]["content"][0]["text"].as_str().unwrap();
        assert!(text.contains("stopped at a limit"), "{text}");
        assert!(text.contains("run budget"), "{text}");
    }
    // The 80 % warning came first.
    assert!(
        events.iter().any(|e| e["type"] == "notice"
            && e["level"] == "warning"
            && e["message"]
                .as_str()
                .unwrap()
                .contains("% of the run budget")),
        "{}",
        out.stdout
    );
    // The usage says what was spent: $0.50 + 2 × $0.60.
    let usage = events
        .iter()
        .rfind(|e| e["type"] == "usage_update")
        .unwrap();
    let cost = usage["usage"]["cost"].as_f64().unwrap();
    assert!((cost - 1.7).abs() < 1e-9, "{cost}");
}

#[tokio::test]
async fn a_token_budget_works_without_prices_and_cuts_the_output_limit() {
    let env = env();
    std::fs::write(
        env.home.path().join("config.toml"),
        "[limits]\nmax_output_tokens = 1000\n",
    )
    .unwrap();
    let call = |id: &str| {
        Reply::sse(costing(
            chat::tool_call(id, "bash", json!({"command": "echo hi"})),
            10,
            600,
        ))
    };
    let server = FakeServer::start(vec![call("b1"), call("b2"), call("b3")]).await;
    let out = run(env.agent(
        &server,
        &["--mode", "json", "--permission-mode", "auto", "go"],
    ))
    .await;
    assert_eq!(out.code, 1, "{}", out.stderr);
    let bodies = server.bodies();
    assert_eq!(bodies.len(), 2, "600 + 600 output tokens: no third request");
    assert_eq!(bodies[0]["max_tokens"], 1000);
    assert_eq!(bodies[1]["max_tokens"], 400, "what the budget has left");
    assert!(
        out.stderr
            .contains("output-token budget of the run (limits.max_output_tokens) of 1000 tokens"),
        "{}",
        out.stderr
    );
}

#[tokio::test]
async fn a_dollar_budget_without_prices_refuses_to_start() {
    let env = env();
    let server = chat::answering(&["should not be asked"]).await;
    let out = run(env.agent(&server, &["-p", "--max-budget-usd", "5", "hello"])).await;
    assert_eq!(out.code, 1);
    assert!(
        out.stderr
            .contains("a budget in dollars cannot be kept: the model `test-model` has no prices"),
        "{}",
        out.stderr
    );
    assert!(server.requests().is_empty());
    // A budget that is no number of dollars is a clear error too.
    let out = run(env.agent(&server, &["-p", "--max-budget-usd=-1", "hello"])).await;
    assert_ne!(out.code, 0);
    assert!(
        out.stderr
            .contains("--max-budget-usd: a budget is a positive number of US dollars, not -1"),
        "{}",
        out.stderr
    );
    assert!(server.requests().is_empty());
}
