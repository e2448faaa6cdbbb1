//! Sessions end to end: what is written, resuming exactly where the conversation was,
//! surviving SIGKILL mid-stream and mid-tool, torn files, locks, and compaction.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // test code fails loudly

use crate::support;

use agent::protocol::event::AgentEvent;
use agent::protocol::message::Message;
use agent::session::load::{INTERRUPTED_TEXT, load};
use agent::session::{self, Choice};
use serde_json::{Value, json};
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use support::chat;
use support::env::env;
use support::harness::{Harness, transcript, wait_for_pid};
use support::process::{Rpc, run};
use support::server::{End, FakeServer, Reply};

fn lines_of(path: &Path) -> Vec<Value> {
    std::fs::read_to_string(path)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("invalid line ({e}): {l}")))
        .collect()
}

#[tokio::test]
async fn a_run_writes_every_message_to_a_private_session_file() {
    let env = env();
    let server = FakeServer::start(vec![
        Reply::sse(chat::tool_call(
            "c1",
            "read",
            json!({"path": "missing.txt"}),
        )),
        Reply::sse(chat::text("done")),
    ])
    .await;
    let out = run(env.agent(&server, &["-p", "--api-key", "sk-never-on-disk", "look"])).await;
    assert_eq!(out.code, 0, "{}", out.stderr);
    let path = env.only_session();
    assert!(
        !std::fs::read_to_string(&path)
            .unwrap()
            .contains("sk-never-on-disk")
    );
    assert_eq!(
        std::fs::metadata(&path).unwrap().permissions().mode() & 0o777,
        0o600
    );
    let lines = lines_of(&path);
    assert_eq!(lines[0]["type"], "session");
    assert_eq!(lines[0]["version"], 1);
    assert_eq!(lines[0]["cwd"], env.cwd.path().to_str().unwrap());
    let kinds: Vec<String> = lines[1..]
        .iter()
        .map(|l| match l["type"].as_str().unwrap() {
            "message" => format!("message:{}", l["message"]["role"].as_str().unwrap()),
            other => other.to_string(),
        })
        .collect();
    assert_eq!(
        kinds,
        [
            "model_change",
            "message:user",
            "message:assistant",
            "message:toolResult",
            "message:assistant"
        ]
    );
    // Every entry links to the one before it.
    for pair in lines[1..].windows(2) {
        assert_eq!(pair[1]["parentId"], pair[0]["id"]);
    }
    assert_eq!(lines[1]["model"], "test-model");
}

#[tokio::test]
async fn continue_sends_exactly_what_the_model_saw_before() {
    let env = env();
    let server = FakeServer::start(vec![
        Reply::sse(chat::tool_call("c1", "bash", json!({"command": "echo hi"}))),
        Reply::sse(chat::text("first answer")),
        Reply::sse(chat::text("second answer")),
    ])
    .await;
    let out = run(env.agent(&server, &["-p", "--permission-mode", "auto", "first"])).await;
    assert_eq!(out.code, 0, "{}", out.stderr);
    let out = run(env.agent(&server, &["-c", "-p", "second"])).await;
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert_eq!(out.stdout, "second answer\n");
    let bodies = server.bodies();
    let before = bodies[1]["messages"].as_array().unwrap();
    let after = bodies[2]["messages"].as_array().unwrap();
    assert_eq!(
        &after[..before.len()],
        &before[..],
        "the resumed request starts with the old one"
    );
    assert_eq!(after[before.len()]["role"], "assistant");
    assert_eq!(after[before.len()]["content"], "first answer");
    assert_eq!(after[before.len() + 1]["content"], "second");
    assert_eq!(after.len(), before.len() + 2);
    assert_eq!(env.session_files().len(), 1, "continued, not a new session");
}

#[tokio::test]
async fn sigkill_mid_stream_loses_nothing_that_was_complete() {
    let env = env();
    // Two words, then the stream stays open: the kill is certain to come mid-stream.
    let frames = chat::text_deltas(&["one ", "two ", "three "]);
    let server = FakeServer::start(vec![Reply::sse(frames[..3].to_vec()).then(End::Stall)]).await;
    let mut agent = Rpc::spawn(env.agent(&server, &["--mode", "json", "tell me a story"]));
    agent
        .until(|l| l["assistantMessageEvent"]["delta"] == "two ")
        .await;
    agent.child.start_kill().unwrap();
    agent.child.wait().await.unwrap();

    server.push(Reply::sse(chat::text("resumed")));
    let out = run(env.agent(&server, &["-c", "-p", "go on"])).await;
    assert_eq!(out.code, 0, "{}", out.stderr);
    let t = transcript(&server.bodies()[1]);
    assert_eq!(t, ["system", "user:tell me a story", "user:go on"]);
}

#[tokio::test]
async fn sigkill_mid_tool_is_answered_when_the_session_resumes() {
    let env = env();
    let server = FakeServer::start(vec![Reply::sse(chat::tool_call(
        "c1",
        "bash",
        json!({"command": "echo $$ > shell.pid; sleep 30"}),
    ))])
    .await;
    let mut child = env
        .agent(&server, &["-p", "--permission-mode", "auto", "run it"])
        .spawn()
        .unwrap();
    let pid = wait_for_pid(&env.cwd.path().join("shell.pid")).await;
    child.start_kill().unwrap();
    child.wait().await.unwrap();
    // The orphaned command is not ours to keep.
    unsafe {
        libc::killpg(pid, libc::SIGKILL);
    }

    server.push(Reply::sse(chat::text("it was interrupted")));
    let out = run(env.agent(&server, &["-c", "-p", "what happened?"])).await;
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert!(
        out.stderr.contains("1 tool call(s) were interrupted"),
        "{}",
        out.stderr
    );
    let t = transcript(&server.bodies()[1]);
    assert_eq!(
        t,
        [
            "system",
            "user:run it",
            "assistant::[bash]",
            &format!("tool:c1:{INTERRUPTED_TEXT}"),
            "user:what happened?"
        ]
    );
    // The answer was written down, so the next load needs no repair.
    let loaded = load(&env.only_session()).unwrap();
    assert!(loaded.repairs.is_empty());
    assert!(loaded.warnings.is_empty(), "{:?}", loaded.warnings);
}

#[tokio::test]
async fn a_torn_last_line_is_dropped_and_the_file_repaired() {
    let env = env();
    let server = chat::answering(&["one", "two"]).await;
    assert_eq!(run(env.agent(&server, &["-p", "first"])).await.code, 0);
    let path = env.only_session();
    let mut file = std::fs::OpenOptions::new()
        .append(true)
        .open(&path)
        .unwrap();
    std::io::Write::write_all(&mut file, b"{\"type\":\"message\",\"id\":\"torn\",\"mess").unwrap();
    drop(file);
    let out = run(env.agent(&server, &["-c", "-p", "second"])).await;
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert!(
        out.stderr.contains("the last line was cut off"),
        "{}",
        out.stderr
    );
    let lines = lines_of(&path);
    assert!(lines.iter().all(|l| l["id"] != "torn"));
    assert_eq!(
        lines.last().unwrap()["message"]["content"][0]["text"],
        "two"
    );
    assert_eq!(
        transcript(&server.bodies()[1]),
        ["system", "user:first", "assistant:one:[]", "user:second"]
    );
}

#[tokio::test]
async fn an_invalid_line_in_the_middle_is_reported_and_skipped() {
    let env = env();
    let server = chat::answering(&["one", "two"]).await;
    assert_eq!(run(env.agent(&server, &["-p", "first"])).await.code, 0);
    let path = env.only_session();
    let text = std::fs::read_to_string(&path).unwrap();
    let mut lines: Vec<&str> = text.lines().collect();
    lines.insert(2, "this is not json");
    std::fs::write(&path, lines.join("\n") + "\n").unwrap();
    let out = run(env.agent(&server, &["-c", "-p", "second"])).await;
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert!(
        out.stderr.contains("line 3 is not a valid entry"),
        "{}",
        out.stderr
    );
    assert_eq!(
        transcript(&server.bodies()[1]),
        ["system", "user:first", "assistant:one:[]", "user:second"]
    );
}

#[tokio::test]
async fn a_session_in_use_is_refused_and_a_killed_holder_leaves_no_lock() {
    let env = env();
    let server = chat::answering(&["held", "ok"]).await;
    let mut holder = Rpc::spawn(env.agent(&server, &["--mode", "rpc"]));
    holder
        .send(json!({"id": "p", "type": "prompt", "message": "hold it"}))
        .await;
    holder.until(|l| l["type"] == "agent_end").await;
    holder.send(json!({"id": "s", "type": "get_state"})).await;
    let state = holder.response("s").await;
    let file = state["data"]["sessionFile"].as_str().unwrap().to_string();
    let out = run(env.agent(&server, &["--session", &file, "-p", "hi"])).await;
    assert_eq!(out.code, 1);
    assert!(
        out.stderr.contains("is open in another agent process"),
        "{}",
        out.stderr
    );
    let out = run(env.agent(&server, &["-c", "-p", "hi"])).await;
    assert_eq!(out.code, 1, "-c picks the same, locked session");

    holder.child.start_kill().unwrap();
    holder.child.wait().await.unwrap();
    let out = run(env.agent(&server, &["--session", &file, "-p", "hi"])).await;
    assert_eq!(out.code, 0, "{}", out.stderr);
}

#[tokio::test]
async fn rpc_new_session_starts_over_in_a_new_file() {
    let env = env();
    let server = chat::answering(&["one", "two"]).await;
    let mut rpc = Rpc::spawn(env.agent(&server, &["--mode", "rpc"]));
    rpc.send(json!({"id": "p", "type": "prompt", "message": "first"}))
        .await;
    rpc.until(|l| l["type"] == "agent_end").await;
    rpc.send(json!({"id": "s1", "type": "get_state"})).await;
    let first = rpc.response("s1").await["data"].clone();
    assert_eq!(first["messageCount"], 2);
    assert!(first["usage"]["totalTokens"].as_u64().unwrap() > 0);
    rpc.send(json!({"id": "n", "type": "new_session"})).await;
    let created = rpc.response("n").await;
    assert_eq!(created["success"], true, "{created}");
    rpc.send(json!({"id": "s2", "type": "get_state"})).await;
    let second = rpc.response("s2").await["data"].clone();
    assert_eq!(second["messageCount"], 0);
    assert_ne!(second["sessionFile"], first["sessionFile"]);
    assert_eq!(second["sessionFile"], created["data"]["sessionFile"]);
    rpc.send(json!({"id": "p2", "type": "prompt", "message": "second"}))
        .await;
    rpc.until(|l| l["type"] == "agent_end").await;
    assert_eq!(transcript(&server.bodies()[1]), ["system", "user:second"]);
    let new_file = PathBuf::from(second["sessionFile"].as_str().unwrap());
    assert!(
        lines_of(&new_file)
            .iter()
            .any(|l| l["message"]["content"][0]["text"] == "second")
    );
    assert_eq!(rpc.exit_code().await, 0);
}

#[tokio::test]
async fn no_session_keeps_nothing_and_resume_finds_by_prefix() {
    let env = env();
    let server = chat::answering(&["a", "b", "c"]).await;
    assert_eq!(
        run(env.agent(&server, &["--no-session", "-p", "hi"]))
            .await
            .code,
        0
    );
    assert!(env.session_files().is_empty());

    let out = run(env.agent(&server, &["--mode", "json", "remember"])).await;
    let session: Value = serde_json::from_str(out.stdout.lines().next().unwrap()).unwrap();
    let id = session["id"].as_str().unwrap();
    let out = run(env.agent(&server, &["-r", &id[..10], "-p", "again"])).await;
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert_eq!(transcript(&server.bodies()[2])[1], "user:remember");

    let out = run(env.agent(&server, &["-r", "zzzz", "-p", "x"])).await;
    assert_eq!(out.code, 1);
    assert!(
        out.stderr.contains("no session matches `zzzz`"),
        "{}",
        out.stderr
    );
}

#[tokio::test]
async fn a_session_without_messages_leaves_no_file() {
    let env = env();
    let server = chat::answering(&["kept"]).await;
    let mut idle = Rpc::spawn(env.agent(&server, &["--mode", "rpc"]));
    idle.send(json!({"id": "s", "type": "get_state"})).await;
    idle.response("s").await;
    assert_eq!(idle.exit_code().await, 0);
    assert!(
        env.session_files().is_empty(),
        "opening and quitting writes nothing"
    );
    assert_eq!(run(env.agent(&server, &["-p", "real work"])).await.code, 0);
    let lines = lines_of(&env.only_session());
    assert_eq!(lines[0]["type"], "session");
    assert_eq!(
        lines[1]["type"], "model_change",
        "bookkeeping written with the first message"
    );
}

#[tokio::test]
async fn continue_without_a_session_says_so_and_starts_one() {
    let env = env();
    let server = chat::answering(&["fresh"]).await;
    let out = run(env.agent(&server, &["-c", "-p", "hi"])).await;
    assert_eq!(out.code, 0);
    assert_eq!(
        out.stderr.trim(),
        "agent: no earlier session in this directory; starting a new one"
    );
    assert_eq!(env.session_files().len(), 1);
}

#[tokio::test]
async fn context_files_reach_the_system_prompt() {
    let env = env();
    std::fs::write(env.home.path().join("AGENTS.md"), "Global: be terse.").unwrap();
    std::fs::write(env.cwd.path().join("AGENTS.md"), "Project: use tabs.").unwrap();
    let server = chat::answering(&["ok"]).await;
    assert_eq!(run(env.agent(&server, &["-p", "hi"])).await.code, 0);
    let system = server.bodies()[0]["messages"][0]["content"]
        .as_str()
        .unwrap()
        .to_string();
    let global = system.find("Global: be terse.").expect("global AGENTS.md");
    let project = system
        .find("Project: use tabs.")
        .expect("project AGENTS.md");
    assert!(global < project);
}

async fn harness_with_session(replies: Vec<Reply>, window: u64) -> (Harness, PathBuf) {
    let home = tempfile::tempdir().unwrap().keep();
    let cwd = home.join("work");
    std::fs::create_dir_all(&cwd).unwrap();
    let opened = session::open(Choice::New, &home.join("sessions"), &cwd)
        .await
        .unwrap();
    let path = opened.path.clone().unwrap();
    let harness = Harness::start_with(replies, move |config| {
        config.model.context_window = window;
        config.compaction.reserve_tokens = 500;
        config.compaction.keep_recent_tokens = 100;
        config.session = opened.writer;
    })
    .await;
    (harness, path)
}

fn compaction_events(events: &[AgentEvent]) -> Vec<Value> {
    events
        .iter()
        .filter(|e| {
            matches!(
                e,
                AgentEvent::AutoCompactionStart { .. } | AgentEvent::AutoCompactionEnd { .. }
            )
        })
        .map(|e| serde_json::to_value(e).unwrap())
        .collect()
}

#[tokio::test]
async fn the_context_is_compacted_past_the_threshold() {
    let big = "word ".repeat(1200);
    let (mut h, path) = harness_with_session(
        vec![
            // The provider counts 3,600 tokens: past the 4,000 window minus the reserve.
            Reply::sse(chat::text_with_usage(&big, 100, 3500)),
            Reply::sse(chat::text("## Goal\nSummarised.")),
            Reply::sse(chat::text("answer after compaction")),
        ],
        4000,
    )
    .await;
    h.prompt("first question");
    h.until_end().await;
    h.prompt("second question");
    let events = h.until_end().await;
    let compaction = compaction_events(&events);
    assert_eq!(
        compaction[0],
        json!({"type": "auto_compaction_start", "reason": "threshold"})
    );
    assert_eq!(compaction[1]["type"], "auto_compaction_end");
    assert_eq!(compaction[1]["aborted"], false);
    assert!(compaction[1]["tokensBefore"].as_u64().unwrap() > 1500);
    assert!(
        compaction[1].get("errorMessage").is_none(),
        "{}",
        compaction[1]
    );

    let bodies = h.server.bodies();
    assert_eq!(bodies.len(), 3);
    let summary_request = &bodies[1];
    let system = summary_request["messages"][0]["content"].as_str().unwrap();
    assert!(
        system.contains("## Next steps"),
        "the structured prompt from assets/"
    );
    let conversation = summary_request["messages"][1]["content"].as_str().unwrap();
    assert!(conversation.starts_with("<conversation>") && conversation.contains("first question"));
    assert!(summary_request.get("tools").is_none());
    let t = transcript(&bodies[2]);
    assert!(
        t[1].starts_with("user:The conversation so far was summarized"),
        "{}",
        t[1]
    );
    assert!(t[1].contains("## Goal\nSummarised."));
    assert_eq!(
        &t[2..],
        [
            format!("assistant:{big}:[]"),
            "user:second question".to_string()
        ]
    );

    // Nothing was deleted from the file, and reloading gives the same context.
    let lines = lines_of(&path);
    assert!(lines.iter().any(|l| l["type"] == "compaction"));
    assert!(
        lines
            .iter()
            .any(|l| l["message"]["content"][0]["text"] == "first question")
    );
    let reloaded: Vec<Message> = load(&path)
        .unwrap()
        .context
        .into_iter()
        .map(|(_, m)| (*m).clone())
        .collect();
    let live: Vec<Message> = h
        .agent
        .messages()
        .into_iter()
        .map(|m| (*m).clone())
        .collect();
    assert_eq!(reloaded, live);
}

#[tokio::test]
async fn an_overflow_error_compacts_and_retries_the_turn_once() {
    let (mut h, _path) = harness_with_session(
        vec![
            Reply::sse(chat::text("earlier answer")),
            Reply::status(400, r#"{"error":{"message":"This model's maximum context length is 2000 tokens.","code":"context_length_exceeded"}}"#),
            Reply::sse(chat::text("summary of it all")),
            Reply::sse(chat::text("fits now")),
        ],
        200_000,
    )
    .await;
    h.prompt("q1");
    h.until_end().await;
    h.prompt(&"long question ".repeat(40));
    let events = h.until_end().await;
    let compaction = compaction_events(&events);
    assert_eq!(compaction[0]["reason"], "overflow");
    let AgentEvent::AgentEnd {
        status, messages, ..
    } = events.last().unwrap()
    else {
        panic!()
    };
    assert_eq!(serde_json::to_value(status).unwrap(), "completed");
    assert_eq!(
        messages.last().unwrap().as_assistant().unwrap().text(),
        "fits now"
    );
    let bodies = h.server.bodies();
    assert_eq!(bodies.len(), 4);
    let retried = transcript(&bodies[3]);
    assert!(retried[1].contains("summary of it all"));
    // The failed attempt is not in the history.
    assert_eq!(
        h.agent
            .messages()
            .iter()
            .filter(|m| m.as_assistant().is_some_and(|a| a.error_message.is_some()))
            .count(),
        0
    );
}

#[tokio::test]
async fn manual_compaction_follows_the_given_focus() {
    let (mut h, _path) = harness_with_session(
        vec![
            Reply::sse(chat::text(&"detail ".repeat(200))),
            Reply::sse(chat::text("short")),
            Reply::sse(chat::text("focused summary")),
        ],
        200_000,
    )
    .await;
    h.prompt("tell me everything");
    h.until_end().await;
    h.prompt("and more");
    h.until_end().await;
    let (before, after) = h
        .agent
        .compact(Some("the API design".into()))
        .await
        .unwrap();
    let events = h
        .until(|e| matches!(e, AgentEvent::AutoCompactionEnd { .. }))
        .await;
    let compaction = compaction_events(&events);
    assert_eq!(compaction[0]["reason"], "manual");
    assert_eq!(compaction[1]["tokensBefore"], before);
    assert_eq!(compaction[1]["tokensAfter"], after);
    let request = h.server.bodies().last().unwrap().clone();
    let text = request["messages"][1]["content"].as_str().unwrap();
    assert!(text.contains("tell me everything"));
    assert!(
        text.ends_with("Additional instructions for this summary: the API design"),
        "{text}"
    );
    let messages = h.agent.messages();
    let Message::User(first) = messages[0].as_ref() else {
        panic!()
    };
    assert!(first.plain_text().contains("focused summary"));
    // A compaction while a run is active is refused.
    h.prompt("busy now");
    assert!(h.agent.compact(None).await.is_err());
}

#[tokio::test]
async fn two_compactions_in_a_row_reload_exactly() {
    let answer = "detail ".repeat(120);
    let (mut h, path) = harness_with_session(
        vec![
            Reply::sse(chat::text(&answer)),
            Reply::sse(chat::text(&answer)),
            Reply::sse(chat::text("first summary")),
            Reply::sse(chat::text("second summary")),
        ],
        200_000,
    )
    .await;
    h.prompt("one");
    h.until_end().await;
    h.prompt("two");
    h.until_end().await;
    h.agent.compact(None).await.unwrap();
    // The second compaction cuts inside what the first one kept.
    h.agent.compact(None).await.unwrap();
    let live: Vec<Message> = h
        .agent
        .messages()
        .into_iter()
        .map(|m| (*m).clone())
        .collect();
    let Message::User(first) = &live[0] else {
        panic!("a summary first")
    };
    assert!(first.plain_text().contains("second summary"));
    assert!(
        !live
            .iter()
            .any(|m| matches!(m, Message::User(u) if u.plain_text().contains("first summary")))
    );
    let reloaded: Vec<Message> = load(&path)
        .unwrap()
        .context
        .into_iter()
        .map(|(_, m)| (*m).clone())
        .collect();
    assert_eq!(reloaded, live);
}
