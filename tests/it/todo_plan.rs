//! The model's task list and plan mode, driven by the agent loop against the loopback model
//! server: `todo_write` results become `todo_update` events (as json/rpc clients read them),
//! and plan mode runs only read-only tools and tells the model to end with a plan.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // test code fails loudly

use crate::support;

use agent::protocol::event::AgentEvent;
use agent::tools::permission::PermissionMode;
use serde_json::json;
use support::chat;
use support::harness::{Harness, end_of, names, transcript};
use support::server::Reply;

async fn harness(adjust: impl FnOnce(&mut agent::agent::AgentConfig)) -> Harness {
    Harness::start_with(vec![], |c| {
        c.tools = agent::tools::Tools::from_names(agent::tools::ALL_TOOLS).unwrap();
        adjust(c);
    })
    .await
}

#[tokio::test]
async fn todo_write_emits_the_whole_list_as_a_todo_update_event() {
    let mut h = harness(|_| {}).await;
    let todos = json!([
        {"content": "read the code", "status": "completed"},
        {"content": "fix the bug", "status": "in_progress"}
    ]);
    h.server.push(Reply::sse(chat::tool_call(
        "c1",
        "todo_write",
        json!({"todos": todos}),
    )));
    h.server.push(Reply::sse(chat::tool_call(
        "c2",
        "todo_write",
        json!({"todos": [{"content": "", "status": "pending"}]}),
    )));
    h.server.push(Reply::sse(chat::text("done")));
    h.prompt("plan");
    let events = h.until_end().await;
    assert_eq!(end_of(&events).0, "completed");
    let updates: Vec<serde_json::Value> = events
        .iter()
        .filter(|e| matches!(e, AgentEvent::TodoUpdate { .. }))
        .map(|e| serde_json::to_value(e).unwrap())
        .collect();
    // The invalid second list (an item without content) is an error, not an update.
    assert_eq!(
        updates,
        [json!({"type": "todo_update", "todos": todos})],
        "{:?}",
        names(&events)
    );
    // The model reads the list back.
    let bodies = h.server.bodies();
    let result = bodies[1]["messages"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["role"] == "tool")
        .unwrap()["content"]
        .as_str()
        .unwrap()
        .to_string();
    assert!(
        result.contains("[x] read the code\n[~] fix the bug"),
        "{result}"
    );
}

#[tokio::test]
async fn plan_mode_runs_only_read_only_tools_and_asks_the_model_for_a_plan() {
    let mut h = harness(|c| c.permission_mode = PermissionMode::Plan).await;
    std::fs::write(h.dir.path().join("notes.txt"), "hello\n").unwrap();
    h.server.push(Reply::sse(chat::tool_calls(&[
        ("c1", "read", json!({"path": "notes.txt"})),
        ("c2", "bash", json!({"command": "touch made.txt"})),
    ])));
    h.server.push(Reply::sse(chat::text("1. Change notes.txt")));
    h.prompt("improve the notes");
    let events = h.until_end().await;
    assert_eq!(end_of(&events).0, "completed");
    assert!(!h.dir.path().join("made.txt").exists());
    let bodies = h.server.bodies();
    let system = bodies[0]["messages"][0]["content"].as_str().unwrap();
    assert!(system.contains("# Plan mode"), "{system}");
    let t = transcript(&bodies[1]);
    assert!(
        t.iter()
            .any(|m| m.starts_with("tool:c1:") && m.contains("hello")),
        "{t:?}"
    );
    assert!(
        t.iter()
            .any(|m| m.starts_with("tool:c2:Permission denied") && m.contains("plan mode")),
        "{t:?}"
    );
    // Approved (switched to auto), the same agent runs the plan with every tool.
    h.agent.set_permission_mode(PermissionMode::Auto);
    h.server.push(Reply::sse(chat::tool_call(
        "c3",
        "bash",
        json!({"command": "touch made.txt"}),
    )));
    h.server.push(Reply::sse(chat::text("done")));
    h.prompt(agent::agent::plan_mode::APPROVED);
    let events = h.until_end().await;
    assert_eq!(end_of(&events).0, "completed");
    assert!(h.dir.path().join("made.txt").exists());
    let system = h.server.bodies()[2]["messages"][0]["content"]
        .as_str()
        .unwrap()
        .to_string();
    assert!(!system.contains("# Plan mode"), "{system}");
}

/// `@path` in a headless prompt (`-p`): the file's text and the directory's listing go to the
/// model after the prompt; an image for a model without image input is refused before any
/// request.
#[tokio::test]
async fn at_paths_in_a_headless_prompt_are_attached() {
    use support::env::env;
    use support::process::run;
    let env = env();
    std::fs::create_dir(env.cwd.path().join("docs")).unwrap();
    std::fs::write(env.cwd.path().join("docs/guide.md"), "# Guide\n").unwrap();
    std::fs::write(env.cwd.path().join("notes.txt"), "buy milk\n").unwrap();
    std::fs::write(env.cwd.path().join("shot.png"), b"\x89PNG").unwrap();
    let server = support::server::FakeServer::start(vec![Reply::sse(chat::text("ok"))]).await;
    let out = run(env.agent(&server, &["-p", "summarize @notes.txt and @docs"])).await;
    assert_eq!(out.code, 0, "stderr: {}", out.stderr);
    let body = &server.bodies()[0];
    let parts: Vec<String> = body["messages"][1]["content"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p["text"].as_str().unwrap().to_string())
        .collect();
    assert_eq!(
        parts,
        [
            "summarize @notes.txt and @docs",
            "<file path=\"notes.txt\">\nbuy milk\n</file>",
            "<directory path=\"docs\">\nguide.md\n</directory>"
        ]
    );
    let out = run(env.agent(&server, &["-p", "what is in @shot.png"])).await;
    assert_eq!(out.code, 1);
    assert!(
        out.stderr
            .contains("`test-model` does not take image input, so @shot.png cannot be sent"),
        "{}",
        out.stderr
    );
    assert_eq!(
        server.requests().len(),
        1,
        "no request for the refused prompt"
    );
}

/// `@path` naming a file that is not attached: `-p` says which and why on stderr (the prompt
/// still goes); RPC returns it in the response's data.
#[tokio::test]
async fn skipped_at_paths_are_named_with_the_reason_headless_and_over_rpc() {
    use support::env::env;
    use support::process::{Rpc, run};
    let env = env();
    std::fs::write(env.cwd.path().join("data.bin"), b"ab\0cd").unwrap();
    std::fs::write(env.cwd.path().join("notes.txt"), "buy milk\n").unwrap();
    let server = support::server::FakeServer::start(vec![
        Reply::sse(chat::text("ok")),
        Reply::sse(chat::text("ok again")),
    ])
    .await;
    let out = run(env.agent(&server, &["-p", "read @data.bin and @notes.txt"])).await;
    assert_eq!(out.code, 0, "stderr: {}", out.stderr);
    assert!(
        out.stderr
            .contains("agent: @data.bin not attached: a binary file"),
        "{}",
        out.stderr
    );
    assert!(!out.stderr.contains("notes.txt"), "{}", out.stderr);
    let mut rpc = Rpc::spawn(env.agent(&server, &["--mode", "rpc"]));
    rpc.send(json!({"id": "p1", "type": "prompt", "message": "again @data.bin"}))
        .await;
    let response = rpc.response("p1").await;
    assert_eq!(response["success"], true, "{response}");
    assert_eq!(
        response["data"],
        json!({"skipped": [{"path": "data.bin", "reason": "a binary file"}]})
    );
}
