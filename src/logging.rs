//! Logging with `tracing` to a file under the agent's log directory — never to the
//! terminal, which belongs to the TUI or to the output of headless modes. Keys and auth
//! headers are never logged (the provider module redacts them).

use std::fs::OpenOptions;
use std::path::Path;
use std::sync::Mutex;

/// Start logging to `dir/agent.log` at `level` (a level or `tracing` filter). Logging is a
/// convenience: if the file cannot be opened the agent runs without it.
pub fn init(dir: &Path, level: &str) {
    if std::fs::create_dir_all(dir).is_err() {
        return;
    }
    let Ok(file) = OpenOptions::new()
        .create(true)
        .append(true)
        .open(dir.join("agent.log"))
    else {
        return;
    };
    let filter = tracing_subscriber::EnvFilter::try_new(level)
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("info"));
    let _ = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(Mutex::new(file))
        .with_ansi(false)
        .with_target(false)
        .try_init();
}
