//! Sub-agents (`task`) against a real loopback model server whose replies are routed by
//! each child's prompt: results in call order, stopping one child, the parent's abort
//! killing children's processes, approvals relayed through the parent, linked and
//! resumable session files, usage roll-up, and the depth limit.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // test code fails loudly

use crate::support;

use agent::agent::children::AgentsSettings;
use agent::agent::{Agent, AgentConfig, Approval};
use agent::protocol::event::AgentEvent;
use agent::protocol::message::{Message, join_text};
use agent::session::SessionWriter;
use agent::session::format::Header;
use agent::tools::permission::PermissionMode;
use serde_json::{Value, json};
use std::sync::Arc;
use support::chat;
use support::harness::{Harness, end_of, wait_for_pid, wait_until_dead};
use support::server::{Gate, Reply};

fn with_agents(config: &mut AgentConfig) {
    config.agents = Some(AgentsSettings::default());
}

fn task(id: &str, prompt: &str) -> (String, String, Value) {
    (
        id.to_string(),
        "task".to_string(),
        json!({"description": format!("job {id}"), "prompt": prompt}),
    )
}

fn task_calls(calls: &[(String, String, Value)]) -> Reply {
    let refs: Vec<(&str, &str, Value)> = calls
        .iter()
        .map(|(id, name, args)| (id.as_str(), name.as_str(), args.clone()))
        .collect();
    Reply::sse(chat::tool_calls(&refs))
}

/// Whether `event` is the child of task call `call` ending its run.
fn child_ended(event: &AgentEvent, call: &str) -> bool {
    matches!(event, AgentEvent::SubagentEvent { parent_tool_call_id, event, .. }
        if parent_tool_call_id == call && matches!(**event, AgentEvent::AgentEnd { .. }))
}

/// The agent id of the child of task call `call`, from one of its forwarded events.
fn child_id(event: &AgentEvent, call: &str) -> Option<String> {
    match event {
        AgentEvent::SubagentEvent {
            agent_id,
            parent_tool_call_id,
            ..
        } if parent_tool_call_id == call => Some(agent_id.clone()),
        _ => None,
    }
}

/// The `task` results in the order they were reported: (call id, text, is_error, details).
fn task_results(events: &[AgentEvent]) -> Vec<(String, String, bool, Value)> {
    events
        .iter()
        .filter_map(|e| match e {
            AgentEvent::ToolExecutionEnd {
                tool_call_id,
                tool_name,
                result,
                is_error,
            } if tool_name == "task" => Some((
                tool_call_id.clone(),
                join_text(&result.content),
                *is_error,
                result.details.clone().unwrap_or(Value::Null),
            )),
            _ => None,
        })
        .collect()
}

fn tool_names(body: &Value) -> Vec<String> {
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

fn first_user(body: &Value) -> String {
    body["messages"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["role"] == "user")
        .map(|m| m["content"].to_string())
        .unwrap_or_default()
}

/// A parent whose first answer starts two children at once (call c1 runs `CHILD-A`, c2
/// `CHILD-B`), each child answered by its reply, and whose second answer is `parent`; it
/// has been prompted.
async fn two_children(a: Reply, b: Reply, parent: &str, settings: AgentsSettings) -> Harness {
    let h = Harness::start_with(
        vec![
            task_calls(&[task("c1", "CHILD-A: go"), task("c2", "CHILD-B: go")]),
            Reply::sse(chat::text(parent)),
        ],
        |config| config.agents = Some(settings),
    )
    .await;
    h.server.route("CHILD-A", vec![a]);
    h.server.route("CHILD-B", vec![b]);
    h.prompt("delegate");
    h
}

#[tokio::test]
async fn parallel_children_finishing_out_of_order_are_reported_in_call_order() {
    let slow = Gate::new();
    let mut h = two_children(
        Reply::sse(chat::text("result A")).after(&slow),
        Reply::sse(chat::text("result B")),
        "both done",
        AgentsSettings::default(),
    )
    .await;
    // B finishes while A is still waiting for its answer: they run at the same time.
    let mut events = h.until(|e| child_ended(e, "c2")).await;
    assert!(!events.iter().any(|e| child_ended(e, "c1")));
    slow.open();
    events.extend(h.until_end().await);
    assert_eq!(end_of(&events).0, "completed");
    let a_end = events.iter().position(|e| child_ended(e, "c1")).unwrap();
    let b_end = events.iter().position(|e| child_ended(e, "c2")).unwrap();
    assert!(b_end < a_end);
    let results = task_results(&events);
    let summary: Vec<(&str, &str, bool)> = results
        .iter()
        .map(|(id, text, error, _)| (id.as_str(), text.trim(), *error))
        .collect();
    assert_eq!(
        summary,
        [("c1", "result A", false), ("c2", "result B", false)]
    );
    // The parent's next request carries both answers, in call order.
    let last = h.server.bodies().last().cloned().unwrap();
    let tools: Vec<String> = last["messages"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|m| m["role"] == "tool")
        .map(|m| {
            format!(
                "{}:{}",
                m["tool_call_id"],
                m["content"].as_str().unwrap().trim()
            )
        })
        .collect();
    assert_eq!(tools, ["\"c1\":result A", "\"c2\":result B"]);
    let agents = h.agent.agents();
    assert_eq!(agents.len(), 2);
    assert!(
        agents
            .iter()
            .all(|a| serde_json::to_value(a.status).unwrap() == "completed")
    );
}

#[tokio::test]
async fn stopping_one_child_leaves_the_other_and_the_parent_going() {
    let never = Gate::new();
    let b_gate = Gate::new();
    let mut h = two_children(
        Reply::sse(chat::text("never sent")).after(&never),
        Reply::sse(chat::text("result B")).after(&b_gate),
        "carried on",
        AgentsSettings::default(),
    )
    .await;
    let mut events = h.until(|e| child_id(e, "c1").is_some()).await;
    let a = child_id(events.last().unwrap(), "c1").unwrap();
    h.agent.abort_agent(&a).unwrap();
    events.extend(h.until(|e| child_ended(e, "c1")).await);
    b_gate.open();
    events.extend(h.until_end().await);
    assert_eq!(end_of(&events).0, "completed");
    let results = task_results(&events);
    assert_eq!(results[0].0, "c1");
    assert!(results[0].2, "{:?}", results[0]);
    assert!(
        results[0].1.contains("stopped by the user"),
        "{}",
        results[0].1
    );
    assert_eq!(results[0].3["status"], "aborted");
    assert_eq!((results[1].1.trim(), results[1].2), ("result B", false));
    // Stopping an agent that has finished says so.
    let error = h.agent.abort_agent(&a).unwrap_err().to_string();
    assert!(error.contains("has finished"), "{error}");
    assert!(h.agent.abort_agent("nope").is_err());
}

#[tokio::test]
async fn the_parents_abort_kills_the_childrens_processes() {
    let mut h =
        Harness::start_with(vec![task_calls(&[task("c1", "CHILD-A: run")])], with_agents).await;
    h.server.route(
        "CHILD-A",
        vec![Reply::sse(chat::tool_call(
            "b1",
            "bash",
            json!({"command": "echo $$ > child.pid; exec sleep 600"}),
        ))],
    );
    h.prompt("delegate");
    let pid = wait_for_pid(&h.dir.path().join("child.pid")).await;
    h.agent.abort();
    let events = h.until_end().await;
    assert_eq!(end_of(&events).0, "aborted");
    assert!(wait_until_dead(pid).await, "the child's command survived");
    let results = task_results(&events);
    assert!(results[0].2);
    assert_eq!(results[0].3["status"], "aborted");
    assert!(events.iter().any(|e| child_ended(e, "c1")));
}

#[tokio::test]
async fn a_childs_approval_reaches_the_user_through_the_parent() {
    let mut h = Harness::start_with(
        vec![
            task_calls(&[task("c1", "CHILD-A: write")]),
            Reply::sse(chat::text("parent done")),
        ],
        |config| {
            with_agents(config);
            config.permission_mode = PermissionMode::Ask;
            config.can_ask = true;
        },
    )
    .await;
    h.server.route(
        "CHILD-A",
        vec![
            Reply::sse(chat::tool_call(
                "b1",
                "bash",
                json!({"command": "echo yes > approved.txt"}),
            )),
            Reply::sse(chat::text("child wrote it")),
        ],
    );
    h.prompt("delegate");
    let events = h
        .until(|e| {
            matches!(
                e,
                AgentEvent::ToolApprovalRequest {
                    agent_id: Some(_),
                    ..
                }
            )
        })
        .await;
    let Some(AgentEvent::ToolApprovalRequest {
        tool_call_id,
        reason,
        agent_id,
        ..
    }) = events.last()
    else {
        unreachable!()
    };
    assert!(reason.contains("sub-agent `general`"), "{reason}");
    let child = agent_id.clone().unwrap();
    // The request also came through as the child's own event.
    assert!(events.iter().any(|e| matches!(e,
        AgentEvent::SubagentEvent { agent_id, event, .. }
            if *agent_id == child && matches!(**event, AgentEvent::ToolApprovalRequest { .. }))));
    h.agent.approve(tool_call_id, Approval::Allow).unwrap();
    let events = h.until_end().await;
    assert_eq!(end_of(&events).0, "completed");
    assert_eq!(
        std::fs::read_to_string(h.dir.path().join("approved.txt")).unwrap(),
        "yes\n"
    );
    assert_eq!(task_results(&events)[0].1.trim(), "child wrote it");
}

#[tokio::test]
async fn child_sessions_are_linked_both_ways_resumable_and_their_usage_rolls_up() {
    let home = tempfile::tempdir().unwrap();
    let parent_path = home.path().join("parent.jsonl");
    let writer = SessionWriter::create(
        &parent_path,
        &Header::new("parent-id", &home.path().to_string_lossy(), 1),
    )
    .unwrap();
    let writer = Arc::new(writer);
    let mut h = Harness::start_with(
        vec![
            task_calls(&[task("c1", "CHILD-A: count")]),
            Reply::sse(chat::text_with_usage("parent done", 20, 3)),
        ],
        |config| {
            with_agents(config);
            config.session = Some(writer.clone());
        },
    )
    .await;
    drop(writer);
    h.server.route(
        "CHILD-A",
        vec![Reply::sse(chat::text_with_usage("child answer", 100, 7))],
    );
    h.prompt("delegate");
    let events = h.until_end().await;
    assert_eq!(end_of(&events).0, "completed");
    let (_, text, is_error, details) = task_results(&events).remove(0);
    assert_eq!((text.trim(), is_error), ("child answer", false));
    assert_eq!(details["usage"]["input"], 100);
    assert_eq!(details["usage"]["output"], 7);
    let child_path = std::path::PathBuf::from(details["sessionFile"].as_str().unwrap());
    assert!(child_path.starts_with(home.path().join("parent.agents")));
    // The child's header points at the parent session and the call.
    let header = agent::session::store::read_header(&child_path).unwrap();
    assert_eq!(header.parent_session.as_deref(), Some("parent-id"));
    assert_eq!(header.parent_tool_call_id.as_deref(), Some("c1"));
    assert_eq!(details["sessionId"].as_str(), Some(header.id.as_str()));
    // The child's usage is in the parent's totals.
    let parent_own: u64 = h
        .agent
        .messages()
        .iter()
        .filter_map(|m| m.as_assistant())
        .map(|a| a.usage.input)
        .sum();
    let total = h.agent.snapshot().usage.input;
    assert_eq!(total, parent_own + 100);
    let Harness { agent, server, .. } = h;
    drop(agent);
    drop(server);
    // Both files can be continued; the parent's totals still count the child.
    let child = agent::session::open_file(&child_path).await.unwrap();
    let texts: Vec<String> = child
        .history
        .iter()
        .map(|(_, m)| match m.as_ref() {
            Message::User(u) => u.plain_text(),
            Message::Assistant(a) => a.text(),
            Message::ToolResult(r) => join_text(&r.content),
        })
        .collect();
    assert_eq!(texts[0], "CHILD-A: count");
    assert_eq!(texts.last().unwrap().trim(), "child answer");
    let parent = agent::session::open_file(&parent_path).await.unwrap();
    let dir = tempfile::tempdir().unwrap();
    let resumed = Agent::new(AgentConfig {
        history: parent.history,
        cold: None,
        ..support::harness::config("http://127.0.0.1:9", dir.path())
    });
    assert_eq!(resumed.snapshot().usage.input, total);
}

#[tokio::test]
async fn children_cannot_start_children_beyond_the_configured_depth() {
    let mut h = Harness::start_with(
        vec![
            task_calls(&[task("c1", "CHILD-A: nest")]),
            Reply::sse(chat::text("parent done")),
        ],
        with_agents,
    )
    .await;
    h.server.route(
        "CHILD-A",
        vec![
            Reply::sse(chat::tool_call(
                "t1",
                "task",
                json!({"description": "deeper", "prompt": "GRANDCHILD"}),
            )),
            Reply::sse(chat::text("could not nest")),
        ],
    );
    h.prompt("delegate");
    let events = h.until_end().await;
    assert_eq!(end_of(&events).0, "completed");
    let bodies = h.server.bodies();
    assert!(tool_names(&bodies[0]).contains(&"task".to_string()));
    let child_bodies: Vec<&Value> = bodies
        .iter()
        .filter(|b| first_user(b).contains("CHILD-A"))
        .collect();
    assert!(!tool_names(child_bodies[0]).contains(&"task".to_string()));
    // The child's attempt was refused with an error result, and no grandchild ran.
    let refused = child_bodies[1]["messages"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["role"] == "tool")
        .unwrap()["content"]
        .as_str()
        .unwrap()
        .to_string();
    assert!(refused.contains("does not exist"), "{refused}");
    assert!(!bodies.iter().any(|b| first_user(b).contains("GRANDCHILD")));

    // With depth 2 configured, children get `task` too (and grandchildren do not).
    let mut h = Harness::start_with(vec![task_calls(&[task("c1", "CHILD-A: nest")])], |config| {
        config.agents = Some(AgentsSettings {
            max_depth: 2,
            ..AgentsSettings::default()
        })
    })
    .await;
    h.server.route(
        "CHILD-A",
        vec![
            Reply::sse(chat::tool_call(
                "t1",
                "task",
                json!({"description": "deeper", "prompt": "GRANDCHILD"}),
            )),
            Reply::sse(chat::text("child done")),
        ],
    );
    h.server
        .route("GRANDCHILD", vec![Reply::sse(chat::text("deep answer"))]);
    h.server.push(Reply::sse(chat::text("parent done")));
    h.prompt("delegate");
    let events = h.until_end().await;
    assert_eq!(end_of(&events).0, "completed");
    let bodies = h.server.bodies();
    let names_of = |needle: &str| {
        tool_names(
            bodies
                .iter()
                .find(|b| first_user(b).contains(needle))
                .unwrap(),
        )
    };
    assert!(names_of("CHILD-A").contains(&"task".to_string()));
    assert!(!names_of("GRANDCHILD").contains(&"task".to_string()));
}

#[tokio::test]
async fn an_unknown_agent_is_an_error_result_naming_the_known_ones() {
    let mut h = Harness::start_with(
        vec![
            Reply::sse(chat::tool_call(
                "c1",
                "task",
                json!({"description": "x", "prompt": "p", "agent": "nobody"}),
            )),
            Reply::sse(chat::text("ok")),
        ],
        with_agents,
    )
    .await;
    h.prompt("delegate");
    let events = h.until_end().await;
    let results = task_results(&events);
    assert!(results[0].2);
    // The schema lists the agents, so the call is refused before it runs.
    assert!(results[0].1.contains("general"), "{}", results[0].1);
}

#[tokio::test]
async fn max_parallel_bounds_the_children_running_at_once() {
    // Which child takes the one place first is not fixed: both answers are held until the
    // test has seen that only one child runs.
    let (gate_a, gate_b) = (Gate::new(), Gate::new());
    let mut h = two_children(
        Reply::sse(chat::text("result A")).after(&gate_a),
        Reply::sse(chat::text("result B")).after(&gate_b),
        "both done",
        AgentsSettings {
            max_parallel: 1,
            ..AgentsSettings::default()
        },
    )
    .await;
    h.server.wait_for_requests(2).await;
    // One child holds the place: the other waits for it.
    assert_eq!(h.agent.agents().len(), 1);
    gate_a.open();
    gate_b.open();
    let events = h.until_end().await;
    assert_eq!(end_of(&events).0, "completed");
    let requests = h.server.requests();
    let replied = h.server.reply_times();
    // Requests and replies alternate (parent, one child, the other, parent): the second
    // child's request came after the first child's reply was written.
    assert_eq!(requests.len(), 4);
    assert!(first_user(&requests[1].body).contains("CHILD-"));
    assert!(first_user(&requests[2].body).contains("CHILD-"));
    assert_ne!(first_user(&requests[1].body), first_user(&requests[2].body));
    assert!(
        requests[2].received >= replied[1],
        "the second child started before the first ended"
    );
    let results = task_results(&events);
    assert_eq!(results[0].1.trim(), "result A");
    assert_eq!(results[1].1.trim(), "result B");
}
