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
