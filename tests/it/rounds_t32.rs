//! One tool round's critical path (issue 32): the checkpoint after a call is stored while
//! the call's result goes to the model, not before — and still before anything that comes
//! after it: the next call's checkpoint (so the next call does not run before it is
//! stored), the list of records, the end of the run. The store is held by the test (the
//! exclusive lock a clean-up takes), so the record after the call cannot be stored until
//! the test lets it.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // test code fails loudly

use crate::support;

use agent::checkpoint::{Moment, RestoreRequest, RewindNote};
use agent::protocol::event::AgentEvent;
use agent::tools::Tools;
use serde_json::json;
use support::chat;
use support::harness::{Harness, after_file, checkpoints_in, end_of};
use support::server::Reply;

#[tokio::test]
async fn the_next_request_goes_out_while_the_checkpoint_after_a_call_is_stored() {
    let home = tempfile::tempdir().unwrap();
    let root = home.path().join("checkpoints");
    let mut taken = None;
    let mut h = Harness::start_with(
        vec![
            Reply::sse(chat::tool_call(
                "c1",
                "bash",
                json!({"command": after_file("go", "echo one > one.txt")}),
            )),
            Reply::sse(chat::tool_call(
                "c2",
                "bash",
                json!({"command": "echo two > two.txt"}),
            )),
            Reply::sse(chat::text("done")),
        ],
        |config| {
            config.tools = Tools::from_names(&["bash"]).unwrap();
            taken = Some(checkpoints_in(config, &root));
        },
    )
    .await;
    let checkpoints = taken.unwrap();
    h.prompt("make two files");
    // The checkpoint before `c1` is stored; then the test holds the store while `c1` runs.
    h.until(|e| matches!(e, AgentEvent::Checkpoint { .. }))
        .await;
    let held = std::fs::File::options()
        .write(true)
        .open(agent::checkpoint::gc::lock_path(&root))
        .unwrap();
    held.lock().unwrap();
    std::fs::write(h.dir.path().join("go"), "").unwrap();
    // `c1`'s result reaches the model although its checkpoint after cannot be stored yet.
    h.server.wait_for_requests(2).await;
    // `c2` waits for that checkpoint: it has neither been checkpointed nor run.
    while let Ok(event) = h.events.try_recv() {
        assert!(
            !matches!(event, AgentEvent::Checkpoint { .. }),
            "a checkpoint before `c2` while the one after `c1` waits: {event:?}"
        );
    }
    assert!(!h.dir.path().join("two.txt").exists());
    held.unlock().unwrap();
    let events = h.until_end().await;
    assert_eq!(end_of(&events), ("completed".to_string(), None));
    assert!(h.dir.path().join("two.txt").exists());
    // The records in the order of what happened, the one after `c1` before `c2`'s.
    let records = checkpoints.records();
    let order: Vec<(Moment, Option<&str>)> = records
        .iter()
        .map(|r| (r.moment, r.tool_call_id.as_deref()))
        .collect();
    assert_eq!(
        order,
        [
            (Moment::Before, Some("c1")),
            (Moment::After, Some("c1")),
            (Moment::Before, Some("c2")),
            (Moment::After, Some("c2")),
        ]
    );
    // And exact: the state before `c2` holds what `c1` made and nothing of `c2`.
    checkpoints
        .restore(RestoreRequest {
            target: &records[2].id,
            force: true,
            entry_id: None,
            note: RewindNote {
                target: Some(records[2].id.clone()),
                head_before: None,
            },
        })
        .unwrap();
    assert!(h.dir.path().join("one.txt").exists());
    assert!(!h.dir.path().join("two.txt").exists());
}
