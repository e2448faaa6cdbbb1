//! Hooks fail closed (issue 29): an abort while a PreToolUse hook runs ends the run before
//! the call starts; a PreToolUse answer the agent cannot read blocks the call and says why;
//! long reasons are cut, never dropped; no hook process outlives its hook or the agent.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // test code fails loudly

use crate::support;

use agent::extensions::hooks::HookEvent;
use agent::protocol::event::AgentEvent;
use agent::tools::Tools;
use serde_json::json;
use support::chat;
use support::harness::{Harness, end_of, result_of, wait_for_pid, wait_until_dead};
use support::hooks::{Scratch, hook, hook_errors, hooks};
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

fn bash_then_text(command: &str) -> Vec<Reply> {
    vec![
        Reply::sse(chat::tool_call("c1", "bash", json!({ "command": command }))),
        Reply::sse(chat::text("done")),
    ]
}

/// Run one `touch ran` call behind the PreToolUse hook `script`: whether it ran, its result,
/// and the hook errors reported.
async fn call_behind(script: &str) -> (bool, String, Vec<String>) {
    let cwd = tempfile::tempdir().unwrap();
    let mut h = Harness::start_with(bash_then_text("touch ran"), |c| {
        c.hooks = hooks(
            vec![hook(HookEvent::PreToolUse, None, script, 30)],
            cwd.path(),
        );
    })
    .await;
    h.prompt("run it");
    let events = h.until_end().await;
    let (text, is_error) = result_of(&events, "c1");
    let ran = h.dir.path().join("ran").exists();
    assert_eq!(is_error, !ran, "{text}");
    (ran, text, hook_errors(&events))
}

#[tokio::test]
async fn a_pre_tool_use_answer_that_cannot_be_read_blocks_the_call_and_says_why() {
    for script in [
        r#"echo '{"decision": "approve",'"#,
        r#"echo '{"decision": "maybe"}'"#,
        "echo '{not json}'",
    ] {
        let (ran, text, errors) = call_behind(script).await;
        assert!(!ran, "{script}: the call was blocked");
        assert!(text.contains("PreToolUse hook blocked"), "{script}: {text}");
        assert_eq!(errors.len(), 1, "{script}: {errors:?}");
        assert!(errors[0].contains("the call is blocked"), "{errors:?}");
    }
    let (_, text, errors) = call_behind(r#"echo '{"decision": "approve",'"#).await;
    assert!(text.contains("could not be read"), "{text}");
    assert!(errors[0].contains("not valid JSON"), "{errors:?}");
    // Plain text is no answer at all: the call runs.
    let (ran, _, errors) = call_behind("echo 'looks fine to me'").await;
    assert!(ran);
    assert!(errors.is_empty(), "{errors:?}");
}

#[tokio::test]
async fn a_block_with_a_huge_reason_blocks_with_the_reason_cut_not_dropped() {
    // A 1 MiB reason: more than the agent reads of a hook's output.
    let script = r#"printf '{"decision": "block", "reason": "policy: '; head -c 1048576 /dev/zero | tr '\0' x; printf '"}'"#;
    let (ran, text, errors) = call_behind(script).await;
    assert!(!ran, "the call was blocked");
    assert!(text.contains("policy: xxxx"), "the reason's start is kept");
    assert!(text.contains("(cut:"), "and it says it was cut");
    assert!(text.len() < 64 * 1024, "cut: {} bytes", text.len());
    assert_eq!(errors.len(), 1, "{errors:?}");
    assert!(errors[0].contains("longer than"), "{errors:?}");
    // Exit 2 with a huge stderr: the same cut reason.
    let script = "head -c 1048576 /dev/zero | tr '\\0' y >&2; exit 2";
    let (ran, text, errors) = call_behind(script).await;
    assert!(!ran);
    assert!(
        text.contains("yyyy") && text.contains("(cut:"),
        "{}",
        &text[..200]
    );
    assert!(text.len() < 64 * 1024, "cut: {} bytes", text.len());
    assert!(errors.is_empty(), "{errors:?}");
}
