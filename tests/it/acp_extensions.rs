//! What users add to the agent, from an editor (`--mode acp`): the project's custom commands
//! and skills are offered in `available_commands_update` and expanded when a prompt names
//! one; an unknown `/name` is refused before anything reaches the model; `@path` in a typed
//! prompt attaches the file as in the terminal.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // test code fails loudly

use crate::support;

use agent_client_protocol::v1::schema::StopReason;
use serde_json::Value;
use std::path::Path;
use support::acp::{Acp, text_of};
use support::chat;
use support::env::env;

fn write(path: &Path, text: &str) {
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, text).unwrap();
}

/// The text of the last user message of a Chat Completions request body.
fn last_user_text(body: &Value) -> String {
    let messages = body["messages"].as_array().unwrap();
    let user = messages.iter().rev().find(|m| m["role"] == "user").unwrap();
    match &user["content"] {
        Value::String(text) => text.clone(),
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
async fn acp_offers_and_expands_custom_commands_and_skills_and_attaches_mentions() {
    let env = env();
    write(
        &env.cwd.path().join(".agent/commands/review.md"),
        "---\ndescription: Review a file\nargument-hint: <file>\n---\nReview $1 with care.\n",
    );
    write(
        &env.cwd.path().join(".agent/skills/pdf/SKILL.md"),
        "---\nname: pdf\ndescription: Work with PDF files\n---\nUse pdftotext.\n",
    );
    write(&env.cwd.path().join("notes.txt"), "the secret is 42\n");
    let server = chat::answering(&["reviewed", "with the skill", "read it"]).await;
    let mut acp = Acp::spawn(env.agent(&server, &["--mode", "acp"])).await;
    let id = acp.open(env.cwd.path()).await.session_id;

    let offered = acp
        .until(|u| u["sessionUpdate"] == "available_commands_update")
        .await;
    let commands = offered.last().unwrap()["availableCommands"]
        .as_array()
        .unwrap()
        .clone();
    let named = |name: &str| {
        commands
            .iter()
            .find(|c| c["name"] == name)
            .unwrap_or_else(|| panic!("{name} not offered: {commands:#?}"))
            .clone()
    };
    assert_eq!(named("review")["description"], "Review a file");
    assert_eq!(named("review")["input"]["hint"], "<file>");
    assert_eq!(named("skill:pdf")["description"], "Work with PDF files");
    named("compact");

    let said = async |acp: &mut Acp, text: &str| {
        let answer = acp.prompt(&id, text).await.unwrap().unwrap();
        assert_eq!(answer.stop_reason, StopReason::EndTurn);
        text_of(&acp.drain(), "agent_message_chunk")
    };
    assert_eq!(said(&mut acp, "/review src/App.tsx").await, "reviewed");
    assert_eq!(
        last_user_text(&server.bodies()[0]),
        "Review src/App.tsx with care."
    );
    assert_eq!(
        said(&mut acp, "/skill:pdf split it").await,
        "with the skill"
    );
    let skill_prompt = last_user_text(&server.bodies()[1]);
    assert!(skill_prompt.contains("Use pdftotext."), "{skill_prompt}");
    assert!(skill_prompt.contains("split it"), "{skill_prompt}");

    // A misspelt command never reaches the model, and the answer says what exists.
    let refused = said(&mut acp, "/reveiw src/App.tsx").await;
    assert!(refused.contains("unknown command /reveiw"), "{refused}");
    assert!(
        refused.contains("/review") && refused.contains("/skill:pdf"),
        "{refused}"
    );
    assert!(refused.contains("/compact"), "{refused}");
    assert_eq!(server.bodies().len(), 2);

    assert_eq!(said(&mut acp, "what does @notes.txt say").await, "read it");
    let mentioned = last_user_text(&server.bodies()[2]);
    assert!(
        mentioned.starts_with("what does @notes.txt say"),
        "{mentioned}"
    );
    assert!(mentioned.contains("the secret is 42"), "{mentioned}");
    assert_eq!(acp.exit_code().await, 0);
}

#[tokio::test]
async fn acp_tells_the_editor_what_the_terminal_says_on_opening_a_session() {
    let env = env();
    // A custom command that cannot be read, and project hooks nobody trusted yet.
    write(
        &env.cwd.path().join(".agent/commands/broken.md"),
        "---\ndescription: never closed\nReview.\n",
    );
    write(
        &env.cwd.path().join(".claude/settings.json"),
        r#"{"hooks": {"PreToolUse": [{"matcher": "Bash", "hooks": [{"type": "command", "command": "true"}]}]}}"#,
    );
    let server = chat::answering(&["ok"]).await;
    let out = support::process::run(env.agent(&server, &["-p", "hi"])).await;
    assert_eq!(out.code, 0, "stderr: {}", out.stderr);
    let told: Vec<&str> = out
        .stderr
        .lines()
        .filter_map(|line| line.strip_prefix("agent: "))
        .collect();
    assert!(
        told.iter().any(|t| t.contains("broken.md"))
            && told.iter().any(|t| t.contains("not trusted")),
        "the terminal names both: {}",
        out.stderr
    );

    let mut acp = Acp::spawn(env.agent(&server, &["--mode", "acp"])).await;
    acp.open(env.cwd.path()).await;
    let updates = acp
        .until(|u| u["sessionUpdate"] == "available_commands_update")
        .await;
    // This client takes no notices: each is a line of thought.
    let thought = text_of(&updates, "agent_thought_chunk");
    for notice in &told {
        assert!(
            thought.contains(&format!("[{notice}]")),
            "the editor is not told `{notice}`: {updates:#?}"
        );
    }
    assert_eq!(acp.exit_code().await, 0);
}
