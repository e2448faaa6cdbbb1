//! A live session driven from this process as if its engine were here (what the interface
//! of `agent attach` talks to): `RemoteEngine` carries engine commands over the session's
//! socket (`execute`), turns the lines it streams back into `AgentEvent`s for its
//! subscribers, and keeps a mirror of what a front end reads between events — the
//! conversation (the replayed last messages, then every completed one), whether a run is
//! going, the model, modes and usage (`get_state`, then the events that change them).
//! Lines of the live protocol's own (`approval_resolved`) are not engine events: a front
//! end sees an answered approval by its tool call starting or ending.

use super::client::{ClientError, LiveClient, LiveEvent, LiveEvents};
use crate::agent::Snapshot;
use crate::protocol::command::Command;
use crate::protocol::event::{AgentEvent, RunState};
use crate::protocol::message::Message;
use crate::protocol::outcome::{CommandError, Outcome, SessionIdentity};
use crate::protocol::usage::UsageReport;
use serde_json::{Value, json};
use std::path::Path;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};
use tokio::sync::mpsc;

/// A live session's engine, reached over its socket.
pub struct RemoteEngine {
    client: Arc<LiveClient>,
    shared: Arc<Mutex<Shared>>,
    /// How many messages a conversation replaced (another session, a compaction) is
    /// re-read with: the same as the first replay.
    last: Option<usize>,
    /// The profiles the owner's configuration has (`get_state.profiles`).
    profiles: Vec<String>,
}

struct Shared {
    mirror: Mirror,
    subscribers: Vec<mpsc::UnboundedSender<AgentEvent>>,
    /// Why the attachment ended, once it has, and whether the session said so (`false`:
    /// the connection dropped without a word).
    ended: Option<(String, bool)>,
}

/// What the front end reads between events.
struct Mirror {
    /// Each with its session entry id ("" when not kept on disk).
    messages: Vec<(String, Arc<Message>)>,
    /// Messages of the conversation before `messages` that were not replayed.
    omitted: usize,
    snapshot: Snapshot,
    /// The last `usage_update`'s report (its total is `snapshot.usage`).
    usage: UsageReport,
    /// When `snapshot.state` began (its elapsed time goes on here).
    state_since: Instant,
}

impl RemoteEngine {
    /// Connect to the session served at `socket` and attach, replaying only its `last`
    /// messages (all when `None`): a screen needs the end of a long conversation only,
    /// and replaying all of it is what made attaching slow (docs/benchmarks.md). With the
    /// engine comes the stream of its events from the replay on: the turn in progress
    /// (opened by an `agent_start` when a run is going), then every event.
    pub async fn attach(
        socket: &Path,
        last: Option<usize>,
    ) -> Result<(RemoteEngine, mpsc::UnboundedReceiver<AgentEvent>), ClientError> {
        let (client, events) = LiveClient::connect(socket).await?;
        let client = Arc::new(client);
        let state = client.request(json!({"type": "get_state"})).await?;
        let mut snapshot = snapshot_of(&state);
        let profiles = serde_json::from_value(state["profiles"].clone()).unwrap_or_default();
        // The events stream from the answer on: the pump starts once the replay is in.
        let mut answer = client.attach(None, last).await?;
        let messages = messages_of(answer["messages"].take());
        snapshot.is_running = answer["isStreaming"] == true;
        let omitted = answer["omitted"].as_u64().map_or(0, usize_of);
        let (first, events_out) = mpsc::unbounded_channel();
        if snapshot.is_running {
            // The replay of a turn in progress starts after its `agent_start`.
            let _ = first.send(AgentEvent::AgentStart);
        }
        let shared = Arc::new(Mutex::new(Shared {
            mirror: Mirror {
                messages,
                omitted,
                state_since: Instant::now() - snapshot.state_elapsed,
                usage: UsageReport {
                    total: snapshot.usage.clone(),
                    ..UsageReport::default()
                },
                snapshot,
            },
            subscribers: vec![first],
            ended: None,
        }));
        let engine = RemoteEngine {
            client: client.clone(),
            shared: shared.clone(),
            last,
            profiles,
        };
        crate::tasks::spawn(pump(events, client, shared, last));
        Ok((engine, events_out))
    }

    fn lock(&self) -> MutexGuard<'_, Shared> {
        lock(&self.shared)
    }

    /// Every event from now on (the stream ends when the attachment does: `ended` says why).
    pub fn subscribe(&self) -> mpsc::UnboundedReceiver<AgentEvent> {
        let (tx, rx) = mpsc::unbounded_channel();
        let mut shared = self.lock();
        if shared.ended.is_none() {
            shared.subscribers.push(tx);
        }
        rx
    }

    /// Carry out `command` in the session; a refusal comes back as its text (the session
    /// words it).
    pub async fn execute(&self, command: Command) -> Result<Outcome, CommandError> {
        let data = self.client.execute(&command).await.map_err(refusal)?;
        serde_json::from_value(data).map_err(|e| {
            CommandError::Failed(format!(
                "the live session answered what this agent cannot read: {e}"
            ))
        })
    }

    /// The state as the session last told it.
    /// The profiles `set_profile` takes in the owning process.
    pub fn profiles(&self) -> Vec<String> {
        self.profiles.clone()
    }

    pub fn snapshot(&self) -> Snapshot {
        let shared = self.lock();
        let mut snapshot = shared.mirror.snapshot.clone();
        snapshot.state_elapsed = shared.mirror.state_since.elapsed();
        snapshot
    }

    /// The conversation's messages this client holds (the last ones replayed, then every
    /// completed one); `omitted` says how many came before them.
    pub fn messages(&self) -> Vec<Arc<Message>> {
        let shared = self.lock();
        shared
            .mirror
            .messages
            .iter()
            .map(|(_, m)| m.clone())
            .collect()
    }

    /// `messages` with their session entry ids ("" for one not kept on disk).
    pub fn message_entries(&self) -> Vec<(String, Arc<Message>)> {
        self.lock().mirror.messages.clone()
    }

    /// The session's usage as its last `usage_update` told it.
    pub fn usage_report(&self) -> UsageReport {
        self.lock().mirror.usage.clone()
    }

    /// Messages of the conversation before `messages` that were not replayed.
    pub fn omitted(&self) -> usize {
        self.lock().mirror.omitted
    }

    pub fn is_running(&self) -> bool {
        self.lock().mirror.snapshot.is_running
    }

    /// Why the attachment ended (the session's own words, or that its process vanished);
    /// `None` while it goes on.
    pub fn ended(&self) -> Option<String> {
        self.lock().ended.as_ref().map(|(why, _)| why.clone())
    }

    /// Whether the attachment ended with the session's own word (its owner exited) rather
    /// than a connection dropped without one.
    pub fn ended_in_words(&self) -> bool {
        self.lock().ended.as_ref().is_some_and(|(_, said)| *said)
    }

    /// How many messages a replay holds at most (`None`: all).
    pub fn replay_limit(&self) -> Option<usize> {
        self.last
    }

    /// Send any line of the protocol (`abort_bash`); its answer is not waited for beyond
    /// arriving.
    pub async fn request(&self, line: Value) {
        let _ = self.client.request(line).await;
    }

    /// Stop the stream and leave the session as it is (a run goes on without us).
    pub async fn detach(&self) {
        let _ = self.client.detach().await;
    }
}

fn lock(shared: &Mutex<Shared>) -> MutexGuard<'_, Shared> {
    shared
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
}

fn usize_of(n: u64) -> usize {
    usize::try_from(n).unwrap_or(usize::MAX)
}

fn refusal(error: ClientError) -> CommandError {
    match error {
        ClientError::Refused(text) => CommandError::Failed(text),
        other => CommandError::Failed(other.to_string()),
    }
}

/// The messages of a replay (`[{...message, entryId}]`); one this agent cannot read is
/// left out rather than ending the attachment.
fn messages_of(value: Value) -> Vec<(String, Arc<Message>)> {
    let Value::Array(messages) = value else {
        return Vec::new();
    };
    messages
        .into_iter()
        .filter_map(|mut m| {
            let entry = entry_id(&mut m);
            let message = serde_json::from_value::<Message>(m).ok()?;
            Some((entry, Arc::new(message)))
        })
        .collect()
}

/// Take the `entryId` a line or a replayed message carries ("" when none).
fn entry_id(value: &mut Value) -> String {
    value
        .as_object_mut()
        .and_then(|fields| fields.remove("entryId"))
        .and_then(|id| id.as_str().map(str::to_string))
        .unwrap_or_default()
}

/// A `Snapshot` from `get_state`'s answer (docs/protocol.md §4); what it lacks keeps its
/// default.
fn snapshot_of(state: &Value) -> Snapshot {
    let text = |name: &str| state[name].as_str().unwrap_or_default().to_string();
    fn parsed<T: serde::de::DeserializeOwned>(state: &Value, name: &str) -> Option<T> {
        serde_json::from_value(state[name].clone()).ok()
    }
    Snapshot {
        provider: text("provider"),
        model: text("model"),
        thinking: parsed(state, "thinkingLevel").unwrap_or_default(),
        is_running: state["isStreaming"] == true,
        message_count: state["messageCount"].as_u64().map_or(0, usize_of),
        pending_message_count: state["pendingMessageCount"].as_u64().map_or(0, usize_of),
        steering_mode: parsed(state, "steeringMode").unwrap_or_default(),
        follow_up_mode: parsed(state, "followUpMode").unwrap_or_default(),
        permission_mode: parsed(state, "permissionMode").unwrap_or_default(),
        usage: parsed(state, "usage").unwrap_or_default(),
        context_tokens: state["contextTokens"].as_u64().unwrap_or(0),
        context_window: state["contextWindow"].as_u64().unwrap_or(0),
        session_error: state["sessionError"].as_str().map(str::to_string),
        state: parsed(state, "state").unwrap_or(RunState::Idle),
        state_elapsed: Duration::from_millis(state["stateElapsedMs"].as_u64().unwrap_or(0)),
        session: SessionIdentity {
            id: text("sessionId"),
            path: parsed(state, "sessionFile"),
            head: None,
        },
        auto_compaction: state["autoCompactionEnabled"] == true,
        auto_retry: state["autoRetryEnabled"] == true,
        session_name: state["sessionName"].as_str().map(str::to_string),
        goal: state["goal"].as_str().map(str::to_string),
        profile: state["profile"].as_str().map(str::to_string),
    }
}

impl Mirror {
    /// Fold in `event` (a top-level one: a sub-agent's events change nothing here), which
    /// came with session entry `entry` ("" when none).
    fn note(&mut self, event: &AgentEvent, entry: String) {
        let snapshot = &mut self.snapshot;
        match event {
            AgentEvent::AgentStart => snapshot.is_running = true,
            AgentEvent::AgentEnd { .. } => snapshot.is_running = false,
            AgentEvent::MessageEnd { message } => {
                self.messages.push((entry, message.clone()));
                snapshot.message_count += 1;
            }
            AgentEvent::QueueUpdate {
                steering,
                follow_up,
            } => snapshot.pending_message_count = steering.len() + follow_up.len(),
            AgentEvent::State {
                state, elapsed_ms, ..
            } => {
                snapshot.state = *state;
                self.state_since = Instant::now() - Duration::from_millis(*elapsed_ms);
            }
            AgentEvent::ConfigChanged {
                provider,
                model,
                thinking_level,
                permission_mode,
                profile,
            } => {
                snapshot.profile = profile.clone();
                snapshot.provider = provider.clone();
                snapshot.model = model.clone();
                snapshot.thinking = *thinking_level;
                snapshot.permission_mode = *permission_mode;
            }
            AgentEvent::SessionChanged { session, .. } => snapshot.session = session.clone(),
            AgentEvent::GoalUpdate { goal, .. } => snapshot.goal = goal.clone(),
            AgentEvent::UsageUpdate { usage } => {
                snapshot.usage = usage.total.clone();
                self.usage = usage.clone();
            }
            _ => {}
        }
    }

    /// The conversation replaced (another session, a branch, a compaction): `messages` is
    /// its end, `total` how many it has.
    fn replace(&mut self, messages: Vec<(String, Arc<Message>)>, total: usize) {
        self.omitted = total.saturating_sub(messages.len());
        self.snapshot.message_count = total;
        self.messages = messages;
    }
}

/// Whether `event` replaces the conversation (the mirror re-reads it before passing it on).
fn replaces_conversation(event: &AgentEvent) -> bool {
    matches!(
        event,
        AgentEvent::SessionChanged { .. } | AgentEvent::AutoCompactionEnd { aborted: false, .. }
    )
}

/// Fold the session's lines into the mirror and pass them on as events, in order, until
/// the attachment ends.
async fn pump(
    mut events: LiveEvents,
    client: Arc<LiveClient>,
    shared: Arc<Mutex<Shared>>,
    last: Option<usize>,
) {
    let ended = loop {
        match events.next().await {
            Some(LiveEvent::Event(mut value)) => {
                let entry = entry_id(&mut value);
                // `approval_resolved` and any line this agent does not know.
                let Ok(event) = serde_json::from_value::<AgentEvent>(value) else {
                    continue;
                };
                if replaces_conversation(&event)
                    && let Ok(mut data) = client.request(json!({"type": "get_messages"})).await
                {
                    let all = messages_of(data["messages"].take());
                    let total = all.len();
                    let keep = last.map_or(0, |last| total.saturating_sub(last));
                    lock(&shared)
                        .mirror
                        .replace(all.into_iter().skip(keep).collect(), total);
                }
                let mut shared = lock(&shared);
                shared.mirror.note(&event, entry);
                shared
                    .subscribers
                    .retain(|subscriber| subscriber.send(event.clone()).is_ok());
            }
            Some(LiveEvent::Ended(reason)) => break (reason, true),
            Some(LiveEvent::Closed) | None => {
                break (
                    "the session's process went away without a word".to_string(),
                    false,
                );
            }
        }
    };
    let mut shared = lock(&shared);
    shared.ended = Some(ended);
    shared.mirror.snapshot.is_running = false;
    // Closing the streams tells every subscriber.
    shared.subscribers.clear();
}
