//! Compaction that keeps the task (issue 34 §4), through the real binary in RPC mode: a
//! scripted session compacts three times, and each request after a compaction still
//! carries, verbatim, the context file, the goal, the user's original request and latest
//! message, the task list, the approved plan, the files read and edited with their state,
//! and the active skill. Goals: `set_goal` starts work, the model's `goal` call ends it, the
//! goal survives resume; a rewind goes back to before a compaction; the summary requests
//! are counted as compaction in the usage.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // test code fails loudly

use crate::support;

use serde_json::{Value, json};
use support::chat;
use support::env::{Env, env};
use support::harness::content_text;
use support::process::Rpc;
use support::server::{FakeServer, Reply};

const AGENTS_MD: &str = "Always run the linter before you say you are done.";
const SKILL_BODY: &str = "Parse with the state machine in parser.rs, never with regexes.";
const REQUEST: &str = "Fix the parser in notes.txt";
const PLAN: &str = "Plan: 1. read notes.txt 2. fix the parser 3. run the linter";
const GOAL: &str = "Make the parser robust against every input";
const APPROVED: &str = "The plan is approved. Carry it out now.";

fn workspace() -> Env {
    let env = env();
    std::fs::write(env.cwd.path().join("AGENTS.md"), AGENTS_MD).unwrap();
    std::fs::write(env.cwd.path().join("notes.txt"), "parser: broken\n").unwrap();
    let skill = env.cwd.path().join(".agent/skills/pdf");
    std::fs::create_dir_all(&skill).unwrap();
    std::fs::write(
        skill.join("SKILL.md"),
        format!("---\nname: pdf\ndescription: Parsing documents\n---\n{SKILL_BODY}\n"),
    )
    .unwrap();
    env
}

fn rpc(env: &Env, server: &FakeServer, extra: &[&str]) -> Rpc {
    let mut args = vec!["--mode", "rpc", "--permission-mode", "auto"];
    args.extend_from_slice(extra);
    Rpc::spawn(env.agent(server, &args))
}

async fn prompt(rpc: &mut Rpc, id: &str, text: &str) {
    rpc.send(json!({"id": id, "type": "prompt", "message": text}))
        .await;
    assert_eq!(rpc.response(id).await["success"], true);
    rpc.until(|l| l["type"] == "agent_end").await;
}

async fn compact(rpc: &mut Rpc, id: &str) -> Value {
    rpc.send(json!({"id": id, "type": "compact"})).await;
    let answer = rpc.response(id).await;
    assert_eq!(answer["success"], true, "{answer}");
    answer["data"].clone()
}

/// The model marks the goal blocked, then says so: one goal run's end.
fn blocked_then(text: &str) -> Vec<Reply> {
    vec![
        Reply::sse(chat::tool_call(
            "g",
            "goal",
            json!({"status": "blocked", "reason": "waiting for the user"}),
        )),
        Reply::sse(chat::text(text)),
    ]
}

/// What a request after a compaction must still carry.
fn check_kept(body: &Value, summary: &str, latest: &str) {
    let messages = body["messages"].as_array().unwrap();
    let system = content_text(&messages[0]["content"]);
    assert!(system.contains(AGENTS_MD), "the context file: {system}");
    let kept = content_text(&messages[1]["content"]);
    for (what, needle) in [
        ("the summary", summary),
        ("the goal", GOAL),
        ("the original request", REQUEST),
        ("the task list", "[~] fix the parser"),
        ("the plan", PLAN),
        ("the file and its state", "notes.txt (read and edited): "),
        ("the active skill", SKILL_BODY),
    ] {
        assert!(kept.contains(needle), "{what} ({needle}) is kept: {kept}");
    }
    assert!(
        kept.contains("Active skill `pdf`"),
        "the skill is named: {kept}"
    );
    assert!(kept.contains(" bytes"), "the file's state now: {kept}");
    assert!(
        !kept.contains("parser: fixed"),
        "a file's content is not repeated: {kept}"
    );
    let last_user = messages.iter().rev().find(|m| m["role"] == "user").unwrap();
    assert_eq!(content_text(&last_user["content"]), latest);
}

#[tokio::test]
async fn three_compactions_keep_the_task_in_every_request_after_them() {
    let env = workspace();
    let mut replies = vec![
        // "/skill:pdf Fix the parser": the plan.
        Reply::sse(chat::text(PLAN)),
        // Approved: the work.
        Reply::sse(chat::tool_call(
            "t1",
            "todo_write",
            json!({"todos": [{"content": "fix the parser", "status": "in_progress"}]}),
        )),
        Reply::sse(chat::tool_call("r1", "read", json!({"path": "notes.txt"}))),
        Reply::sse(chat::tool_call(
            "e1",
            "edit",
            json!({"path": "notes.txt", "edits": [{"oldText": "broken", "newText": "fixed"}]}),
        )),
        Reply::sse(chat::text("Parser fixed.")),
    ];
    // set_goal starts a run toward it.
    replies.extend(blocked_then("I need your input on edge cases."));
    replies.push(Reply::sse(chat::text("SUMMARY ONE")));
    replies.extend(blocked_then("Handled empty input."));
    replies.push(Reply::sse(chat::text("SUMMARY TWO")));
    replies.extend(blocked_then("Checked the docs."));
    replies.push(Reply::sse(chat::text("SUMMARY THREE")));
    replies.extend(blocked_then("All done here."));
    let server = FakeServer::start(replies).await;
    let mut rpc = rpc(&env, &server, &[]);

    prompt(&mut rpc, "p1", &format!("/skill:pdf {REQUEST}")).await;
    prompt(&mut rpc, "p2", APPROVED).await;
    assert_eq!(
        std::fs::read_to_string(env.cwd.path().join("notes.txt")).unwrap(),
        "parser: fixed\n"
    );
    rpc.send(json!({"id": "g", "type": "set_goal", "goal": GOAL}))
        .await;
    let lines = rpc.until(|l| l["type"] == "agent_end").await;
    let answer = lines.iter().find(|l| l["id"] == "g").unwrap();
    assert_eq!(answer["data"]["goal"], GOAL, "{answer}");
    let update = lines
        .iter()
        .find(|l| l["type"] == "goal_update" && l["reason"] == "blocked")
        .expect("the model marked the goal blocked");
    assert_eq!(update["goal"], GOAL, "a blocked goal stays");
    assert_eq!(lines.last().unwrap()["status"], "completed");
    let goal_start = content_text(
        &server.bodies()[5]["messages"]
            .as_array()
            .unwrap()
            .last()
            .unwrap()["content"],
    );
    assert!(goal_start.contains(GOAL), "{goal_start}");

    let mut seen = 7;
    for (round, (summary, latest)) in [
        ("SUMMARY ONE", "Also handle empty input"),
        ("SUMMARY TWO", "Check the docs too"),
        ("SUMMARY THREE", "One last look"),
    ]
    .into_iter()
    .enumerate()
    {
        let compacted = compact(&mut rpc, &format!("c{round}")).await;
        assert!(
            compacted["tokensBefore"].as_u64().unwrap() > 0
                && compacted["tokensAfter"].as_u64().unwrap() > 0,
            "{compacted}"
        );
        prompt(&mut rpc, &format!("q{round}"), latest).await;
        let bodies = server.bodies();
        assert_eq!(bodies.len(), seen + 3, "summary, goal call, answer");
        // The summary request, then the first request after the compaction.
        check_kept(&bodies[seen + 1], summary, latest);
        seen += 3;
    }

    // The three summary requests are counted, and shown apart, in the usage.
    rpc.send(json!({"id": "s", "type": "get_session_stats"}))
        .await;
    let stats = rpc.response("s").await;
    let usage = &stats["data"]["usage"];
    assert_eq!(usage["compaction"]["calls"], 3, "{usage}");
    assert_eq!(usage["calls"], bodies_count(&server), "{usage}");
    assert_eq!(rpc.exit_code().await, 0);
}

fn bodies_count(server: &FakeServer) -> u64 {
    server.bodies().len() as u64
}

/// `set_goal` with the model marking it done: the goal is cleared (event, state, session),
/// and the run ends without another request. A goal set and not done keeps the run going
/// with a continuation message until the model marks it.
#[tokio::test]
async fn a_goal_keeps_the_agent_working_until_the_model_marks_it_done() {
    let env = workspace();
    let server = FakeServer::start(vec![
        Reply::sse(chat::text("Started on it.")),
        Reply::sse(chat::text("Made progress.")),
        Reply::sse(chat::tool_call(
            "g",
            "goal",
            json!({"status": "done", "reason": "robust now"}),
        )),
        Reply::sse(chat::text("The goal is achieved.")),
    ])
    .await;
    let mut rpc = rpc(&env, &server, &[]);
    rpc.send(json!({"id": "g", "type": "set_goal", "goal": format!("  {GOAL}  ")}))
        .await;
    let lines = rpc.until(|l| l["type"] == "agent_end").await;
    assert_eq!(lines.last().unwrap()["status"], "completed");
    let goals: Vec<(&str, &Value)> = lines
        .iter()
        .filter(|l| l["type"] == "goal_update")
        .map(|l| (l["reason"].as_str().unwrap(), &l["goal"]))
        .collect();
    assert_eq!(
        goals,
        [("set", &json!(GOAL)), ("done", &Value::Null)],
        "{lines:?}"
    );
    let bodies = server.bodies();
    assert_eq!(bodies.len(), 4);
    // The first request offers the tool and states the goal; the run went on twice.
    let tools: Vec<&str> = bodies[0]["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["function"]["name"].as_str().unwrap())
        .collect();
    assert!(tools.contains(&"goal"), "{tools:?}");
    for body in &bodies[1..3] {
        let messages = body["messages"].as_array().unwrap();
        let last = content_text(&messages.last().unwrap()["content"]);
        assert!(
            last.contains("The goal is not marked done yet") && last.contains(GOAL),
            "{last}"
        );
    }
    rpc.send(json!({"id": "s", "type": "get_state"})).await;
    assert_eq!(rpc.response("s").await["data"]["goal"], Value::Null);
    // Without a goal the tool is not offered, and a run ends with its answer.
    server.push(Reply::sse(chat::text("You're welcome.")));
    prompt(&mut rpc, "p", "thanks").await;
    let bodies = server.bodies();
    assert_eq!(bodies.len(), 5);
    assert!(
        !bodies[4]["tools"]
            .as_array()
            .unwrap()
            .iter()
            .any(|t| t["function"]["name"] == "goal"),
        "{}",
        bodies[4]["tools"]
    );
    assert_eq!(rpc.exit_code().await, 0);
}

/// The goal is noted in the session: a resumed session has it again, verbatim; clearing it
/// is noted too.
#[tokio::test]
async fn a_goal_survives_resume_and_can_be_cleared() {
    let env = workspace();
    let server = FakeServer::start(blocked_then("Waiting for you.")).await;
    let mut first = rpc(&env, &server, &[]);
    first
        .send(json!({"id": "g", "type": "set_goal", "goal": GOAL}))
        .await;
    first.until(|l| l["type"] == "agent_end").await;
    assert_eq!(first.exit_code().await, 0);

    let mut resumed = rpc(&env, &server, &["-c"]);
    resumed.send(json!({"id": "s", "type": "get_state"})).await;
    assert_eq!(resumed.response("s").await["data"]["goal"], GOAL);
    resumed
        .send(json!({"id": "c", "type": "set_goal", "goal": null}))
        .await;
    let answer = resumed.response("c").await;
    assert_eq!(answer["success"], true, "{answer}");
    assert_eq!(answer["data"]["goal"], Value::Null);
    assert_eq!(resumed.exit_code().await, 0);
    assert_eq!(server.bodies().len(), 2, "clearing starts nothing");

    let mut again = rpc(&env, &server, &["-c"]);
    again.send(json!({"id": "s", "type": "get_state"})).await;
    assert_eq!(again.response("s").await["data"]["goal"], Value::Null);
    assert_eq!(again.exit_code().await, 0);
}

/// A compaction is a node of the session tree: a rewind to it goes back to the conversation
/// as it was before the compaction.
#[tokio::test]
async fn a_rewind_goes_back_to_before_a_compaction() {
    let env = workspace();
    let server = FakeServer::start(vec![
        Reply::sse(chat::text("Answer one.")),
        Reply::sse(chat::text("Answer two.")),
        Reply::sse(chat::text("The summary.")),
    ])
    .await;
    let mut rpc = rpc(&env, &server, &[]);
    prompt(&mut rpc, "p1", "first question").await;
    prompt(&mut rpc, "p2", "second question").await;
    compact(&mut rpc, "c").await;
    rpc.send(json!({"id": "t", "type": "get_tree"})).await;
    let tree = rpc.response("t").await;
    let nodes = tree["data"]["nodes"].as_array().unwrap();
    let compaction = nodes
        .iter()
        .find(|n| n["role"] == "compaction")
        .unwrap_or_else(|| panic!("a compaction node: {tree}"));
    assert!(
        compaction["text"].as_str().unwrap().contains(" tokens: "),
        "{compaction}"
    );
    rpc.send(json!({"id": "m", "type": "get_messages"})).await;
    let messages = rpc.response("m").await["data"]["messages"].clone();
    assert_eq!(messages.as_array().unwrap().len(), 3, "{messages}");

    let id = compaction["id"].as_str().unwrap();
    rpc.send(json!({"id": "r", "type": "rewind", "entryId": id, "restore": "conversation"}))
        .await;
    let answer = rpc.response("r").await;
    assert_eq!(answer["success"], true, "{answer}");
    rpc.send(json!({"id": "m2", "type": "get_messages"})).await;
    let messages = rpc.response("m2").await["data"]["messages"].clone();
    let texts: Vec<String> = messages
        .as_array()
        .unwrap()
        .iter()
        .map(|m| content_text(&m["content"]))
        .collect();
    assert_eq!(
        texts.len(),
        4,
        "the conversation before the compaction: {texts:?}"
    );
    assert_eq!(texts[0], "first question");
    assert_eq!(texts[2], "second question");
    assert_eq!(rpc.exit_code().await, 0);
}

/// ACP `/goal TEXT`: the goal is set through the engine's `set_goal`, the run it starts
/// belongs to the command's turn, and the answer says the goal is done once the model
/// marked it; `/goal` then says none is set.
#[tokio::test]
async fn acp_goal_command_works_until_the_goal_is_done() {
    use agent_client_protocol::v1::schema::StopReason;
    let env = workspace();
    let server = FakeServer::start(vec![
        Reply::sse(chat::tool_call("g", "goal", json!({"status": "done"}))),
        Reply::sse(chat::text("Achieved.")),
    ])
    .await;
    let mut cmd = env.agent(&server, &["--mode", "acp"]);
    cmd.env("RUST_LOG", "debug");
    let mut acp = support::acp::Acp::spawn(cmd).await;
    let id = acp.open(env.cwd.path()).await.session_id;
    let answer = acp
        .prompt(&id, &format!("/goal {GOAL}"))
        .await
        .unwrap()
        .unwrap();
    assert_eq!(answer.stop_reason, StopReason::EndTurn);
    let done = |u: &Value| u.to_string().contains("Goal done: ");
    acp.until(done).await;
    let updates = acp.wire_updates();
    let achieved = updates
        .iter()
        .position(|u| u.to_string().contains("Achieved."))
        .expect("the run's answer reached the editor");
    assert!(achieved < updates.iter().position(done).unwrap());
    assert_eq!(server.bodies().len(), 2);
    assert!(
        support::commands::logged_commands(env.home.path())
            .contains(&json!({"type": "set_goal", "goal": GOAL})),
        "the engine's command"
    );
    acp.prompt(&id, "/goal").await.unwrap().unwrap();
    acp.until(|u| u.to_string().contains("No goal is set"))
        .await;
    assert_eq!(acp.exit_code().await, 0);
}
