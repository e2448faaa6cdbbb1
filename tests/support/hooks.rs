//! Hooks for tests: a hook running a shell script for an event, the `Hooks` of an agent,
//! a scratch directory where scripts leave what they saw, and the hook events of a run.

use agent::extensions::hooks::{HookEvent, HookSource, HookSpec, Hooks};
use agent::protocol::event::AgentEvent;
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;
use tempfile::TempDir;

/// A hook running `script` (sh) for `event`, with a matcher and a timeout.
pub fn hook(event: HookEvent, matcher: Option<&str>, script: &str, timeout_secs: u64) -> HookSpec {
    HookSpec::new(
        event,
        matcher.map(str::to_string),
        script.to_string(),
        Duration::from_secs(timeout_secs),
        HookSource::Config("config.toml".into()),
    )
    .unwrap()
}

pub fn hooks(specs: Vec<HookSpec>, cwd: &Path) -> Arc<Hooks> {
    Arc::new(Hooks::new(specs, cwd))
}

/// Where the scripts write what they saw.
pub struct Scratch(pub TempDir);

impl Scratch {
    pub fn new() -> Scratch {
        Scratch(tempfile::tempdir().unwrap())
    }

    pub fn path(&self, name: &str) -> PathBuf {
        self.0.path().join(name)
    }

    /// `cat > FILE` for the hook's stdin.
    pub fn save_stdin(&self, name: &str) -> String {
        format!("cat > '{}'", self.path(name).display())
    }

    pub fn json(&self, name: &str) -> Value {
        serde_json::from_str(&std::fs::read_to_string(self.path(name)).unwrap()).unwrap()
    }

    /// Wait until `name` exists (hooks that run in the background).
    pub async fn wait_for(&self, name: &str) -> Value {
        let path = self.path(name);
        tokio::time::timeout(Duration::from_secs(120), async {
            while !path.exists() {
                tokio::time::sleep(Duration::from_millis(20)).await;
            }
        })
        .await
        .expect("the hook never wrote its file");
        // Written by `cat`: wait until it is complete JSON.
        tokio::time::timeout(Duration::from_secs(120), async {
            loop {
                if let Ok(value) =
                    serde_json::from_str::<Value>(&std::fs::read_to_string(&path).unwrap())
                {
                    return value;
                }
                tokio::time::sleep(Duration::from_millis(20)).await;
            }
        })
        .await
        .unwrap()
    }
}

/// The hook events of a run, compactly: `start:PreToolUse`, `end:Stop:block`,
/// `error:PostToolUse`.
pub fn hook_events(events: &[AgentEvent]) -> Vec<String> {
    events
        .iter()
        .filter_map(|e| match e {
            AgentEvent::HookStart {
                hook_event_name, ..
            } => Some(format!("start:{hook_event_name}")),
            AgentEvent::HookEnd {
                hook_event_name,
                decision,
                ..
            } => Some(format!("end:{hook_event_name}:{decision}")),
            AgentEvent::HookError {
                hook_event_name, ..
            } => Some(format!("error:{hook_event_name}")),
            _ => None,
        })
        .collect()
}

/// The messages of the `hook_error` events of a run, as `EVENT: message`.
pub fn hook_errors(events: &[AgentEvent]) -> Vec<String> {
    events
        .iter()
        .filter_map(|e| match e {
            AgentEvent::HookError {
                hook_event_name,
                message,
                ..
            } => Some(format!("{hook_event_name}: {message}")),
            _ => None,
        })
        .collect()
}
