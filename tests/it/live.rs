//! Live sessions (docs/protocol.md §4.5): a real `agent --mode rpc` serves its session on
//! its socket; clients connect to it as other terminals would — several on one run,
//! approving, aborting, detaching and coming back mid-stream — and the socket is attacked
//! as another user.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // test code fails loudly

use crate::support;

use serde_json::{Value, json};
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::time::Duration;
use support::chat;
use support::env::{Env, env};
use support::live::{Socket, socket};
use support::process::Rpc;
use support::server::{End, FakeServer, Gate, Reply};

/// `agent --mode rpc`, and the socket it serves its session on.
async fn owner(env: &Env, server: &FakeServer) -> (Rpc, PathBuf) {
    let mut rpc = Rpc::spawn(env.agent(server, &["--mode", "rpc"]));
    rpc.send(json!({"id": "state", "type": "get_state"})).await;
    let state = rpc.response("state").await;
    let id = state["data"]["sessionId"].as_str().unwrap().to_string();
    let path = socket(env.home.path(), &id);
    assert!(path.exists(), "no socket at {}", path.display());
    (rpc, path)
}

/// An answer streamed as `deltas`, which then stops mid-message (the run stays busy).
fn stalls_after(deltas: &[&str]) -> Reply {
    let mut frames = chat::text_deltas(deltas);
    // Without the finish, the usage and `[DONE]`.
    frames.truncate(frames.len() - 3);
    Reply::sse(frames).then(End::Stall)
}

fn is_delta(line: &Value, text: &str) -> bool {
    line["type"] == "message_update" && line["assistantMessageEvent"]["delta"] == text
}

#[tokio::test]
async fn live_two_clients_share_one_run_and_either_may_drive_it() {
    let env = env();
    let server = FakeServer::start(vec![
        Reply::sse(chat::tool_call(
            "c1",
            "bash",
            json!({"command": "touch approved"}),
        )),
        stalls_after(&["still ", "working"]),
    ])
    .await;
    let (mut rpc, path) = owner(&env, &server).await;
    let mut first = Socket::connect(&path).await;
    let mut second = Socket::connect(&path).await;
    let attached = first.attach("a1", None).await;
    assert_eq!(attached["data"]["messages"], json!([]));
    let second_id = second.attach("a2", None).await["data"]["clientId"].clone();
    first
        .send(json!({"id": "p", "type": "prompt", "message": "make a file"}))
        .await;
    assert_eq!(first.response("p").await["success"], true);
    // Both see the question.
    for client in [&mut first, &mut second] {
        let asked = client.until(|l| l["type"] == "tool_approval_request").await;
        assert_eq!(asked.last().unwrap()["toolCallId"], "c1");
    }
    // The second answers; the first sees it answered, and its own answer comes too late.
    second
        .send(json!({"id": "ok", "type": "approve", "toolCallId": "c1", "decision": "allow"}))
        .await;
    let answered = second.until(|l| l["id"] == "ok").await;
    assert_eq!(answered.last().unwrap()["success"], true, "{answered:?}");
    let resolved = first.until(|l| l["type"] == "approval_resolved").await;
    let resolved = resolved.last().unwrap();
    assert_eq!(resolved["toolCallId"], "c1");
    assert_eq!(resolved["decision"], "allow");
    assert_eq!(resolved["clientId"], second_id);
    first
        .send(json!({"id": "late", "type": "approve", "toolCallId": "c1", "decision": "deny"}))
        .await;
    assert_eq!(first.response("late").await["success"], false);
    // The next answer streams to both.
    for client in [&mut first, &mut second] {
        client.until(|l| is_delta(l, "working")).await;
    }
    assert!(env.cwd.path().join("approved").exists());
    // The first stops the run; both see it end.
    first.send(json!({"id": "stop", "type": "abort"})).await;
    for client in [&mut first, &mut second] {
        let end = client.until(|l| l["type"] == "agent_end").await;
        assert_eq!(end.last().unwrap()["status"], "aborted");
    }
    // The owner saw it all too.
    let seen = rpc.until(|l| l["type"] == "agent_end").await;
    assert!(seen.iter().any(|l| is_delta(l, "working")));
    assert_eq!(rpc.exit_code().await, 0);
}

/// The text of the assistant message a client saw stream: `message_start` starts it over
/// (an attach replays the message so far from its start).
fn streamed_text(lines: &[Value]) -> (String, usize) {
    let mut text = String::new();
    let mut starts = 0;
    for line in lines {
        if line["type"] == "message_start" && line["message"]["role"] == "assistant" {
            text.clear();
            starts += 1;
        }
        if line["type"] == "message_update"
            && let Some(delta) = line["assistantMessageEvent"]["delta"].as_str()
        {
            text.push_str(delta);
        }
    }
    (text, starts)
}

#[tokio::test]
async fn live_detach_and_reattach_mid_stream_loses_and_repeats_nothing() {
    let env = env();
    let words: Vec<String> = (0..40).map(|i| format!("w{i} ")).collect();
    let deltas: Vec<&str> = words.iter().map(String::as_str).collect();
    let whole: String = words.concat();
    let server = FakeServer::start(vec![
        Reply::sse(chat::text_deltas(&deltas)).slowly(Duration::from_millis(10)),
    ])
    .await;
    let (mut rpc, path) = owner(&env, &server).await;
    let mut watcher = Socket::connect(&path).await;
    watcher.attach("w", None).await;
    let mut wanderer = Socket::connect(&path).await;
    wanderer.attach("a", None).await;
    // The owner prompts; the wanderer leaves after a few words.
    rpc.send(json!({"id": "p", "type": "prompt", "message": "count"}))
        .await;
    let before = wanderer.until(|l| is_delta(l, "w2 ")).await;
    let user_entry = before
        .iter()
        .find(|l| l["type"] == "message_end" && l["message"]["role"] == "user")
        .map(|l| l["entryId"].as_str().unwrap().to_string())
        .expect("the user's message_end, with its entry id");
    wanderer.send(json!({"id": "d", "type": "detach"})).await;
    assert_eq!(wanderer.response("d").await["success"], true);
    // Back, from the user's message on: the replay starts the answer over from its start.
    let again = wanderer.attach("back", Some(&user_entry)).await;
    assert_eq!(again["data"]["since"], user_entry.as_str());
    let after = wanderer
        .until(|l| l["type"] == "message_end" && l["message"]["role"] == "assistant")
        .await;
    let replayed: Vec<&Value> = again["data"]["messages"]
        .as_array()
        .unwrap()
        .iter()
        .collect();
    let (text, starts) = streamed_text(&after);
    if replayed.is_empty() {
        // Came back while the answer streamed: its start and every word once.
        assert_eq!(starts, 1, "{after:?}");
        assert_eq!(text, whole);
    } else {
        // The machine was slow: the answer was complete by then, and is replayed whole.
        assert_eq!(replayed.len(), 1);
        assert_eq!(replayed[0]["content"][0]["text"], whole.as_str());
    }
    // The message's end came once, with the same text as the one who never left.
    let ended = after.last().unwrap();
    assert_eq!(ended["message"]["content"][0]["text"], whole.as_str());
    let watched = watcher
        .until(|l| l["type"] == "message_end" && l["message"]["role"] == "assistant")
        .await;
    assert_eq!(streamed_text(&watched), (whole.clone(), 1));
    // A third client after the end gets the whole conversation, with entry ids.
    let mut late = Socket::connect(&path).await;
    wanderer.until(|l| l["type"] == "agent_end").await;
    let all = late.attach("late", None).await;
    let messages = all["data"]["messages"].as_array().unwrap();
    assert_eq!(messages.len(), 2, "{all}");
    assert_eq!(messages[0]["entryId"], user_entry.as_str());
    assert_eq!(messages[1]["content"][0]["text"], whole.as_str());
    assert_eq!(all["data"]["isStreaming"], false);
    // `list_clients` knows all three, and which is the one asking.
    late.send(json!({"id": "who", "type": "list_clients"}))
        .await;
    let clients = late.response("who").await["data"]["clients"].clone();
    let clients = clients.as_array().unwrap();
    assert_eq!(clients.len(), 3, "{clients:?}");
    assert_eq!(clients.iter().filter(|c| c["you"] == true).count(), 1);
    assert_eq!(rpc.exit_code().await, 0);
}

#[tokio::test]
async fn live_clients_are_told_when_the_owner_exits_and_the_socket_follows_the_session() {
    let env = env();
    let server = FakeServer::start(vec![]).await;
    let (mut rpc, path) = owner(&env, &server).await;
    let mut client = Socket::connect(&path).await;
    client.attach("a", None).await;
    // A new session: the socket is renamed after it.
    rpc.send(json!({"id": "n", "type": "new_session"})).await;
    let new_id = rpc.response("n").await["data"]["sessionId"]
        .as_str()
        .unwrap()
        .to_string();
    let moved = socket(env.home.path(), &new_id);
    client
        .until(|l| l["type"] == "session_changed" && l["session"]["id"] == new_id.as_str())
        .await;
    // The rename follows the event: wait for it (no fixed sleep).
    let mut tries = 0;
    while !moved.exists() {
        tries += 1;
        assert!(
            tries < 2000,
            "the socket was not renamed to {}",
            moved.display()
        );
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    assert!(!path.exists());
    let mut newcomer = Socket::connect(&moved).await;
    newcomer.attach("n", None).await;
    // `agent attach ID` (a prefix of the id) bridges stdin and stdout to the socket.
    let mut bridge = Rpc::spawn({
        let mut cmd = support::process::command(env.home.path(), env.cwd.path());
        cmd.args(["attach", &new_id[..8]]);
        cmd
    });
    let attached = bridge.next().await;
    assert_eq!(attached["command"], "attach", "{attached}");
    assert_eq!(attached["data"]["sessionId"], new_id.as_str());
    bridge.send(json!({"id": "g", "type": "get_state"})).await;
    assert_eq!(
        bridge.response("g").await["data"]["sessionId"],
        new_id.as_str()
    );
    // The owner goes: every client is told why, then the connection closes.
    assert_eq!(rpc.exit_code().await, 0);
    bridge.until(|l| l["type"] == "live_end").await;
    let bridge_code = bridge.exit_code().await;
    assert_eq!(bridge_code, 0);
    for c in [&mut client, &mut newcomer] {
        let end = c.until(|l| l["type"] == "live_end").await;
        assert!(
            end.last().unwrap()["reason"]
                .as_str()
                .unwrap()
                .contains("exited"),
            "{end:?}"
        );
        assert_eq!(c.next_or_end().await, None);
    }
    assert!(!moved.exists(), "the socket outlived its process");
}

#[tokio::test]
async fn live_socket_only_its_user_can_open() {
    let env = env();
    let server = FakeServer::start(vec![]).await;
    // A run directory left too open is made private again.
    let run = env.home.path().join("run");
    std::fs::create_dir(&run).unwrap();
    std::fs::set_permissions(&run, std::fs::Permissions::from_mode(0o755)).unwrap();
    let (rpc, path) = owner(&env, &server).await;
    let mode = |p: &std::path::Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode(&run), 0o700);
    assert_eq!(mode(&path), 0o600);
    if !std::path::Path::new("/usr/bin/setpriv").exists() {
        support::skip::skip("no setpriv to connect as another user");
        return;
    }
    // Open the home itself to everyone, so that only the run directory and the socket
    // stand in the way; then the directory too, leaving only the socket's own mode.
    std::fs::set_permissions(env.home.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
    let as_nobody = || async {
        let mut cmd = tokio::process::Command::new("setpriv");
        cmd.args(["--reuid=65534", "--regid=65534", "--clear-groups"])
            .arg(env!("CARGO_BIN_EXE_agent"))
            .arg("attach")
            .arg(&path)
            .env("AGENT_HOME", "/nonexistent")
            .stdin(std::process::Stdio::null())
            .kill_on_drop(true);
        let output = tokio::time::timeout(Duration::from_secs(20), cmd.output())
            .await
            .unwrap()
            .unwrap();
        (
            output.status.code(),
            String::from_utf8_lossy(&output.stderr).into_owned(),
        )
    };
    let (code, stderr) = as_nobody().await;
    assert_eq!(code, Some(1), "{stderr}");
    assert!(stderr.contains("Permission denied"), "{stderr}");
    std::fs::set_permissions(&run, std::fs::Permissions::from_mode(0o755)).unwrap();
    let (code, stderr) = as_nobody().await;
    assert_eq!(code, Some(1), "{stderr}");
    assert!(stderr.contains("Permission denied"), "{stderr}");
    // The user it belongs to gets in.
    let mut mine = Socket::connect(&path).await;
    mine.attach("a", None).await;
    assert_eq!(rpc.exit_code().await, 0);
}

#[tokio::test]
async fn live_stale_sockets_are_cleaned_up_and_live_ones_listed() {
    let env = env();
    let server = FakeServer::start(vec![]).await;
    let run = env.home.path().join("run");
    std::fs::create_dir(&run).unwrap();
    // A socket whose process died: bound, then nobody listens.
    let dead = run.join("dead-session.sock");
    drop(std::os::unix::net::UnixListener::bind(&dead).unwrap());
    assert!(dead.exists());
    let (rpc, path) = owner(&env, &server).await;
    assert!(!dead.exists(), "the stale socket is still there");
    let id = path.file_stem().unwrap().to_str().unwrap().to_string();
    let listing = |args: &'static [&'static str]| {
        let mut cmd = support::process::command(env.home.path(), env.cwd.path());
        cmd.arg("sessions").args(args);
        support::process::run(cmd)
    };
    let listed = listing(&["--live"]).await;
    assert_eq!(listed.code, 0, "{}", listed.stderr);
    let line = listed.stdout.lines().next().unwrap_or_default().to_string();
    assert!(line.starts_with(&id), "{}", listed.stdout);
    assert!(
        line.contains(" live  idle  test-model  0 client(s)"),
        "{line}"
    );
    let as_json = listing(&["--live", "--json"]).await;
    let sessions: Value = serde_json::from_str(&as_json.stdout).unwrap();
    assert_eq!(sessions[0]["id"], id.as_str());
    assert_eq!(sessions[0]["live"], true);
    // Killed without a word: its socket is stale, and the next listing removes it.
    let mut rpc = rpc;
    rpc.child.start_kill().unwrap();
    rpc.child.wait().await.unwrap();
    assert!(path.exists());
    let listed = listing(&["--live"]).await;
    assert!(listed.stdout.trim().is_empty(), "{}", listed.stdout);
    assert!(!path.exists());
}

#[tokio::test]
async fn live_the_interface_serves_its_session_too() {
    let env = env();
    let server = FakeServer::start(vec![Reply::sse(chat::text("hello from afar"))]).await;
    let mut tui = env.start(&server, &[]);
    // The interface's first frame (the prompt sent from elsewhere as the interface starts:
    // `live_a_prompt_sent_as_soon_as_the_session_is_served_shows_in_the_interface`).
    tui.wait_for_text("Ask anything").await;
    let path = served_socket(&env).await;
    // A prompt from elsewhere runs in the interface's session, on both screens.
    let mut client = prompt_from_elsewhere(&path).await;
    let end = client.until(|l| l["type"] == "agent_end").await;
    assert!(answered(&end, "hello from afar"), "{end:?}");
    tui.wait_for_text("hello from afar").await;
    // Quitting the interface ends the client's attachment with a reason.
    tui.send(b"\x04");
    let quit = client.until(|l| l["type"] == "live_end").await;
    assert!(quit.last().unwrap()["reason"].is_string());
    tui.exit_code().await;
    assert!(!path.exists());
}

/// The socket the interface serves its session on, once it is there.
async fn served_socket(env: &Env) -> PathBuf {
    let run = env.home.path().join("run");
    let socket_in_run = || {
        std::fs::read_dir(&run)
            .ok()?
            .flatten()
            .map(|e| e.path())
            .find(|p| p.extension().is_some_and(|e| e == "sock"))
    };
    let mut tries = 0;
    loop {
        if let Some(path) = socket_in_run() {
            return path;
        }
        tries += 1;
        assert!(tries < 2000, "the interface does not serve its session");
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

/// A client of the socket at `path`, attached, that has sent the prompt "say hello".
async fn prompt_from_elsewhere(path: &Path) -> Socket {
    let mut client = Socket::connect(path).await;
    client.attach("a", None).await;
    client
        .send(json!({"id": "p", "type": "prompt", "message": "say hello"}))
        .await;
    client
}

/// Whether `lines` hold the end of an answer that says `text`.
fn answered(lines: &[Value], text: &str) -> bool {
    lines
        .iter()
        .any(|l| l["type"] == "message_end" && l["message"]["content"][0]["text"] == text)
}

/// A prompt from elsewhere the moment the session is served, while the interface is still
/// starting (its terminal never says where the cursor is, which holds the start 2 s), and
/// an answer that comes once the interface is up: the interface shows the whole run. (It
/// used to serve the session before it listened to it: the answer's start went unseen and
/// its text was dropped.)
#[tokio::test]
async fn live_a_prompt_sent_as_soon_as_the_session_is_served_shows_in_the_interface() {
    let env = env();
    let gate = Gate::new();
    let server =
        FakeServer::start(vec![Reply::sse(chat::text("hello from afar")).after(&gate)]).await;
    let terminal = support::pty::Terminal {
        no_cursor_answer: true,
        ..support::pty::Terminal::default()
    };
    let tui = env.start_in(&server, &[], &[], terminal);
    let mut client = prompt_from_elsewhere(&served_socket(&env).await).await;
    client
        .until(|l| l["type"] == "message_start" && l["message"]["role"] == "assistant")
        .await;
    tui.wait_for_text("› say hello").await;
    gate.open();
    client.until(|l| l["type"] == "agent_end").await;
    tui.wait_for_text("hello from afar").await;
}

/// The interface's own first run (a prompt on the command line) starts once its session is
/// served: a client attaching while it waits for the model hears that a run is going, and
/// then its answer.
#[tokio::test]
async fn live_the_interfaces_first_run_is_a_run_to_a_client_attached_during_it() {
    let env = env();
    let gate = Gate::new();
    let server =
        FakeServer::start(vec![Reply::sse(chat::text("hello from here")).after(&gate)]).await;
    let tui = env.start(&server, &["say hello"]);
    let path = served_socket(&env).await;
    let mut client = Socket::connect(&path).await;
    // The run has started: the model's request is waiting at the gate.
    server.wait_for_requests(1).await;
    let attached = client.attach("a", None).await;
    assert_eq!(attached["data"]["isStreaming"], true, "{attached}");
    gate.open();
    let end = client.until(|l| l["type"] == "agent_end").await;
    assert!(answered(&end, "hello from here"), "{end:?}");
    tui.wait_for_text("hello from here").await;
}

/// A command the model runs tries to drive its own agent through the socket (to approve its
/// own calls): what the command printed.
async fn own_command_attacks(sandbox: &str) -> String {
    let env = env();
    let home = env.home.path().display().to_string();
    // The socket's name is only known once the agent runs: the command finds it.
    let attack = format!(
        "for s in {home}/run/*.sock; do timeout 10 {} attach \"$s\" </dev/null; echo \"exit=$?\"; done",
        env!("CARGO_BIN_EXE_agent")
    );
    let server = FakeServer::start(vec![
        Reply::sse(chat::tool_call("c1", "bash", json!({"command": attack}))),
        Reply::sse(chat::text("tried")),
    ])
    .await;
    let args = [
        "--mode",
        "rpc",
        "--permission-mode",
        "auto",
        "--sandbox",
        sandbox,
    ];
    let mut rpc = Rpc::spawn(env.agent(&server, &args));
    rpc.send(json!({"id": "p", "type": "prompt", "message": "go"}))
        .await;
    let lines = rpc.until(|l| l["type"] == "tool_execution_end").await;
    let end = lines.last().unwrap();
    let output = end["result"]["content"][0]["text"]
        .as_str()
        .unwrap_or_default()
        .to_string();
    rpc.until(|l| l["type"] == "agent_end").await;
    assert_eq!(rpc.exit_code().await, 0);
    output
}

#[tokio::test]
async fn live_a_command_the_agent_runs_cannot_drive_its_session() {
    // Unsandboxed, the socket is reachable: the agent refuses its own descendants.
    let output = own_command_attacks("off").await;
    assert!(output.contains("exit="), "{output}");
    assert!(!output.contains("\"command\":\"attach\""), "{output}");
    assert!(output.contains("refused"), "{output}");
    // Sandboxed, `$AGENT_HOME/run` is not even there for it.
    let output = own_command_attacks("workspace-write").await;
    assert!(!output.contains("\"command\":\"attach\""), "{output}");
}

#[tokio::test]
async fn live_sessions_in_a_directory_without_any_says_so() {
    let e = crate::support::env::env();
    let mut cmd = crate::support::process::command(e.home.path(), e.cwd.path());
    cmd.arg("sessions");
    let out = crate::support::process::run(cmd).await;
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert!(out.stdout.is_empty(), "{}", out.stdout);
    assert!(out.stderr.contains("no sessions in"), "{}", out.stderr);
}
