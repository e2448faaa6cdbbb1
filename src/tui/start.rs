//! The interface's start: the `App` over a prepared engine, with the conversation so far,
//! the start-up notices, the first question (hook trust, the session picker) and the first
//! prompt — everything before the event loop takes over.

use super::app::{App, TaskResult};
use super::run::Start;
use super::theme::Theme;
use crate::config::Settings;
use crate::startup::Prepared;
use std::sync::Arc;
use tokio::sync::mpsc;

/// Messages of a resumed session shown on start.
const REPLAY: usize = 200;

pub(super) async fn start_app(
    prepared: Prepared,
    settings: Settings,
    start: Start,
    width: u16,
    tasks: mpsc::UnboundedSender<TaskResult>,
) -> App {
    let agent = Arc::new(prepared.agent);
    let settings = Arc::new(settings);
    let mut app = App::new(
        agent.clone(),
        settings.clone(),
        Theme::from_env(),
        width,
        tasks.clone(),
    );
    app.mcp = prepared.mcp.clone();
    if !settings.checkpoints.enabled {
        app.views.git_baseline = Some(super::diff_view::git_baseline_now(&settings.cwd).await);
    }
    let (history, problem) = super::history::History::load(&settings.paths.home, &settings.cwd);
    app.input.composer.set_history(history);
    if let Some(problem) = problem {
        app.warning(&problem);
    }
    app.replay(REPLAY);
    if start.resumed
        && let Some(note) = app.resumed_note(&agent.snapshot().session.id)
    {
        app.notice(&note);
    }
    for notice in start.notices.iter().chain(&prepared.notices) {
        app.warning(notice);
    }
    start_notices(&mut app, &settings, tasks);
    match prepared.untrusted_hooks {
        // SessionStart runs once the user answered.
        Some(project) => app.ask_hook_trust(project),
        None => agent.session_start(agent.session_source()).await,
    }
    if start.pick_session {
        app.open_picker();
    }
    if let Some(prompt) = start.prompt.filter(|p| !p.trim().is_empty()) {
        app.submit(prompt);
    }
    app
}

/// Commands that shadow built-in ones, MCP servers that failed already, and the welcome
/// (with a look for local model servers) when no provider has a key.
fn start_notices(app: &mut App, settings: &Settings, tasks: mpsc::UnboundedSender<TaskResult>) {
    for clash in settings
        .extensions
        .shadowed(&super::commands::builtin_names())
    {
        app.warning(&clash);
    }
    // A server that failed before we subscribed is reported now; later ones as they change.
    for notice in app.mcp.take_notices() {
        app.warning(&notice);
    }
    if super::probe::missing_key(settings) {
        app.notice(&super::probe::welcome(settings));
        tokio::spawn(async move {
            let found = super::probe::local_servers().await;
            let _ = tasks.send(if found.is_empty() {
                TaskResult::Notice("No local model server answered (Ollama :11434, LM Studio :1234, llama.cpp :8080, vLLM :8000).".to_string())
            } else {
                TaskResult::Notice(found.join("\n"))
            });
        });
    }
}
