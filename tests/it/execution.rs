//! How the calls of one assistant message are executed: read-only calls concurrently but
//! reported in call order, mutating calls alone, permission rules (chained and substituted
//! shell commands, writes outside the working directory), and the loop guard.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // test code fails loudly

use crate::support;

use agent::agent::Approval;
use agent::protocol::event::AgentEvent;
use agent::protocol::message::join_text;
use agent::tools::permission::{PermissionMode, PermissionRules};
use agent::tools::rules::RuleSet;
use agent::tools::{Execution, Tools};
use serde_json::json;
use std::path::Path;
use support::chat;
use support::gate::Gates;
use support::harness::{Harness, end_of, transcript};
use support::server::Reply;

fn all_tools(c: &mut agent::agent::AgentConfig) {
    c.tools = Tools::from_names(agent::tools::ALL_TOOLS).unwrap();
}

fn rules(cwd: &Path, allow: &[&str], ask: &[&str], deny: &[&str]) -> PermissionRules {
    let own = |list: &[&str]| list.iter().map(|s| s.to_string()).collect::<Vec<_>>();
    PermissionRules {
        rules: RuleSet::parse(&own(allow), &own(ask), &own(deny), cwd).unwrap(),
        cwd: cwd.to_path_buf(),
    }
}

/// All tools and a `gate` tool whose calls wait until the test opens their gate.
fn with_gates(c: &mut agent::agent::AgentConfig, gates: &Gates) {
    c.tools = Tools::from_names(agent::tools::ALL_TOOLS)
        .unwrap()
        .with_tool(gates.tool())
        .unwrap();
}

fn tool_order(events: &[AgentEvent]) -> Vec<String> {
    events
        .iter()
        .filter_map(|e| match e {
            AgentEvent::ToolExecutionStart { tool_call_id, .. } => {
                Some(format!("start:{tool_call_id}"))
            }
            AgentEvent::ToolExecutionEnd { tool_call_id, .. } => {
                Some(format!("end:{tool_call_id}"))
            }
            _ => None,
        })
        .collect()
}

#[tokio::test]
async fn read_only_calls_run_together_and_are_reported_in_call_order() {
    let gates = Gates::default();
    let mut h = Harness::start_with(vec![], |c| with_gates(c, &gates)).await;
    h.server.push(Reply::sse(chat::tool_calls(&[
        ("c1", "gate", json!({"name": "first"})),
        ("c2", "gate", json!({"name": "second"})),
    ])));
    h.server.push(Reply::sse(chat::text("both read")));
    h.prompt("read both");
    // c1 waits at its gate; only if c2 runs at the same time does it reach its own.
    assert!(gates.started("first", 1).await);
    assert!(
        gates.started("second", 1).await,
        "the second call never started while the first was blocked"
    );
    gates.open("second", "from second\n");
    gates.open("first", "from first\n");
    let events = h.until_end().await;
    assert_eq!(end_of(&events).0, "completed");
    assert_eq!(
        tool_order(&events),
        ["start:c1", "start:c2", "end:c1", "end:c2"]
    );
    let t = transcript(&h.server.bodies()[1]);
    assert_eq!(&t[3..], ["tool:c1:from first\n", "tool:c2:from second\n"]);
}

#[tokio::test]
async fn sequential_execution_runs_one_call_at_a_time() {
    let mut h = Harness::start_with(
        vec![
            Reply::sse(chat::tool_calls(&[
                ("c1", "ls", json!({})),
                ("c2", "find", json!({"pattern": "*.txt"})),
            ])),
            Reply::sse(chat::text("ok")),
        ],
        |c| {
            all_tools(c);
            c.tool_settings.execution = Execution::Sequential;
        },
    )
    .await;
    std::fs::write(h.dir.path().join("a.txt"), "").unwrap();
    h.prompt("look");
    let events = h.until_end().await;
    assert_eq!(
        tool_order(&events),
        ["start:c1", "end:c1", "start:c2", "end:c2"]
    );
}

#[tokio::test]
async fn a_mutating_call_runs_alone_between_read_only_ones() {
    let mut h = Harness::start_with(
        vec![
            Reply::sse(chat::tool_calls(&[
                ("c1", "grep", json!({"pattern": "zzz"})),
                ("c2", "ls", json!({})),
                ("c3", "write", json!({"path": "made.txt", "content": "zzz"})),
                ("c4", "grep", json!({"pattern": "zzz"})),
                ("c5", "read", json!({"path": "made.txt"})),
            ])),
            Reply::sse(chat::text("ok")),
        ],
        all_tools,
    )
    .await;
    h.prompt("go");
    let events = h.until_end().await;
    assert_eq!(
        tool_order(&events),
        [
            "start:c1", "start:c2", "end:c1", "end:c2", "start:c3", "end:c3", "start:c4",
            "start:c5", "end:c4", "end:c5"
        ]
    );
    let t = transcript(&h.server.bodies()[1]);
    assert!(t[3].starts_with("tool:c1:No matches"), "{}", t[3]);
    assert_eq!(t[6], "tool:c4:made.txt:1: zzz\n");
    assert_eq!(t[7], "tool:c5:zzz");
}

#[tokio::test]
async fn steering_during_a_parallel_batch_skips_only_calls_not_started() {
    let gates = Gates::default();
    let mut h = Harness::start_with(vec![], |c| {
        with_gates(c, &gates);
        c.tool_settings.max_parallel = 1;
    })
    .await;
    h.server.push(Reply::sse(chat::tool_calls(&[
        ("c1", "gate", json!({"name": "slow"})),
        ("c2", "ls", json!({})),
    ])));
    h.server.push(Reply::sse(chat::text("as you wish")));
    h.prompt("go");
    h.until(|e| matches!(e, AgentEvent::ToolExecutionStart { tool_call_id, .. } if tool_call_id == "c2"))
        .await;
    h.agent
        .steer(agent::protocol::message::UserMessage::text("stop that"));
    assert!(gates.started("slow", 1).await);
    gates.open("slow", "slow data\n");
    let events = h.until_end().await;
    assert_eq!(end_of(&events).0, "completed");
    assert!(
        !events
            .iter()
            .any(|e| matches!(e, AgentEvent::ToolExecutionStart { .. })),
        "a call waiting for its place is announced once"
    );
    let t = transcript(&h.server.bodies()[1]);
    assert_eq!(
        &t[3..],
        [
            "tool:c1:slow data\n",
            &format!("tool:c2:{}", agent::agent::SKIPPED_TEXT),
            "user:stop that"
        ]
    );
}

#[tokio::test]
async fn abort_during_parallel_reads_answers_every_call_at_once() {
    let gates = Gates::default();
    let mut h = Harness::start_with(vec![], |c| {
        with_gates(c, &gates);
        c.tool_settings.max_parallel = 2;
    })
    .await;
    h.server.push(Reply::sse(chat::tool_calls(&[
        ("c1", "gate", json!({"name": "never"})),
        ("c2", "gate", json!({"name": "never"})),
        ("c3", "ls", json!({})),
    ])));
    h.prompt("go");
    h.until(|e| matches!(e, AgentEvent::ToolExecutionStart { tool_call_id, .. } if tool_call_id == "c3"))
        .await;
    // Both blocked calls hold a thread that does not look at the abort.
    assert!(gates.started("never", 2).await);
    h.agent.abort();
    let events = h.until_end().await;
    // Let the abandoned threads go.
    gates.open("never", "too late");
    assert_eq!(end_of(&events).0, "aborted");
    assert!(
        !events
            .iter()
            .any(|e| matches!(e, AgentEvent::ToolExecutionStart { .. })),
        "every call was announced exactly once, before the abort"
    );
    let results: Vec<(String, bool)> = events
        .iter()
        .filter_map(|e| match e {
            AgentEvent::ToolExecutionEnd {
                tool_call_id,
                is_error,
                ..
            } => Some((tool_call_id.clone(), *is_error)),
            _ => None,
        })
        .collect();
    let ids: Vec<&str> = results.iter().map(|(id, _)| id.as_str()).collect();
    assert_eq!(ids, ["c1", "c2", "c3"]);
    assert!(
        results[0].1 && results[1].1,
        "the blocked reads end as errors"
    );
}

#[tokio::test]
async fn chained_and_substituted_commands_need_every_part_allowed() {
    let mut h = Harness::start_with(vec![], |c| {
        all_tools(c);
        c.permission_mode = PermissionMode::Ask;
        c.permission_rules = rules(&c.cwd, &["bash(echo *)", "bash(true)"], &[], &[]);
    })
    .await;
    h.server.push(Reply::sse(chat::tool_calls(&[
        ("c1", "bash", json!({"command": "echo allowed && true"})),
        ("c2", "bash", json!({"command": "echo hi && touch chained"})),
        (
            "c3",
            "bash",
            json!({"command": "echo $(touch substituted)"}),
        ),
        ("c4", "bash", json!({"command": "echo `touch backticked`"})),
        ("c5", "bash", json!({"command": "echo hi\ntouch newline"})),
        ("c6", "bash", json!({"command": "echo hi > redirected"})),
    ])));
    h.server.push(Reply::sse(chat::text("ok")));
    h.prompt("go");
    let events = h.until_end().await;
    assert_eq!(end_of(&events).0, "completed");
    for file in [
        "chained",
        "substituted",
        "backticked",
        "newline",
        "redirected",
    ] {
        assert!(!h.dir.path().join(file).exists(), "{file} was created");
    }
    let t = transcript(&h.server.bodies()[1]);
    assert_eq!(t[3], "tool:c1:allowed\n\n[exit code 0]");
    for denied in &t[4..9] {
        assert!(denied.contains("needs the user's approval"), "{denied}");
    }
}

#[tokio::test]
async fn deny_rules_win_even_in_auto_mode() {
    let mut h = Harness::start_with(vec![], |c| {
        all_tools(c);
        c.permission_rules = rules(&c.cwd, &["bash"], &[], &["bash(rm *)", "read(secret*)"]);
    })
    .await;
    std::fs::write(h.dir.path().join("keep.txt"), "").unwrap();
    std::fs::write(h.dir.path().join("secret.key"), "hunter2").unwrap();
    h.server.push(Reply::sse(chat::tool_calls(&[
        ("c1", "bash", json!({"command": "ls; rm -f keep.txt"})),
        ("c2", "read", json!({"path": "secret.key"})),
    ])));
    h.server.push(Reply::sse(chat::text("ok")));
    h.prompt("go");
    h.until_end().await;
    assert!(h.dir.path().join("keep.txt").exists());
    let t = transcript(&h.server.bodies()[1]);
    assert!(t[3].contains("the rule `bash(rm *)`"), "{}", t[3]);
    assert!(t[4].contains("the rule `read(secret*)`"), "{}", t[4]);
    assert!(!t[4].contains("hunter2"));
}

#[tokio::test]
async fn writes_outside_the_working_directory_ask_even_when_a_rule_allows_writes() {
    let outside = tempfile::tempdir().unwrap();
    let target = outside.path().join("elsewhere.txt");
    let mut h = Harness::start_with(vec![], |c| {
        all_tools(c);
        c.permission_mode = PermissionMode::Ask;
        c.can_ask = true;
        c.permission_rules = rules(&c.cwd, &["write"], &[], &[]);
    })
    .await;
    h.server.push(Reply::sse(chat::tool_calls(&[
        (
            "c1",
            "write",
            json!({"path": "inside.txt", "content": "in"}),
        ),
        (
            "c2",
            "write",
            json!({"path": target.display().to_string(), "content": "out"}),
        ),
    ])));
    h.server.push(Reply::sse(chat::text("ok")));
    h.prompt("write both");
    let seen = h
        .until(|e| matches!(e, AgentEvent::ToolApprovalRequest { .. }))
        .await;
    assert!(
        h.dir.path().join("inside.txt").exists(),
        "allowed without asking"
    );
    let AgentEvent::ToolApprovalRequest {
        tool_call_id,
        reason,
        ..
    } = seen.last().unwrap()
    else {
        unreachable!()
    };
    assert_eq!(tool_call_id, "c2");
    assert!(reason.contains("outside the working directory"), "{reason}");
    h.agent.approve("c2", Approval::Deny(None)).unwrap();
    h.until_end().await;
    assert!(!target.exists());
}

#[tokio::test]
async fn the_loop_guard_warns_once_then_stops_the_run() {
    let read = || Reply::sse(chat::tool_call("r", "read", json!({"path": "same.txt"})));
    let mut h = Harness::start_with(vec![read(), read(), read(), read()], all_tools).await;
    std::fs::write(h.dir.path().join("same.txt"), "unchanging\n").unwrap();
    h.prompt("loop");
    let events = h.until_end().await;
    let (status, error) = end_of(&events);
    assert_eq!(status, "limit");
    let error = error.unwrap();
    assert!(
        error.contains("loop guard") && error.contains("kept repeating the same `read` call"),
        "{error}"
    );
    let results: Vec<String> = events
        .iter()
        .filter_map(|e| match e {
            AgentEvent::ToolExecutionEnd { result, .. } => Some(join_text(&result.content)),
            _ => None,
        })
        .collect();
    assert_eq!(results.len(), 4);
    assert_eq!(results[0], "unchanging\n");
    assert!(!results[1].contains("Loop guard"));
    assert!(
        results[2]
            .starts_with("unchanging\n\n[Loop guard: you have made this same `read` call 3 times"),
        "{}",
        results[2]
    );
    assert!(
        results[3].starts_with("Not executed: the loop guard"),
        "{}",
        results[3]
    );
    assert_eq!(h.server.requests().len(), 4, "no request after the stop");
}

#[tokio::test]
async fn the_loop_guard_can_be_turned_off() {
    let read = || Reply::sse(chat::tool_call("r", "read", json!({"path": "same.txt"})));
    let mut h = Harness::start_with(
        vec![
            read(),
            read(),
            read(),
            read(),
            Reply::sse(chat::text("done")),
        ],
        |c| {
            all_tools(c);
            c.limits.loop_guard.enabled = false;
        },
    )
    .await;
    std::fs::write(h.dir.path().join("same.txt"), "unchanging\n").unwrap();
    h.prompt("loop");
    let events = h.until_end().await;
    assert_eq!(end_of(&events).0, "completed");
    let results: Vec<String> = events
        .iter()
        .filter_map(|e| match e {
            AgentEvent::ToolExecutionEnd { result, .. } => Some(join_text(&result.content)),
            _ => None,
        })
        .collect();
    assert_eq!(results, vec!["unchanging\n"; 4]);
}

#[tokio::test]
async fn deny_rules_on_paths_hold_for_every_file_a_search_visits() {
    let mut h = Harness::start_with(vec![], |c| {
        all_tools(c);
        c.permission_rules = rules(&c.cwd, &[], &[], &["read(secret/**)"]);
    })
    .await;
    let dir = h.dir.path();
    std::fs::create_dir(dir.join("secret")).unwrap();
    std::fs::write(dir.join("secret/key.txt"), "TOKEN=hunter2\n").unwrap();
    std::fs::write(dir.join("notes.txt"), "TOKEN=public\n").unwrap();
    // A link outside the denied directory that leads into it.
    std::os::unix::fs::symlink(dir.join("secret"), dir.join("innocent")).unwrap();
    h.server.push(Reply::sse(chat::tool_calls(&[
        ("c1", "grep", json!({"pattern": "TOKEN"})),
        ("c2", "find", json!({"pattern": "*.txt"})),
        ("c3", "ls", json!({"path": "secret"})),
        ("c4", "grep", json!({"pattern": "TOKEN", "path": "secret"})),
        (
            "c5",
            "grep",
            json!({"pattern": "TOKEN", "path": "innocent"}),
        ),
        ("c6", "find", json!({"pattern": "*", "path": "innocent"})),
    ])));
    h.server.push(Reply::sse(chat::text("ok")));
    h.prompt("go");
    assert_eq!(end_of(&h.until_end().await).0, "completed");
    let t = transcript(&h.server.bodies()[1]);
    for (i, result) in t[3..9].iter().enumerate() {
        assert!(!result.contains("hunter2"), "call {}: {result}", i + 1);
        assert!(!result.contains("key.txt"), "call {}: {result}", i + 1);
        assert!(
            result.contains("left out: the user's [permissions] rules"),
            "call {}: {result}",
            i + 1
        );
    }
    assert!(
        t[3].starts_with("tool:c1:notes.txt:1: TOKEN=public\n"),
        "{}",
        t[3]
    );
    assert!(t[4].starts_with("tool:c2:notes.txt\n"), "{}", t[4]);
}
