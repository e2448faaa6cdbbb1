//! Tool calls over `--mode acp`: how a call shows (kind, title, locations, raw input), its
//! live output and result, `diff` blocks for changes, permission requests answered with each
//! option, cancel mid-tool, and an editor that goes away while a tool runs.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // test code fails loudly

use crate::support;

use agent_client_protocol::v1::schema::{
    CancelNotification, RequestPermissionOutcome, RequestPermissionResponse, StopReason,
};
use serde_json::{Value, json};
use support::acp::{Acp, choose};
use support::chat;
use support::env::{Env, env};
use support::harness::{after_file, wait_for_pid, wait_until_dead};
use support::server::{FakeServer, Reply};

fn find(updates: &[Value], what: impl Fn(&Value) -> bool) -> &Value {
    updates
        .iter()
        .find(|u| what(u))
        .unwrap_or_else(|| panic!("not among the updates: {updates:#?}"))
}

#[tokio::test]
async fn acp_ask_mode_asks_before_bash_then_streams_its_output() {
    let env = env();
    let command = format!("echo started; {}", after_file("go", "echo finished"));
    let server = FakeServer::start(vec![
        Reply::sse(chat::tool_call("c1", "bash", json!({"command": command}))),
        Reply::sse(chat::text("done")),
    ])
    .await;
    let mut acp = Acp::spawn(env.agent(&server, &["--mode", "acp"])).await;
    let id = acp.open(env.cwd.path()).await.session_id;
    let answer = acp.prompt(&id, "run it");
    let (before, request, responder) = acp.permission().await;
    let call = find(&before, |u| u["sessionUpdate"] == "tool_call");
    assert_eq!(call["toolCallId"], "c1");
    assert_eq!(call["kind"], "execute");
    // As written on the wire (docs/protocol.md §7.3), not only as the client fills it in:
    // `pending` is the schema's default, which the protocol crate would leave out.
    let written = acp.wire_updates();
    let written = find(&written, |u| u["sessionUpdate"] == "tool_call");
    assert_eq!(written["toolCallId"], "c1");
    assert_eq!(written["status"], "pending", "{written}");
    assert_eq!(written["kind"], "execute", "{written}");
    assert_eq!(call["title"], format!("bash {command}"));
    assert_eq!(call["rawInput"]["command"], command);
    assert_eq!(request.tool_call.tool_call_id.to_string(), "c1");
    let options: Vec<String> = request
        .options
        .iter()
        .map(|o| o.option_id.to_string())
        .collect();
    assert_eq!(
        options,
        ["allow_once", "allow_always", "reject_once", "reject_always"]
    );
    let shown = serde_json::to_value(&request.tool_call).unwrap();
    assert!(
        shown["content"]
            .to_string()
            .contains("the permission mode is ask"),
        "the request says why it asks: {shown}"
    );
    choose(responder, "allow_once");
    let running = acp
        .until(|u| u["sessionUpdate"] == "tool_call_update" && u["status"] == "in_progress")
        .await;
    assert_eq!(running.last().unwrap()["toolCallId"], "c1");
    // The output so far arrives while the command still runs.
    acp.until(|u| u["content"].to_string().contains("started"))
        .await;
    std::fs::write(env.cwd.path().join("go"), "").unwrap();
    let done = acp
        .until(|u| u["sessionUpdate"] == "tool_call_update" && u["status"] == "completed")
        .await;
    let result = done.last().unwrap()["content"].to_string();
    assert!(
        result.contains("started") && result.contains("finished"),
        "{result}"
    );
    assert_eq!(
        answer.await.unwrap().unwrap().stop_reason,
        StopReason::EndTurn
    );
    assert_eq!(acp.exit_code().await, 0);
}

#[tokio::test]
async fn acp_each_permission_answer_is_honoured_like_the_dialog() {
    let env = env();
    let server = FakeServer::start(vec![
        Reply::sse(chat::tool_call(
            "c1",
            "bash",
            json!({"command": "touch one"}),
        )),
        Reply::sse(chat::tool_call(
            "c2",
            "bash",
            json!({"command": "touch two"}),
        )),
        Reply::sse(chat::tool_call(
            "c3",
            "bash",
            json!({"command": "touch three"}),
        )),
        Reply::sse(chat::text("gave up")),
        Reply::sse(chat::tool_call(
            "w1",
            "write",
            json!({"path": "a.txt", "content": "x\n"}),
        )),
        Reply::sse(chat::tool_call(
            "w2",
            "write",
            json!({"path": "a.txt", "content": "x\n"}),
        )),
        Reply::sse(chat::text("wrote")),
    ])
    .await;
    let mut acp = Acp::spawn(env.agent(&server, &["--mode", "acp"])).await;
    let id = acp.open(env.cwd.path()).await.session_id;
    let answer = acp.prompt(&id, "make files");
    let (_, _, responder) = acp.permission().await;
    choose(responder, "reject_once");
    let (updates, request, responder) = acp.permission().await;
    let denied = find(&updates, |u| {
        u["toolCallId"] == "c1" && u["status"] == "failed"
    });
    assert!(
        denied["content"].to_string().contains("The user denied"),
        "{denied}"
    );
    assert_eq!(request.tool_call.tool_call_id.to_string(), "c2");
    choose(responder, "reject_always");
    // c3 is refused without asking: every bash call is, for the rest of the session.
    assert_eq!(
        answer.await.unwrap().unwrap().stop_reason,
        StopReason::EndTurn
    );
    let updates = acp.drain();
    let refused = find(&updates, |u| {
        u["toolCallId"] == "c3" && u["status"] == "failed"
    });
    assert!(
        refused["content"].to_string().contains("every `bash` call"),
        "{refused}"
    );
    for file in ["one", "two", "three"] {
        assert!(!env.cwd.path().join(file).exists(), "{file}");
    }

    let answer = acp.prompt(&id, "write it twice");
    let (_, request, responder) = acp.permission().await;
    assert_eq!(request.tool_call.tool_call_id.to_string(), "w1");
    choose(responder, "allow_always");
    // The same call again runs without asking.
    assert_eq!(
        answer.await.unwrap().unwrap().stop_reason,
        StopReason::EndTurn
    );
    let updates = acp.drain();
    find(&updates, |u| {
        u["toolCallId"] == "w2" && u["status"] == "completed"
    });
    assert_eq!(
        std::fs::read_to_string(env.cwd.path().join("a.txt")).unwrap(),
        "x\n"
    );
    assert_eq!(acp.exit_code().await, 0);
}

#[tokio::test]
async fn acp_changes_show_as_diffs_before_and_after_they_are_made() {
    let env = env();
    std::fs::write(env.cwd.path().join("notes.txt"), "one\ntwo\nthree\n").unwrap();
    let edit = json!({"path": "notes.txt", "edits": [{"oldText": "two", "newText": "TWO"}]});
    let server = FakeServer::start(vec![
        Reply::sse(chat::tool_call("e1", "edit", edit)),
        Reply::sse(chat::tool_call(
            "w1",
            "write",
            json!({"path": "new.txt", "content": "fresh\n"}),
        )),
        Reply::sse(chat::text("edited")),
    ])
    .await;
    let mut acp = Acp::spawn(env.agent(&server, &["--mode", "acp"])).await;
    let id = acp.open(env.cwd.path()).await.session_id;
    let answer = acp.prompt(&id, "change it");
    let (before, request, responder) = acp.permission().await;
    let notes = env.cwd.path().join("notes.txt");
    let call = find(&before, |u| u["sessionUpdate"] == "tool_call");
    assert_eq!(call["kind"], "edit");
    assert_eq!(call["locations"][0]["path"], notes.to_str().unwrap());
    let shown = serde_json::to_value(&request.tool_call).unwrap();
    let preview = shown["content"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["type"] == "diff")
        .unwrap_or_else(|| panic!("the request shows the diff: {shown}"));
    assert_eq!(preview["oldText"], "one\ntwo\nthree\n");
    assert_eq!(preview["newText"], "one\nTWO\nthree\n");
    choose(responder, "allow_once");
    let (updates, _, responder) = acp.permission().await;
    let edited = find(&updates, |u| {
        u["toolCallId"] == "e1" && u["status"] == "completed"
    });
    assert_eq!(edited["content"][0]["type"], "diff", "{edited}");
    assert_eq!(edited["content"][0]["path"], notes.to_str().unwrap());
    assert_eq!(edited["content"][0]["newText"], "one\nTWO\nthree\n");
    assert_eq!(edited["locations"][0]["line"], 2, "{edited}");
    choose(responder, "allow_once");
    assert_eq!(
        answer.await.unwrap().unwrap().stop_reason,
        StopReason::EndTurn
    );
    let updates = acp.drain();
    let written = find(&updates, |u| {
        u["toolCallId"] == "w1" && u["status"] == "completed"
    });
    assert_eq!(written["content"][0]["type"], "diff", "{written}");
    assert_eq!(written["content"][0]["newText"], "fresh\n");
    assert!(
        written["content"][0]["oldText"].is_null(),
        "a new file: {written}"
    );
    assert_eq!(acp.exit_code().await, 0);
}

#[tokio::test]
async fn acp_cancel_stops_a_running_tool_and_answers_every_call() {
    let env = env();
    let server = FakeServer::start(vec![Reply::sse(chat::tool_calls(&[
        (
            "c1",
            "bash",
            json!({"command": "sleep 300 & echo $! > pid; wait"}),
        ),
        ("c2", "bash", json!({"command": "echo never"})),
    ]))])
    .await;
    let mut acp =
        Acp::spawn(env.agent(&server, &["--mode", "acp", "--permission-mode", "auto"])).await;
    let id = acp.open(env.cwd.path()).await.session_id;
    let answer = acp.prompt(&id, "wait a long time");
    let pid_file = env.cwd.path().join("pid");
    // The shell creates the file before it writes the number: wait for the number.
    let pid = wait_for_pid(&pid_file).await;
    acp.cx
        .send_notification(CancelNotification::new(id.clone()))
        .unwrap();
    assert_eq!(
        answer.await.unwrap().unwrap().stop_reason,
        StopReason::Cancelled
    );
    assert!(wait_until_dead(pid).await, "process {pid} is still running");
    let updates = acp.drain();
    for call in ["c1", "c2"] {
        find(&updates, |u| {
            u["sessionUpdate"] == "tool_call_update"
                && u["toolCallId"] == call
                && u["status"] == "failed"
        });
    }
    assert_eq!(acp.exit_code().await, 0);
}

#[tokio::test]
async fn acp_cancel_while_asking_answers_the_request_cancelled_and_denies_the_call() {
    let env = env();
    let server = FakeServer::start(vec![Reply::sse(chat::tool_call(
        "c1",
        "bash",
        json!({"command": "touch never"}),
    ))])
    .await;
    let mut acp = Acp::spawn(env.agent(&server, &["--mode", "acp"])).await;
    let id = acp.open(env.cwd.path()).await.session_id;
    let answer = acp.prompt(&id, "make it");
    let (_, _, responder) = acp.permission().await;
    acp.cx
        .send_notification(CancelNotification::new(id.clone()))
        .unwrap();
    // What an editor does with its open permission requests after a cancel.
    responder
        .respond(RequestPermissionResponse::new(
            RequestPermissionOutcome::Cancelled,
        ))
        .unwrap();
    assert_eq!(
        answer.await.unwrap().unwrap().stop_reason,
        StopReason::Cancelled
    );
    let updates = acp.drain();
    find(&updates, |u| {
        u["toolCallId"] == "c1" && u["status"] == "failed"
    });
    assert!(!env.cwd.path().join("never").exists());
    assert_eq!(acp.exit_code().await, 0);
}

/// An agent over ACP (auto mode) in the middle of a prompt whose command started a
/// background `sleep` and waits for it; the sleep's pid.
async fn running_a_background_sleep(env: &Env, server: &FakeServer) -> (Acp, i32) {
    server.push(Reply::sse(chat::tool_call(
        "c1",
        "bash",
        json!({"command": "sleep 300 & echo $! > pid; wait"}),
    )));
    let acp = Acp::spawn(env.agent(server, &["--mode", "acp", "--permission-mode", "auto"])).await;
    let id = acp.open(env.cwd.path()).await.session_id;
    // The prompt's answer is never awaited: the run goes on in the agent.
    drop(acp.prompt(&id, "wait"));
    // The shell creates the file before it writes the number: wait for the number.
    let pid = wait_for_pid(&env.cwd.path().join("pid")).await;
    (acp, pid)
}

#[tokio::test]
async fn acp_an_editor_that_goes_away_ends_the_process_and_its_tools() {
    let env = env();
    let server = FakeServer::start(vec![]).await;
    let (acp, pid) = running_a_background_sleep(&env, &server).await;
    assert_eq!(acp.exit_code().await, 0, "its input ended: a clean exit");
    assert!(wait_until_dead(pid).await, "process {pid} is still running");
}

#[tokio::test]
async fn acp_sigterm_stops_the_tools_and_exits() {
    let env = env();
    let server = FakeServer::start(vec![]).await;
    let (acp, pid) = running_a_background_sleep(&env, &server).await;
    unsafe {
        libc::kill(acp.child.id().unwrap() as i32, libc::SIGTERM);
    }
    // The signal alone ends it: the editor's connection stays open until it has exited.
    assert_eq!(acp.exit_code_unprompted().await, 143);
    assert!(wait_until_dead(pid).await, "process {pid} is still running");
}

#[tokio::test]
async fn acp_todo_write_becomes_a_plan_update_with_every_entry() {
    let env = env();
    let todos = json!([
        {"content": "read the code", "status": "completed"},
        {"content": "fix the bug", "status": "in_progress"},
        {"content": "run the tests", "status": "pending"}
    ]);
    let server = FakeServer::start(vec![
        Reply::sse(chat::tool_call("c1", "todo_write", json!({"todos": todos}))),
        Reply::sse(chat::text("planned")),
    ])
    .await;
    let mut acp = Acp::spawn(env.agent(&server, &["--mode", "acp"])).await;
    let id = acp.open(env.cwd.path()).await.session_id;
    let answer = acp.prompt(&id, "plan it");
    let seen = acp.until(|u| u["sessionUpdate"] == "plan").await;
    let plan = seen.last().unwrap();
    let entries: Vec<(String, String)> = plan["entries"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| {
            (
                e["content"].as_str().unwrap().to_string(),
                e["status"].as_str().unwrap().to_string(),
            )
        })
        .collect();
    assert_eq!(
        entries,
        [
            ("read the code".to_string(), "completed".to_string()),
            ("fix the bug".to_string(), "in_progress".to_string()),
            ("run the tests".to_string(), "pending".to_string())
        ]
    );
    assert_eq!(
        answer.await.unwrap().unwrap().stop_reason,
        StopReason::EndTurn
    );
}
