//! Hooks with real scripts in temporary directories, through the engine: every event and
//! every way a hook can answer (exit 0 with context, exit 2, JSON `block`/`approve`, other
//! exit codes, hanging past its timeout), and the events that report them.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // test code fails loudly

use crate::support;

use agent::agent::Approval;
use agent::extensions::hooks::HookEvent;
use agent::protocol::event::AgentEvent;
use agent::tools::permission::{PermissionMode, PermissionRules};
use agent::tools::rules::RuleSet;
use serde_json::json;
use std::time::Duration;
use support::chat;
use support::harness::{Harness, result_of};
use support::hooks::{Scratch, hook, hook_errors, hook_events, hooks};
use support::server::Reply;

fn bash_then_text(command: &str) -> Vec<Reply> {
    vec![
        Reply::sse(chat::tool_call("c1", "bash", json!({ "command": command }))),
        Reply::sse(chat::text("done")),
    ]
}

#[tokio::test]
async fn pre_tool_use_exit_2_blocks_the_call_with_stderr_as_the_reason() {
    let s = Scratch::new();
    let script = format!(
        "{}; echo 'no shell today' >&2; exit 2",
        s.save_stdin("pre.json")
    );
    let cwd = tempfile::tempdir().unwrap();
    let specs = vec![
        hook(HookEvent::PreToolUse, Some("Bash|Write"), &script, 10),
        // A matcher for another tool never runs.
        hook(HookEvent::PreToolUse, Some("read"), "exit 2", 10),
    ];
    let mut h = Harness::start_with(bash_then_text("touch ran"), |c| {
        c.hooks = hooks(specs, cwd.path());
    })
    .await;
    h.prompt("run it");
    let events = h.until_end().await;
    assert!(!h.dir.path().join("ran").exists(), "the call never ran");
    let (text, is_error) = result_of(&events, "c1");
    assert!(is_error);
    assert!(text.contains("PreToolUse hook blocked"), "{text}");
    assert!(text.contains("no shell today"), "{text}");
    assert_eq!(
        hook_events(&events),
        ["start:PreToolUse", "end:PreToolUse:block"]
    );
    let input = s.json("pre.json");
    assert_eq!(input["hook_event_name"], "PreToolUse");
    assert_eq!(input["tool_name"], "bash");
    assert_eq!(input["tool_input"]["command"], "touch ran");
    assert_eq!(input["cwd"], cwd.path().display().to_string());
    assert!(input["session_id"].is_string(), "{input}");
}

#[tokio::test]
async fn a_json_block_decision_blocks_and_approve_skips_only_the_question() {
    let cwd = tempfile::tempdir().unwrap();
    let block = r#"echo '{"decision": "block", "reason": "policy says no"}'"#;
    let mut h = Harness::start_with(bash_then_text("touch ran"), |c| {
        c.hooks = hooks(
            vec![hook(HookEvent::PreToolUse, None, block, 10)],
            cwd.path(),
        );
    })
    .await;
    h.prompt("run it");
    let events = h.until_end().await;
    assert!(!h.dir.path().join("ran").exists());
    assert!(result_of(&events, "c1").0.contains("policy says no"));

    // `approve`: no permission question in ask mode…
    let approve = r#"echo '{"decision": "approve"}'"#;
    let mut h = Harness::start_with(
        vec![
            Reply::sse(chat::tool_call(
                "c1",
                "bash",
                json!({"command": "touch ran"}),
            )),
            Reply::sse(chat::tool_call(
                "c2",
                "bash",
                json!({"command": "touch forbidden"}),
            )),
            Reply::sse(chat::text("done")),
        ],
        |c| {
            c.permission_mode = PermissionMode::Ask;
            c.can_ask = true;
            c.hooks = hooks(
                vec![hook(HookEvent::PreToolUse, None, approve, 10)],
                cwd.path(),
            );
        },
    )
    .await;
    h.prompt("run them");
    let events = h.until_end().await;
    assert!(
        !events
            .iter()
            .any(|e| matches!(e, AgentEvent::ToolApprovalRequest { .. })),
        "an approving hook skips the question"
    );
    assert!(h.dir.path().join("ran").exists());
    assert!(h.dir.path().join("forbidden").exists());
}

#[tokio::test]
async fn an_approving_hook_never_overrides_a_deny_rule() {
    let cwd = tempfile::tempdir().unwrap();
    let approve = r#"echo '{"decision": "approve"}'"#;
    let mut h = Harness::start_with(bash_then_text("touch forbidden"), |c| {
        c.permission_rules = PermissionRules {
            rules: RuleSet::parse(&[], &[], &["bash(touch forbidden)".to_string()], &c.cwd)
                .unwrap(),
            cwd: c.cwd.clone(),
        };
        c.hooks = hooks(
            vec![hook(HookEvent::PreToolUse, None, approve, 10)],
            cwd.path(),
        );
    })
    .await;
    h.prompt("run it");
    let events = h.until_end().await;
    assert!(!h.dir.path().join("forbidden").exists());
    let (text, is_error) = result_of(&events, "c1");
    assert!(is_error, "{text}");
}

#[tokio::test]
async fn post_tool_use_sees_the_result_and_a_block_reaches_the_model() {
    let s = Scratch::new();
    let script = format!(
        "{}; echo 'lint failed: fix it' >&2; exit 2",
        s.save_stdin("post.json")
    );
    let cwd = tempfile::tempdir().unwrap();
    let mut h = Harness::start_with(bash_then_text("echo hello"), |c| {
        c.hooks = hooks(
            vec![hook(HookEvent::PostToolUse, Some("bash"), &script, 10)],
            cwd.path(),
        );
    })
    .await;
    h.prompt("run it");
    let events = h.until_end().await;
    let (text, _) = result_of(&events, "c1");
    assert!(text.contains("hello"), "the call ran: {text}");
    assert!(text.contains("lint failed: fix it"), "{text}");
    let input = s.json("post.json");
    assert_eq!(input["hook_event_name"], "PostToolUse");
    assert_eq!(input["tool_name"], "bash");
    assert!(
        input["tool_response"]["content"][0]["text"]
            .as_str()
            .unwrap()
            .contains("hello"),
        "{input}"
    );
    let body = &h.server.bodies()[1];
    assert!(body.to_string().contains("lint failed: fix it"));
}

#[tokio::test]
async fn user_prompt_submit_adds_context_or_blocks_the_prompt() {
    let s = Scratch::new();
    let script = format!(
        "{}; echo 'Current branch: main'",
        s.save_stdin("prompt.json")
    );
    let cwd = tempfile::tempdir().unwrap();
    let mut h = Harness::start_with(vec![Reply::sse(chat::text("ok"))], |c| {
        c.hooks = hooks(
            vec![hook(HookEvent::UserPromptSubmit, None, &script, 10)],
            cwd.path(),
        );
    })
    .await;
    h.prompt("what branch?");
    h.until_end().await;
    assert_eq!(s.json("prompt.json")["prompt"], "what branch?");
    let body = h.server.bodies()[0].to_string();
    assert!(
        body.contains("what branch?") && body.contains("Current branch: main"),
        "{body}"
    );

    let mut h = Harness::start_with(vec![], |c| {
        c.hooks = hooks(
            vec![hook(
                HookEvent::UserPromptSubmit,
                None,
                "echo 'no secrets in prompts' >&2; exit 2",
                10,
            )],
            cwd.path(),
        );
    })
    .await;
    h.prompt("my password is hunter2");
    let events = h.until_end().await;
    assert!(
        h.server.bodies().is_empty(),
        "the prompt never reached the model"
    );
    assert!(
        events.iter().any(|e| matches!(e, AgentEvent::Notice { message, .. } if message.contains("no secrets in prompts"))),
        "{events:?}"
    );
    assert!(h.agent.messages().is_empty());
}

#[tokio::test]
async fn a_blocking_stop_hook_makes_the_run_go_on_with_its_reason() {
    let s = Scratch::new();
    // Blocks once; when the run already went on because of it, lets it stop.
    let script = format!(
        "input=$(cat); echo \"$input\" >> '{}'; case \"$input\" in *'\"stop_hook_active\":true'*) exit 0;; esac; echo 'Also run the tests.' >&2; exit 2",
        s.path("stop.log").display()
    );
    let cwd = tempfile::tempdir().unwrap();
    let mut h = Harness::start_with(
        vec![
            Reply::sse(chat::text("done")),
            Reply::sse(chat::text("tests pass")),
        ],
        |c| {
            c.hooks = hooks(vec![hook(HookEvent::Stop, None, &script, 10)], cwd.path());
        },
    )
    .await;
    h.prompt("fix it");
    h.until_end().await;
    let bodies = h.server.bodies();
    assert_eq!(bodies.len(), 2);
    let last = bodies[1]["messages"]
        .as_array()
        .unwrap()
        .last()
        .unwrap()
        .clone();
    assert_eq!(last["role"], "user");
    assert_eq!(last["content"], "Also run the tests.");
    let log = std::fs::read_to_string(s.path("stop.log")).unwrap();
    assert_eq!(log.lines().count(), 2, "{log}");
}

#[tokio::test]
async fn session_start_context_reaches_the_first_prompt_and_session_end_runs() {
    let s = Scratch::new();
    let cwd = tempfile::tempdir().unwrap();
    let specs = vec![
        hook(
            HookEvent::SessionStart,
            None,
            &format!("{}; echo 'Open issues: 3'", s.save_stdin("start.json")),
            10,
        ),
        hook(HookEvent::SessionEnd, None, &s.save_stdin("end.json"), 10),
    ];
    let mut h = Harness::start_with(
        vec![Reply::sse(chat::text("ok")), Reply::sse(chat::text("ok"))],
        |c| c.hooks = hooks(specs, cwd.path()),
    )
    .await;
    h.agent.session_start(h.agent.session_source()).await;
    assert_eq!(s.json("start.json")["source"], "startup");
    h.prompt("hello");
    h.until_end().await;
    h.prompt("again");
    h.until_end().await;
    let bodies = h.server.bodies();
    assert!(bodies[0].to_string().contains("Open issues: 3"));
    assert_eq!(
        bodies[1].to_string().matches("Open issues: 3").count(),
        1,
        "the context is given once"
    );
    h.agent.session_end("exit").await;
    assert_eq!(s.json("end.json")["reason"], "exit");
}

#[tokio::test]
async fn pre_compact_runs_before_a_compaction() {
    let s = Scratch::new();
    let cwd = tempfile::tempdir().unwrap();
    let mut h = Harness::start_with(
        vec![
            Reply::sse(chat::text("first answer")),
            Reply::sse(chat::text("second answer")),
            Reply::sse(chat::text("the summary")),
        ],
        |c| {
            c.compaction.keep_recent_tokens = 1;
            c.hooks = hooks(
                vec![hook(
                    HookEvent::PreCompact,
                    None,
                    &s.save_stdin("compact.json"),
                    10,
                )],
                cwd.path(),
            );
        },
    )
    .await;
    h.prompt("one");
    h.until_end().await;
    h.prompt("two");
    h.until_end().await;
    let _ = h.agent.compact(Some("keep the plan".into())).await;
    let input = s.json("compact.json");
    assert_eq!(input["trigger"], "manual");
    assert_eq!(input["custom_instructions"], "keep the plan");
}

#[tokio::test]
async fn notification_hooks_hear_of_approvals_and_the_end_of_a_run() {
    let s = Scratch::new();
    let cwd = tempfile::tempdir().unwrap();
    let script = format!(
        "input=$(cat); case \"$input\" in *permission_prompt*) echo \"$input\" > '{}';; *) echo \"$input\" > '{}';; esac",
        s.path("approval.json").display(),
        s.path("idle.json").display()
    );
    let mut h = Harness::start_with(bash_then_text("true"), |c| {
        c.permission_mode = PermissionMode::Ask;
        c.can_ask = true;
        c.hooks = hooks(
            vec![hook(HookEvent::Notification, None, &script, 10)],
            cwd.path(),
        );
    })
    .await;
    h.prompt("run it");
    let seen = h
        .until(|e| matches!(e, AgentEvent::ToolApprovalRequest { .. }))
        .await;
    let approval = s.wait_for("approval.json").await;
    assert_eq!(approval["notification_type"], "permission_prompt");
    assert!(approval["message"].as_str().unwrap().contains("bash"));
    let Some(AgentEvent::ToolApprovalRequest { tool_call_id, .. }) = seen.last() else {
        unreachable!()
    };
    h.agent.approve(tool_call_id, Approval::Allow).unwrap();
    h.until_end().await;
    let idle = s.wait_for("idle.json").await;
    assert_eq!(idle["notification_type"], "idle_prompt");
}

#[tokio::test]
async fn failing_and_hanging_hooks_are_reported_and_the_run_goes_on() {
    let s = Scratch::new();
    let cwd = tempfile::tempdir().unwrap();
    let hang = format!(
        "echo $$ > '{}'; sleep 60 & sleep 60",
        s.path("hung.pid").display()
    );
    let specs = vec![
        hook(HookEvent::PreToolUse, None, "echo broken >&2; exit 1", 10),
        // Long enough for a loaded machine to start it and let it write its pid.
        hook(HookEvent::PreToolUse, None, &hang, 3),
        hook(HookEvent::PostToolUse, None, "/no/such/hook-program", 10),
        // Only a PreToolUse answer that cannot be read blocks (tests/it/hooks_faults.rs).
        hook(
            HookEvent::PostToolUse,
            None,
            r#"echo '{"decision": "maybe"}'"#,
            10,
        ),
    ];
    let mut h = Harness::start_with(bash_then_text("touch ran"), |c| {
        c.hooks = hooks(specs, cwd.path());
    })
    .await;
    h.prompt("run it");
    let events = h.until_end().await;
    assert!(h.dir.path().join("ran").exists(), "the call ran regardless");
    let errors = hook_errors(&events);
    assert_eq!(errors.len(), 4, "{errors:?}");
    assert!(
        errors
            .iter()
            .any(|e| e.contains("exited with code 1: broken")),
        "{errors:?}"
    );
    assert!(
        errors
            .iter()
            .any(|e| e.contains("did not finish within 3 s")),
        "{errors:?}"
    );
    assert!(
        errors
            .iter()
            .any(|e| e.starts_with("PostToolUse: exited with code 127")),
        "{errors:?}"
    );
    assert!(errors.iter().any(|e| e.contains("\"maybe\"")), "{errors:?}");
    // The hung hook's whole process group was killed.
    let pid: i32 = std::fs::read_to_string(s.path("hung.pid"))
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    tokio::time::timeout(Duration::from_secs(20), async {
        // SAFETY: signal 0 only checks whether the group still exists.
        while unsafe { libc::killpg(pid, 0) } == 0 {
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    })
    .await
    .expect("the hung hook's processes are gone");
}
