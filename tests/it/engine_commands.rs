//! The engine's commands (`Agent::execute`, protocol::command): each one against the
//! loopback model server — its outcome, the events it sends, what it leaves in the session
//! file — and the one reading of `provider/model` over the real configuration.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // test code fails loudly

use crate::support;

use agent::agent::commands::models::{self, Models};
use agent::protocol::command::ModelRef;
use agent::startup::models::SettingsModels;
use serde_json::json;
use support::chat;
use support::env::env;
use support::process::run;
use support::server::{FakeServer, Reply};

/// The models of a configuration with the built-in providers (`openrouter` among them),
/// `mine` (configured without the base URL it needs), and the default provider given a
/// loopback URL.
fn settings_models() -> (SettingsModels, tempfile::TempDir) {
    let dir = tempfile::tempdir().unwrap();
    let config = dir.path().join("config.toml");
    std::fs::write(&config, "[providers.mine]\napi = \"openai-chat\"\n").unwrap();
    let cli = <agent::cli::Cli as clap::Parser>::parse_from([
        "agent",
        "--config",
        config.to_str().unwrap(),
        "--model",
        "test-model",
        "--base-url",
        "http://127.0.0.1:9/v1",
        "--api-key",
        "k",
    ]);
    let settings = agent::config::load(&cli).expect("settings");
    (SettingsModels::new(settings), dir)
}

fn chosen(text: &str, current: &str, models: &dyn Models) -> Result<String, String> {
    models::parse(text, current, models).map(|(p, m)| format!("{}|{}", p.name, m.id))
}

#[test]
fn a_model_id_with_a_slash_stays_whole_unless_it_starts_with_a_provider() {
    let (models, _dir) = settings_models();
    assert_eq!(
        chosen("openrouter/meta-llama/llama-3.1-8b", "openai", &models).unwrap(),
        "openrouter|meta-llama/llama-3.1-8b"
    );
    assert_eq!(
        chosen("meta-llama/llama-3.1-8b", "openrouter", &models).unwrap(),
        "openrouter|meta-llama/llama-3.1-8b"
    );
    assert_eq!(
        chosen("gpt-4.1", "openrouter", &models).unwrap(),
        "openrouter|gpt-4.1"
    );
}

#[test]
fn a_known_provider_that_cannot_be_used_is_an_error_not_a_fallback() {
    let (models, _dir) = settings_models();
    // Before, `/model mine/m` quietly became the model `mine/m` of the current provider.
    let why = chosen("mine/m", "openai", &models).unwrap_err();
    assert!(why.contains("providers.mine.base_url"), "{why}");
    let why = models::resolve(
        &ModelRef::Parts {
            provider: "nope".into(),
            model: "m".into(),
        },
        "openai",
        &models,
    )
    .unwrap_err();
    assert!(
        why.starts_with("unknown provider `nope` (known: openai, anthropic"),
        "{why}"
    );
    assert!(why.contains("mine"), "{why}");
}

#[tokio::test]
async fn a_sub_agent_definition_may_name_a_model_whose_id_has_a_slash() {
    let env = env();
    let agents = env.cwd.path().join(".agent/agents");
    std::fs::create_dir_all(&agents).unwrap();
    std::fs::write(
        agents.join("vendored.md"),
        "---\nname: vendored\ndescription: runs on a vendor's model\nmodel: vendor/model-x\n---\nYou are vendored.\n",
    )
    .unwrap();
    let server = FakeServer::start(vec![
        Reply::sse(chat::tool_call(
            "c1",
            "task",
            json!({"description": "job", "prompt": "CHILD-A: go", "agent": "vendored"}),
        )),
        Reply::sse(chat::text("parent done")),
    ])
    .await;
    server.route("CHILD-A", vec![Reply::sse(chat::text("child done"))]);
    let out = run(env.agent(&server, &["-p", "--permission-mode", "auto", "delegate"])).await;
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert!(out.stdout.contains("parent done"), "{}", out.stdout);
    // `vendor` names no provider: the child calls the model `vendor/model-x` of the
    // parent's provider (it used to fail with "unknown provider `vendor`").
    let bodies = server.bodies();
    let child = bodies
        .iter()
        .find(|b| b["messages"].to_string().contains("CHILD-A"))
        .expect("the child called the model");
    assert_eq!(child["model"], "vendor/model-x");
}
