//! A long never-compacted session is opened lazily on every path that opens one (issue 32):
//! the engine's `Resume` (`/resume`, ACP `session/load`), a fork, and the settings only its
//! older part says are taken on before anything needs them. What is checked: opening does
//! not read the older part (a damaged older line is not even noticed), and the older part,
//! read back when needed, is the session as the whole reader gives it.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // test code fails loudly

use crate::cold_context::{TURNS, write_session};
use crate::support;

use agent::protocol::command::{Command, ResumeModel, SessionRef};
use agent::protocol::outcome::Outcome;
use agent::session;
use std::path::{Path, PathBuf};
use support::harness::Harness;

/// A long session in a directory of its own under `home`, and a copy of it whose third
/// line (an old message, far before what opening reads) is no entry any more.
fn sessions(home: &Path) -> (PathBuf, PathBuf) {
    let cwd = home.join("work");
    std::fs::create_dir_all(&cwd).unwrap();
    let intact = write_session(&home.join("sessions"), &cwd);
    let mut bytes = std::fs::read(&intact).unwrap();
    let second_end = bytes
        .iter()
        .enumerate()
        .filter(|(_, b)| **b == b'\n')
        .nth(1)
        .unwrap()
        .0;
    bytes[second_end + 1] = b'x';
    let damaged = home.join("damaged.jsonl");
    std::fs::write(&damaged, &bytes).unwrap();
    (intact, damaged)
}

async fn resume(h: &Harness, path: &Path) -> Vec<String> {
    let outcome = h
        .agent
        .execute(
            Command::Resume {
                target: SessionRef::Path {
                    path: path.to_path_buf(),
                },
                model: ResumeModel::KeepCurrent,
            },
            Default::default(),
        )
        .await
        .unwrap();
    match outcome {
        Outcome::Session { notices, .. } => notices,
        other => panic!("{other:?}"),
    }
}

#[tokio::test]
async fn resume_opens_a_long_session_from_its_end_and_reads_the_rest_when_needed() {
    let home = tempfile::tempdir().unwrap();
    let (intact, damaged) = sessions(home.path());
    let h = Harness::start(vec![]).await;

    // The whole reader reports the damaged line; resuming does not read that far.
    let whole = session::load::load(&damaged).unwrap();
    assert!(
        whole.warnings.iter().any(|w| w.contains("line 3")),
        "{:?}",
        whole.warnings
    );
    let notices = resume(&h, &damaged).await;
    assert!(notices.is_empty(), "{notices:?}");
    assert!(h.agent.held_messages().len() < TURNS);

    // The intact one: the older part is read back, whole and in order, when needed.
    let notices = resume(&h, &intact).await;
    assert!(notices.is_empty(), "{notices:?}");
    assert!(h.agent.held_messages().len() < TURNS);
    let whole = session::load::load(&intact).unwrap().context;
    assert_eq!(whole.len(), TURNS * 2);
    assert_eq!(h.agent.message_entries(), whole);
}

#[tokio::test]
async fn a_fork_of_a_long_session_continues_in_a_copy_opened_from_its_end() {
    let home = tempfile::tempdir().unwrap();
    let (intact, _) = sessions(home.path());
    let h = Harness::start(vec![]).await;
    resume(&h, &intact).await;
    let whole = session::load::load(&intact).unwrap();
    let head = whole.last_entry_id.clone().unwrap();
    let outcome = h
        .agent
        .execute(Command::Fork { entry_id: head }, Default::default())
        .await
        .unwrap();
    let Outcome::Forked {
        session: forked, ..
    } = outcome
    else {
        panic!("{outcome:?}");
    };
    let copy = forked.path.clone().expect("the fork's file");
    assert_ne!(copy, intact);
    // The copy holds the whole branch; the engine parsed only its newest part.
    assert!(h.agent.held_messages().len() < TURNS);
    let copied = session::load::load(&copy).unwrap().context;
    assert_eq!(copied, whole.context);
    assert_eq!(h.agent.message_entries(), whole.context);
}

/// `write_session`'s long session for `cwd`, starting with what only its older part says:
/// model `local/thinker`, level `high`, the name "The long one", a goal.
fn session_with_settings(sessions: &Path, cwd: &Path) -> PathBuf {
    use agent::llm::request::ThinkingLevel;
    use agent::session::format::{NewEntry, encode};
    let path = write_session(sessions, cwd);
    let text = std::fs::read_to_string(&path).unwrap();
    let (header, rest) = text.split_once('\n').unwrap();
    let settings = [
        encode(
            NewEntry::ModelChange {
                provider: "local",
                model: "thinker",
            },
            "s1",
            None,
            1_500,
        ),
        encode(
            NewEntry::ThinkingChange(ThinkingLevel::High),
            "s2",
            Some("s1"),
            1_501,
        ),
        encode(
            NewEntry::SessionInfo {
                name: "The long one",
            },
            "s3",
            Some("s2"),
            1_502,
        ),
        encode(
            NewEntry::Goal {
                goal: Some("finish it"),
            },
            "s4",
            Some("s3"),
            1_503,
        ),
    ];
    let mut out = format!("{header}\n");
    for line in settings {
        out.push_str(std::str::from_utf8(&line.unwrap()).unwrap());
    }
    // The first message follows the settings.
    out.push_str(&rest.replacen("\"parentId\":null", "\"parentId\":\"s4\"", 1));
    std::fs::write(&path, out).unwrap();
    path
}

#[tokio::test]
async fn what_only_the_older_part_says_is_taken_on_before_the_first_request() {
    use serde_json::json;
    use support::chat;
    use support::process::Rpc;
    use support::server::{FakeServer, Reply};
    let env = support::env::env();
    let path = session_with_settings(&env.home.path().join("sessions"), env.cwd.path());
    let server = FakeServer::start(vec![
        Reply::sse(chat::text("the summary")),
        Reply::sse(chat::text("fits now")),
    ])
    .await;
    // The configuration's model is another one: the session's own is at the start of its
    // file, far before what opening reads.
    std::fs::write(
        env.home.path().join("config.toml"),
        format!(
            "provider = \"local\"\nmodel = \"plain\"\n\
             [providers.local]\napi = \"openai-chat\"\nbase_url = \"{}\"\n\
             [providers.local.models.thinker]\nreasoning = true\n\
             [providers.local.models.plain]\nreasoning = false\n",
            server.v1()
        ),
    )
    .unwrap();
    let mut cmd = support::process::command(env.home.path(), env.cwd.path());
    cmd.args(["--mode", "rpc", "-c"]);
    let mut rpc = Rpc::spawn(cmd);
    // Once the older part is found, the session's model, level, name and goal hold.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(300);
    let state = loop {
        rpc.send(json!({"id": "s", "type": "get_state"})).await;
        let state = rpc.response("s").await;
        if state["data"]["model"] == "thinker" && state["data"]["thinkingLevel"] == "high" {
            break state;
        }
        assert!(std::time::Instant::now() < deadline, "{state}");
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    };
    assert_eq!(state["data"]["sessionName"], "The long one", "{state}");
    assert_eq!(state["data"]["goal"], "finish it", "{state}");
    assert_eq!(state["data"]["messageCount"], TURNS * 2, "{state}");
    rpc.send(json!({"id": "p", "type": "prompt", "message": "next"}))
        .await;
    rpc.until(|l| l["type"] == "agent_end").await;
    let bodies = server.bodies();
    assert!(bodies.len() >= 2, "summary requests, then the answer");
    assert!(
        bodies.iter().all(|b| b["model"] == "thinker"),
        "{:?}",
        bodies.iter().map(|b| &b["model"]).collect::<Vec<_>>()
    );
    assert_eq!(rpc.exit_code().await, 0);
    // Nothing in the file says the configuration's model was used.
    let written = std::fs::read_to_string(&path).unwrap();
    assert!(!written.contains("\"model\":\"plain\""));
}
