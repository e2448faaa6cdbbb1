//! The `ask_user` tool (docs/protocol.md §3.1 `user_question`, §4.2 `answer_question`,
//! §7.4): the model's question answered over RPC (and a bad answer refused, the question
//! still open), at once with "no user is here" in `-p`, as a permission request in ACP, and
//! a run stopped while a question is open.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // test code fails loudly

use crate::support;

use serde_json::{Value, json};
use support::acp::{Acp, choose};
use support::chat;
use support::env::env;
use support::process::{Rpc, run};
use support::server::{FakeServer, Reply};

fn asks() -> Reply {
    Reply::sse(chat::tool_call(
        "q1",
        "ask_user",
        json!({"questions": [{
            "id": "db", "header": "Database", "question": "Which database should it use?",
            "options": [{"label": "Postgres"}, {"label": "SQLite", "description": "a file"}]
        }]}),
    ))
}

/// Every text of the requests the server got, joined.
fn sent(server: &FakeServer) -> String {
    server
        .requests()
        .iter()
        .map(|r| r.body.to_string())
        .collect::<Vec<_>>()
        .join("\n")
}

#[tokio::test]
async fn the_model_asks_over_rpc_and_the_answer_is_the_tool_result() {
    let env = env();
    let server = FakeServer::start(vec![asks(), Reply::sse(chat::text("done"))]).await;
    let mut rpc = Rpc::spawn(env.agent(&server, &["--mode", "rpc"]));
    rpc.send(json!({"id": "p", "type": "prompt", "message": "set it up"}))
        .await;
    let question = rpc
        .until(|l| l["type"] == "user_question")
        .await
        .pop()
        .unwrap();
    assert_eq!(question["toolCallId"], "q1");
    assert_eq!(question["questions"][0]["id"], "db");
    assert_eq!(question["questions"][0]["options"][1]["label"], "SQLite");
    rpc.send(json!({"id": "s", "type": "get_state"})).await;
    assert_eq!(rpc.response("s").await["data"]["state"], "awaiting_human");

    // An answer that does not fit is refused; the question stays open.
    rpc.send(
        json!({"id": "bad", "type": "answer_question", "toolCallId": "q1",
                    "answers": [{"id": "db", "selected": ["Oracle"]}]}),
    )
    .await;
    let bad = rpc.response("bad").await;
    assert_eq!(bad["success"], false, "{bad}");
    assert!(
        bad["error"]
            .as_str()
            .unwrap()
            .contains("no option `Oracle`")
    );
    rpc.send(
        json!({"id": "ok", "type": "answer_question", "toolCallId": "q1",
                    "answers": [{"id": "db", "selected": ["SQLite"]}]}),
    )
    .await;
    // The answer lets the call end, so its events may come before or after the response.
    let mut lines = rpc
        .until(|l| l["type"] == "response" && l["id"] == "ok")
        .await;
    assert_eq!(lines.last().unwrap()["success"], true);
    lines.extend(rpc.until(|l| l["type"] == "agent_end").await);
    let end = lines
        .iter()
        .find(|l| l["type"] == "tool_execution_end")
        .unwrap();
    assert_eq!(end["isError"], false, "{end}");
    assert!(
        sent(&server).contains("Database: SQLite"),
        "{}",
        sent(&server)
    );
}

#[tokio::test]
async fn print_mode_answers_that_no_user_is_here_and_the_model_goes_on() {
    let env = env();
    let server = FakeServer::start(vec![asks(), Reply::sse(chat::text("I chose SQLite"))]).await;
    let output = run(env.agent(&server, &["-p", "set it up"])).await;
    assert_eq!(output.code, 0, "{}", output.stderr);
    assert!(
        output.stdout.contains("I chose SQLite"),
        "{}",
        output.stdout
    );
    assert!(sent(&server).contains("No user is here to answer"));
}

#[tokio::test]
async fn a_run_stopped_while_a_question_is_open_ends_the_call() {
    let env = env();
    let server = FakeServer::start(vec![asks(), Reply::sse(chat::text("never"))]).await;
    let mut rpc = Rpc::spawn(env.agent(&server, &["--mode", "rpc"]));
    rpc.send(json!({"id": "p", "type": "prompt", "message": "set it up"}))
        .await;
    rpc.until(|l| l["type"] == "user_question").await;
    rpc.send(json!({"id": "a", "type": "abort"})).await;
    let lines = rpc.until(|l| l["type"] == "agent_end").await;
    assert_eq!(lines.last().unwrap()["status"], "aborted");
    let end: &Value = lines
        .iter()
        .find(|l| l["type"] == "tool_execution_end" && l["toolCallId"] == "q1")
        .unwrap();
    assert_eq!(end["isError"], true, "{end}");
    // Nothing waits for an answer any more.
    rpc.send(
        json!({"id": "late", "type": "answer_question", "toolCallId": "q1",
                    "answers": [{"id": "db", "selected": ["SQLite"]}]}),
    )
    .await;
    assert_eq!(rpc.response("late").await["success"], false);
    assert_eq!(server.requests().len(), 1, "no request after the stop");
}

#[tokio::test]
async fn acp_asks_one_choice_as_a_permission_request() {
    let env = env();
    let server = FakeServer::start(vec![asks(), Reply::sse(chat::text("done"))]).await;
    let mut acp = Acp::spawn(env.agent(&server, &["--mode", "acp"])).await;
    let id = acp.open(env.cwd.path()).await.session_id;
    let answer = acp.prompt(&id, "set it up");
    let (_, request, responder) = acp.permission().await;
    assert_eq!(request.tool_call.tool_call_id.to_string(), "q1");
    let names: Vec<String> = request.options.iter().map(|o| o.name.clone()).collect();
    assert_eq!(names[..2], ["Postgres", "SQLite"], "{names:?}");
    let second = request.options[1].option_id.to_string();
    choose(responder, &second);
    answer.await.unwrap().unwrap();
    assert!(
        sent(&server).contains("Database: SQLite"),
        "{}",
        sent(&server)
    );
}
