//! The system prompt's list of tools is the list the model is offered: the parent's (the
//! engine's own `task` and `ask_user` included) and a sub-agent's.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // test code fails loudly

use crate::support;

use serde_json::{Value, json};
use std::collections::BTreeSet;
use support::chat;
use support::env::env;
use support::process::run;
use support::server::{FakeServer, Reply};

/// The names after `label` on the system message's line that starts with it.
fn listed(body: &Value, label: &str) -> BTreeSet<String> {
    let system = body["messages"][0]["content"].as_str().unwrap();
    let line = system
        .lines()
        .find_map(|line| line.strip_prefix(label))
        .unwrap_or_else(|| panic!("no `{label}` line in:\n{system}"));
    line.split(", ").map(str::to_string).collect()
}

/// The tools the request offers, but `goal` (offered only while a goal is set, so not
/// listed).
fn offered(body: &Value) -> BTreeSet<String> {
    body["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|tool| tool["function"]["name"].as_str().unwrap().to_string())
        .filter(|name| name != "goal")
        .collect()
}

#[tokio::test]
async fn the_prompt_lists_the_tools_the_model_is_offered_a_sub_agents_too() {
    let server = FakeServer::start(vec![
        Reply::sse(chat::tool_calls(&[(
            "t1",
            "task",
            json!({"description": "look", "prompt": "look around"}),
        )])),
        Reply::sse(chat::text("nothing here")),
        Reply::sse(chat::text("done")),
    ])
    .await;
    let env = env();
    let output = run(env.agent(&server, &["-p", "--permission-mode", "auto", "go"])).await;
    assert_eq!(output.code, 0, "{}", output.stderr);
    let requests = server.requests();
    assert_eq!(requests.len(), 3);
    let parent = &requests[0].body;
    let tools = offered(parent);
    assert!(
        tools.contains("task") && tools.contains("ask_user"),
        "{tools:?}"
    );
    assert_eq!(listed(parent, "Tools available: "), tools);
    let child = &requests[1].body;
    assert_eq!(listed(child, "Tools: "), offered(child));
}
