//! Sub-agents whose own session file cannot be written (issue 19 §3): the child's file
//! beside the parent's (`<parent>.agents/`) cannot be created, or fills up mid-run (a real
//! `EFBIG` from a file-size limit). The child fails alone — its `task` call is an error
//! result naming the file and the OS error — the parent's run goes on to its end (it never
//! hangs on the child), and the parent's own session keeps every message.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // test code fails loudly

use crate::support;

use agent::agent::children::AgentsSettings;
use agent::protocol::message::Message;
use agent::session::SessionWriter;
use agent::session::format::Header;
use agent::session::load::load;
use serde_json::{Value, json};
use std::path::Path;
use std::sync::Arc;
use support::chat;
use support::delegation::task_call;
use support::env::env;
use support::faults::{json_lines, limit_file_size};
use support::harness::{Harness, end_of, result_of, transcript};
use support::process::run;
use support::server::{FakeServer, Reply};

/// Each message of a session file as `role:text`, checking that the file loads whole.
fn saved_messages(path: &Path) -> Vec<String> {
    let loaded = load(path).unwrap();
    assert!(loaded.warnings.is_empty(), "{:?}", loaded.warnings);
    json_lines(path)
        .iter()
        .filter(|l| l["type"] == "message")
        .map(|l| {
            let message = &l["message"];
            let text: String = message["content"]
                .as_array()
                .unwrap()
                .iter()
                .map(|part| match part["type"].as_str() {
                    Some("text") => part["text"].as_str().unwrap().to_string(),
                    Some("toolCall") => format!("[{}]", part["name"].as_str().unwrap()),
                    _ => String::new(),
                })
                .collect();
            format!("{}:{}", message["role"].as_str().unwrap(), text.trim())
        })
        .collect()
}

#[tokio::test]
async fn a_child_whose_session_file_cannot_be_made_fails_and_the_parent_goes_on() {
    let home = tempfile::tempdir().unwrap();
    let parent_path = home.path().join("parent.jsonl");
    let header = Header::new("parent-id", &home.path().to_string_lossy(), 1);
    let writer = Arc::new(SessionWriter::create(&parent_path, &header).unwrap());
    // A file where the children's directory should be.
    let blocker = home.path().join("parent.agents");
    std::fs::write(&blocker, "in the way").unwrap();
    let mut h = Harness::start_with(
        vec![
            task_call("c1", "CHILD-A: count"),
            Reply::sse(chat::text("carried on")),
        ],
        |config| {
            config.agents = Some(AgentsSettings::default());
            config.session = Some(writer.clone());
        },
    )
    .await;
    drop(writer);
    h.prompt("delegate");
    let events = h.until_end().await;
    assert_eq!(end_of(&events), ("completed".to_string(), None));
    let (text, is_error) = result_of(&events, "c1");
    assert!(is_error, "{text}");
    // The child's file is made with its first line: its prompt could not be saved.
    assert!(
        text.starts_with("The sub-agent `general` (a1) failed: the session could not be saved: ")
            && text.contains(&format!("{}/", blocker.display()))
            && text.contains("File exists (os error 17)"),
        "{text}"
    );
    // The child never ran unsaved: no request of its own.
    assert!(
        h.server
            .bodies()
            .iter()
            .all(|b| !transcript(b).contains(&"user:CHILD-A: count".to_string()))
    );
    // The model heard why, and the parent's file holds the whole run.
    let last = transcript(h.server.bodies().last().unwrap());
    assert_eq!(last.last().unwrap(), &format!("tool:c1:{text}"));
    let in_memory = h.agent.messages().len();
    let Harness { agent, server, .. } = h;
    drop(agent);
    drop(server);
    let saved = saved_messages(&parent_path);
    assert_eq!(saved.len(), in_memory, "{saved:?}");
    assert_eq!(saved[0], "user:delegate");
    assert_eq!(saved[1], "assistant:[task]");
    assert_eq!(saved[2], format!("toolResult:{text}"));
    assert_eq!(saved[3], "assistant:carried on");
    // The engine's task may hold the session (and its lock) a moment after the handle is
    // dropped: wait until the file is free.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
    let reopened = loop {
        match agent::session::open_file(&parent_path).await {
            Err(agent::session::SessionError::Locked(_))
                if std::time::Instant::now() < deadline =>
            {
                tokio::time::sleep(std::time::Duration::from_millis(10)).await;
            }
            opened => break opened.unwrap(),
        }
    };
    assert_eq!(reopened.history.len(), 4);
    assert!(matches!(
        reopened.history.last().map(|(_, m)| m.as_ref()),
        Some(Message::Assistant(_))
    ));
}

#[tokio::test]
async fn a_child_whose_session_fills_up_mid_run_fails_alone_and_the_parent_keeps_its_file() {
    let env = env();
    let server = FakeServer::start(vec![
        task_call("c1", "CHILD-A: count"),
        Reply::sse(chat::text("carried on")),
        Reply::sse(chat::text("continued")),
    ])
    .await;
    // The child's command prints ~7 kB: its result is the write that does not fit.
    server.route(
        "CHILD-A",
        vec![
            Reply::sse(chat::tool_call(
                "b1",
                "bash",
                json!({"command": "seq 1 1500"}),
            )),
            Reply::sse(chat::text("never asked for")),
        ],
    );
    let mut cmd = env.agent(
        &server,
        &["--mode", "json", "--permission-mode", "auto", "delegate"],
    );
    // Room for the parent's whole run (a few short lines), not for the child's result.
    limit_file_size(&mut cmd, 4_000);
    let out = run(cmd).await;
    assert_eq!(out.code, 0, "{}", out.stderr);
    let lines: Vec<Value> = out
        .stdout
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let end = lines.iter().find(|l| l["type"] == "agent_end").unwrap();
    assert_eq!(end["status"], "completed", "{end}");
    // The child's failure is the task's result: which file, which OS error.
    let result = lines
        .iter()
        .find(|l| l["type"] == "tool_execution_end" && l["toolCallId"] == "c1")
        .unwrap();
    assert_eq!(result["isError"], true, "{result}");
    let child_file = result["result"]["details"]["sessionFile"]
        .as_str()
        .unwrap()
        .to_string();
    let text = result["result"]["content"][0]["text"].as_str().unwrap();
    assert!(
        text.contains("failed: the session could not be saved")
            && text.contains(&child_file)
            && text.contains("File too large (os error 27)"),
        "{text}"
    );
    assert_eq!(result["result"]["details"]["status"], "failed");
    // The child stopped at the failed write: it never sent its result to the model.
    let child_requests = server
        .bodies()
        .iter()
        .filter(|b| transcript(b).contains(&"user:CHILD-A: count".to_string()))
        .count();
    assert_eq!(child_requests, 1);

    // The parent's file holds its whole run; the child's file is whole lines up to the
    // write that failed (the torn one was cut back off).
    let parent = env.only_session();
    let saved = saved_messages(&parent);
    assert_eq!(saved.len(), 4, "{saved:?}");
    assert_eq!(saved[0], "user:delegate");
    assert!(
        saved[2].contains("File too large (os error 27)"),
        "{saved:?}"
    );
    assert_eq!(saved[3], "assistant:carried on");
    let child = saved_messages(Path::new(&child_file));
    assert_eq!(child, ["user:CHILD-A: count", "assistant:[bash]"]);

    // The parent's conversation continues from its file, the child's failure included.
    let out = run(env.agent(&server, &["-c", "-p", "go on"])).await;
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert_eq!(out.stdout, "continued\n");
    let t = transcript(server.bodies().last().unwrap());
    assert_eq!(t[1], "user:delegate");
    assert!(t[3].contains("File too large (os error 27)"), "{t:?}");
    assert_eq!(&t[4..], ["assistant:carried on:[]", "user:go on"]);
}
