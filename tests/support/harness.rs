//! An `Agent` wired to a `FakeServer`, in a temporary working directory, with helpers to
//! collect its events.

use super::server::{FakeServer, Reply};
use agent::agent::commands::models::Models;
use agent::agent::compaction::CompactionSettings;
use agent::agent::limits::{Limits, RetryPolicy};
use agent::agent::queue::QueueMode;
use agent::agent::{Agent, AgentConfig};
use agent::checkpoint::{Checkpoints, Settings as CheckpointSettings};
use agent::llm::client::Provider;
use agent::llm::model::ModelInfo;
use agent::llm::provider::{Api, ProviderSettings};
use agent::llm::request::ThinkingLevel;
use agent::llm::timeouts::Timeouts;
use agent::protocol::event::AgentEvent;
use agent::protocol::message::{Message, UserMessage};
use agent::tools::permission::PermissionMode;
use agent::tools::{ToolSettings, Tools};
use std::sync::Arc;
use std::time::Duration;
use tempfile::TempDir;
use tokio::sync::mpsc::UnboundedReceiver;

pub struct Harness {
    pub server: FakeServer,
    pub agent: Agent,
    pub events: UnboundedReceiver<AgentEvent>,
    pub dir: TempDir,
    /// Where the sessions and checkpoints of `start_in_session` live (beside the working
    /// directory, not in it).
    pub home: Option<TempDir>,
    /// The `state` events seen so far, as `previous>state`: kept out of the event lists the
    /// tests assert on, which are about the conversation.
    pub states: Vec<String>,
}

/// The provider's limits in tests that are not about them: far beyond the 20 s the tests
/// wait for an event, so a reply a test holds back (a gate) while a loaded machine runs the
/// rest is never cut off and retried behind the test's back; tests of timeouts set their own.
pub const PATIENT: Duration = Duration::from_secs(120);

pub fn provider_settings(base_url: &str) -> ProviderSettings {
    ProviderSettings {
        name: "test".into(),
        api: Api::OpenaiChat,
        base_url: base_url.into(),
        api_key: Some("sk-test-key".into()),
        api_key_env: None,
        api_key_command: None,
        headers: vec![],
        account: None,
    }
}

/// The default tool settings, with the agent binary as the commands' supervisor (a test
/// binary cannot be one).
pub fn tool_settings() -> ToolSettings {
    ToolSettings {
        supervisor: env!("CARGO_BIN_EXE_agent").into(),
        ..ToolSettings::default()
    }
}

pub fn config(base_url: &str, cwd: &std::path::Path) -> AgentConfig {
    AgentConfig {
        provider: Arc::new(
            Provider::new(provider_settings(base_url), Timeouts::all(PATIENT)).unwrap(),
        ),
        model: ModelInfo::unknown("test-model"),
        thinking: ThinkingLevel::Off,
        system_prompt: "You are a test.".into(),
        tools: Tools::from_names(&["read", "bash"]).unwrap(),
        ask_user: false,
        tool_source: None,
        tool_settings: tool_settings(),
        permission_mode: PermissionMode::Auto,
        permission_rules: Default::default(),
        can_ask: false,
        limits: Limits {
            max_turns: Some(20),
            max_tool_calls: Some(50),
            timeout: Some(Duration::from_secs(60)),
            ..Limits::default()
        },
        retry: RetryPolicy {
            max_retries: 3,
            initial_delay: Duration::from_millis(10),
            max_delay: Duration::from_millis(50),
            max_retry_delay: Duration::from_millis(200),
        },
        steering_mode: QueueMode::OneAtATime,
        follow_up_mode: QueueMode::OneAtATime,
        compaction: CompactionSettings::default(),
        cwd: cwd.to_path_buf(),
        history: Vec::new(),
        cold: None,
        session: None,
        checkpoints: None,
        agents: None,
        hooks: Default::default(),
        models: None,
        extensions: Default::default(),
        session_id: None,
        sessions_dir: None,
        profile: None,
    }
}

/// The base URL of `server` in `api`'s SDK convention: OpenAI-style with `/v1`, Anthropic's
/// without.
pub fn base_url(server: &FakeServer, api: Api) -> String {
    match api {
        // `agent proxy` serves `/v1/stream` below its origin.
        Api::Anthropic | Api::AgentProxy => server.origin.clone(),
        Api::OpenaiChat | Api::OpenaiResponses => server.v1(),
    }
}

/// A provider speaking `api` to `base_url`, with the given idle timeout.
pub fn provider(api: Api, base_url: &str, idle_timeout: Duration) -> Arc<Provider> {
    provider_with(api, base_url, Timeouts::all(idle_timeout))
}

/// A provider speaking `api` to `base_url`, with the given timeouts.
pub fn provider_with(api: Api, base_url: &str, timeouts: Timeouts) -> Arc<Provider> {
    let settings = ProviderSettings {
        api,
        ..provider_settings(base_url)
    };
    Arc::new(Provider::new(settings, timeouts).unwrap())
}

impl Harness {
    pub async fn start(replies: Vec<Reply>) -> Harness {
        Harness::start_with(replies, |_| {}).await
    }

    /// An agent whose provider speaks `api` to the scripted server.
    pub async fn start_api(
        api: Api,
        replies: Vec<Reply>,
        adjust: impl FnOnce(&mut AgentConfig),
    ) -> Harness {
        let server = FakeServer::start(replies).await;
        let dir = tempfile::tempdir().unwrap();
        let base = base_url(&server, api);
        let mut config = config(&base, dir.path());
        config.provider = provider(api, &base, PATIENT);
        adjust(&mut config);
        let agent = Agent::new(config);
        // As the headless front ends do: the older part of a long context is counted now.
        agent.count_earlier();
        let events = agent.subscribe();
        Harness {
            server,
            agent,
            events,
            dir,
            home: None,
            states: Vec::new(),
        }
    }

    pub async fn start_with(replies: Vec<Reply>, adjust: impl FnOnce(&mut AgentConfig)) -> Harness {
        let server = FakeServer::start(replies).await;
        let dir = tempfile::tempdir().unwrap();
        let mut config = config(&server.v1(), dir.path());
        adjust(&mut config);
        let agent = Agent::new(config);
        // As the headless front ends do: the older part of a long context is counted now.
        agent.count_earlier();
        let events = agent.subscribe();
        Harness {
            server,
            agent,
            events,
            dir,
            home: None,
            states: Vec::new(),
        }
    }

    /// An agent writing a new session (in `home/sessions`), with checkpoints (in
    /// `home/checkpoints`) and models chosen by name (`TestModels`): what the front ends'
    /// start-up builds.
    pub async fn start_in_session(
        replies: Vec<Reply>,
        adjust: impl FnOnce(&mut AgentConfig),
    ) -> Harness {
        let server = FakeServer::start(replies).await;
        let dir = tempfile::tempdir().unwrap();
        let home = tempfile::tempdir().unwrap();
        let sessions = home.path().join("sessions");
        let opened = agent::session::open(agent::session::Choice::New, &sessions, dir.path())
            .await
            .unwrap();
        let mut config = config(&server.v1(), dir.path());
        config.checkpoints = Some(Arc::new(agent::checkpoint::Checkpoints::open(
            &home.path().join("checkpoints"),
            dir.path(),
            &Default::default(),
            Vec::new(),
            &opened.id,
        )));
        config.session = opened.writer;
        config.session_id = Some(opened.id);
        config.sessions_dir = Some(sessions);
        config.models = Some(Arc::new(TestModels::new(&server.v1())));
        adjust(&mut config);
        let agent = Agent::new(config);
        // As the headless front ends do: the older part of a long context is counted now.
        agent.count_earlier();
        let events = agent.subscribe();
        Harness {
            server,
            agent,
            events,
            dir,
            home: Some(home),
            states: Vec::new(),
        }
    }

    pub fn prompt(&self, text: &str) {
        self.agent.prompt(UserMessage::text(text)).unwrap();
    }

    /// The next event that is not a `state` event (those go to `states`).
    pub async fn next_event(&mut self) -> AgentEvent {
        loop {
            let event = self.next_any_event().await;
            match state_step(&event) {
                Some(step) => self.states.push(step),
                None => return event,
            }
        }
    }

    /// The next event, `state` events included (a bound on a hang, generous for a loaded
    /// machine: not a figure).
    pub async fn next_any_event(&mut self) -> AgentEvent {
        tokio::time::timeout(Duration::from_secs(120), self.events.recv())
            .await
            .expect("timed out waiting for an event")
            .expect("event channel closed")
    }

    /// Read events (dropping all but `state` events) until the agent's state machine
    /// reaches `idle`.
    pub async fn until_idle_state(&mut self) {
        while self.states.last().is_none_or(|s| !s.ends_with(">idle")) {
            let event = self.next_any_event().await;
            if let Some(step) = state_step(&event) {
                self.states.push(step);
            }
        }
    }

    /// Events up to and including the first one matching `pred`.
    pub async fn until(&mut self, pred: impl Fn(&AgentEvent) -> bool) -> Vec<AgentEvent> {
        let mut seen = Vec::new();
        loop {
            let event = self.next_event().await;
            let done = pred(&event);
            seen.push(event);
            if done {
                return seen;
            }
        }
    }

    pub async fn until_end(&mut self) -> Vec<AgentEvent> {
        self.until(|e| matches!(e, AgentEvent::AgentEnd { .. }))
            .await
    }
}

/// The models of a configuration with two providers, `test` and `other`, both served by the
/// loopback server: `test-model` and `other-model` can be switched to.
pub struct TestModels {
    base_url: String,
}

impl TestModels {
    pub fn new(base_url: &str) -> TestModels {
        TestModels {
            base_url: base_url.to_string(),
        }
    }
}

impl Models for TestModels {
    fn providers(&self) -> Vec<String> {
        vec!["test".into(), "other".into()]
    }

    fn resolve(
        &self,
        provider: &str,
        model: &str,
    ) -> Result<(ProviderSettings, ModelInfo), String> {
        if !self.knows_provider(provider) {
            return Err(format!(
                "unknown provider `{provider}` (known: {})",
                self.providers().join(", ")
            ));
        }
        let settings = ProviderSettings {
            name: provider.to_string(),
            ..provider_settings(&self.base_url)
        };
        Ok((settings, ModelInfo::unknown(model)))
    }

    fn available(&self, _current: (&str, &str)) -> Vec<(ProviderSettings, ModelInfo)> {
        [("test", "test-model"), ("other", "other-model")]
            .into_iter()
            .filter_map(|(provider, model)| self.resolve(provider, model).ok())
            .collect()
    }

    fn connect(&self, provider: ProviderSettings) -> Result<Arc<Provider>, String> {
        Provider::new(provider, Timeouts::all(PATIENT))
            .map(Arc::new)
            .map_err(|e| e.to_string())
    }
}

/// A `state` event as `previous>state`.
pub fn state_step(event: &AgentEvent) -> Option<String> {
    match event {
        AgentEvent::State {
            state, previous, ..
        } => Some(format!("{}>{}", previous.as_str(), state.as_str())),
        _ => None,
    }
}

/// A compact name for each event, for asserting order: `message_end:toolResult`,
/// `tool_execution_end:bash:error`...
pub fn names(events: &[AgentEvent]) -> Vec<String> {
    events
        .iter()
        .filter(|e| {
            !matches!(
                e,
                AgentEvent::MessageUpdate { .. } | AgentEvent::ToolExecutionUpdate { .. }
            )
        })
        .map(name)
        .collect()
}

pub fn name(event: &AgentEvent) -> String {
    let role = |m: &Message| match m {
        Message::User(_) => "user",
        Message::Assistant(_) => "assistant",
        Message::ToolResult(_) => "toolResult",
    };
    match event {
        AgentEvent::MessageStart { message } => format!("message_start:{}", role(message)),
        AgentEvent::MessageEnd { message } => format!("message_end:{}", role(message)),
        AgentEvent::ToolExecutionStart { tool_name, .. } => {
            format!("tool_execution_start:{tool_name}")
        }
        AgentEvent::ToolExecutionEnd {
            tool_name,
            is_error,
            ..
        } => {
            format!(
                "tool_execution_end:{tool_name}{}",
                if *is_error { ":error" } else { "" }
            )
        }
        AgentEvent::AgentEnd { status, .. } => format!(
            "agent_end:{}",
            serde_json::to_value(status).unwrap().as_str().unwrap()
        ),
        other => serde_json::to_value(other).unwrap()["type"]
            .as_str()
            .unwrap()
            .to_string(),
    }
}

/// The text and error flag of tool call `id`'s result among `events`.
pub fn result_of(events: &[AgentEvent], id: &str) -> (String, bool) {
    events
        .iter()
        .find_map(|e| match e {
            AgentEvent::ToolExecutionEnd {
                tool_call_id,
                result,
                is_error,
                ..
            } if tool_call_id == id => Some((
                agent::protocol::message::join_text(&result.content),
                *is_error,
            )),
            _ => None,
        })
        .unwrap_or_else(|| panic!("no result for {id}"))
}

/// The `agent_end` of a list of events: (status, error).
pub fn end_of(events: &[AgentEvent]) -> (String, Option<String>) {
    match events.last() {
        Some(AgentEvent::AgentEnd { status, error, .. }) => (
            serde_json::to_value(status)
                .unwrap()
                .as_str()
                .unwrap()
                .to_string(),
            error.clone(),
        ),
        other => panic!("expected agent_end, got {other:?}"),
    }
}

/// The roles and texts of a request body's messages, e.g. `["system", "user:hi", "tool:..."]`.
pub fn transcript(body: &serde_json::Value) -> Vec<String> {
    body["messages"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| {
            let role = m["role"].as_str().unwrap();
            match role {
                "system" => "system".to_string(),
                "tool" => format!(
                    "tool:{}:{}",
                    m["tool_call_id"].as_str().unwrap(),
                    m["content"].as_str().unwrap()
                ),
                "assistant" => {
                    let calls: Vec<String> = m["tool_calls"]
                        .as_array()
                        .map(|c| {
                            c.iter()
                                .map(|c| c["function"]["name"].as_str().unwrap().to_string())
                                .collect()
                        })
                        .unwrap_or_default();
                    format!(
                        "assistant:{}:[{}]",
                        m["content"].as_str().unwrap_or(""),
                        calls.join(",")
                    )
                }
                _ => format!("{role}:{}", content_text(&m["content"])),
            }
        })
        .collect()
}

/// A message's content as text: a string as it is; parts (text and images) joined by
/// newlines, an image as `<image>`.
pub fn content_text(content: &serde_json::Value) -> String {
    if let Some(text) = content.as_str() {
        return text.to_string();
    }
    content
        .as_array()
        .map(|parts| {
            parts
                .iter()
                .map(|p| p["text"].as_str().unwrap_or("<image>").to_string())
                .collect::<Vec<_>>()
                .join("\n")
        })
        .unwrap_or_default()
}

/// Wait (up to 20 s) until `pid` is gone: a killed process may take a moment to be reaped.
pub async fn wait_until_dead(pid: i32) -> bool {
    for _ in 0..2000 {
        if !process_alive(pid) {
            return true;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    false
}

/// Wait (up to 20 s) for a process id the test's command wrote to `path`.
pub async fn wait_for_pid(path: &std::path::Path) -> i32 {
    for _ in 0..2000 {
        if let Ok(text) = std::fs::read_to_string(path)
            && let Ok(pid) = text.trim().parse()
        {
            return pid;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    panic!("no pid in {}", path.display());
}

/// Checkpoints for the harness's engine (session `s1`, their store under `root`), given
/// to `config` and returned so the test can look at them.
pub fn checkpoints_in(config: &mut AgentConfig, root: &std::path::Path) -> Arc<Checkpoints> {
    let checkpoints = Arc::new(Checkpoints::open(
        root,
        &config.cwd,
        &CheckpointSettings::default(),
        Vec::new(),
        "s1",
    ));
    config.checkpoints = Some(checkpoints.clone());
    checkpoints
}

/// A shell command that waits until the file `name` exists in its working directory, then
/// runs `then`: a tool call that stays busy exactly until the test says so (instead of a
/// `sleep` the test must race).
pub fn after_file(name: &str, then: &str) -> String {
    format!("until [ -e {name} ]; do sleep 0.01; done; {then}")
}

/// Whether a process exists and is not a zombie.
pub fn process_alive(pid: i32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Ok(stat) => stat
            .rsplit_once(')')
            .map(|(_, rest)| !rest.trim_start().starts_with('Z'))
            .unwrap_or(false),
        Err(_) => false,
    }
}
