//! Sessions managed from the shell (docs/sessions.md, Managing sessions): titles derived
//! from the first prompt or given with `agent sessions rename`, listing this directory's or
//! every directory's, deleting a session with everything that belongs to it — its tool
//! outputs, its sub-agents' sessions, its checkpoint records and the objects no other
//! session uses — while refusing one a running agent holds, and exporting one as Markdown,
//! HTML or its JSON lines. Real files under a temporary AGENT_HOME, the real binary.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // test code fails loudly

use crate::support;

use serde_json::{Value, json};
use std::path::{Path, PathBuf};
use support::chat;
use support::env::{Env, env};
use support::process::{Output, Rpc, command, run};
use support::server::{FakeServer, Reply};

/// `agent sessions ARGS…` in `cwd`.
async fn sessions_in(env: &Env, cwd: &Path, args: &[&str]) -> Output {
    let mut cmd = command(env.home.path(), cwd);
    cmd.arg("sessions").args(args);
    run(cmd).await
}

async fn sessions(env: &Env, args: &[&str]) -> Output {
    sessions_in(env, env.cwd.path(), args).await
}

fn id_of(file: &Path) -> String {
    let name = file.file_stem().unwrap().to_str().unwrap();
    name.rsplit_once('_').unwrap().1.to_string()
}

/// `agent -p PROMPT` answered by the fake server; the exit code must be 0.
async fn print(env: &Env, server: &FakeServer, extra: &[&str], prompt: &str) {
    let mut args = vec!["-p", "--permission-mode", "auto"];
    args.extend_from_slice(extra);
    args.push(prompt);
    let out = run(env.agent(server, &args)).await;
    assert_eq!(out.code, 0, "stderr: {}", out.stderr);
}

/// Every path under `dir`, recursively.
fn every_path(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut pending = vec![dir.to_path_buf()];
    while let Some(dir) = pending.pop() {
        for entry in std::fs::read_dir(&dir).unwrap().flatten() {
            let path = entry.path();
            if entry.file_type().unwrap().is_dir() {
                pending.push(path.clone());
            }
            out.push(path);
        }
    }
    out
}

/// The checkpoint objects holding exactly `content`.
fn objects_holding(home: &Path, content: &[u8]) -> Vec<PathBuf> {
    let objects = home.join("checkpoints/objects");
    if !objects.is_dir() {
        return Vec::new();
    }
    every_path(&objects)
        .into_iter()
        .filter(|p| p.is_file() && std::fs::read(p).unwrap() == content)
        .collect()
}

#[tokio::test]
async fn titles_come_from_the_first_prompt_and_renames() {
    let env = env();
    let server = chat::answering(&["first answer", "second answer"]).await;
    print(
        &env,
        &server,
        &[],
        "\n  Fix the flaky build  \nit fails on CI every other run",
    )
    .await;
    let file = env.only_session();
    let id = id_of(&file);

    let listed = sessions(&env, &[]).await;
    assert_eq!(listed.code, 0, "{}", listed.stderr);
    let line = listed.stdout.lines().next().unwrap().to_string();
    assert!(line.starts_with(&format!("{id}  saved  ")), "{line}");
    assert!(
        line.ends_with("  2 messages  Fix the flaky build"),
        "{line}"
    );
    let as_json: Value = serde_json::from_str(&sessions(&env, &["--json"]).await.stdout).unwrap();
    assert_eq!(as_json[0]["title"], "Fix the flaky build", "{as_json}");
    assert_eq!(as_json[0]["named"], false);
    assert_eq!(as_json[0]["messages"], 2);

    // Renamed by a prefix of its id; the title holds when the session goes on.
    let renamed = sessions(&env, &["rename", &id[..8], "Release", "notes"]).await;
    assert_eq!(renamed.code, 0, "{}", renamed.stderr);
    assert!(
        renamed.stdout.contains("\"Release notes\""),
        "{}",
        renamed.stdout
    );
    print(&env, &server, &["-c"], "and the second part").await;
    let listed = sessions(&env, &["list", "--json"]).await;
    let as_json: Value = serde_json::from_str(&listed.stdout).unwrap();
    assert_eq!(as_json[0]["title"], "Release notes", "{as_json}");
    assert_eq!(as_json[0]["named"], true);
    assert_eq!(as_json[0]["messages"], 4);
    // The name is an entry of the session file, as RPC set_session_name writes it.
    let text = std::fs::read_to_string(&file).unwrap();
    assert!(
        text.lines()
            .any(|l| l.starts_with("{\"type\":\"session_info\"")
                && l.contains("\"name\":\"Release notes\"")),
        "{text}"
    );

    // An empty title is refused and changes nothing.
    let empty = sessions(&env, &["rename", &id, "  "]).await;
    assert_eq!(empty.code, 2, "{}", empty.stderr);
    assert!(empty.stderr.contains("cannot be empty"), "{}", empty.stderr);
    assert_eq!(std::fs::read_to_string(&file).unwrap(), text);
}

#[tokio::test]
async fn list_all_and_json() {
    let env = env();
    let elsewhere = tempfile::tempdir().unwrap();
    let server = chat::answering(&["one", "two"]).await;
    print(&env, &server, &[], "here in the first directory").await;
    let mut cmd = command(env.home.path(), elsewhere.path());
    cmd.args(["--base-url", &server.v1(), "--model", "test-model"])
        .args(["-p", "over in the other directory"]);
    assert_eq!(run(cmd).await.code, 0);

    let here = sessions(&env, &[]).await;
    assert_eq!(here.stdout.lines().count(), 1, "{}", here.stdout);
    assert!(here.stdout.contains("here in the first directory"));
    let all = sessions(&env, &["--all"]).await;
    assert_eq!(all.code, 0, "{}", all.stderr);
    let lines: Vec<&str> = all.stdout.lines().collect();
    assert_eq!(lines.len(), 2, "{}", all.stdout);
    // Most recently used first, each with its directory.
    let other = elsewhere.path().display().to_string();
    assert!(lines[0].contains(&other), "{}", lines[0]);
    assert!(
        lines[0].ends_with("over in the other directory"),
        "{}",
        lines[0]
    );
    assert!(
        lines[1].ends_with("here in the first directory"),
        "{}",
        lines[1]
    );
    let as_json: Value =
        serde_json::from_str(&sessions(&env, &["list", "--all", "--json"]).await.stdout).unwrap();
    let rows = as_json.as_array().unwrap();
    assert_eq!(rows.len(), 2, "{as_json}");
    assert_eq!(rows[0]["cwd"], other.as_str());
    assert_eq!(rows[0]["live"], false);
    assert!(rows[0]["created"].as_i64().unwrap() > 0);
    assert!(rows[0]["updated"].as_i64().unwrap() >= rows[0]["created"].as_i64().unwrap());
    assert!(Path::new(rows[1]["sessionFile"].as_str().unwrap()).is_file());
    // A list subcommand and the flags before it do not mix.
    let mixed = sessions(&env, &["--all", "list"]).await;
    assert_eq!(mixed.code, 2, "{}", mixed.stdout);
}

/// Deletion leaving no orphan files: session A has a spilled bash output, a sub-agent and
/// checkpoints; B (same directory) shares a checkpoint object with A. After `rm A`, no file
/// under AGENT_HOME names A or its sub-agent, the object only A used is gone, the shared
/// one stays, and B still restores its files.
#[tokio::test]
async fn rm_removes_the_session_its_files_its_subagents_and_unshared_checkpoint_objects() {
    let env = env();
    let cwd = env.cwd.path();
    std::fs::write(cwd.join("shared.txt"), "shared by both sessions 41d2\n").unwrap();
    let server = FakeServer::start(vec![
        Reply::sse(chat::tool_call(
            "t1",
            "task",
            json!({"description": "look around", "prompt": "child job 5e1f"}),
        )),
        Reply::sse(chat::tool_call(
            "b1",
            "bash",
            json!({"command": "seq 1 100000"}),
        )),
        Reply::sse(chat::tool_call(
            "b2",
            "bash",
            json!({"command": "echo only-in-a-7f3e > a.txt"}),
        )),
        Reply::sse(chat::text("done A")),
        Reply::sse(chat::tool_call(
            "b3",
            "bash",
            json!({"command": "echo made-by-b > b.txt; echo changed-by-b > shared.txt"}),
        )),
        Reply::sse(chat::text("done B")),
    ])
    .await;
    server.route("child job 5e1f", vec![Reply::sse(chat::text("child done"))]);
    print(&env, &server, &[], "session A").await;
    let a_file = env.only_session();
    let a_id = id_of(&a_file);
    let stem = a_file.with_extension("");
    let spilled = stem.with_extension("files");
    let agents = stem.with_extension("agents");
    assert!(
        std::fs::read_dir(&spilled).unwrap().count() > 0,
        "no spilled output"
    );
    let children: Vec<PathBuf> = every_path(&agents)
        .into_iter()
        .filter(|p| p.extension().is_some_and(|e| e == "jsonl"))
        .collect();
    assert_eq!(children.len(), 1, "{children:?}");
    let child_id = id_of(&children[0]);
    let checkpoints = env.home.path().join("checkpoints");
    assert!(checkpoints.join(format!("sessions/{a_id}.jsonl")).is_file());
    let only_a = b"only-in-a-7f3e\n";
    let shared = b"shared by both sessions 41d2\n";
    assert_eq!(objects_holding(env.home.path(), only_a).len(), 1);

    // B in the same directory, from the same files.
    std::fs::remove_file(cwd.join("a.txt")).unwrap();
    print(&env, &server, &[], "session B").await;
    let b_file = env
        .session_files()
        .into_iter()
        .find(|f| *f != a_file)
        .unwrap();
    let b_id = id_of(&b_file);
    assert_eq!(objects_holding(env.home.path(), shared).len(), 1);

    // A dry run lists what would go and deletes nothing.
    let before = every_path(env.home.path());
    let dry = sessions(&env, &["rm", &a_id, "--dry-run"]).await;
    assert_eq!(dry.code, 0, "{}", dry.stderr);
    assert!(
        dry.stdout.contains(&a_file.display().to_string()),
        "{}",
        dry.stdout
    );
    assert!(
        dry.stdout.contains(&children[0].display().to_string()),
        "{}",
        dry.stdout
    );
    assert!(dry.stdout.contains("session A"), "{}", dry.stdout);
    assert_eq!(every_path(env.home.path()), before);

    let removed = sessions(&env, &["rm", &a_id[..16], "--force"]).await;
    assert_eq!(removed.code, 0, "{}", removed.stderr);
    assert!(
        removed.stdout.contains("Deleted session"),
        "{}",
        removed.stdout
    );
    let named: Vec<PathBuf> = every_path(env.home.path())
        .into_iter()
        .filter(|p| {
            let text = p.to_string_lossy();
            text.contains(&a_id) || text.contains(&child_id)
        })
        .collect();
    assert!(named.is_empty(), "left behind: {named:?}");
    assert!(objects_holding(env.home.path(), only_a).is_empty());
    assert_eq!(objects_holding(env.home.path(), shared).len(), 1);
    assert!(b_file.is_file());

    // B still goes back to before its command, which needs the shared object: its
    // checkpoint is whole.
    assert_eq!(
        std::fs::read(cwd.join("shared.txt")).unwrap(),
        b"changed-by-b\n"
    );
    let args = ["--mode", "rpc", "--permission-mode", "auto", "-r", &b_id];
    let mut rpc = Rpc::spawn(env.agent(&server, &args));
    rpc.send(json!({"id": "g", "type": "get_checkpoints"}))
        .await;
    let listed = rpc.response("g").await;
    let checkpoint = listed["data"]["checkpoints"][0]["id"]
        .as_str()
        .unwrap_or_else(|| panic!("{listed}"))
        .to_string();
    rpc.send(json!({"id": "r", "type": "rewind", "checkpointId": checkpoint, "restore": "code"}))
        .await;
    let rewound = rpc.response("r").await;
    assert_eq!(rewound["success"], true, "{rewound}");
    assert!(!cwd.join("b.txt").exists());
    assert_eq!(std::fs::read(cwd.join("shared.txt")).unwrap(), shared);
    assert_eq!(rpc.exit_code().await, 0);
}

#[tokio::test]
async fn rm_refuses_a_session_in_use() {
    let env = env();
    let server = chat::answering(&["hello"]).await;
    let mut rpc = Rpc::spawn(env.agent(&server, &["--mode", "rpc"]));
    rpc.send(json!({"id": "p", "type": "prompt", "message": "keep me"}))
        .await;
    rpc.until(|l| l["type"] == "agent_end").await;
    let file = env.only_session();
    let id = id_of(&file);

    let refused = sessions(&env, &["rm", &id, "--force"]).await;
    assert_eq!(refused.code, 1, "{}", refused.stderr);
    assert!(
        refused.stderr.contains("open in a running agent"),
        "{}",
        refused.stderr
    );
    assert!(file.is_file());
    let rename = sessions(&env, &["rename", &id, "new title"]).await;
    assert_eq!(rename.code, 1, "{}", rename.stderr);
    assert!(rename.stderr.contains("/rename"), "{}", rename.stderr);
    assert!(
        !std::fs::read_to_string(&file)
            .unwrap()
            .contains("new title")
    );
    assert_eq!(rpc.exit_code().await, 0);

    // Without a terminal to ask on, only --force deletes.
    let unasked = sessions(&env, &["rm", &id]).await;
    assert_eq!(unasked.code, 2, "{}", unasked.stderr);
    assert!(unasked.stderr.contains("--force"), "{}", unasked.stderr);
    assert!(file.is_file());
    let removed = sessions(&env, &["rm", &id, "--force"]).await;
    assert_eq!(removed.code, 0, "{}", removed.stderr);
    assert!(!file.exists());
    let gone = sessions(&env, &["rm", &id, "--force"]).await;
    assert_eq!(gone.code, 1);
    assert!(
        gone.stderr.contains("no session matches"),
        "{}",
        gone.stderr
    );
}

#[tokio::test]
async fn export_md_and_html() {
    let env = env();
    let server = FakeServer::start(vec![
        Reply::sse(chat::tool_call(
            "c1",
            "bash",
            json!({"command": "echo 'a ```fenced``` word'"}),
        )),
        Reply::sse(chat::text("The answer is **42**.")),
    ])
    .await;
    print(&env, &server, &[], "Explain the build\nwith details").await;
    let file = env.only_session();
    let id = id_of(&file);

    let md = sessions(&env, &["export", &id, "--format", "md"]).await;
    assert_eq!(md.code, 0, "{}", md.stderr);
    let text = md.stdout;
    assert!(text.starts_with("# Explain the build\n"), "{text}");
    assert!(text.contains(&format!("`{id}`")), "{text}");
    assert!(
        text.contains("## User\n\nExplain the build\nwith details\n"),
        "{text}"
    );
    assert!(text.contains("**Tool call** `bash`"), "{text}");
    // The output with backticks sits in a fence it cannot close.
    assert!(text.contains("\n````\na ```fenced``` word\n"), "{text}");
    assert!(
        text.contains("## Assistant\n\nThe answer is **42**."),
        "{text}"
    );

    // The format follows the output file's extension.
    let page = env.cwd.path().join("out.html");
    let html = sessions(&env, &["export", &id, "-o", page.to_str().unwrap()]).await;
    assert_eq!(html.code, 0, "{}", html.stderr);
    let page = std::fs::read_to_string(&page).unwrap();
    assert!(page.starts_with("<!doctype html>"), "{page}");
    assert!(page.contains("<strong>42</strong>"), "{page}");
    let copy = env.cwd.path().join("copy.jsonl");
    let jsonl = sessions(&env, &["export", &id, "-o", copy.to_str().unwrap()]).await;
    assert_eq!(jsonl.code, 0, "{}", jsonl.stderr);
    assert_eq!(std::fs::read(&copy).unwrap(), std::fs::read(&file).unwrap());
    let missing = sessions(&env, &["export", "nosuchid"]).await;
    assert_eq!(missing.code, 1);
    assert!(
        missing.stderr.contains("no session matches"),
        "{}",
        missing.stderr
    );
}
