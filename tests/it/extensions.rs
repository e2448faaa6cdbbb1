//! Custom commands and skills, through the real binary: a repository set up for Claude Code
//! (`.claude/commands`, `.claude/skills`) works unchanged; `-p` and RPC prompts starting with
//! `/name` are expanded, unknown names refused before anything reaches the model; skills
//! reach the system prompt by name, description and path; bad front matter is reported
//! with its file and line.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // test code fails loudly

use crate::support;

use serde_json::json;
use std::path::Path;
use support::chat;
use support::env::env;
use support::process::{Rpc, run};
use support::server::{FakeServer, Reply};

fn write(path: &Path, text: &str) {
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, text).unwrap();
}

fn user_text(body: &serde_json::Value) -> String {
    let messages = body["messages"].as_array().unwrap();
    let user = messages.iter().rev().find(|m| m["role"] == "user").unwrap();
    match &user["content"] {
        serde_json::Value::String(text) => text.clone(),
        blocks => blocks
            .as_array()
            .unwrap()
            .iter()
            .filter_map(|b| b["text"].as_str())
            .collect::<Vec<_>>()
            .join("\n"),
    }
}

#[tokio::test]
async fn a_claude_code_command_with_arguments_runs_headless() {
    let env = env();
    write(
        &env.cwd.path().join(".claude/commands/frontend/review.md"),
        "---\ndescription: Review a component\nargument-hint: <file> [focus]\n---\nReview $1 carefully.\nEverything said: $ARGUMENTS\n",
    );
    let server = chat::answering(&["Looks fine."]).await;
    let out = run(env.agent(
        &server,
        &["-p", "/frontend:review src/App.tsx \"state handling\""],
    ))
    .await;
    assert_eq!(out.code, 0, "stderr: {}", out.stderr);
    assert_eq!(out.stdout, "Looks fine.\n");
    assert_eq!(
        user_text(&server.bodies()[0]),
        "Review src/App.tsx carefully.\nEverything said: src/App.tsx \"state handling\""
    );
}

#[tokio::test]
async fn an_unknown_command_is_refused_with_the_known_ones_and_never_sent() {
    let env = env();
    write(
        &env.cwd.path().join(".agent/commands/review.md"),
        "Review.\n",
    );
    write(
        &env.cwd.path().join(".claude/skills/pdf/SKILL.md"),
        "---\nname: pdf\ndescription: Work with PDF files\n---\nUse pdftotext.\n",
    );
    let server = FakeServer::start(vec![]).await;
    let out = run(env.agent(&server, &["-p", "/reveiw the diff"])).await;
    assert_eq!(out.code, 2, "stdout: {}", out.stdout);
    assert!(
        out.stderr.contains("unknown command /reveiw"),
        "{}",
        out.stderr
    );
    assert!(
        out.stderr.contains("/review") && out.stderr.contains("/skill:pdf"),
        "{}",
        out.stderr
    );
    assert!(server.bodies().is_empty(), "nothing reached the model");

    // `//` sends a leading slash as text; a path is text as it is.
    let server = chat::answering(&["ok", "ok"]).await;
    let out = run(env.agent(&server, &["-p", "//reveiw is a typo"])).await;
    assert_eq!(out.code, 0, "stderr: {}", out.stderr);
    assert_eq!(user_text(&server.bodies()[0]), "/reveiw is a typo");
    let out = run(env.agent(&server, &["-p", "/etc/hosts looks odd"])).await;
    assert_eq!(out.code, 0, "stderr: {}", out.stderr);
    assert_eq!(user_text(&server.bodies()[1]), "/etc/hosts looks odd");
}

#[tokio::test]
async fn project_commands_win_over_the_users_and_the_clash_is_reported() {
    let env = env();
    write(
        &env.home.path().join("commands/review.md"),
        "User review.\n",
    );
    write(
        &env.home.path().join("commands/mine.md"),
        "Mine: $ARGUMENTS\n",
    );
    write(
        &env.cwd.path().join(".agent/commands/review.md"),
        "Project review.\n",
    );
    let server = chat::answering(&["ok", "ok"]).await;
    let out = run(env.agent(&server, &["-p", "/review"])).await;
    assert_eq!(out.code, 0, "stderr: {}", out.stderr);
    assert_eq!(user_text(&server.bodies()[0]), "Project review.");
    assert_eq!(
        out.stderr.matches("is ignored").count(),
        1,
        "the clash is reported once: {}",
        out.stderr
    );
    assert!(out.stderr.contains("commands/review.md"), "{}", out.stderr);
    let out = run(env.agent(&server, &["-p", "/mine", "a", "b"])).await;
    assert_eq!(out.code, 0, "stderr: {}", out.stderr);
    assert_eq!(user_text(&server.bodies()[1]), "Mine: a b");
}

#[tokio::test]
async fn a_commands_model_is_used_for_its_prompt_and_that_run_only() {
    let env = env();
    write(
        &env.cwd.path().join(".agent/commands/quick.md"),
        "---\nmodel: small-model\n---\nQuick: $ARGUMENTS\n",
    );
    let server = chat::answering(&["done", "went on"]).await;
    // The provider and model come from the config, so a continued session may take its own.
    write(
        &env.home.path().join("config.toml"),
        &format!(
            "provider = \"local\"\nmodel = \"test-model\"\n[providers.local]\napi = \"openai-chat\"\nbase_url = \"{}\"\n",
            server.v1()
        ),
    );
    let headless = |args: &[&str]| {
        let mut cmd = support::process::command(env.home.path(), env.cwd.path());
        cmd.args(args);
        cmd
    };
    let out = run(headless(&["-p", "/quick check"])).await;
    assert_eq!(out.code, 0, "stderr: {}", out.stderr);
    assert_eq!(server.bodies()[0]["model"], "small-model");
    // The session goes on with the model it was started with.
    let out = run(headless(&["-c", "-p", "go on"])).await;
    assert_eq!(out.code, 0, "stderr: {}", out.stderr);
    assert_eq!(server.bodies()[1]["model"], "test-model");
}

#[tokio::test]
async fn skills_are_listed_in_the_system_prompt_and_bad_ones_reported() {
    let env = env();
    let skill = env.cwd.path().join(".claude/skills/pdf/SKILL.md");
    write(
        &skill,
        "---\nname: pdf\ndescription: >\n  Fill PDF forms\n  and extract text.\n---\nRun scripts/fill.py first.\n",
    );
    write(
        &env.cwd.path().join(".agent/skills/broken/SKILL.md"),
        "---\nname: broken\ndescription Missing the colon\n---\nBody\n",
    );
    write(
        &env.home.path().join("skills/Bad Name/SKILL.md"),
        "---\nname: Bad Name\ndescription: x\n---\n",
    );
    let server = chat::answering(&["ok"]).await;
    let out = run(env.agent(&server, &["-p", "hello"])).await;
    assert_eq!(out.code, 0, "stderr: {}", out.stderr);
    let system = server.bodies()[0]["messages"][0]["content"]
        .as_str()
        .unwrap()
        .to_string();
    assert!(
        system.contains(&format!(
            "- pdf: Fill PDF forms and extract text. ({})",
            skill.display()
        )),
        "{system}"
    );
    assert!(
        !system.contains("Run scripts/fill.py"),
        "only names, descriptions and paths: {system}"
    );
    assert!(!system.contains("broken"), "{system}");
    assert!(
        out.stderr
            .contains("broken/SKILL.md:3: expected `key: value`"),
        "{}",
        out.stderr
    );
    assert!(
        out.stderr.contains("Bad Name/SKILL.md:2: `name: Bad Name`"),
        "{}",
        out.stderr
    );
}

#[tokio::test]
async fn a_forced_skill_adds_its_body_to_the_prompt() {
    let env = env();
    write(
        &env.cwd.path().join(".claude/skills/pdf/SKILL.md"),
        "---\nname: pdf\ndescription: Work with PDF files\n---\nRun scripts/fill.py first.\n",
    );
    let server = chat::answering(&["ok"]).await;
    let out = run(env.agent(&server, &["-p", "/skill:pdf fill form.pdf"])).await;
    assert_eq!(out.code, 0, "stderr: {}", out.stderr);
    let text = user_text(&server.bodies()[0]);
    assert!(text.contains("Use the skill `pdf`"), "{text}");
    assert!(text.contains("Run scripts/fill.py first."), "{text}");
    assert!(text.ends_with("fill form.pdf"), "{text}");
    assert!(!text.contains("description:"), "no front matter: {text}");
}

#[tokio::test]
async fn rpc_lists_and_expands_commands_and_refuses_unknown_ones() {
    let env = env();
    write(
        &env.cwd.path().join(".claude/commands/fix.md"),
        "---\ndescription: Fix an issue\nargument-hint: <number>\n---\nFix issue #$1.\n",
    );
    write(
        &env.home.path().join("skills/notes/SKILL.md"),
        "---\nname: notes\ndescription: Keep notes\n---\nWrite NOTES.md.\n",
    );
    let server = FakeServer::start(vec![Reply::sse(chat::text("Fixed."))]).await;
    let mut rpc = Rpc::spawn(env.agent(&server, &["--mode", "rpc"]));
    rpc.send(json!({"id": "c", "type": "get_commands"})).await;
    let commands = rpc.response("c").await["data"]["commands"].clone();
    assert_eq!(commands[0]["name"], "fix");
    assert_eq!(commands[0]["description"], "Fix an issue");
    assert_eq!(commands[0]["argumentHint"], "<number>");
    assert_eq!(commands[0]["source"], "prompt");
    assert_eq!(commands[0]["location"], "project");
    assert_eq!(commands[1]["name"], "skill:notes");
    assert_eq!(commands[1]["source"], "skill");
    assert_eq!(commands[1]["location"], "user");

    rpc.send(json!({"id": "u", "type": "prompt", "message": "/fixx 12"}))
        .await;
    let refused = rpc.response("u").await;
    assert_eq!(refused["success"], false);
    assert!(
        refused["error"]
            .as_str()
            .unwrap()
            .contains("known: /fix, /skill:notes"),
        "{refused}"
    );
    rpc.send(json!({"id": "p", "type": "prompt", "message": "/fix 12"}))
        .await;
    assert_eq!(rpc.response("p").await["success"], true);
    rpc.until(|l| l["type"] == "agent_end").await;
    assert_eq!(
        server.bodies().len(),
        1,
        "the refused prompt never reached the model"
    );
    assert_eq!(user_text(&server.bodies()[0]), "Fix issue #12.");
    assert_eq!(rpc.exit_code().await, 0);
}
