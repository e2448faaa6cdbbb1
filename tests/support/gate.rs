//! `gate`: a read-only tool for tests of how calls are scheduled. A call `gate {"name"}`
//! blocks a thread (as a slow file read does) until the test opens the gate of that name,
//! and then answers with the text the test gave. Tests can wait until a call has started,
//! so "ran at the same time" is shown by events, not by timing.

use agent::tools::{Tool, ToolContext, ToolOutput, run_blocking};
use futures_util::future::BoxFuture;
use serde_json::{Value, json};
use std::collections::HashMap;
use std::sync::{Arc, Condvar, Mutex};
use std::time::Duration;

#[derive(Default)]
struct State {
    started: HashMap<String, usize>,
    opened: HashMap<String, String>,
}

/// The gates of one test, shared by the tool and the test.
#[derive(Clone, Default)]
pub struct Gates {
    state: Arc<(Mutex<State>, Condvar)>,
}

impl Gates {
    pub fn tool(&self) -> Arc<dyn Tool> {
        Arc::new(GateTool {
            gates: self.clone(),
        })
    }

    /// Let every call waiting at (or later reaching) `name` answer `text`.
    pub fn open(&self, name: &str, text: &str) {
        let (lock, changed) = &*self.state;
        lock.lock()
            .unwrap()
            .opened
            .insert(name.to_string(), text.to_string());
        changed.notify_all();
    }

    /// Wait (up to 120 s) until `count` calls have started at `name`; false if they did not.
    pub async fn started(&self, name: &str, count: usize) -> bool {
        let gates = self.clone();
        let name = name.to_string();
        tokio::task::spawn_blocking(move || {
            let (lock, changed) = &*gates.state;
            let state = lock.lock().unwrap();
            let (_state, timeout) = changed
                .wait_timeout_while(state, Duration::from_secs(120), |s| {
                    s.started.get(&name).copied().unwrap_or(0) < count
                })
                .unwrap();
            !timeout.timed_out()
        })
        .await
        .unwrap()
    }

    fn pass(&self, name: &str) -> String {
        let (lock, changed) = &*self.state;
        let mut state = lock.lock().unwrap();
        *state.started.entry(name.to_string()).or_default() += 1;
        changed.notify_all();
        let state = changed
            .wait_while(state, |s| !s.opened.contains_key(name))
            .unwrap();
        state.opened[name].clone()
    }
}

struct GateTool {
    gates: Gates,
}

impl Tool for GateTool {
    fn name(&self) -> &'static str {
        "gate"
    }

    fn description(&self) -> &'static str {
        "Waits until the test opens the named gate."
    }

    fn parameters(&self) -> Value {
        json!({
            "type": "object",
            "properties": {"name": {"type": "string"}},
            "required": ["name"],
            "additionalProperties": false
        })
    }

    fn read_only(&self) -> bool {
        true
    }

    fn execute(&self, args: Value, ctx: ToolContext) -> BoxFuture<'static, ToolOutput> {
        let gates = self.gates.clone();
        let name = args["name"].as_str().unwrap_or("").to_string();
        Box::pin(async move {
            run_blocking(&ctx.cancel, false, move || {
                ToolOutput::text(gates.pass(&name))
            })
            .await
        })
    }
}
