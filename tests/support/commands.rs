//! What the engine was asked to do, read back from its debug log: each front end maps its
//! input onto engine commands (`Agent::execute`), which log `engine command: {json}` and
//! `engine command done: KIND ok|err: …`. A test that drives a front end (RPC lines, ACP
//! requests, keys) runs it with `RUST_LOG=debug` and compares what was logged with the
//! command it expects.

use serde_json::Value;
use std::path::Path;

/// The log of the agent whose home is `home`.
pub fn log(home: &Path) -> String {
    std::fs::read_to_string(home.join("logs/agent.log")).unwrap_or_default()
}

/// The commands executed, in order, as JSON (`{"type": "new_session"}`).
pub fn logged_commands(home: &Path) -> Vec<Value> {
    log(home)
        .lines()
        .filter_map(|line| line.split_once("engine command: ").map(|(_, json)| json))
        .map(|json| serde_json::from_str(json.trim()).unwrap_or_else(|e| panic!("{e}: {json}")))
        .collect()
}

/// How each command ended, in order: `new_session ok`, `set_model err: …`.
pub fn logged_results(home: &Path) -> Vec<String> {
    log(home)
        .lines()
        .filter_map(|line| line.split_once("engine command done: "))
        .map(|(_, result)| result.trim().to_string())
        .collect()
}
