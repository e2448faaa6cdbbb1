//! Hooks fail closed (issue 29): an abort while a PreToolUse hook runs ends the run before
//! the call starts; a PreToolUse answer the agent cannot read blocks the call and says why;
//! long reasons are cut, never dropped; no hook process outlives its hook or the agent.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // test code fails loudly

mod support;

use agent::extensions::hooks::HookEvent;
use agent::protocol::event::AgentEvent;
use agent::tools::Tools;
use serde_json::json;
use support::chat;
use support::harness::{Harness, end_of, result_of, wait_for_pid, wait_until_dead};
use support::hooks::{Scratch, hook, hooks};
use support::server::Reply;

fn write_then_text(path: &str) -> Vec<Reply> {
    vec![
        Reply::sse(chat::tool_call(
            "c1",
            "write",
            json!({"path": path, "content": "written after the abort\n"}),
        )),
        Reply::sse(chat::text("done")),
    ]
}

#[tokio::test]
async fn an_abort_while_a_pre_tool_use_hook_runs_ends_the_run_before_the_call() {
    let s = Scratch::new();
    let cwd = tempfile::tempdir().unwrap();
    // The hook says where it is, then takes its time.
    let script = format!(
        "echo $$ > '{}'; exec sleep 60",
        s.path("hook.pid").display()
    );
    let mut h = Harness::start_with(write_then_text("out.txt"), |c| {
        c.tools = Tools::from_names(&["read", "write", "bash"]).unwrap();
        c.hooks = hooks(
            vec![hook(HookEvent::PreToolUse, None, &script, 30)],
            cwd.path(),
        );
    })
    .await;
    h.prompt("write it");
    let hook_pid = wait_for_pid(&s.path("hook.pid")).await;
    h.agent.abort();
    let events = h.until_end().await;
    assert_eq!(end_of(&events).0, "aborted", "{events:?}");
    let (text, is_error) = result_of(&events, "c1");
    assert!(is_error, "{text}");
    assert!(text.contains("Not executed"), "{text}");
    assert!(
        !h.dir.path().join("out.txt").exists(),
        "the call never started"
    );
    assert!(wait_until_dead(hook_pid).await, "the hook was killed");
    assert_eq!(h.server.bodies().len(), 1, "no request after the abort");
    assert!(
        !events
            .iter()
            .any(|e| matches!(e, AgentEvent::HookEnd { .. })),
        "an aborted hook gave no answer: {events:?}"
    );
}
