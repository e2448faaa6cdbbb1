//! The interface's event loop: terminal input, engine events and background task results
//! come in; frames go out — only when something changed, at most one per frame interval,
//! inside synchronized output. While idle nothing ticks: no timers, no redraws.

use super::app::{App, TaskResult};
use super::keys::KeyOutcome;
use super::screen::Screen;
use super::terminal::{TerminalModes, install_panic_hook};
use super::theme::Theme;
use crate::config::Settings;
use crate::startup::Prepared;
use crossterm::event::{Event, EventStream};
use crossterm::terminal::{
    BeginSynchronizedUpdate, EndSynchronizedUpdate, EnterAlternateScreen, LeaveAlternateScreen,
};
use futures_util::StreamExt;
use ratatui::backend::CrosstermBackend;
use ratatui::layout::Size;
use std::io::{BufWriter, IsTerminal, Stdout, Write};
use std::sync::Arc;
use std::time::{Duration, Instant};
use tokio::signal::unix::{SignalKind, signal};
use tokio::sync::mpsc;

/// At most ~60 frames a second.
const FRAME: Duration = Duration::from_millis(16);
/// How often the spinner moves while working.
const TICK: Duration = Duration::from_millis(80);
/// Messages of a resumed session shown on start.
const REPLAY: usize = 200;

type Backend = CrosstermBackend<BufWriter<Stdout>>;

/// How the interface starts.
pub struct Start {
    pub prompt: Option<String>,
    /// `agent -r` without an id: open the session picker.
    pub pick_session: bool,
    /// `-c` or `-r ID`: an earlier session goes on (say which).
    pub resumed: bool,
    pub notices: Vec<String>,
}

pub async fn run(prepared: Prepared, settings: Settings, start: Start) -> u8 {
    if !std::io::stdin().is_terminal() || !std::io::stdout().is_terminal() {
        eprintln!(
            "agent: the interactive interface needs a terminal; use -p or --mode json in scripts"
        );
        return 2;
    }
    install_panic_hook(settings.paths.log_dir.join("agent.log"));
    let mut modes = match TerminalModes::enter() {
        Ok(modes) => modes,
        Err(e) => {
            eprintln!("agent: cannot set up the terminal: {e}");
            return 1;
        }
    };
    let top = crossterm::cursor::position()
        .map(|(_, row)| row)
        .unwrap_or(0);
    let backend = CrosstermBackend::new(BufWriter::with_capacity(64 * 1024, std::io::stdout()));
    let mut screen = match Screen::new(backend, top) {
        Ok(screen) => screen,
        Err(e) => {
            modes.leave();
            eprintln!("agent: cannot read the terminal size: {e}");
            return 1;
        }
    };
    let (code, resume_hint) = event_loop(&mut screen, &mut modes, prepared, settings, start).await;
    let _ = screen.leave();
    modes.leave();
    if let Some(hint) = resume_hint {
        println!("{hint}");
    }
    code
}

/// The next change of the language servers (`false` once they are gone); never without them.
async fn lsp_changed(changes: &mut Option<tokio::sync::watch::Receiver<u64>>) -> bool {
    match changes {
        Some(changes) => changes.changed().await.is_ok(),
        None => std::future::pending().await,
    }
}

async fn event_loop(
    screen: &mut Screen<Backend>,
    modes: &mut TerminalModes,
    prepared: Prepared,
    settings: Settings,
    start: Start,
) -> (u8, Option<String>) {
    let agent = Arc::new(prepared.agent);
    let mut agent_events = agent.subscribe();
    let (tasks, mut task_results) = mpsc::unbounded_channel();
    let settings = Arc::new(settings);
    let mut app = App::new(
        agent.clone(),
        settings.clone(),
        Theme::from_env(),
        screen.size().width,
        tasks.clone(),
    );
    app.mcp = prepared.mcp.clone();
    if !settings.checkpoints.enabled {
        app.git_baseline = Some(super::diff_view::git_baseline_now(&settings.cwd).await);
    }
    let mut mcp_changes = app.mcp.subscribe();
    // Diagnostics a server publishes on its own (a check that finished) redraw the status
    // line.
    let mut lsp_changes = settings
        .tool_settings
        .lsp
        .as_ref()
        .map(|lsp| lsp.subscribe());
    let mut mcp_open = true;
    let mut mcp_launched = false;
    let (history, problem) = super::history::History::load(&settings.paths.home, &settings.cwd);
    app.composer.set_history(history);
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
    if super::probe::missing_key(&settings) {
        app.notice(&super::probe::welcome(&settings));
        tokio::spawn(async move {
            let found = super::probe::local_servers().await;
            let _ = tasks.send(if found.is_empty() {
                TaskResult::Notice("No local model server answered (Ollama :11434, LM Studio :1234, llama.cpp :8080, vLLM :8000).".to_string())
            } else {
                TaskResult::Notice(found.join("\n"))
            });
        });
    }
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

    let mut input = EventStream::new();
    let mut terminate = signal(SignalKind::terminate()).ok();
    let mut hangup = signal(SignalKind::hangup()).ok();
    let mut last_frame = Instant::now() - FRAME;
    let mut resized_in_view = false;
    loop {
        let mut outcome = Outcome::Nothing;
        let frame_at = app.dirty.then(|| (last_frame + FRAME).max(Instant::now()));
        let tick_at = app.is_animated().then(|| Instant::now() + TICK);
        tokio::select! {
            event = input.next() => match event {
                Some(Ok(event)) => {
                    outcome = on_terminal_event(&mut app, event);
                    // Everything already typed (a paste without bracketed paste) is taken
                    // before the next frame: one frame for a thousand keys.
                    while matches!(outcome, Outcome::Nothing | Outcome::Redraw)
                        && let Some(Ok(event)) = ready_event(&mut input).await
                    {
                        outcome = outcome.max(on_terminal_event(&mut app, event));
                    }
                    if matches!(outcome, Outcome::Nothing | Outcome::Redraw) {
                        kick_stalled_input();
                    }
                }
                // The terminal is gone.
                Some(Err(_)) | None => app.exit = Some(0),
            },
            event = agent_events.recv() => {
                if let Some(event) = event {
                    app.on_agent_event(event);
                    while let Ok(event) = agent_events.try_recv() {
                        app.on_agent_event(event);
                    }
                }
            }
            result = task_results.recv() => {
                if let Some(result) = result {
                    app.on_task(result);
                }
            }
            changed = mcp_changes.changed(), if mcp_open => {
                if changed.is_ok() {
                    // A server came up or went down: the status line says so, and a server
                    // that could not start is reported once.
                    for notice in app.mcp.take_notices() {
                        app.warning(&notice);
                    }
                    app.dirty = true;
                } else {
                    mcp_open = false;
                }
            }
            changed = lsp_changed(&mut lsp_changes) => {
                if changed {
                    app.dirty = true;
                } else {
                    lsp_changes = None;
                }
            }
            _ = wait(&mut terminate) => app.exit = Some(143),
            _ = wait(&mut hangup) => app.exit = Some(129),
            _ = sleep_until(frame_at), if frame_at.is_some() => {
                if draw(&mut app, screen).is_err() {
                    app.exit = Some(1);
                }
                last_frame = Instant::now();
                // MCP servers start once the prompt is on the screen: starting three server
                // processes competes with the first frame for the CPU (a run that begins
                // sooner starts them itself).
                if !mcp_launched {
                    mcp_launched = true;
                    tracing::info!("interface ready: first frame drawn");
                    app.mcp.launch();
                }
            }
            _ = sleep_until(tick_at), if tick_at.is_some() => app.dirty = true,
        }
        match outcome {
            Outcome::Nothing => {}
            Outcome::Redraw => last_frame = Instant::now() - FRAME,
            Outcome::Resized if screen.in_alternate() => {
                // The normal screen's live area is placed again when the view closes.
                resized_in_view = true;
                if let Ok((width, height)) = crossterm::terminal::size() {
                    screen.resize_alternate(Size::new(width, height));
                    app.resize(width);
                }
                last_frame = Instant::now() - FRAME;
            }
            Outcome::Resized => {
                drop(input);
                let row = cursor_row();
                input = EventStream::new();
                tracing::debug!(?row, "terminal resized; the cursor is now on this row");
                if let Ok((width, height)) = crossterm::terminal::size() {
                    let _ = screen.resize(Size::new(width, height), row);
                    app.resize(width);
                }
                last_frame = Instant::now() - FRAME;
            }
            Outcome::Suspend => {
                if screen.in_alternate() {
                    app.view = None;
                    app.agent_focus = None;
                    let _ = leave_view(screen);
                }
                drop(input);
                suspend(&mut app, screen, modes);
                input = EventStream::new();
                last_frame = Instant::now() - FRAME;
            }
        }
        if app.view.is_none() && screen.in_alternate() {
            let _ = leave_view(screen);
            if std::mem::take(&mut resized_in_view) {
                drop(input);
                let row = cursor_row();
                input = EventStream::new();
                if let Ok((width, height)) = crossterm::terminal::size() {
                    let _ = screen.resize(Size::new(width, height), row);
                }
            }
            app.dirty = true;
            last_frame = Instant::now() - FRAME;
        }
        if let Some((_, at)) = &app.hint
            && at.elapsed() > Duration::from_secs(4)
        {
            app.hint = None;
            app.dirty = true;
        }
        if let Some(code) = app.exit {
            app.shell_cancel.cancel();
            if screen.in_alternate() {
                app.view = None;
                app.agent_focus = None;
                let _ = leave_view(screen);
            }
            // Whatever is pending still reaches the scrollback.
            let _ = draw(&mut app, screen);
            agent.abort();
            let _ = tokio::time::timeout(Duration::from_secs(2), agent.wait_for_idle()).await;
            agent.session_end("exit").await;
            return (code, super::resume_hint::for_agent(&agent, &settings));
        }
    }
}

async fn wait(signal: &mut Option<tokio::signal::unix::Signal>) {
    match signal {
        Some(signal) => {
            signal.recv().await;
        }
        None => std::future::pending().await,
    }
}

async fn sleep_until(at: Option<Instant>) {
    match at {
        Some(at) => tokio::time::sleep_until(at.into()).await,
        None => std::future::pending().await,
    }
}

/// What the loop does after a terminal event (later variants win when several events
/// are taken at once).
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Outcome {
    Nothing,
    /// Redraw at once: what the user does shows without waiting for the next frame slot
    /// (the cap is for streamed output).
    Redraw,
    Resized,
    Suspend,
}

/// The next terminal event if one is ready now. It polls with this task's own waker: a
/// throwaway one (`now_or_never`) would be the one crossterm's reader thread wakes when
/// input comes, and the loop would then wait for the key after next.
async fn ready_event(input: &mut EventStream) -> Option<std::io::Result<Event>> {
    std::future::poll_fn(|cx| match input.poll_next_unpin(cx) {
        std::task::Poll::Ready(event) => std::task::Poll::Ready(event),
        std::task::Poll::Pending => std::task::Poll::Ready(None),
    })
    .await
}

/// Input the terminal sent that crossterm has not read yet. crossterm reads at most 1 KB
/// each time the terminal's input becomes readable and returns at the first key in it; the
/// rest waits for the next readiness edge, which comes only with new input — so the tail
/// of a long paste without bracketed paste would wait for the next key. Asking the
/// terminal for its attributes (DA1) makes it send a short answer, which is that edge;
/// crossterm keeps the answer to itself.
fn kick_stalled_input() {
    let mut pending: libc::c_int = 0;
    // SAFETY: FIONREAD writes one int through the pointer, which points at `pending`.
    let result = unsafe { libc::ioctl(libc::STDIN_FILENO, libc::FIONREAD, &mut pending) };
    if result == 0 && pending > 0 {
        let mut out = std::io::stdout();
        let _ = out.write_all(b"\x1b[c");
        let _ = out.flush();
    }
}

fn on_terminal_event(app: &mut App, event: Event) -> Outcome {
    match event {
        Event::Key(key) => match app.on_key(key) {
            KeyOutcome::Suspend => Outcome::Suspend,
            KeyOutcome::Handled => Outcome::Redraw,
        },
        Event::Paste(text) => {
            app.on_paste(&text);
            Outcome::Redraw
        }
        Event::Resize(..) => Outcome::Resized,
        _ => Outcome::Nothing,
    }
}

/// The row the terminal's cursor is on, asked of the terminal. crossterm reads the answer
/// through the reader its event stream holds while it waits for input, so the caller drops
/// the stream first and makes a new one after (input that arrived meanwhile stays queued
/// in crossterm's reader). Dropping the stream wakes crossterm's reader; that wake-up would
/// cut the first wait for the answer short, so a zero-time poll takes it first.
fn cursor_row() -> Option<u16> {
    let _ = crossterm::event::poll(Duration::ZERO);
    match crossterm::cursor::position() {
        Ok((_, row)) => Some(row),
        Err(e) => {
            tracing::warn!(error = %e, "the terminal did not say where the cursor is");
            None
        }
    }
}

/// ctrl+z: give the terminal back, stop, and take it again on `fg`.
fn suspend(app: &mut App, screen: &mut Screen<Backend>, modes: &mut TerminalModes) {
    let _ = screen.leave();
    modes.leave();
    // SAFETY: raising a signal has no memory-safety preconditions; SIGTSTP stops the
    // process until the shell continues it.
    unsafe {
        libc::raise(libc::SIGTSTP);
    }
    if let Ok(restored) = TerminalModes::enter() {
        *modes = restored;
    }
    let _ = screen.restart_at(cursor_row().unwrap_or(0));
    if let Ok(size) = crossterm::terminal::size() {
        app.resize(size.0);
    }
    app.dirty = true;
}

/// Back from the transcript view to the normal screen.
fn leave_view(screen: &mut Screen<Backend>) -> std::io::Result<()> {
    crossterm::execute!(screen.backend_mut(), LeaveAlternateScreen)?;
    screen.leave_alternate();
    Ok(())
}

fn draw(app: &mut App, screen: &mut Screen<Backend>) -> std::io::Result<()> {
    crossterm::queue!(screen.backend_mut(), BeginSynchronizedUpdate)?;
    if app.view.is_some() {
        // The transcript view: rows for the scrollback wait in `app.out` until it closes.
        if !screen.in_alternate() {
            crossterm::queue!(screen.backend_mut(), EnterAlternateScreen)?;
            screen.enter_alternate();
        }
        screen.draw_alternate(|buffer, kept| app.render_view(buffer, kept))?;
        crossterm::execute!(screen.backend_mut(), EndSynchronizedUpdate)?;
        app.dirty = false;
        return Ok(());
    }
    let mut rows = std::mem::take(&mut app.out);
    let retract = std::mem::take(&mut app.retract);
    if retract > 0 && screen.retract(retract)? < retract {
        // Part of it already went into the terminal's scrollback.
        let mut note = super::cells::notice(
            "The partial answer above was cut off by an error; it is being retried.",
            screen.size().width,
            &app.theme,
        );
        note.append(&mut rows);
        rows = note;
    }
    screen.insert_before(&rows)?;
    let frame = app.live_frame(screen.size().width, screen.max_height());
    let height = frame.height(screen.max_height());
    screen.draw(height, |buffer| app.render_live(frame, buffer))?;
    crossterm::execute!(screen.backend_mut(), EndSynchronizedUpdate)?;
    app.dirty = false;
    Ok(())
}
