//! The engine's commands (`Agent::execute`, protocol::command): each one against the
//! loopback model server — its outcome, the events it sends, what it leaves in the session
//! file — and the one reading of `provider/model` over the real configuration.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // test code fails loudly

use crate::support;

use agent::agent::Agent;
use agent::agent::commands::Control;
use agent::agent::commands::models::{self, Models};
use agent::extensions::Extensions;
use agent::extensions::commands::CustomCommand;
use agent::extensions::sources::Origin;
use agent::protocol::command::{
    ApprovalDecision, Command, Delivery, InputPart, ModelRef, PermissionMode, Queue, QueueMode,
    RestoreMode, ResumeModel, RewindTarget, SessionRef, ThinkingLevel, UserInput,
};
use agent::protocol::event::{AgentEvent, ApprovalPreview, ToolResultPayload};
use agent::protocol::message::{Content, Message, join_text};
use agent::protocol::outcome::{CommandError, Outcome, SessionChange, SessionIdentity};
use agent::startup::models::SettingsModels;
use serde_json::{Value, json};
use std::sync::Arc;
use support::chat;
use support::env::env;
use support::harness::{Harness, after_file, end_of, transcript, wait_for_pid, wait_until_dead};
use support::server::{FakeServer, Gate, Reply};

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
    let out =
        support::process::run(env.agent(&server, &["-p", "--permission-mode", "auto", "delegate"]))
            .await;
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

// ---------------------------------------------------------------------------------------
// Every command through `Agent::execute`, against the loopback model server.

async fn exec(agent: &Agent, command: Command) -> Result<Outcome, CommandError> {
    agent.execute(command, Control::new()).await
}

fn prompt(text: &str, delivery: Delivery) -> Command {
    Command::Prompt {
        input: UserInput::text(text),
        delivery,
    }
}

/// A custom command `review` that runs with the model `other/special`.
fn review_command() -> Arc<Extensions> {
    Arc::new(Extensions {
        commands: vec![CustomCommand {
            name: "review".into(),
            description: None,
            argument_hint: None,
            model: Some("other/special".into()),
            body: "Review $ARGUMENTS carefully".into(),
            path: "/nowhere/review.md".into(),
            origin: Origin::Project,
        }],
        ..Extensions::default()
    })
}

/// The session file's entries (after its header), as JSON.
fn entries(path: &std::path::Path) -> Vec<Value> {
    std::fs::read_to_string(path)
        .unwrap()
        .lines()
        .skip(1)
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

fn session_changed(events: &[AgentEvent]) -> (SessionIdentity, SessionChange) {
    events
        .iter()
        .find_map(|e| match e {
            AgentEvent::SessionChanged { session, reason } => Some((session.clone(), *reason)),
            _ => None,
        })
        .expect("a session_changed event")
}

async fn until_session_changed(h: &mut Harness) -> (SessionIdentity, SessionChange) {
    session_changed(
        &h.until(|e| matches!(e, AgentEvent::SessionChanged { .. }))
            .await,
    )
}

async fn until_config_changed(h: &mut Harness) -> Value {
    let events = h
        .until(|e| matches!(e, AgentEvent::ConfigChanged { .. }))
        .await;
    serde_json::to_value(events.last().unwrap()).unwrap()
}

#[test]
fn executing_a_command_is_a_future_a_front_end_can_spawn() {
    fn spawnable<T: Send + 'static>(_: &T) {}
    let runtime = tokio::runtime::Runtime::new().unwrap();
    let _guard = runtime.enter();
    let agent: Arc<Agent> = Arc::new(Agent::new(support::harness::config(
        "http://127.0.0.1:9/v1",
        std::path::Path::new("/"),
    )));
    let future = async move { agent.execute(Command::Abort, Control::new()).await };
    spawnable(&future);
}

#[tokio::test]
async fn a_prompt_expands_its_command_and_runs_it_with_the_command_s_model_once() {
    let mut h = Harness::start_in_session(
        vec![
            Reply::sse(chat::text("reviewed")),
            Reply::sse(chat::text("plain")),
        ],
        |config| config.extensions = review_command(),
    )
    .await;
    let outcome = exec(&h.agent, prompt("/review src/lib.rs", Delivery::Start))
        .await
        .unwrap();
    assert_eq!(
        outcome,
        Outcome::Accepted {
            attached: vec![],
            skipped: vec![],
            command: Some("review".into()),
            started: true,
        }
    );
    assert_eq!(end_of(&h.until_end().await).0, "completed");
    h.agent.wait_for_idle().await;
    // For that run only: the next one has the model in use again.
    exec(&h.agent, prompt("hello", Delivery::FollowUp))
        .await
        .unwrap();
    h.until_end().await;
    let bodies = h.server.bodies();
    assert_eq!(bodies[0]["model"], "special");
    assert_eq!(
        transcript(&bodies[0]),
        ["system", "user:Review src/lib.rs carefully"]
    );
    assert_eq!(bodies[1]["model"], "test-model");
}

#[tokio::test]
async fn a_prompt_s_delivery_decides_between_starting_steering_and_refusing() {
    let gate = Gate::new();
    let mut h = Harness::start_in_session(
        vec![
            Reply::sse(chat::text("first")).after(&gate),
            Reply::sse(chat::text("second")),
        ],
        |_| {},
    )
    .await;
    let refused = exec(&h.agent, prompt("steer me", Delivery::SteerRunning)).await;
    assert_eq!(refused, Err(CommandError::Idle));
    exec(&h.agent, prompt("go", Delivery::Start)).await.unwrap();
    h.server.wait_for_requests(1).await;
    assert_eq!(
        exec(&h.agent, prompt("again", Delivery::Start)).await,
        Err(CommandError::Busy)
    );
    let queued = exec(&h.agent, prompt("later", Delivery::FollowUp))
        .await
        .unwrap();
    assert!(matches!(queued, Outcome::Accepted { started: false, .. }));
    let steered = exec(&h.agent, prompt("now", Delivery::SteerRunning))
        .await
        .unwrap();
    assert!(matches!(steered, Outcome::Accepted { started: false, .. }));
    // The most recent queued message comes back first: follow-ups before steering.
    let Outcome::Unqueued {
        message: Some(back),
    } = exec(&h.agent, Command::UnqueueLast).await.unwrap()
    else {
        panic!("a message to take back");
    };
    assert_eq!(back.plain_text(), "later");
    let Outcome::Aborted { queued } = exec(&h.agent, Command::Abort).await.unwrap() else {
        panic!("aborted");
    };
    assert_eq!(
        queued.iter().map(|m| m.plain_text()).collect::<Vec<_>>(),
        ["now"]
    );
    gate.open();
    assert_eq!(end_of(&h.until_end().await).0, "aborted");
}

#[tokio::test]
async fn an_unknown_command_is_refused_and_a_double_slash_is_sent_as_text() {
    let mut h = Harness::start_in_session(vec![Reply::sse(chat::text("ok"))], |config| {
        config.extensions = review_command();
    })
    .await;
    let refused = exec(&h.agent, prompt("/reveiw this file", Delivery::Start)).await;
    let Err(CommandError::UnknownCommand {
        name,
        known,
        message,
    }) = refused
    else {
        panic!("refused: {refused:?}");
    };
    assert_eq!(name, "reveiw");
    assert_eq!(known, ["/review"]);
    assert!(message.contains("begin it with //"), "{message}");
    assert!(!h.agent.is_running());
    exec(&h.agent, prompt("//etc is full", Delivery::Start))
        .await
        .unwrap();
    h.until_end().await;
    let bodies = h.server.bodies();
    assert_eq!(bodies.len(), 1, "the refused prompt reached the model");
    assert_eq!(transcript(&bodies[0]), ["system", "user:/etc is full"]);
}

#[tokio::test]
async fn a_prompt_attaches_what_it_names_and_says_what_it_skipped() {
    let mut h = Harness::start_in_session(vec![Reply::sse(chat::text("ok"))], |_| {}).await;
    std::fs::write(h.dir.path().join("notes.md"), "remember\n").unwrap();
    std::fs::write(h.dir.path().join("blob.bin"), [0u8, 1, 2]).unwrap();
    let input = UserInput {
        parts: vec![
            InputPart::Text {
                text: "see @notes.md and @blob.bin".into(),
            },
            InputPart::Content {
                content: Content::text("from the editor"),
            },
        ],
        timestamp: Some(7),
    };
    let outcome = exec(
        &h.agent,
        Command::Prompt {
            input,
            delivery: Delivery::Start,
        },
    )
    .await
    .unwrap();
    let Outcome::Accepted { skipped, .. } = outcome else {
        panic!("{outcome:?}")
    };
    assert_eq!(skipped.len(), 1);
    assert_eq!(skipped[0].path, "blob.bin");
    assert_eq!(skipped[0].reason, "a binary file");
    let events = h.until_end().await;
    let AgentEvent::AgentEnd { messages, .. } = events.last().unwrap() else {
        unreachable!()
    };
    let Message::User(user) = messages[0].as_ref() else {
        panic!("a user message first");
    };
    assert_eq!(user.timestamp, 7);
    let text = user.plain_text();
    assert!(text.contains("remember"), "{text}");
    assert!(text.ends_with("from the editor"), "{text}");
}

#[tokio::test]
async fn expand_command_shows_the_prompt_and_its_model_without_sending_it() {
    let h = Harness::start_in_session(vec![], |config| config.extensions = review_command()).await;
    let outcome = exec(
        &h.agent,
        Command::ExpandCommand {
            text: "/review a.rs".into(),
        },
    )
    .await
    .unwrap();
    assert_eq!(
        outcome,
        Outcome::Expanded {
            text: "Review a.rs carefully".into(),
            command: Some("review".into()),
            model: Some("other/special".into()),
        }
    );
    assert!(h.server.requests().is_empty());
}

#[tokio::test]
async fn set_model_switches_announces_and_notes_it_in_the_session() {
    let mut h = Harness::start_in_session(
        vec![Reply::sse(chat::text("one")), Reply::sse(chat::text("two"))],
        |_| {},
    )
    .await;
    h.prompt("first");
    h.until_end().await;
    h.agent.wait_for_idle().await;
    let outcome = exec(
        &h.agent,
        Command::SetModel {
            model: ModelRef::Text("other/vendor/model-x".into()),
        },
    )
    .await
    .unwrap();
    let Outcome::Model { model, thinking } = outcome else {
        panic!("{outcome:?}")
    };
    assert_eq!(
        (model.provider.as_str(), model.id.as_str()),
        ("other", "vendor/model-x")
    );
    assert_eq!(model.api, "openai-chat");
    assert_eq!(thinking, ThinkingLevel::Off);
    let changed = until_config_changed(&mut h).await;
    assert_eq!(
        changed,
        json!({"type": "config_changed", "provider": "other", "model": "vendor/model-x",
               "thinkingLevel": "off", "permissionMode": "auto"})
    );
    let path = h.agent.snapshot().session.path.unwrap();
    let last = entries(&path).pop().unwrap();
    assert_eq!(last["type"], "model_change");
    assert_eq!(last["provider"], "other");
    assert_eq!(last["model"], "vendor/model-x");
    h.prompt("second");
    h.until_end().await;
    assert_eq!(h.server.bodies()[1]["model"], "vendor/model-x");

    let unknown = exec(
        &h.agent,
        Command::SetModel {
            model: ModelRef::Parts {
                provider: "nope".into(),
                model: "m".into(),
            },
        },
    )
    .await;
    assert_eq!(
        unknown,
        Err(CommandError::Model(
            "unknown provider `nope` (known: test, other)".into()
        ))
    );
}

#[tokio::test]
async fn cycle_model_goes_to_the_next_available_one() {
    let h = Harness::start_in_session(vec![], |_| {}).await;
    let available: Vec<String> = h
        .agent
        .available_models()
        .into_iter()
        .map(|m| format!("{}/{}", m.provider, m.id))
        .collect();
    assert_eq!(available, ["test/test-model", "other/other-model"]);
    let Outcome::Model { model, .. } = exec(&h.agent, Command::CycleModel).await.unwrap() else {
        panic!()
    };
    assert_eq!(
        (model.provider.as_str(), model.id.as_str()),
        ("other", "other-model")
    );
    let Outcome::Model { model, .. } = exec(&h.agent, Command::CycleModel).await.unwrap() else {
        panic!()
    };
    assert_eq!(
        (model.provider.as_str(), model.id.as_str()),
        ("test", "test-model")
    );
    // Without models to choose from, there is nothing to switch to.
    let bare = Harness::start(vec![]).await;
    assert!(bare.agent.available_models().is_empty());
    assert!(matches!(
        exec(&bare.agent, Command::CycleModel).await,
        Err(CommandError::Model(_))
    ));
}

#[tokio::test]
async fn thinking_permission_and_queue_modes_are_set_and_announced() {
    let mut h = Harness::start_in_session(vec![Reply::sse(chat::text("ok"))], |_| {}).await;
    h.prompt("hi");
    h.until_end().await;
    h.agent.wait_for_idle().await;
    let outcome = exec(
        &h.agent,
        Command::SetThinking {
            level: ThinkingLevel::High,
        },
    )
    .await
    .unwrap();
    assert_eq!(
        outcome,
        Outcome::Thinking {
            level: ThinkingLevel::High
        }
    );
    assert_eq!(until_config_changed(&mut h).await["thinkingLevel"], "high");
    let path = h.agent.snapshot().session.path.unwrap();
    let last = entries(&path).pop().unwrap();
    assert_eq!(last["type"], "thinking_change");
    assert_eq!(last["thinking"], "high");

    let outcome = exec(
        &h.agent,
        Command::SetPermissionMode {
            mode: PermissionMode::Plan,
        },
    )
    .await
    .unwrap();
    assert_eq!(
        outcome,
        Outcome::PermissionMode {
            mode: PermissionMode::Plan
        }
    );
    assert_eq!(until_config_changed(&mut h).await["permissionMode"], "plan");
    assert_eq!(h.agent.snapshot().permission_mode, PermissionMode::Plan);

    exec(
        &h.agent,
        Command::SetQueueMode {
            queue: Queue::FollowUp,
            mode: QueueMode::All,
        },
    )
    .await
    .unwrap();
    let state = h.agent.snapshot();
    assert_eq!(
        (state.steering_mode, state.follow_up_mode),
        (QueueMode::OneAtATime, QueueMode::All)
    );
}

#[tokio::test]
async fn compact_answers_the_tokens_before_and_after() {
    let mut h = Harness::start_in_session(
        vec![
            Reply::sse(chat::text(&"long answer ".repeat(400))),
            Reply::sse(chat::text("short summary")),
        ],
        |config| config.compaction.keep_recent_tokens = 10,
    )
    .await;
    h.prompt("tell me everything");
    h.until_end().await;
    h.agent.wait_for_idle().await;
    let outcome = exec(&h.agent, Command::Compact { instructions: None }).await;
    let Ok(Outcome::Compacted {
        tokens_before,
        tokens_after,
    }) = outcome
    else {
        panic!("{outcome:?}")
    };
    assert!(tokens_before > 0 && tokens_after > 0);
    // The summary was asked for, and the context is the summary and what was kept.
    assert_eq!(h.server.requests().len(), 2);
    let Message::User(summary) = h.agent.messages()[0].as_ref().clone() else {
        panic!("the summary comes first");
    };
    assert!(summary.plain_text().contains("short summary"));
}

#[tokio::test]
async fn a_new_session_is_reported_by_the_outcome_the_snapshot_and_the_event() {
    let mut h = Harness::start_in_session(vec![Reply::sse(chat::text("ok"))], |_| {}).await;
    h.prompt("in the first session");
    h.until_end().await;
    h.agent.wait_for_idle().await;
    let first = h.agent.snapshot().session;
    let first_path = first.path.clone().unwrap();
    assert!(first.head.is_some());
    let Outcome::Session { session, notices } = exec(&h.agent, Command::NewSession).await.unwrap()
    else {
        panic!()
    };
    assert!(notices.is_empty());
    assert_ne!(session.id, first.id);
    let path = session.path.clone().unwrap();
    assert_ne!(path, first_path);
    assert!(
        path.file_name()
            .unwrap()
            .to_string_lossy()
            .contains(&session.id)
    );
    assert_eq!(h.agent.snapshot().session, session);
    assert_eq!(
        until_session_changed(&mut h).await,
        (session, SessionChange::New)
    );
    assert!(h.agent.messages().is_empty());
    // The model in use is noted in the new file with its first message.
    assert_eq!(
        h.home
            .as_ref()
            .unwrap()
            .path()
            .join("sessions")
            .read_dir()
            .unwrap()
            .count(),
        1,
        "one directory for the working directory"
    );
}

#[tokio::test]
async fn a_session_not_kept_on_disk_has_one_id_which_its_checkpoints_use_too() {
    let home = tempfile::tempdir().unwrap();
    let root = home.path().join("checkpoints");
    let checkpoints = std::sync::Mutex::new(None);
    let mut h = Harness::start_with(vec![], |config| {
        let store = Arc::new(agent::checkpoint::Checkpoints::open(
            &root,
            &config.cwd,
            &Default::default(),
            Vec::new(),
            "first-id",
        ));
        *checkpoints.lock().unwrap() = Some(store.clone());
        config.checkpoints = Some(store);
        config.session_id = Some("first-id".into());
    })
    .await;
    let checkpoints = checkpoints.lock().unwrap().take().unwrap();
    assert_eq!(h.agent.snapshot().session.id, "first-id");
    let Outcome::Session { session, .. } = exec(&h.agent, Command::NewSession).await.unwrap()
    else {
        panic!()
    };
    assert_eq!(session.path, None);
    assert_ne!(session.id, "first-id");
    // Before, the checkpoints followed an id of their own that nobody reported.
    assert_eq!(checkpoints.session_id(), session.id);
    assert_eq!(h.agent.snapshot().session.id, session.id);
    assert_eq!(until_session_changed(&mut h).await.0, session);
}

#[tokio::test]
async fn resume_continues_a_session_by_id_or_path_with_the_model_asked_for() {
    let mut h = Harness::start_in_session(
        vec![
            Reply::sse(chat::text("from the first")),
            Reply::sse(chat::text("from the second")),
        ],
        |_| {},
    )
    .await;
    h.prompt("first conversation");
    h.until_end().await;
    h.agent.wait_for_idle().await;
    let first = h.agent.snapshot().session;
    exec(&h.agent, Command::NewSession).await.unwrap();
    // The second session runs with another model.
    exec(
        &h.agent,
        Command::SetModel {
            model: ModelRef::Text("other/other-model".into()),
        },
    )
    .await
    .unwrap();
    h.prompt("second conversation");
    h.until_end().await;
    h.agent.wait_for_idle().await;
    let second = h.agent.snapshot().session;

    // By id prefix, keeping the model in use: it is noted in the resumed file.
    let prefix: String = first.id.chars().take(20).collect();
    let Outcome::Session { session, .. } = exec(
        &h.agent,
        Command::Resume {
            target: SessionRef::IdPrefix { id: prefix },
            model: ResumeModel::KeepCurrent,
        },
    )
    .await
    .unwrap() else {
        panic!()
    };
    assert_eq!(session.id, first.id);
    assert_eq!(session.path, first.path);
    let Message::User(first_message) = h.agent.messages()[0].as_ref().clone() else {
        panic!("the resumed conversation starts with its user message");
    };
    assert_eq!(first_message.plain_text(), "first conversation");
    assert_eq!(h.agent.snapshot().model, "other-model");
    let last = entries(first.path.as_ref().unwrap()).pop().unwrap();
    assert_eq!(
        (last["type"].as_str(), last["model"].as_str()),
        (Some("model_change"), Some("other-model"))
    );
    let seen = h
        .until(|e| {
            matches!(
                e,
                AgentEvent::SessionChanged {
                    reason: SessionChange::Resume,
                    ..
                }
            )
        })
        .await;
    assert_eq!(session_changed(&seen[seen.len() - 1..]).0, session);

    // By path, adopting the model the session last used.
    exec(
        &h.agent,
        Command::SetModel {
            model: ModelRef::Text("test/test-model".into()),
        },
    )
    .await
    .unwrap();
    let Outcome::Session { session, .. } = exec(
        &h.agent,
        Command::Resume {
            target: SessionRef::Path {
                path: second.path.clone().unwrap(),
            },
            model: ResumeModel::AdoptSession,
        },
    )
    .await
    .unwrap() else {
        panic!()
    };
    assert_eq!(session.id, second.id);
    let state = h.agent.snapshot();
    assert_eq!(
        (state.provider.as_str(), state.model.as_str()),
        ("other", "other-model")
    );
    let changed = h
        .until(|e| matches!(e, AgentEvent::ConfigChanged { provider, .. } if provider == "other"))
        .await;
    assert!(!changed.is_empty());
}

/// A session with two prompts answered; the entry ids of its messages.
async fn two_exchanges() -> (Harness, Vec<String>) {
    let mut h = Harness::start_in_session(
        vec![Reply::sse(chat::text("one")), Reply::sse(chat::text("two"))],
        |_| {},
    )
    .await;
    for text in ["first question", "second question"] {
        h.prompt(text);
        h.until_end().await;
        h.agent.wait_for_idle().await;
    }
    let ids = h
        .agent
        .message_entries()
        .into_iter()
        .map(|(id, _)| id)
        .collect();
    (h, ids)
}

#[tokio::test]
async fn fork_continues_in_a_new_session_and_says_so() {
    let (mut h, ids) = two_exchanges().await;
    let before = h.agent.snapshot().session;
    let Outcome::Forked { session, text } = exec(
        &h.agent,
        Command::Fork {
            entry_id: ids[2].clone(),
        },
    )
    .await
    .unwrap() else {
        panic!()
    };
    assert_eq!(text.as_deref(), Some("second question"));
    assert_ne!(session.id, before.id);
    assert_eq!(session.head.as_deref(), Some(ids[1].as_str()));
    assert_eq!(h.agent.snapshot().session, session);
    assert_eq!(h.agent.messages().len(), 2);
    assert_eq!(
        until_session_changed(&mut h).await,
        (session, SessionChange::Fork)
    );
}

#[tokio::test]
async fn rewind_undo_and_branch_switches_move_the_head_and_say_so() {
    let (mut h, ids) = two_exchanges().await;
    let Outcome::Rewound { summary, text } = exec(
        &h.agent,
        Command::Rewind {
            target: RewindTarget::Entry {
                entry_id: ids[2].clone(),
            },
            restore: RestoreMode::Conversation,
            force: false,
        },
    )
    .await
    .unwrap() else {
        panic!()
    };
    assert_eq!((summary, text.as_deref()), (None, Some("second question")));
    let (session, reason) = until_session_changed(&mut h).await;
    assert_eq!(reason, SessionChange::Rewind);
    assert_eq!(session.head.as_deref(), Some(ids[1].as_str()));
    assert_eq!(h.agent.snapshot().session.head, session.head);

    exec(&h.agent, Command::UndoRewind { force: false })
        .await
        .unwrap();
    let (session, reason) = until_session_changed(&mut h).await;
    assert_eq!(reason, SessionChange::UndoRewind);
    assert_eq!(session.head.as_deref(), Some(ids[3].as_str()));
    assert_eq!(h.agent.messages().len(), 4);

    let Outcome::BranchSwitched {
        session,
        files: None,
    } = exec(
        &h.agent,
        Command::SwitchBranch {
            entry_id: ids[1].clone(),
            restore_files: false,
            force: false,
        },
    )
    .await
    .unwrap()
    else {
        panic!()
    };
    assert_eq!(session.head.as_deref(), Some(ids[1].as_str()));
    assert_eq!(
        until_session_changed(&mut h).await,
        (session, SessionChange::SwitchBranch)
    );
    assert_eq!(h.agent.messages().len(), 2);
    let unknown = exec(
        &h.agent,
        Command::Rewind {
            target: RewindTarget::Checkpoint {
                checkpoint_id: "nope".into(),
            },
            restore: RestoreMode::Both,
            force: false,
        },
    )
    .await;
    assert!(
        matches!(unknown, Err(CommandError::Checkpoint(_))),
        "{unknown:?}"
    );
}

#[tokio::test]
async fn run_shell_runs_between_checkpoints_reports_progress_and_stops_when_cancelled() {
    let mut h = Harness::start_in_session(vec![], |_| {}).await;
    let seen = Arc::new(std::sync::Mutex::new(Vec::new()));
    let progress = {
        let seen = seen.clone();
        Arc::new(move |partial: ToolResultPayload| {
            seen.lock().unwrap().push(join_text(&partial.content));
        })
    };
    // It goes on once its output so far has been reported.
    let running = h.agent.execute(
        Command::RunShell {
            command: format!(
                "echo made > made.txt; echo hello; {}",
                after_file("go", "exit 3")
            ),
        },
        Control {
            progress: Some(progress),
            ..Control::new()
        },
    );
    let releaser = async {
        let reported = async {
            while !seen.lock().unwrap().iter().any(|s| s.contains("hello")) {
                tokio::time::sleep(std::time::Duration::from_millis(10)).await;
            }
        };
        tokio::time::timeout(std::time::Duration::from_secs(20), reported)
            .await
            .expect("its output is reported while it runs");
        std::fs::write(h.dir.path().join("go"), "").unwrap();
    };
    let (outcome, ()) = tokio::join!(running, releaser);
    let outcome = outcome.unwrap();
    let Outcome::Shell(result) = outcome else {
        panic!("{outcome:?}")
    };
    assert!(result.output.starts_with("hello\n"), "{}", result.output);
    assert_eq!(result.exit_code, Some(3));
    assert!(result.is_error && !result.cancelled && !result.truncated);
    assert!(h.dir.path().join("made.txt").exists());
    // A checkpoint was taken before it ran.
    h.until(|e| matches!(e, AgentEvent::Checkpoint { .. }))
        .await;

    // Cancelled while it runs: its process is killed.
    let control = Control::new();
    let cancel = control.cancel.clone();
    let pid_file = h.dir.path().join("pid");
    let running = h.agent.execute(
        Command::RunShell {
            command: format!("echo $$ > pid; {}", after_file("never", "echo too late")),
        },
        control,
    );
    let stopper = async {
        let pid = wait_for_pid(&pid_file).await;
        cancel.cancel();
        pid
    };
    let (outcome, pid) = tokio::join!(running, stopper);
    let Ok(Outcome::Shell(result)) = outcome else {
        panic!("{outcome:?}")
    };
    assert!(result.cancelled, "{result:?}");
    assert!(!result.output.contains("too late"));
    assert!(wait_until_dead(pid).await);
}

#[tokio::test]
async fn sub_agent_commands_refuse_empty_and_unknown_targets() {
    let h = Harness::start_in_session(vec![], |_| {}).await;
    assert_eq!(
        exec(
            &h.agent,
            Command::SteerAgent {
                agent_id: "a1".into(),
                text: "  ".into(),
            },
        )
        .await,
        Err(CommandError::EmptyMessage("a1".into()))
    );
    let unknown = exec(
        &h.agent,
        Command::SteerAgent {
            agent_id: "a9".into(),
            text: "go on".into(),
        },
    )
    .await;
    assert!(
        matches!(unknown, Err(CommandError::NoSuchAgent { .. })),
        "{unknown:?}"
    );
    let unknown = exec(
        &h.agent,
        Command::AbortAgent {
            agent_id: "a9".into(),
        },
    )
    .await;
    assert_eq!(
        unknown.unwrap_err().to_string(),
        "no sub-agent `a9` (get_agents lists them)"
    );
    let unanswered = exec(
        &h.agent,
        Command::Approve {
            tool_call_id: "c9".into(),
            agent_id: None,
            decision: ApprovalDecision::Allow,
        },
    )
    .await;
    assert_eq!(
        unanswered.unwrap_err().to_string(),
        "no tool call `c9` is waiting for approval"
    );
}

// ---------------------------------------------------------------------------------------
// Approval requests carry what the call would do.

/// A tool from outside (as an MCP server's would be): it changes things, and the engine
/// knows nothing of what.
struct Deploy;

impl agent::tools::Tool for Deploy {
    fn name(&self) -> &str {
        "mcp__ops__deploy"
    }
    fn description(&self) -> &str {
        "Deploy"
    }
    fn parameters(&self) -> Value {
        json!({"type": "object"})
    }
    fn read_only(&self) -> bool {
        false
    }
    fn execute(
        &self,
        _args: Value,
        _ctx: agent::tools::ToolContext,
    ) -> futures_util::future::BoxFuture<'static, agent::tools::ToolOutput> {
        Box::pin(async { agent::tools::ToolOutput::text("deployed") })
    }
}

/// Each approval request of a run (denied in turn): (tool call id, preview, cwd).
async fn previews(
    h: &mut Harness,
    count: usize,
) -> Vec<(String, ApprovalPreview, std::path::PathBuf)> {
    let mut seen = Vec::new();
    while seen.len() < count {
        let events = h
            .until(|e| matches!(e, AgentEvent::ToolApprovalRequest { agent_id: None, .. }))
            .await;
        let Some(AgentEvent::ToolApprovalRequest {
            tool_call_id,
            preview,
            cwd,
            ..
        }) = events.last()
        else {
            unreachable!()
        };
        seen.push((tool_call_id.clone(), preview.clone(), cwd.clone()));
        exec(
            &h.agent,
            Command::Approve {
                tool_call_id: tool_call_id.clone(),
                agent_id: None,
                decision: ApprovalDecision::Deny(None),
            },
        )
        .await
        .unwrap();
    }
    seen
}

#[tokio::test]
async fn approval_requests_carry_the_diff_the_command_or_nothing_more() {
    let secret = "sk-preview-secret-7f3a9c2e41d8";
    agent::secrets::register(secret);
    let calls = vec![
        (
            "w1",
            "write",
            json!({"path": "new.txt", "content": "hello\n"}),
        ),
        (
            "w2",
            "write",
            json!({"path": "config.txt", "content": format!("a=2\ntoken={secret}\n")}),
        ),
        (
            "e1",
            "edit",
            json!({"path": "config.txt", "edits": [{"oldText": "a=1", "newText": "a=3"}]}),
        ),
        (
            "e2",
            "edit",
            json!({"path": "config.txt", "edits": [{"oldText": "nope", "newText": "x"}]}),
        ),
        (
            "w3",
            "write",
            json!({"path": "blob.bin", "content": "text"}),
        ),
        (
            "b1",
            "bash",
            json!({"command": "git push --force\necho done"}),
        ),
        ("d1", "mcp__ops__deploy", json!({"target": "prod"})),
    ];
    let mut h = Harness::start_with(
        vec![
            Reply::sse(chat::tool_calls(&calls)),
            Reply::sse(chat::text("all denied")),
        ],
        |config| {
            config.permission_mode = PermissionMode::Ask;
            config.can_ask = true;
            config.tools = agent::tools::Tools::from_names(&["read", "write", "edit", "bash"])
                .unwrap()
                .with_tool(Arc::new(Deploy))
                .unwrap();
        },
    )
    .await;
    let dir = h.dir.path().to_path_buf();
    std::fs::write(dir.join("config.txt"), "a=1\n").unwrap();
    std::fs::write(dir.join("blob.bin"), [0u8, 159, 146, 150]).unwrap();
    h.prompt("change things");
    let seen = previews(&mut h, calls.len()).await;
    let ids: Vec<&str> = seen.iter().map(|(id, ..)| id.as_str()).collect();
    assert_eq!(ids, ["w1", "w2", "e1", "e2", "w3", "b1", "d1"]);
    assert!(seen.iter().all(|(_, _, cwd)| *cwd == dir));
    let preview = |id: &str| seen.iter().find(|(i, ..)| i == id).unwrap().1.clone();

    let ApprovalPreview::Diff {
        path,
        file,
        diff,
        new_file,
    } = preview("w1")
    else {
        panic!("{:?}", preview("w1"))
    };
    assert_eq!(
        (path.as_str(), file, new_file),
        ("new.txt", dir.join("new.txt"), true)
    );
    assert!(diff.contains("+hello"), "{diff}");

    let ApprovalPreview::Diff { diff, new_file, .. } = preview("w2") else {
        panic!("{:?}", preview("w2"))
    };
    assert!(!new_file);
    assert!(diff.contains("-a=1\n+a=2\n"), "{diff}");
    assert!(
        !diff.contains(secret),
        "a secret reached the approval: {diff}"
    );

    let ApprovalPreview::Diff { diff, .. } = preview("e1") else {
        panic!("{:?}", preview("e1"))
    };
    assert!(diff.contains("-a=1\n+a=3\n"), "{diff}");

    let ApprovalPreview::Unavailable { path, why, .. } = preview("e2") else {
        panic!("{:?}", preview("e2"))
    };
    assert_eq!(path, "config.txt");
    assert!(why.starts_with("The edit will fail"), "{why}");

    let ApprovalPreview::Unavailable { why, .. } = preview("w3") else {
        panic!("{:?}", preview("w3"))
    };
    assert!(why.contains("cannot be compared"), "{why}");

    assert_eq!(
        preview("b1"),
        ApprovalPreview::Command {
            command: "git push --force\necho done".into(),
            unsandboxed_allowed: true,
        }
    );
    assert_eq!(preview("d1"), ApprovalPreview::None);
    // Nothing was changed while the previews were made.
    assert_eq!(
        std::fs::read_to_string(dir.join("config.txt")).unwrap(),
        "a=1\n"
    );
    assert!(!dir.join("new.txt").exists());
    assert_eq!(end_of(&h.until_end().await).0, "completed");
}

#[tokio::test]
async fn a_sub_agent_s_request_is_relayed_with_its_preview() {
    let mut h = Harness::start_with(
        vec![
            Reply::sse(chat::tool_call(
                "c1",
                "task",
                json!({"description": "job", "prompt": "CHILD-A: write"}),
            )),
            Reply::sse(chat::text("parent done")),
        ],
        |config| {
            config.agents = Some(Default::default());
            config.permission_mode = PermissionMode::Ask;
            config.can_ask = true;
            config.tools = agent::tools::Tools::from_names(&["read", "write"]).unwrap();
        },
    )
    .await;
    h.server.route(
        "CHILD-A",
        vec![
            Reply::sse(chat::tool_call(
                "w1",
                "write",
                json!({"path": "child.txt", "content": "from the child\n"}),
            )),
            Reply::sse(chat::text("child done")),
        ],
    );
    h.prompt("delegate");
    let events = h
        .until(|e| {
            matches!(
                e,
                AgentEvent::ToolApprovalRequest {
                    agent_id: Some(_),
                    ..
                }
            )
        })
        .await;
    let Some(AgentEvent::ToolApprovalRequest {
        tool_call_id,
        agent_id,
        preview,
        cwd,
        ..
    }) = events.last()
    else {
        unreachable!()
    };
    assert_eq!(cwd, h.dir.path());
    let ApprovalPreview::Diff { path, diff, .. } = preview else {
        panic!("{preview:?}")
    };
    assert_eq!(path, "child.txt");
    assert!(diff.contains("+from the child"), "{diff}");
    exec(
        &h.agent,
        Command::Approve {
            tool_call_id: tool_call_id.clone(),
            agent_id: agent_id.clone(),
            decision: ApprovalDecision::Allow,
        },
    )
    .await
    .unwrap();
    assert_eq!(end_of(&h.until_end().await).0, "completed");
    assert_eq!(
        std::fs::read_to_string(h.dir.path().join("child.txt")).unwrap(),
        "from the child\n"
    );
}

// ---------------------------------------------------------------------------------------
// Through a front end: what RPC clients see of the engine.

#[tokio::test]
async fn rpc_approval_requests_carry_the_preview_and_the_cwd() {
    let env = env();
    std::fs::write(env.cwd.path().join("notes.txt"), "old\n").unwrap();
    let server = FakeServer::start(vec![
        Reply::sse(chat::tool_calls(&[
            (
                "w1",
                "write",
                json!({"path": "notes.txt", "content": "new\n"}),
            ),
            ("b1", "bash", json!({"command": "rm -rf build"})),
        ])),
        Reply::sse(chat::text("stopped")),
    ])
    .await;
    let mut rpc = support::process::Rpc::spawn(env.agent(
        &server,
        &[
            "--mode",
            "rpc",
            "--permission-mode",
            "ask",
            "--sandbox",
            "off",
        ],
    ));
    rpc.send(json!({"type": "prompt", "message": "tidy up"}))
        .await;
    let mut requests = Vec::new();
    for _ in 0..2 {
        let lines = rpc.until(|l| l["type"] == "tool_approval_request").await;
        let request = lines.last().unwrap().clone();
        rpc.send(
            json!({"type": "approve", "toolCallId": request["toolCallId"], "decision": "deny"}),
        )
        .await;
        requests.push(request);
    }
    rpc.until(|l| l["type"] == "agent_end").await;
    let cwd = std::fs::canonicalize(env.cwd.path()).unwrap();
    for request in &requests {
        let shown = std::fs::canonicalize(request["cwd"].as_str().unwrap()).unwrap();
        assert_eq!(shown, cwd, "{request}");
    }
    let write = &requests[0]["preview"];
    assert_eq!(write["kind"], "diff", "{write}");
    assert_eq!(write["path"], "notes.txt");
    assert_eq!(write["newFile"], false);
    assert!(
        write["diff"].as_str().unwrap().contains("-old\n+new\n"),
        "{write}"
    );
    assert_eq!(
        requests[1]["preview"],
        json!({"kind": "command", "command": "rm -rf build", "unsandboxedAllowed": true})
    );
    assert_eq!(
        std::fs::read_to_string(env.cwd.path().join("notes.txt")).unwrap(),
        "old\n"
    );
    assert_eq!(rpc.exit_code().await, 0);
}

#[tokio::test]
async fn rpc_new_session_runs_the_engine_command_and_reports_the_new_identity() {
    let env = env();
    let server = FakeServer::start(vec![Reply::sse(chat::text("hi"))]).await;
    let mut cmd = env.agent(&server, &["--mode", "rpc"]);
    cmd.env("RUST_LOG", "debug");
    let mut rpc = support::process::Rpc::spawn(cmd);
    rpc.send(json!({"id": "p", "type": "prompt", "message": "hello"}))
        .await;
    rpc.until(|l| l["type"] == "agent_end").await;
    rpc.send(json!({"id": "n", "type": "new_session"})).await;
    let lines = rpc
        .until(|l| l["type"] == "response" && l["id"] == "n")
        .await;
    let answer = lines.last().unwrap();
    assert_eq!(answer["success"], true, "{answer}");
    let changed = lines
        .iter()
        .find(|l| l["type"] == "session_changed")
        .expect("a session_changed event before the answer");
    assert_eq!(changed["reason"], "new");
    assert_eq!(changed["session"]["id"], answer["data"]["sessionId"]);
    assert_eq!(changed["session"]["path"], answer["data"]["sessionFile"]);
    assert_eq!(changed["session"]["head"], Value::Null);
    rpc.send(json!({"id": "s", "type": "get_state"})).await;
    let state = rpc.response("s").await;
    assert_eq!(state["data"]["sessionId"], answer["data"]["sessionId"]);
    assert_eq!(rpc.exit_code().await, 0);
    // Every line is an engine command (`get_state` is a read).
    assert_eq!(
        support::commands::logged_commands(env.home.path()),
        [
            json!({"type": "prompt", "input": {"parts": [{"kind": "text", "text": "hello"}]}, "delivery": "start"}),
            json!({"type": "new_session"})
        ]
    );
    assert_eq!(
        support::commands::logged_results(env.home.path()),
        ["prompt ok", "new_session ok"]
    );
}
