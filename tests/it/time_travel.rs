//! Checkpoints, rewind and fork driven through `--mode rpc` as docs/protocol.md describes:
//! a shell command the model ran is undone after the session was resumed from disk, a
//! file changed outside the agent stops the rewind until it is forced, the rewind is
//! undone, the abandoned branch stays in the file, and a fork is a session of its own.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // test code fails loudly

use crate::support;

use serde_json::{Value, json};
use std::fs;
use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use support::chat;
use support::env::env;
use support::process::Rpc;
use support::server::{FakeServer, Reply};

fn read(dir: &Path, name: &str) -> Option<String> {
    fs::read_to_string(dir.join(name)).ok()
}

fn mode(dir: &Path, name: &str) -> u32 {
    fs::metadata(dir.join(name)).unwrap().permissions().mode() & 0o777
}

async fn call(rpc: &mut Rpc, id: &str, command: Value) -> Value {
    let mut command = command;
    command["id"] = json!(id);
    rpc.send(command).await;
    rpc.response(id).await
}

fn strings(value: &Value) -> Vec<String> {
    let mut list: Vec<String> = value
        .as_array()
        .unwrap_or_else(|| panic!("not a list: {value}"))
        .iter()
        .map(|v| v.as_str().unwrap().to_string())
        .collect();
    list.sort();
    list
}

#[tokio::test]
async fn rpc_rewinds_a_shell_command_after_resume_undoes_it_and_forks() {
    let env = env();
    let cwd = env.cwd.path();
    fs::write(cwd.join("a.txt"), "one\n").unwrap();
    fs::write(cwd.join("gone.txt"), "keep me\n").unwrap();
    fs::write(cwd.join("old-name.txt"), "renamed\n").unwrap();
    fs::write(cwd.join("run.sh"), "#!/bin/sh\n").unwrap();
    fs::set_permissions(cwd.join("run.sh"), fs::Permissions::from_mode(0o644)).unwrap();
    let command = "printf 'two\\n' > a.txt && echo new > b.txt && rm gone.txt \
                   && mv old-name.txt new-name.txt && chmod 755 run.sh";
    let server = FakeServer::start(vec![
        Reply::sse(chat::tool_call("c1", "bash", json!({ "command": command }))),
        Reply::sse(chat::text("done")),
    ])
    .await;
    let args = ["--mode", "rpc", "--permission-mode", "auto"];

    // The model runs a shell command; a checkpoint is taken before it runs.
    let mut rpc = Rpc::spawn(env.agent(&server, &args));
    rpc.send(json!({"id": "p", "type": "prompt", "message": "change things"}))
        .await;
    let lines = rpc.until(|l| l["type"] == "agent_end").await;
    let checkpoint = lines
        .iter()
        .position(|l| l["type"] == "checkpoint")
        .expect("a checkpoint event");
    let started = lines
        .iter()
        .rposition(|l| l["type"] == "tool_execution_start")
        .unwrap();
    let ended = lines
        .iter()
        .position(|l| l["type"] == "tool_execution_end")
        .unwrap();
    assert!(
        started < checkpoint && checkpoint < ended,
        "the checkpoint comes before the command runs: {lines:?}"
    );
    let event = &lines[checkpoint];
    assert_eq!(event["files"], 4, "{event}");
    assert_eq!(event["bytes"], 4 + 8 + 8 + 10, "{event}");
    assert_eq!(event["skipped"], json!([]));
    assert_eq!(read(cwd, "a.txt").as_deref(), Some("two\n"));
    assert_eq!(rpc.exit_code().await, 0);

    // Resumed from disk: the checkpoint is still there, tied to the user message.
    let mut rpc = Rpc::spawn(env.agent(&server, &[&args[..], &["-c"]].concat()));
    let messages =
        call(&mut rpc, "m", json!({"type": "get_messages"})).await["data"]["messages"].clone();
    assert_eq!(messages.as_array().unwrap().len(), 4, "{messages}");
    let user_entry = messages[0]["entryId"].as_str().unwrap().to_string();
    let last_entry = messages[3]["entryId"].as_str().unwrap().to_string();
    assert_eq!(messages[0]["role"], "user");
    let checkpoints = call(&mut rpc, "g", json!({"type": "get_checkpoints"})).await;
    let list = checkpoints["data"]["checkpoints"].as_array().unwrap();
    assert_eq!(list.len(), 1, "{checkpoints}");
    assert_eq!(list[0]["entryId"], user_entry.as_str());
    assert_eq!(list[0]["messageIndex"], 0);
    assert_eq!(list[0]["files"], 4);
    let checkpoint_id = list[0]["id"].as_str().unwrap().to_string();

    // A file changed outside the agent since: refused, nothing changes.
    fs::write(cwd.join("a.txt"), "edited by hand\n").unwrap();
    let refused = call(
        &mut rpc,
        "r1",
        json!({"type": "rewind", "checkpointId": checkpoint_id, "restore": "both"}),
    )
    .await;
    assert_eq!(refused["success"], false, "{refused}");
    let error = refused["error"].as_str().unwrap();
    assert!(error.contains("a.txt"), "{error}");
    assert_eq!(read(cwd, "a.txt").as_deref(), Some("edited by hand\n"));
    assert_eq!(read(cwd, "b.txt").as_deref(), Some("new\n"));
    let still = call(&mut rpc, "m1", json!({"type": "get_messages"})).await;
    assert_eq!(still["data"]["messages"].as_array().unwrap().len(), 4);

    // Forced: every change of the command is undone, and the conversation goes back.
    let rewound = call(
        &mut rpc,
        "r2",
        json!({"type": "rewind", "checkpointId": checkpoint_id, "restore": "both", "force": true}),
    )
    .await;
    assert_eq!(rewound["success"], true, "{rewound}");
    let data = &rewound["data"];
    assert_eq!(
        strings(&data["restored"]),
        ["a.txt", "gone.txt", "old-name.txt", "run.sh"],
        "{data}"
    );
    assert_eq!(strings(&data["removed"]), ["b.txt", "new-name.txt"]);
    assert_eq!(data["text"], "change things");
    assert_eq!(read(cwd, "a.txt").as_deref(), Some("one\n"));
    assert_eq!(read(cwd, "b.txt"), None);
    assert_eq!(read(cwd, "gone.txt").as_deref(), Some("keep me\n"));
    assert_eq!(read(cwd, "old-name.txt").as_deref(), Some("renamed\n"));
    assert_eq!(read(cwd, "new-name.txt"), None);
    assert_eq!(mode(cwd, "run.sh"), 0o644);
    let empty = call(&mut rpc, "m2", json!({"type": "get_messages"})).await;
    assert_eq!(empty["data"]["messages"], json!([]));

    // The moved head is in the file: resumed again, the conversation is the rewound one.
    assert_eq!(rpc.exit_code().await, 0);
    let mut rpc = Rpc::spawn(env.agent(&server, &[&args[..], &["-c"]].concat()));
    let empty = call(&mut rpc, "m2b", json!({"type": "get_messages"})).await;
    assert_eq!(empty["data"]["messages"], json!([]), "{empty}");

    // The abandoned branch is still in the session's tree.
    let tree = call(&mut rpc, "t", json!({"type": "get_tree"})).await["data"].clone();
    let nodes = tree["nodes"].as_array().unwrap();
    let old = nodes
        .iter()
        .find(|n| n["id"] == last_entry.as_str())
        .unwrap_or_else(|| panic!("{tree}"));
    assert_eq!(old["current"], false, "{tree}");

    // Undone: the files as they were just before the rewind, the conversation back.
    let undone = call(&mut rpc, "u", json!({"type": "undo_rewind"})).await;
    assert_eq!(undone["success"], true, "{undone}");
    assert_eq!(read(cwd, "a.txt").as_deref(), Some("edited by hand\n"));
    assert_eq!(read(cwd, "b.txt").as_deref(), Some("new\n"));
    assert_eq!(read(cwd, "gone.txt"), None);
    assert_eq!(mode(cwd, "run.sh"), 0o755);
    let back = call(&mut rpc, "m3", json!({"type": "get_messages"})).await;
    assert_eq!(back["data"]["messages"].as_array().unwrap().len(), 4);
    let tree = call(&mut rpc, "t2", json!({"type": "get_tree"})).await["data"].clone();
    assert_eq!(tree["head"], last_entry.as_str(), "{tree}");

    // A fork at the last message: a new session holding the conversation up to it.
    let original =
        call(&mut rpc, "s", json!({"type": "get_state"})).await["data"]["sessionId"].clone();
    let forked = call(
        &mut rpc,
        "f",
        json!({"type": "fork", "entryId": last_entry}),
    )
    .await;
    assert_eq!(forked["success"], true, "{forked}");
    let fork_id = forked["data"]["sessionId"].as_str().unwrap().to_string();
    let fork_file = forked["data"]["sessionFile"].as_str().unwrap().to_string();
    assert_ne!(json!(fork_id), original);
    let header: Value = serde_json::from_str(
        fs::read_to_string(&fork_file)
            .unwrap()
            .lines()
            .next()
            .unwrap(),
    )
    .unwrap();
    assert_eq!(header["parentSession"], original, "{header}");
    assert_eq!(header["parentEntryId"], last_entry.as_str());
    let state = call(&mut rpc, "s2", json!({"type": "get_state"})).await;
    assert_eq!(state["data"]["sessionId"], fork_id.as_str());
    assert_eq!(rpc.exit_code().await, 0);

    // The fork loads on its own with the right history.
    let mut rpc = Rpc::spawn(env.agent(&server, &[&args[..], &["--session", &fork_file]].concat()));
    let state = call(&mut rpc, "s3", json!({"type": "get_state"})).await;
    assert_eq!(state["data"]["sessionId"], fork_id.as_str(), "{state}");
    let messages =
        call(&mut rpc, "m4", json!({"type": "get_messages"})).await["data"]["messages"].clone();
    let texts: Vec<&Value> = messages
        .as_array()
        .unwrap()
        .iter()
        .map(|m| &m["role"])
        .collect();
    assert_eq!(
        texts,
        [
            &json!("user"),
            &json!("assistant"),
            &json!("toolResult"),
            &json!("assistant")
        ]
    );
    assert_eq!(messages[0]["entryId"], user_entry.as_str());
    assert_eq!(rpc.exit_code().await, 0);
}

#[tokio::test]
async fn rpc_bash_is_checkpointed_and_can_be_rewound_with_the_next_message() {
    let env = env();
    let cwd = env.cwd.path();
    fs::write(cwd.join("notes.txt"), "mine\n").unwrap();
    let server = FakeServer::start(vec![Reply::sse(chat::text("noted"))]).await;
    let mut rpc = Rpc::spawn(env.agent(&server, &["--mode", "rpc"]));
    rpc.send(json!({"id": "p", "type": "prompt", "message": "hello"}))
        .await;
    rpc.until(|l| l["type"] == "agent_end").await;
    let entry = call(&mut rpc, "m", json!({"type": "get_messages"})).await["data"]["messages"]
        [0]["entryId"]
        .clone();
    rpc.send(json!({"id": "b", "type": "bash", "command": "echo theirs > notes.txt"}))
        .await;
    let lines = rpc.until(|l| l["id"] == "b").await;
    let event = lines
        .iter()
        .find(|l| l["type"] == "checkpoint")
        .unwrap_or_else(|| panic!("a checkpoint before the command: {lines:?}"));
    assert_eq!(event["entryId"], entry, "{event}");
    assert_eq!(read(cwd, "notes.txt").as_deref(), Some("theirs\n"));
    let list = call(&mut rpc, "g", json!({"type": "get_checkpoints"})).await;
    assert_eq!(list["data"]["checkpoints"][0]["entryId"], entry, "{list}");
    // The command ran through the agent: undoing it needs no `force`.
    let rewound = call(
        &mut rpc,
        "r",
        json!({"type": "rewind", "entryId": entry, "restore": "code"}),
    )
    .await;
    assert_eq!(rewound["success"], true, "{rewound}");
    assert_eq!(rewound["data"]["restored"], json!(["notes.txt"]));
    assert_eq!(rewound["data"]["text"], Value::Null);
    assert_eq!(read(cwd, "notes.txt").as_deref(), Some("mine\n"));
    let kept = call(&mut rpc, "m2", json!({"type": "get_messages"})).await;
    assert_eq!(kept["data"]["messages"].as_array().unwrap().len(), 2);
    assert_eq!(rpc.exit_code().await, 0);
}

#[tokio::test]
async fn the_interface_rewinds_with_esc_esc_undoes_shows_the_tree_and_forks() {
    let env = env();
    let cwd = env.cwd.path();
    fs::write(cwd.join("notes.txt"), "v1\n").unwrap();
    let server = FakeServer::start(vec![
        Reply::sse(chat::tool_call(
            "c1",
            "bash",
            json!({"command": "printf 'v2\\n' > notes.txt && echo hi > new.txt"}),
        )),
        Reply::sse(chat::text("Changed the notes.")),
    ])
    .await;
    let mut tui = env.start(&server, &["--permission-mode", "auto"]);
    tui.wait_for_text("Ask anything").await;
    tui.type_text("change the notes");
    tui.enter();
    tui.wait_for_text("Changed the notes.").await;
    tui.wait_until_idle().await;
    assert_eq!(read(cwd, "notes.txt").as_deref(), Some("v2\n"));

    // esc esc on the empty composer: pick the message, then what to restore.
    tui.send(b"\x1b");
    tui.wait_for_text("esc again to rewind").await;
    tui.send(b"\x1b");
    tui.wait_for_text("Rewind to before").await;
    tui.wait_for_text("change the notes").await;
    tui.enter();
    tui.wait_for_text("Conversation and code").await;
    tui.enter();
    let screen = tui
        .wait_for_text("Rewound: files: 1 restored, 1 removed")
        .await;
    assert!(
        screen.contains("the conversation goes on from before"),
        "{screen}"
    );
    assert_eq!(read(cwd, "notes.txt").as_deref(), Some("v1\n"));
    assert_eq!(read(cwd, "new.txt"), None);
    // The message is back in the composer, to edit and send again.
    tui.wait_for("the text back in the composer", |s| {
        s.split("Rewound:")
            .nth(1)
            .is_some_and(|below| below.contains("› change the notes"))
    })
    .await;

    // /rewind offers to undo it.
    tui.send(b"\x03");
    tui.wait_for_text("press ctrl+c again to quit").await;
    tui.type_text("/rewind");
    tui.enter();
    tui.wait_for_text("Undo last rewind").await;
    tui.enter();
    tui.wait_for_text("Rewind undone").await;
    assert_eq!(read(cwd, "notes.txt").as_deref(), Some("v2\n"));
    assert_eq!(read(cwd, "new.txt").as_deref(), Some("hi\n"));

    // /tree lists the branches; esc closes it.
    tui.type_text("/tree");
    tui.enter();
    let screen = tui.wait_for_text("Branches of this session").await;
    assert!(screen.contains("● change the notes"), "{screen}");
    tui.send(b"\x1b");
    tui.wait_for("the tree closed", |s| {
        !s.contains("Branches of this session")
    })
    .await;

    // /fork continues in a new session file that names this one.
    tui.type_text("/fork");
    tui.enter();
    tui.wait_for_text("The whole conversation").await;
    tui.enter();
    tui.wait_for_text("Forked: this is now session").await;
    let files = env.session_files();
    assert_eq!(files.len(), 2, "{files:?}");
    let headers: Vec<Value> = files
        .iter()
        .map(|f| {
            serde_json::from_str(fs::read_to_string(f).unwrap().lines().next().unwrap()).unwrap()
        })
        .collect();
    let fork = headers
        .iter()
        .find(|h| h.get("parentSession").is_some())
        .unwrap_or_else(|| panic!("{headers:?}"));
    let parent = headers
        .iter()
        .find(|h| h.get("parentSession").is_none())
        .unwrap();
    assert_eq!(fork["parentSession"], parent["id"]);
    tui.quit().await;

    // `agent -r` shows the fork under the session it came from.
    let mut tui = env.start(&server, &["-r"]);
    tui.wait_for_text("Resume a session").await;
    tui.wait_for_text("↳ fork: change the notes").await;
    tui.send(b"\x1b");
    tui.wait_for_text("Ask anything").await;
    tui.quit().await;
}

/// The restore's temporary files left in `dir`.
fn restore_temps(dir: &Path) -> Vec<String> {
    fs::read_dir(dir)
        .unwrap()
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|name| name.starts_with(".agent-restore-"))
        .collect()
}

/// A rewind whose restore is killed (SIGKILL) part way — one file restored, another being
/// written — is rolled back by the next start: its temporary file goes, the files are as
/// before the rewind, and the rewind then works without `force` (and "undo last rewind"
/// undoes that one, not the interrupted one).
#[tokio::test]
async fn a_restore_killed_part_way_is_rolled_back_at_restart_and_the_rewind_needs_no_force() {
    let env = env();
    let cwd = env.cwd.path();
    fs::write(cwd.join("a.txt"), "one\n").unwrap();
    fs::write(cwd.join("z.txt"), "zed one\n").unwrap();
    let command = "printf 'two\\n' > a.txt && printf 'zed two\\n' > z.txt && echo new > b.txt";
    let server = FakeServer::start(vec![
        Reply::sse(chat::tool_call("c1", "bash", json!({ "command": command }))),
        Reply::sse(chat::text("done")),
    ])
    .await;
    let args = ["--mode", "rpc", "--permission-mode", "auto"];
    let mut rpc = Rpc::spawn(env.agent(&server, &args));
    rpc.send(json!({"id": "p", "type": "prompt", "message": "change things"}))
        .await;
    rpc.until(|l| l["type"] == "agent_end").await;
    assert_eq!(rpc.exit_code().await, 0);

    // The stored copy of z.txt's old content becomes a FIFO nobody writes: the restore
    // blocks while writing z.txt (a.txt, first in order, is restored by then).
    let object = {
        let hash = agent::checkpoint::store::hash_bytes(b"zed one\n");
        env.home
            .path()
            .join("checkpoints/objects")
            .join(&hash[..2])
            .join(&hash[2..])
    };
    let stored = fs::read(&object).unwrap();
    fs::remove_file(&object).unwrap();
    let made = std::process::Command::new("mkfifo")
        .arg(&object)
        .status()
        .unwrap();
    assert!(made.success());

    let mut rpc = Rpc::spawn(env.agent(&server, &[&args[..], &["-c"]].concat()));
    let checkpoints = call(&mut rpc, "g", json!({"type": "get_checkpoints"})).await;
    let checkpoint_id = checkpoints["data"]["checkpoints"][0]["id"]
        .as_str()
        .unwrap_or_else(|| panic!("{checkpoints}"))
        .to_string();
    rpc.send(
        json!({"id": "r0", "type": "rewind", "checkpointId": checkpoint_id, "restore": "both"}),
    )
    .await;
    let half_restored =
        || read(cwd, "a.txt").as_deref() == Some("one\n") && restore_temps(cwd).len() == 1;
    for _ in 0..2000 {
        if half_restored() {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(10)).await;
    }
    assert!(half_restored(), "a.txt restored, z.txt being written");
    rpc.child.start_kill().unwrap();
    rpc.child.wait().await.unwrap();
    fs::remove_file(&object).unwrap();
    fs::write(&object, &stored).unwrap();
    fs::set_permissions(&object, fs::Permissions::from_mode(0o600)).unwrap();

    // Restarted: the interrupted restore is rolled back, so the rewind needs no force.
    let mut rpc = Rpc::spawn(env.agent(&server, &[&args[..], &["-c"]].concat()));
    let messages = call(&mut rpc, "m", json!({"type": "get_messages"})).await;
    assert_eq!(
        messages["data"]["messages"].as_array().unwrap().len(),
        4,
        "the conversation was not rewound: {messages}"
    );
    let rewound = call(
        &mut rpc,
        "r1",
        json!({"type": "rewind", "checkpointId": checkpoint_id, "restore": "both"}),
    )
    .await;
    assert_eq!(rewound["success"], true, "{rewound}");
    assert_eq!(restore_temps(cwd), Vec::<String>::new());
    assert_eq!(read(cwd, "a.txt").as_deref(), Some("one\n"));
    assert_eq!(read(cwd, "z.txt").as_deref(), Some("zed one\n"));
    assert_eq!(read(cwd, "b.txt"), None);

    // Undoing it brings back the state before this rewind (the interrupted one never
    // happened), again without force.
    let undone = call(&mut rpc, "u", json!({"type": "undo_rewind"})).await;
    assert_eq!(undone["success"], true, "{undone}");
    assert_eq!(read(cwd, "a.txt").as_deref(), Some("two\n"));
    assert_eq!(read(cwd, "z.txt").as_deref(), Some("zed two\n"));
    assert_eq!(read(cwd, "b.txt").as_deref(), Some("new\n"));
    assert_eq!(restore_temps(cwd), Vec::<String>::new());
    let back = call(&mut rpc, "m2", json!({"type": "get_messages"})).await;
    assert_eq!(back["data"]["messages"].as_array().unwrap().len(), 4);
    assert_eq!(rpc.exit_code().await, 0);
}
