//! The interface's event loop: terminal input, engine events and background task results
//! come in; frames go out — only when something changed, at most one per frame interval,
//! inside synchronized output. While idle nothing ticks: no timers, no redraws.

use super::app::{App, TaskResult};
use super::keys::KeyOutcome;
use super::screen::Screen;
use super::terminal::{TerminalModes, install_panic_hook};
use crate::config::Settings;
use crate::startup::Prepared;
use crossterm::cursor::MoveTo;
use crossterm::event::{Event, EventStream};
use crossterm::terminal::{
    BeginSynchronizedUpdate, Clear, ClearType, EndSynchronizedUpdate, EnterAlternateScreen,
    LeaveAlternateScreen,
};
use futures_util::StreamExt;
use ratatui::backend::CrosstermBackend;
use ratatui::layout::Size;
use std::io::{BufWriter, IsTerminal, Stdout, Write};
use std::time::{Duration, Instant};
use tokio::signal::unix::{SignalKind, signal};
use tokio::sync::mpsc;

/// At most ~60 frames a second.
const FRAME: Duration = Duration::from_millis(16);
/// How often the spinner moves while working.
const TICK: Duration = Duration::from_millis(80);
/// A size change is followed once the size has stayed the same this long: dragging a
/// window's edge sends a resize for every step, and each would print the conversation
/// again.
const SETTLE: Duration = Duration::from_millis(100);
/// How long after coming back from ctrl+z a resize signal of the size measured then is taken
/// for one sent before the suspension (read only now) rather than a new change.
const RESUMED: Duration = Duration::from_secs(1);

type Backend = CrosstermBackend<BufWriter<Stdout>>;

/// How the interface starts.
pub struct Start {
    pub prompt: Option<String>,
    /// `agent -r` without an id: open the session picker.
    pub pick_session: bool,
    /// `-c` or `-r ID`: an earlier session goes on (say which).
    pub resumed: bool,
    pub notices: Vec<String>,
    /// Called once the interface holds the session's history and hears its events, before
    /// any run of its own: what must not start earlier, serving the session live, starts here.
    pub when_ready: Option<Box<dyn FnOnce() + Send>>,
}

/// What the interface drives: the engine this process prepared, or a live session another
/// process runs (`agent attach`), with its events.
pub enum Engine {
    Own(Box<Prepared>, Start),
    Attached(
        crate::live::remote::RemoteEngine,
        mpsc::UnboundedReceiver<crate::protocol::event::AgentEvent>,
    ),
}

pub async fn run(prepared: Prepared, settings: Settings, start: Start) -> u8 {
    run_on(Engine::Own(Box::new(prepared), start), settings).await
}

/// `agent attach` in a terminal: the interface as a client of the live session `remote`.
pub async fn attach(
    remote: crate::live::remote::RemoteEngine,
    events: mpsc::UnboundedReceiver<crate::protocol::event::AgentEvent>,
    settings: Settings,
) -> u8 {
    run_on(Engine::Attached(remote, events), settings).await
}

async fn run_on(engine: Engine, settings: Settings) -> u8 {
    if !std::io::stdin().is_terminal() || !std::io::stdout().is_terminal() {
        eprintln!(
            "agent: the interactive interface needs a terminal; use -p or --mode json in scripts"
        );
        return 2;
    }
    install_panic_hook(settings.paths.log_dir.join("agent.log"));
    // Before the terminal's input is read as keys: `auto` asks the terminal its colours.
    let theme = super::theme::choose(
        settings.tui_theme.as_deref(),
        &settings.paths.home.join("themes"),
    );
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
    let (code, resume_hint, failure) =
        event_loop(&mut screen, &mut modes, engine, settings, theme).await;
    let _ = screen.leave();
    modes.leave();
    if let Some(hint) = resume_hint {
        // Not `println!`: it panics when the terminal has gone away (hung up).
        let _ = writeln!(std::io::stdout(), "{hint}");
    }
    if let Some(failure) = failure {
        let _ = writeln!(std::io::stderr(), "agent: {failure}");
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

/// What the loop listens to, and its frame bookkeeping.
struct Loop {
    input: EventStream,
    agent_events: mpsc::UnboundedReceiver<crate::protocol::event::AgentEvent>,
    task_results: mpsc::UnboundedReceiver<TaskResult>,
    mcp_changes: tokio::sync::watch::Receiver<u64>,
    mcp_open: bool,
    mcp_launched: bool,
    /// Diagnostics a server publishes on its own (a check that finished) redraw the status
    /// line.
    lsp_changes: Option<tokio::sync::watch::Receiver<u64>>,
    terminate: Option<tokio::signal::unix::Signal>,
    hangup: Option<tokio::signal::unix::Signal>,
    /// The terminal hung up (`hangup`), SIGHUP or not; `None` once it cannot be watched.
    terminal_gone: Option<tokio::sync::oneshot::Receiver<()>>,
    last_frame: Instant,
    /// The terminal was resized while the alternate screen showed.
    resized_in_view: bool,
    /// The size changed: the conversation is printed again at this time unless the size
    /// changes again before (`SETTLE`); no frame is drawn until then.
    reprint_at: Option<Instant>,
    /// Why the terminal could not be used (exit 1), said on stderr once it is restored.
    terminal_failure: Option<String>,
    /// When the interface came back from ctrl+z, and the size it measured then.
    resumed: Option<(Instant, Size)>,
}

async fn event_loop(
    screen: &mut Screen<Backend>,
    modes: &mut TerminalModes,
    engine: Engine,
    settings: Settings,
    theme: super::theme::Chosen,
) -> (u8, Option<String>, Option<String>) {
    let (tasks, task_results) = mpsc::unbounded_channel();
    let width = screen.size().width;
    let (agent_events, mut app) = match engine {
        Engine::Own(prepared, start) => {
            let events = prepared.agent.subscribe();
            let app =
                super::start::start_app(*prepared, settings, start, theme, width, tasks).await;
            (events, app)
        }
        Engine::Attached(remote, events) => {
            let app = super::start::start_attached(remote, settings, theme, width, tasks);
            (events, app)
        }
    };
    let mut lp = Loop {
        input: EventStream::new(),
        agent_events,
        task_results,
        mcp_changes: app.mcp.subscribe(),
        mcp_open: true,
        mcp_launched: false,
        lsp_changes: app
            .settings
            .tool_settings
            .lsp
            .as_ref()
            .map(|lsp| lsp.subscribe()),
        terminate: signal(SignalKind::terminate()).ok(),
        hangup: signal(SignalKind::hangup()).ok(),
        terminal_gone: Some(super::hangup::watch()),
        last_frame: Instant::now() - FRAME,
        resized_in_view: false,
        reprint_at: None,
        terminal_failure: None,
        resumed: None,
    };
    loop {
        let outcome = step(&mut app, &mut lp, screen).await;
        after_outcome(&mut app, &mut lp, screen, modes, outcome);
        if let Some(code) = app.exit {
            let (code, hint) = finish(&mut app, screen, code).await;
            return (code, hint, lp.terminal_failure.take());
        }
    }
}

/// Wait for the next thing to happen and take it in.
async fn step(app: &mut App, lp: &mut Loop, screen: &mut Screen<Backend>) -> Outcome {
    let mut outcome = Outcome::Nothing;
    // No frame while a width change settles: it would be drawn at a width about to go.
    let frame_at =
        (app.dirty && lp.reprint_at.is_none()).then(|| (lp.last_frame + FRAME).max(Instant::now()));
    let tick_at = app.is_animated().then(|| Instant::now() + TICK);
    tokio::select! {
        event = lp.input.next() => match event {
            Some(Ok(event)) => outcome = on_terminal_input(app, &mut lp.input, event).await,
            // The terminal cannot be read: gone (EIO), as on SIGHUP, or broken.
            Some(Err(e)) => terminal_failed(app, lp, "reading the terminal", &e),
            None => app.exit = Some(129),
        },
        event = lp.agent_events.recv() => match event {
            Some(event) => {
                app.on_agent_event(event);
                while let Ok(event) = lp.agent_events.try_recv() {
                    app.on_agent_event(event);
                }
            }
            // Only a live session's stream ends (its owner exited, or vanished).
            None => {
                let in_words = app.agent.remote().is_none_or(|r| r.ended_in_words());
                app.exit = Some(if in_words { 0 } else { 1 });
            }
        },
        result = lp.task_results.recv() => {
            if let Some(result) = result {
                app.on_task(result);
            }
        }
        changed = lp.mcp_changes.changed(), if lp.mcp_open => {
            if changed.is_ok() {
                // A server came up or went down: the status line says so, and a server
                // that could not start is reported once.
                for notice in app.mcp.take_notices() {
                    app.warning(&notice);
                }
                app.dirty = true;
            } else {
                lp.mcp_open = false;
            }
        }
        changed = lsp_changed(&mut lp.lsp_changes) => {
            if changed {
                app.dirty = true;
            } else {
                lp.lsp_changes = None;
            }
        }
        _ = wait(&mut lp.terminate) => app.exit = Some(143),
        _ = wait(&mut lp.hangup) => app.exit = Some(129),
        gone = terminal_gone(&mut lp.terminal_gone) => {
            // Answered once: never polled again.
            lp.terminal_gone = None;
            if gone {
                app.exit = Some(129);
            }
        }
        _ = sleep_until(frame_at), if frame_at.is_some() => on_frame(app, lp, screen),
        _ = sleep_until(lp.reprint_at), if lp.reprint_at.is_some() => {
            lp.reprint_at = None;
            reprint(app, lp, screen);
            lp.last_frame = Instant::now();
        }
        _ = sleep_until(tick_at), if tick_at.is_some() => app.dirty = true,
    }
    outcome
}

/// A terminal event, and everything already typed after it (a paste without bracketed
/// paste) before the next frame: one frame for a thousand keys.
async fn on_terminal_input(app: &mut App, input: &mut EventStream, event: Event) -> Outcome {
    let mut outcome = take_input(app, input, event).await;
    while matches!(outcome, Outcome::Nothing | Outcome::Redraw)
        && let Some(Ok(event)) = ready_event(input).await
    {
        outcome = outcome.max(take_input(app, input, event).await);
    }
    // Not before a suspension or the end: the terminal's answer would reach the shell.
    if outcome != Outcome::Suspend && app.exit.is_none() {
        kick_stalled_input();
    }
    outcome
}

/// The terminal changed size: the conversation is printed again once the size has
/// settled (`SETTLE`, `reprint`) — even when it is back at the size drawn by the time the
/// signal is read. Changes that come while the loop is stopped or busy reach it as one
/// SIGWINCH, and the widths the terminal went through meanwhile have cut or rewrapped its
/// rows all the same. A SIGWINCH means a change: the kernel sends none for a size set again
/// unchanged.
fn on_resize(lp: &mut Loop) {
    // A signal sent before ctrl+z and read after `fg`: the interface measured the terminal
    // when it came back and draws at that size. Printing the conversation again would
    // clear what the shell showed meanwhile.
    if let Some((at, size)) = lp.resumed.take()
        && at.elapsed() < RESUMED
        && crossterm::terminal::size().is_ok_and(|(width, height)| Size::new(width, height) == size)
    {
        return;
    }
    lp.reprint_at = Some(Instant::now() + SETTLE);
}

/// The terminal's size changed: clear the screen and the scrollback and print the
/// conversation again at the new size, then the live area. What a terminal does to its
/// rows when its size changes differs from one to the next (most rewrap them when the
/// width changes, some cut them; when the height changes they push rows into their
/// scrollback or pull them back, and tmux's cursor report can disagree with its content)
/// and cannot be followed reliably: following it (the cursor's row, rows counted as the
/// terminal would rewrap them) left rows of the live area above it or out of reach in the
/// scrollback, shown twice, or lost rows. Starting over is right whatever the terminal
/// did, and needs no question to it. What the shell printed before the interface started
/// is cleared with it (README, "In the interface").
fn reprint(app: &mut App, lp: &mut Loop, screen: &mut Screen<Backend>) {
    let Ok((width, height)) = crossterm::terminal::size() else {
        return;
    };
    if screen.in_alternate() {
        // A full-screen view opened meanwhile: the normal screen is done when it closes.
        resize_view(app, lp, screen, width, height);
        return;
    }
    tracing::debug!(
        width,
        height,
        "terminal resized: printing the conversation again"
    );
    let cleared = crossterm::queue!(
        screen.backend_mut(),
        BeginSynchronizedUpdate,
        // The screen first: tmux and VTE move a cleared screen into the scrollback, which
        // the next one clears (xterm, tmux, VTE, kitty, iTerm2, Windows Terminal do 3J).
        Clear(ClearType::All),
        Clear(ClearType::Purge),
        MoveTo(0, 0)
    );
    if let Err(e) = cleared.and_then(|()| screen.restart_at(0)) {
        terminal_failed(app, lp, "writing to the terminal", &e);
        return;
    }
    app.reprint(width);
    if let Err(e) = draw(app, screen) {
        terminal_failed(app, lp, "writing to the terminal", &e);
    }
}

/// The terminal cannot be read or written: the interface ends as on SIGHUP (129) when it has
/// hung up (the first frame after a hang-up can fail before the hang-up itself is seen), and
/// with 1 and the reason on stderr for any other failure.
fn terminal_failed(app: &mut App, lp: &mut Loop, doing: &str, error: &std::io::Error) {
    let failure = format!("{doing} failed: {error}");
    tracing::warn!("{failure}");
    if error.raw_os_error() == Some(libc::EIO) {
        app.exit = Some(129);
    } else {
        app.exit = Some(1);
        lp.terminal_failure = Some(failure);
    }
}

/// One terminal event — unless it starts a terminal's late answer to a query (see
/// `late_reply`), which is read whole from what is ready and dropped.
async fn take_input(app: &mut App, input: &mut EventStream, event: Event) -> Outcome {
    if !super::late_reply::may_start(&event) {
        return on_terminal_event(app, event);
    }
    let mut held = vec![event];
    loop {
        match super::late_reply::scan(&held) {
            super::late_reply::Scan::Answer(length) => {
                tracing::debug!("dropped a late answer from the terminal");
                held.drain(..length);
                break;
            }
            super::late_reply::Scan::Keys => break,
            super::late_reply::Scan::Partial => match ready_event(input).await {
                Some(Ok(event)) => held.push(event),
                _ => break,
            },
        }
    }
    held.into_iter().fold(Outcome::Nothing, |outcome, event| {
        outcome.max(on_terminal_event(app, event))
    })
}

/// The frame slot came: draw.
fn on_frame(app: &mut App, lp: &mut Loop, screen: &mut Screen<Backend>) {
    // A resize whose event has not been read yet (a streamed answer keeps the loop busy),
    // or never will be (crossterm drops a resize signal that comes with a key): a frame
    // drawn for the old size would land on rows the terminal has moved.
    if let Ok((width, height)) = crossterm::terminal::size()
        && Size::new(width, height) != screen.size()
    {
        if screen.in_alternate() {
            resize_view(app, lp, screen, width, height);
        } else {
            return on_resize(lp);
        }
    }
    if let Err(e) = draw(app, screen) {
        terminal_failed(app, lp, "writing to the terminal", &e);
    }
    lp.last_frame = Instant::now();
    // MCP servers start once the prompt is on the screen: starting three server
    // processes competes with the first frame for the CPU (a run that begins
    // sooner starts them itself).
    if !lp.mcp_launched {
        lp.mcp_launched = true;
        tracing::info!("interface ready: first frame drawn");
        app.mcp.launch();
        // So does counting the older part of a long resumed session (`session::cold`).
        app.agent.count_earlier();
    }
}

/// The full-screen view (transcript, agent, diff) follows a new size at once; the normal
/// screen's live area is placed again when the view closes.
fn resize_view(
    app: &mut App,
    lp: &mut Loop,
    screen: &mut Screen<Backend>,
    width: u16,
    height: u16,
) {
    lp.resized_in_view = true;
    screen.resize_alternate(Size::new(width, height));
    app.resize(width);
}

/// What a terminal event asks of the screen (resize, suspend), then the view closing and
/// the hint expiring.
fn after_outcome(
    app: &mut App,
    lp: &mut Loop,
    screen: &mut Screen<Backend>,
    modes: &mut TerminalModes,
    outcome: Outcome,
) {
    let redraw_now = Instant::now() - FRAME;
    match outcome {
        Outcome::Nothing => {}
        Outcome::Redraw => lp.last_frame = redraw_now,
        Outcome::Resized if screen.in_alternate() => {
            if let Ok((width, height)) = crossterm::terminal::size() {
                resize_view(app, lp, screen, width, height);
            }
            lp.last_frame = redraw_now;
        }
        Outcome::Resized => {
            on_resize(lp);
            lp.last_frame = redraw_now;
        }
        Outcome::Suspend => {
            close_full_screen(app, screen);
            // The old stream goes (a new one reads nothing until it is polled).
            lp.input = EventStream::new();
            suspend(app, screen, modes);
            // A reprint still pending from before would clear what the shell showed
            // meanwhile; a size changed since is seen by the next frame.
            lp.reprint_at = None;
            lp.resumed = Some((Instant::now(), screen.size()));
            lp.last_frame = redraw_now;
        }
    }
    if !app.views.full_screen() && screen.in_alternate() {
        let _ = leave_view(screen);
        if std::mem::take(&mut lp.resized_in_view) {
            lp.reprint_at = Some(Instant::now());
        }
        app.dirty = true;
        lp.last_frame = redraw_now;
    }
    if let Some((_, at)) = &app.status.hint
        && at.elapsed() > Duration::from_secs(4)
    {
        app.status.hint = None;
        app.dirty = true;
    }
}

/// Close the full-screen view (transcript, agent, diff) and go back to the normal screen.
fn close_full_screen(app: &mut App, screen: &mut Screen<Backend>) {
    if screen.in_alternate() {
        app.views.close_full_screen();
        let _ = leave_view(screen);
    }
}

/// Leave: stop what runs (through the engine's own `abort`, as every front end does), let
/// the pending rows reach the scrollback, end the session.
async fn finish(app: &mut App, screen: &mut Screen<Backend>, code: u8) -> (u8, Option<String>) {
    app.run.shell_cancel.cancel();
    close_full_screen(app, screen);
    // Whatever is pending still reaches the scrollback.
    let _ = draw(app, screen);
    if let Some(remote) = app.agent.remote() {
        // Leaving a live session stops nothing there.
        return (code, Some(super::start::leaving_note(remote).await));
    }
    let _ = app.execute_now(crate::protocol::command::Command::Abort);
    let agent = app.agent.clone();
    let _ = tokio::time::timeout(Duration::from_secs(2), agent.wait_for_idle()).await;
    agent.session_end("exit").await;
    let hint = agent
        .local()
        .and_then(|agent| super::resume_hint::for_agent(agent, &app.settings));
    (code, hint)
}

async fn wait(signal: &mut Option<tokio::signal::unix::Signal>) {
    match signal {
        Some(signal) => {
            signal.recv().await;
        }
        None => std::future::pending().await,
    }
}

/// `true` once the terminal has hung up, `false` if it cannot be watched; never without a
/// watch.
async fn terminal_gone(watch: &mut Option<tokio::sync::oneshot::Receiver<()>>) -> bool {
    match watch {
        Some(watch) => watch.await.is_ok(),
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
/// of a long paste without bracketed paste would wait for the next key. And when a resize
/// signal and input are ready together, it returns the resize and leaves the input unread
/// (a ctrl+d typed just after a resize did not quit until the next key). Asking the
/// terminal for its attributes (DA1) makes it send a short answer, which is that edge;
/// crossterm keeps the answer to itself (in its queue of internal events, a few bytes each,
/// which nothing here reads).
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
        Event::FocusLost => {
            app.status.unfocused = true;
            Outcome::Nothing
        }
        Event::FocusGained => {
            app.status.unfocused = false;
            Outcome::Nothing
        }
        _ => Outcome::Nothing,
    }
}

/// The row the terminal's cursor is on, asked of the terminal (back from a suspend).
/// crossterm reads the answer through the reader its event stream holds while it waits for
/// input, so the caller drops the stream first and makes a new one after (input that
/// arrived meanwhile stays queued in crossterm's reader). Dropping the stream wakes
/// crossterm's reader; that wake-up would cut the first wait for the answer short, so a
/// zero-time poll takes it first.
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
    app.preview_theme();
    crossterm::queue!(screen.backend_mut(), BeginSynchronizedUpdate)?;
    if app.views.full_screen() {
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
    let retract = std::mem::take(&mut app.scrollback.retract);
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
