//! The terminal going away under the interface: its window closed, its ssh connection
//! dropped, its tmux session killed.
//!
//! SIGHUP usually says so, but not always: a parent that ignores it stays the terminal's
//! session leader and the signal never reaches the interface, and when it does come, the
//! input may be read first. crossterm 0.29 reads a hung-up terminal in a loop that never
//! ends — `read` returns 0 or fails with EIO and it reads again at once (crossterm issue
//! #793) — on one core for ever, in whichever thread polled it: crossterm's reader, and the
//! loop learns nothing more from the terminal, or the loop's own, which then takes neither
//! the signal nor anything else.
//!
//! A thread of its own waits in `poll` for the terminal's hang-up: asked for no event, it is
//! woken by nothing else, and costs nothing until then. It then puts an empty pipe where
//! the terminal's input was, so that crossterm's next read finds nothing to read and
//! returns, and tells the loop, which ends as on SIGHUP.

use rustix::event::{PollFd, PollFlags, poll};
use rustix::pipe::{PipeFlags, pipe_with};
use tokio::sync::oneshot;

/// Start watching standard input (the terminal the interface reads); the receiver gets a
/// value once the terminal has hung up and its input has been replaced.
pub fn watch() -> oneshot::Receiver<()> {
    let (gone, receiver) = oneshot::channel();
    let started = std::thread::Builder::new()
        .name("terminal-hangup".into())
        .spawn(move || {
            if wait_for_hangup() {
                replace_input();
                let _ = gone.send(());
            }
        });
    if let Err(e) = started {
        tracing::warn!(error = %e, "cannot watch the terminal for a hang-up");
    }
    receiver
}

/// Block until standard input reports a hang-up or an error; `false` if it cannot be
/// watched — `NVAL` included: fd 0 is open, so that is a system whose `poll` does not take
/// terminals (macOS), not a hang-up.
fn wait_for_hangup() -> bool {
    let stdin = std::io::stdin();
    loop {
        let mut fds = [PollFd::new(&stdin, PollFlags::empty())];
        match poll(&mut fds, None) {
            Ok(_) => {
                let seen = fds[0].revents();
                if seen.contains(PollFlags::NVAL) {
                    tracing::warn!("cannot watch the terminal for a hang-up: poll refuses it");
                    return false;
                }
                if seen.intersects(PollFlags::HUP | PollFlags::ERR) {
                    return true;
                }
            }
            Err(rustix::io::Errno::INTR) => {}
            Err(e) => {
                tracing::warn!(error = %e, "cannot watch the terminal for a hang-up");
                return false;
            }
        }
    }
}

/// Put the read end of a new, empty, non-blocking pipe on standard input. Its write end is
/// kept open for the rest of the process: closed, reads would find the end of the input,
/// which is what crossterm loops on.
fn replace_input() {
    match pipe_with(PipeFlags::CLOEXEC | PipeFlags::NONBLOCK) {
        Ok((read, write)) => {
            if let Err(e) = rustix::stdio::dup2_stdin(&read) {
                tracing::warn!(error = %e, "cannot replace the hung-up terminal's input");
            }
            std::mem::forget(write);
        }
        Err(e) => tracing::warn!(error = %e, "cannot replace the hung-up terminal's input"),
    }
}
