//! Checkpoints whose store cannot be written (issue 19 §3), through the engine: an object
//! that cannot be stored and a record that cannot be added to the session's log. The call
//! the checkpoint was for is not run and the run stops, saying why; the session file keeps
//! every message; the checkpoints taken before still restore; once the fault is gone the
//! next call is checkpointed again. A checkpoint after a call that ran failing is a warning.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // test code fails loudly

use crate::support;

use agent::checkpoint::{Checkpoints, Moment, RestoreRequest, RewindNote};
use agent::protocol::event::{AgentEvent, NoticeLevel};
use agent::session::SessionWriter;
use agent::session::format::Header;
use agent::session::load::load;
use agent::tools::Tools;
use serde_json::json;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use support::chat;
use support::faults::json_lines;
use support::harness::{Harness, after_file, checkpoints_in, end_of, result_of};
use support::server::Reply;

/// An agent with a session file and checkpoints, both under `home` (outside its working
/// directory), answering from `replies`.
struct Setup {
    h: Harness,
    checkpoints: Arc<Checkpoints>,
    root: PathBuf,
    session: PathBuf,
}

async fn setup(home: &Path, replies: Vec<Reply>) -> Setup {
    let root = home.join("checkpoints");
    let session = home.join("s1.jsonl");
    let header = Header::new("s1", &home.to_string_lossy(), 1);
    let writer = Arc::new(SessionWriter::create(&session, &header).unwrap());
    let mut taken = None;
    let h = Harness::start_with(replies, |config| {
        config.tools = Tools::from_names(&["read", "write", "bash"]).unwrap();
        taken = Some(checkpoints_in(config, &root));
        config.session = Some(writer);
    })
    .await;
    Setup {
        h,
        checkpoints: taken.unwrap(),
        root,
        session,
    }
}

fn write_call(id: &str, content: &str) -> Reply {
    Reply::sse(chat::tool_call(
        id,
        "write",
        json!({"path": "notes.txt", "content": content}),
    ))
}

fn checkpoint_events(events: &[AgentEvent]) -> usize {
    events
        .iter()
        .filter(|e| matches!(e, AgentEvent::Checkpoint { .. }))
        .count()
}

fn read(dir: &Path, name: &str) -> Option<String> {
    std::fs::read_to_string(dir.join(name)).ok()
}

/// The session file loads whole and holds exactly as many messages as the agent.
fn session_matches_memory(s: &Setup) {
    let loaded = load(&s.session).unwrap();
    assert!(loaded.warnings.is_empty(), "{:?}", loaded.warnings);
    let saved = json_lines(&s.session)
        .iter()
        .filter(|l| l["type"] == "message")
        .count();
    assert_eq!(saved, s.h.agent.messages().len());
}

/// The session's checkpoint log on disk: every line a whole record, the same ones (in the
/// same order) as the agent holds.
fn log_matches_memory(s: &Setup) {
    let on_disk: Vec<String> = json_lines(&s.root.join("sessions/s1.jsonl"))
        .iter()
        .map(|r| r["id"].as_str().unwrap().to_string())
        .collect();
    let in_memory: Vec<String> = s.checkpoints.records().into_iter().map(|r| r.id).collect();
    assert_eq!(on_disk, in_memory);
}

fn restore(checkpoints: &Checkpoints, target: &str) -> agent::checkpoint::Summary {
    checkpoints
        .restore(RestoreRequest {
            target,
            // The test itself made `outside.txt`: overwrite it without asking.
            force: true,
            entry_id: None,
            note: RewindNote {
                target: Some(target.to_string()),
                head_before: None,
            },
        })
        .unwrap()
}

/// The first prompt writes `one` with a checkpoint before and after it.
async fn first_write(s: &mut Setup) {
    s.h.prompt("first");
    let events = s.h.until_end().await;
    assert_eq!(end_of(&events).0, "completed");
    assert_eq!(checkpoint_events(&events), 1);
    assert_eq!(s.checkpoints.records().len(), 2);
    assert_eq!(read(s.h.dir.path(), "notes.txt").as_deref(), Some("one\n"));
    // Something new for the next checkpoint to store.
    std::fs::write(s.h.dir.path().join("outside.txt"), "made by hand\n").unwrap();
}

/// The second prompt's write meets the fault: not run, the run failed saying why.
async fn refused_write(s: &mut Setup, fault: &str) {
    s.h.prompt("second");
    let events = s.h.until_end().await;
    let (status, error) = end_of(&events);
    assert_eq!(status, "failed");
    let error = error.unwrap();
    assert!(
        error.starts_with("the checkpoint before this call could not be saved: ")
            && error.contains(fault),
        "{error}"
    );
    let (text, is_error) = result_of(&events, "c2");
    assert!(is_error);
    assert_eq!(text, format!("Not executed: {error}."));
    assert_eq!(checkpoint_events(&events), 0);
    assert_eq!(read(s.h.dir.path(), "notes.txt").as_deref(), Some("one\n"));
    // Nothing half-recorded: the two checkpoints of the first write, on disk as in memory.
    assert_eq!(s.checkpoints.records().len(), 2);
    log_matches_memory(s);
    session_matches_memory(s);
}

/// Once the fault is gone, the checkpoints from before it still restore, and the next
/// write is checkpointed again.
async fn recovered(s: &mut Setup) {
    let records = s.checkpoints.records();
    assert_eq!(
        (records[0].moment, records[1].moment),
        (Moment::Before, Moment::After)
    );
    let summary = restore(&s.checkpoints, &records[0].id);
    assert!(summary.removed.len() >= 2, "{:?}", summary.removed);
    assert_eq!(read(s.h.dir.path(), "notes.txt"), None);
    assert_eq!(read(s.h.dir.path(), "outside.txt"), None);
    s.h.prompt("third");
    let events = s.h.until_end().await;
    assert_eq!(end_of(&events).0, "completed");
    assert_eq!(checkpoint_events(&events), 1);
    assert_eq!(
        read(s.h.dir.path(), "notes.txt").as_deref(),
        Some("three\n")
    );
    log_matches_memory(s);
    session_matches_memory(s);
}

fn replies() -> Vec<Reply> {
    vec![
        write_call("c1", "one\n"),
        Reply::sse(chat::text("wrote one")),
        write_call("c2", "two\n"),
        write_call("c3", "three\n"),
        Reply::sse(chat::text("wrote three")),
    ]
}

#[tokio::test]
async fn an_object_that_cannot_be_stored_stops_the_call_and_earlier_checkpoints_still_restore() {
    let home = tempfile::tempdir().unwrap();
    let mut s = setup(home.path(), replies()).await;
    first_write(&mut s).await;
    // A file where the store writes its objects before naming them.
    let temp = s.root.join("tmp");
    std::fs::remove_dir_all(&temp).unwrap();
    std::fs::write(&temp, "in the way").unwrap();
    refused_write(&mut s, "Not a directory (os error 20)").await;
    // The space comes back as the user frees it: the directory is simply gone.
    std::fs::remove_file(&temp).unwrap();
    recovered(&mut s).await;
}

#[tokio::test]
async fn a_record_that_cannot_be_logged_stops_the_call_and_earlier_checkpoints_still_restore() {
    let home = tempfile::tempdir().unwrap();
    let mut s = setup(home.path(), replies()).await;
    first_write(&mut s).await;
    // The log cannot be appended to while a directory stands in its place.
    let log = s.root.join("sessions/s1.jsonl");
    let aside = home.path().join("log-aside.jsonl");
    std::fs::rename(&log, &aside).unwrap();
    std::fs::create_dir(&log).unwrap();
    refused_write_without_log(&mut s).await;
    std::fs::remove_dir(&log).unwrap();
    std::fs::rename(&aside, &log).unwrap();
    log_matches_memory(&s);
    recovered(&mut s).await;
}

/// `refused_write`, while the log itself is out of the way (so it is compared once back).
async fn refused_write_without_log(s: &mut Setup) {
    s.h.prompt("second");
    let events = s.h.until_end().await;
    let (status, error) = end_of(&events);
    assert_eq!(status, "failed");
    let error = error.unwrap();
    assert!(
        error.starts_with("the checkpoint before this call could not be saved: ")
            && error.contains("Is a directory (os error 21)"),
        "{error}"
    );
    assert_eq!(
        result_of(&events, "c2").0,
        format!("Not executed: {error}.")
    );
    assert_eq!(checkpoint_events(&events), 0);
    assert_eq!(read(s.h.dir.path(), "notes.txt").as_deref(), Some("one\n"));
    assert_eq!(s.checkpoints.records().len(), 2);
    session_matches_memory(s);
}

#[tokio::test]
async fn a_checkpoint_after_a_call_that_ran_failing_is_a_warning_and_the_run_goes_on() {
    let home = tempfile::tempdir().unwrap();
    let mut s = setup(
        home.path(),
        vec![
            Reply::sse(chat::tool_call(
                "c1",
                "bash",
                json!({"command": after_file("go", "echo new > made.txt")}),
            )),
            Reply::sse(chat::text("made it")),
        ],
    )
    .await;
    s.h.prompt("make a file");
    // The checkpoint before the command is stored; then the store fails.
    let mut events =
        s.h.until(|e| matches!(e, AgentEvent::Checkpoint { .. }))
            .await;
    let temp = s.root.join("tmp");
    std::fs::remove_dir_all(&temp).unwrap();
    std::fs::write(&temp, "in the way").unwrap();
    std::fs::write(s.h.dir.path().join("go"), "").unwrap();
    events.extend(s.h.until_end().await);
    assert_eq!(end_of(&events), ("completed".to_string(), None));
    let (text, is_error) = result_of(&events, "c1");
    assert!(!is_error, "{text}");
    assert_eq!(read(s.h.dir.path(), "made.txt").as_deref(), Some("new\n"));
    let warnings: Vec<&str> = events
        .iter()
        .filter_map(|e| match e {
            AgentEvent::Notice {
                level: NoticeLevel::Warning,
                message,
            } => Some(message.as_str()),
            _ => None,
        })
        .collect();
    assert_eq!(warnings.len(), 1, "{warnings:?}");
    assert!(
        warnings[0].starts_with("the checkpoint after `bash` could not be saved: ")
            && warnings[0].contains("Not a directory (os error 20)"),
        "{}",
        warnings[0]
    );
    // Only the checkpoint before the command was recorded, and it still restores.
    let records = s.checkpoints.records();
    assert_eq!(records.len(), 1);
    std::fs::remove_file(&temp).unwrap();
    restore(&s.checkpoints, &records[0].id);
    assert_eq!(read(s.h.dir.path(), "made.txt"), None);
    session_matches_memory(&s);
}
