//! The interface's start: the `App` over a prepared engine, with the conversation so far,
//! the start-up notices, the first question (hook trust, the session picker) and the first
//! prompt — everything before the event loop takes over.

use super::app::{App, TaskResult};
use super::run::Start;
use super::theme::Chosen;
use crate::config::Settings;
use crate::live::link::EngineLink;
use crate::live::remote::RemoteEngine;
use crate::startup::Prepared;
use std::sync::Arc;
use tokio::sync::mpsc;

/// Messages of a resumed session shown on start (and what `agent attach` is replayed).
pub const REPLAY: usize = 200;

/// …as far as they fill this many rows (a dozen screens; a whole message more at most):
/// laying out and drawing 200 long messages was a third of a long session's first frame
/// (issue 32).
pub const REPLAY_ROWS: usize = 500;

// What is parsed of a long session at start holds what is replayed of it.
const _: () = assert!(REPLAY <= crate::session::cold::PARSED_MESSAGES);

pub(super) async fn start_app(
    prepared: Prepared,
    settings: Settings,
    mut start: Start,
    theme: Chosen,
    width: u16,
    tasks: mpsc::UnboundedSender<TaskResult>,
) -> App {
    let agent = EngineLink::Local(Arc::new(prepared.agent));
    let settings = Arc::new(settings);
    let mut app = App::new(
        agent.clone(),
        settings.clone(),
        theme.theme,
        width,
        tasks.clone(),
    );
    app.mcp = prepared.mcp.clone();
    if !settings.checkpoints.enabled {
        app.views.git_baseline = Some(super::diff_view::git_baseline_now(&settings.cwd).await);
    }
    let (history, problem) = super::history::History::load(&settings.paths.home, &settings.cwd);
    app.input.composer.set_history(history);
    app.input
        .composer
        .set_vim(settings.tui_editor_mode == crate::config::tui::EditorMode::Vim);
    if let Some(problem) = problem {
        app.warning(&problem);
    }
    app.replay(REPLAY, REPLAY_ROWS);
    // The interface holds the history and hears the events (subscribed by its caller):
    // what waited for that starts now, before any run of its own (SessionStart hooks, the
    // prompt from the command line) can begin.
    if let Some(ready) = start.when_ready.take() {
        ready();
    }
    if start.resumed
        && let Some(note) = app.resumed_note(&agent.snapshot().session.id)
    {
        app.notice(&note);
    }
    for notice in start
        .notices
        .iter()
        .chain(&prepared.notices)
        .chain(&theme.problems)
    {
        app.warning(notice);
    }
    start_notices(&mut app, &settings, tasks);
    super::status_command::attach(&mut app);
    match prepared.untrusted_hooks {
        // SessionStart runs once the user answered.
        Some(project) => app.ask_hook_trust(project),
        None => agent.session_start().await,
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
    app.report_keymap();
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
        crate::tasks::spawn(async move {
            let found = super::probe::local_servers().await;
            let _ = tasks.send(if found.is_empty() {
                TaskResult::Notice("No local model server answered (Ollama :11434, LM Studio :1234, llama.cpp :8080, vLLM :8000).".to_string())
            } else {
                TaskResult::Notice(found.join("\n"))
            });
        });
    }
}

/// `agent attach`: the `App` over a live session, showing the messages it replayed.
pub(super) fn start_attached(
    remote: RemoteEngine,
    settings: Settings,
    theme: Chosen,
    width: u16,
    tasks: mpsc::UnboundedSender<TaskResult>,
) -> App {
    let id = remote.snapshot().session.id;
    let earlier = match remote.omitted() {
        0 => String::new(),
        n => format!(" ({n} earlier messages not shown)"),
    };
    let settings = Arc::new(settings);
    let engine = EngineLink::Remote(Arc::new(remote));
    let mut app = App::new(engine, settings.clone(), theme.theme, width, tasks);
    for problem in &theme.problems {
        app.warning(problem);
    }
    super::status_command::attach(&mut app);
    let (history, problem) = super::history::History::load(&settings.paths.home, &settings.cwd);
    app.input.composer.set_history(history);
    app.input
        .composer
        .set_vim(settings.tui_editor_mode == crate::config::tui::EditorMode::Vim);
    if let Some(problem) = problem {
        app.warning(&problem);
    }
    app.replay(REPLAY, REPLAY_ROWS);
    app.report_keymap();
    app.notice(&format!(
        "Attached to live session {id}{earlier}: its own process runs it; leaving (ctrl+d) stops nothing."
    ));
    app
}

/// What leaving a live session prints: why it ended, or how to come back.
pub(super) async fn leaving_note(remote: &RemoteEngine) -> String {
    match remote.ended() {
        Some(why) => format!("The live session ended: {why}"),
        None => {
            remote.detach().await;
            let id = remote.snapshot().session.id;
            format!("Detached from live session {id}; it goes on (agent attach {id})")
        }
    }
}
