//! Sessions under real disk faults: a file-size limit (`RLIMIT_FSIZE`, a real `EFBIG` with
//! torn partial writes), a session directory that cannot be created, a file deleted under
//! the writer, two agents given the same new file. The run stops with `agent_end` failed
//! naming the file and the OS error, nothing reported complete is missing from the file,
//! and once the fault is gone the conversation continues without loss.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // test code fails loudly

use crate::support;

use agent::session::load::load;
use serde_json::{Value, json};
use std::path::PathBuf;
use support::chat;
use support::env::env;
use support::faults::{
    json_lines, lift_file_size_limit, limit_file_size, limit_file_size_as_a_shell_does,
};
use support::harness::transcript;
use support::process::{Rpc, run};
use support::server::{FakeServer, Reply};

fn text_of(line: &Value) -> &str {
    line["message"]["content"][0]["text"].as_str().unwrap_or("")
}

#[tokio::test]
async fn a_write_that_fails_mid_line_stops_the_run_and_continue_loses_nothing() {
    let env = env();
    let long_answer = "word ".repeat(800);
    let server = FakeServer::start(vec![
        Reply::sse(chat::text("one")),
        Reply::sse(chat::text(&long_answer)),
        Reply::sse(chat::text("three")),
    ])
    .await;
    assert_eq!(run(env.agent(&server, &["-p", "first"])).await.code, 0);
    let path = env.only_session();
    let before = std::fs::metadata(&path).unwrap().len();

    // Room for the next prompt's line, not for the 4 kB answer: its write is cut short.
    let mut cmd = env.agent(&server, &["-c", "--mode", "json", "second"]);
    limit_file_size(&mut cmd, before + 1_000);
    let out = run(cmd).await;
    assert_eq!(out.code, 1, "{}", out.stderr);
    let end: Value = out
        .stdout
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).unwrap())
        .find(|l| l["type"] == "agent_end")
        .expect("agent_end");
    assert_eq!(end["status"], "failed");
    let error = end["error"].as_str().unwrap();
    assert!(
        error.contains(path.to_str().unwrap()) && error.contains("File too large (os error 27)"),
        "{error}"
    );
    // Only what was saved is reported: the prompt, not the answer.
    let reported: Vec<&str> = end["messages"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["role"].as_str().unwrap())
        .collect();
    assert_eq!(reported, ["user"]);
    assert!(
        !out.stdout
            .contains(r#""type":"message_end","message":{"role":"assistant""#),
        "the unsaved answer is never announced as done"
    );

    // The half-written answer was cut back off: every line is whole, the last one is the
    // prompt that was reported.
    let lines = json_lines(&path);
    assert_eq!(text_of(lines.last().unwrap()), "second");

    let out = run(env.agent(&server, &["-c", "-p", "third"])).await;
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert_eq!(out.stdout, "three\n");
    assert_eq!(
        transcript(&server.bodies()[2]),
        [
            "system",
            "user:first",
            "assistant:one:[]",
            "user:second",
            "user:third"
        ]
    );
    let loaded = load(&path).unwrap();
    assert!(loaded.warnings.is_empty(), "{:?}", loaded.warnings);
}

/// Under `ulimit -f` the agent is not killed by SIGXFSZ: the write past the limit fails
/// with "File too large", the run ends as documented (exit 1, one explaining line naming
/// the file and the OS error), and the file keeps only whole lines.
#[tokio::test]
async fn under_ulimit_f_a_write_past_the_limit_fails_the_run_with_a_message() {
    let env = env();
    let long_answer = "word ".repeat(2000);
    let server = FakeServer::start(vec![
        Reply::sse(chat::text("one")),
        Reply::sse(chat::text(&long_answer)),
    ])
    .await;
    assert_eq!(run(env.agent(&server, &["-p", "first"])).await.code, 0);
    let path = env.only_session();
    let before = std::fs::metadata(&path).unwrap().len();

    // Room for a few more kilobytes, not for the 10 kB answer.
    let mut cmd = env.agent(&server, &["-c", "-p", "second"]);
    limit_file_size_as_a_shell_does(&mut cmd, before + 3_000);
    let out = run(cmd).await;
    assert_eq!(out.code, 1, "not killed by a signal: {}", out.stderr);
    let last = out.stderr.lines().last().unwrap_or_default();
    assert!(
        last.starts_with("agent: error: the session could not be saved: ")
            && last.contains(path.to_str().unwrap())
            && last.contains("File too large (os error 27)"),
        "{}",
        out.stderr
    );
    assert!(out.stdout.is_empty(), "{}", out.stdout);
    let lines = json_lines(&path);
    assert_eq!(text_of(lines.last().unwrap()), "second");
}

/// The agent catches SIGXFSZ for itself only: a command it runs under the same limit
/// gets the default action back (a program writing past the limit is stopped by the
/// signal, as it would be from the user's shell), not an inherited "ignore".
#[tokio::test]
async fn under_ulimit_f_a_command_the_agent_runs_keeps_the_default_sigxfsz() {
    let env = env();
    // Outside the working tree, so no checkpoint of it comes near the limit.
    let elsewhere = tempfile::tempdir().unwrap();
    let big = elsewhere.path().join("big");
    let command = format!(
        "head -c 3000000 /dev/zero > '{}'; echo \"status $?\"",
        big.display()
    );
    let server = FakeServer::start(vec![
        Reply::sse(chat::tool_call("c1", "bash", json!({ "command": command }))),
        Reply::sse(chat::text("done")),
    ])
    .await;
    let mut cmd = env.agent(&server, &["-p", "--permission-mode", "auto", "go"]);
    limit_file_size_as_a_shell_does(&mut cmd, 2_000_000);
    let out = run(cmd).await;
    assert_eq!(out.code, 0, "{}", out.stderr);
    let bodies = server.bodies();
    let result = bodies[1]["messages"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["role"] == "tool")
        .expect("the tool result");
    let text = result["content"].to_string();
    // 128 + SIGXFSZ (25): `head` was ended by the signal, it did not see "File too large".
    assert!(text.contains("status 153"), "{text}");
    assert!(!text.contains("File too large"), "{text}");
}

#[tokio::test]
async fn print_mode_exits_1_naming_the_file_and_the_os_error() {
    let env = env();
    let server = chat::answering(&["never saved", "saved"]).await;
    // A file where the sessions directory should be: creating the session file fails.
    let blocker = env.home.path().join("sessions");
    std::fs::write(&blocker, "in the way").unwrap();
    let out = run(env.agent(&server, &["-p", "hello"])).await;
    assert_eq!(out.code, 1, "{}", out.stderr);
    assert!(out.stdout.is_empty(), "nothing is reported: {}", out.stdout);
    let line = out
        .stderr
        .lines()
        .find(|l| l.starts_with("agent: error: the session could not be saved: "))
        .unwrap_or_else(|| panic!("{}", out.stderr));
    assert!(
        line.contains(blocker.to_str().unwrap()) && line.contains("Not a directory (os error 20)"),
        "{line}"
    );
    assert_eq!(server.bodies().len(), 0, "the model is not called unsaved");

    std::fs::remove_file(&blocker).unwrap();
    let out = run(env.agent(&server, &["-p", "hello again"])).await;
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert_eq!(out.stdout, "never saved\n");
}

async fn agent_end(rpc: &mut Rpc) -> Value {
    rpc.until(|l| l["type"] == "agent_end").await.pop().unwrap()
}

async fn state(rpc: &mut Rpc, id: &str) -> Value {
    rpc.send(json!({"id": id, "type": "get_state"})).await;
    rpc.response(id).await["data"].clone()
}

#[tokio::test]
async fn with_no_room_at_start_the_conversation_is_kept_until_writing_works() {
    let env = env();
    let server = chat::answering(&["answered", "and continued"]).await;
    let mut cmd = env.agent(&server, &["--mode", "rpc"]);
    limit_file_size(&mut cmd, 0);
    let mut rpc = Rpc::spawn(cmd);
    rpc.send(json!({"id": "p1", "type": "prompt", "message": "first"}))
        .await;
    let end = agent_end(&mut rpc).await;
    assert_eq!(end["status"], "failed");
    assert!(
        end["error"]
            .as_str()
            .unwrap()
            .contains("File too large (os error 27)"),
        "{end}"
    );
    let unsaved = state(&mut rpc, "s1").await;
    assert!(unsaved["sessionError"].as_str().is_some(), "{unsaved}");
    assert_eq!(unsaved["messageCount"], 1, "the prompt is kept in memory");
    let file = PathBuf::from(unsaved["sessionFile"].as_str().unwrap());
    // Starting over now would drop the unsaved prompt: refused, saying why.
    rpc.send(json!({"id": "n", "type": "new_session"})).await;
    let refused = rpc.response("n").await;
    assert_eq!(refused["success"], false, "{refused}");
    assert!(
        refused["error"]
            .as_str()
            .unwrap()
            .contains("would lose the messages not saved yet"),
        "{refused}"
    );

    // Space comes back: the next message writes the whole conversation, in order.
    lift_file_size_limit(rpc.child.id().unwrap());
    rpc.send(json!({"id": "p2", "type": "prompt", "message": "second"}))
        .await;
    let end = agent_end(&mut rpc).await;
    assert_eq!(end["status"], "completed", "{end}");
    assert_eq!(
        transcript(&server.bodies()[0]),
        ["system", "user:first", "user:second"]
    );
    assert!(state(&mut rpc, "s2").await["sessionError"].is_null());
    assert_eq!(rpc.exit_code().await, 0);

    let texts: Vec<String> = json_lines(&file)
        .iter()
        .filter(|l| l["type"] == "message")
        .map(|l| text_of(l).to_string())
        .collect();
    assert_eq!(texts, ["first", "second", "answered"]);
    let out = run(env.agent(&server, &["-c", "-p", "third"])).await;
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert_eq!(
        transcript(&server.bodies()[1]),
        [
            "system",
            "user:first",
            "user:second",
            "assistant:answered:[]",
            "user:third"
        ]
    );
}

#[tokio::test]
async fn starting_over_once_writing_works_saves_the_old_conversation_first() {
    let env = env();
    let server = chat::answering(&["unused"]).await;
    let mut cmd = env.agent(&server, &["--mode", "rpc"]);
    limit_file_size(&mut cmd, 0);
    let mut rpc = Rpc::spawn(cmd);
    rpc.send(json!({"id": "p", "type": "prompt", "message": "keep me"}))
        .await;
    assert_eq!(agent_end(&mut rpc).await["status"], "failed");
    let old = PathBuf::from(state(&mut rpc, "s").await["sessionFile"].as_str().unwrap());
    lift_file_size_limit(rpc.child.id().unwrap());
    rpc.send(json!({"id": "n", "type": "new_session"})).await;
    let created = rpc.response("n").await;
    assert_eq!(created["success"], true, "{created}");
    assert_ne!(created["data"]["sessionFile"], old.to_str().unwrap());
    let texts: Vec<String> = json_lines(&old)
        .iter()
        .map(|l| text_of(l).to_string())
        .collect();
    assert!(texts.contains(&"keep me".to_string()), "{texts:?}");
    assert_eq!(rpc.exit_code().await, 0);
}

#[tokio::test]
async fn a_session_file_deleted_under_the_writer_is_written_again_whole() {
    let env = env();
    let server = chat::answering(&["one", "two", "three"]).await;
    let mut rpc = Rpc::spawn(env.agent(&server, &["--mode", "rpc"]));
    rpc.send(json!({"id": "p1", "type": "prompt", "message": "first"}))
        .await;
    assert_eq!(agent_end(&mut rpc).await["status"], "completed");
    let file = PathBuf::from(state(&mut rpc, "s").await["sessionFile"].as_str().unwrap());
    std::fs::remove_file(&file).unwrap();
    rpc.send(json!({"id": "p2", "type": "prompt", "message": "second"}))
        .await;
    assert_eq!(agent_end(&mut rpc).await["status"], "completed");
    assert_eq!(rpc.exit_code().await, 0);

    let out = run(env.agent(&server, &["-c", "-p", "third"])).await;
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert_eq!(
        transcript(&server.bodies()[2]),
        [
            "system",
            "user:first",
            "assistant:one:[]",
            "user:second",
            "assistant:two:[]",
            "user:third"
        ]
    );
}

#[tokio::test]
async fn two_agents_given_the_same_new_session_file_cannot_both_write_it() {
    let env = env();
    let server = chat::answering(&["kept"]).await;
    let file = env.home.path().join("shared.jsonl");
    let file_arg = file.to_str().unwrap();
    let mut first = Rpc::spawn(env.agent(&server, &["--mode", "rpc", "--session", file_arg]));
    // Once the first agent answers, it has created and locked the file.
    state(&mut first, "s").await;
    let second = run(env.agent(&server, &["--session", file_arg, "-p", "mine"])).await;
    assert_eq!(second.code, 1, "{}", second.stderr);
    assert!(
        second.stderr.contains("is open in another agent process"),
        "{}",
        second.stderr
    );
    first
        .send(json!({"id": "p", "type": "prompt", "message": "ours"}))
        .await;
    assert_eq!(agent_end(&mut first).await["status"], "completed");
    assert_eq!(first.exit_code().await, 0);
    let texts: Vec<String> = json_lines(&file)
        .iter()
        .filter(|l| l["type"] == "message")
        .map(|l| text_of(l).to_string())
        .collect();
    assert_eq!(texts, ["ours", "kept"]);
}

#[tokio::test]
async fn the_interface_says_at_once_when_the_session_cannot_be_saved() {
    let env = env();
    let server = chat::answering(&["saved now"]).await;
    let blocker = env.home.path().join("sessions");
    std::fs::write(&blocker, "in the way").unwrap();
    let mut tui = env.start(&server, &[]);
    tui.wait_for_text("Ask anything").await;
    tui.type_text("hello");
    tui.enter();
    let screen = tui.wait_for_text("Not a directory (os error 20)").await;
    assert!(
        screen.contains("the session could not be saved"),
        "{screen}"
    );
    tui.wait_for_text("⚠ the session could not be saved").await;
    assert_eq!(server.bodies().len(), 0, "the model is not called unsaved");

    std::fs::remove_file(&blocker).unwrap();
    tui.type_text("again");
    tui.enter();
    tui.wait_for_text("saved now").await;
    // The answer shows as it streams, before it is saved: the run's end says it is.
    tui.wait_until_idle().await;
    tui.wait_for("the warning to clear", |s| !s.contains("⚠"))
        .await;
    tui.quit().await;
    assert_eq!(
        transcript(&server.bodies()[0]),
        ["system", "user:hello", "user:again"]
    );
    let texts: Vec<String> = json_lines(&env.only_session())
        .iter()
        .filter(|l| l["type"] == "message")
        .map(|l| text_of(l).to_string())
        .collect();
    assert_eq!(texts, ["hello", "again", "saved now"]);
}
