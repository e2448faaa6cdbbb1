//! The interface when its terminal goes away and no SIGHUP reaches it — a parent that
//! ignores the signal stays the terminal's session leader: it notices the hang-up itself and
//! ends as on SIGHUP, its session saved, instead of reading the dead terminal in a loop on
//! one core for ever. A terminal of the test's own, so that closing its one descriptor hangs
//! it up (the support's terminal keeps a reader of it open).
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // test code fails loudly

use crate::support;

use portable_pty::{PtySize, native_pty_system};
use rustix::event::Timespec;
use rustix::event::{PollFd, PollFlags, poll};
use rustix::process::{Pid, Signal};
use std::os::fd::BorrowedFd;
use std::time::{Duration, Instant};
use support::chat;
use support::env::env;
use support::server::{FakeServer, Reply};

/// Wait up to `wait` for what the program writes and read it, answering the cursor-position
/// and device-attribute queries as a terminal does; `false` if nothing came.
fn read_some(terminal: BorrowedFd<'_>, seen: &mut Vec<u8>, wait: Duration) -> bool {
    let mut fds = [PollFd::new(&terminal, PollFlags::IN)];
    let wait = Timespec {
        tv_sec: 0,
        tv_nsec: i64::try_from(wait.as_nanos()).unwrap(),
    };
    if poll(&mut fds, Some(&wait)).unwrap() == 0 {
        return false;
    }
    let mut chunk = [0u8; 8192];
    let n = rustix::io::read(terminal, &mut chunk).unwrap();
    let before = seen.len().saturating_sub(4);
    seen.extend_from_slice(&chunk[..n]);
    let fresh = &seen[before..];
    let asked = |query: &[u8]| fresh.windows(query.len()).any(|w| w == query);
    if asked(b"\x1b[6n") {
        rustix::io::write(terminal, b"\x1b[1;1R").unwrap();
    }
    if asked(b"\x1b[c") {
        rustix::io::write(terminal, b"\x1b[?62;22c").unwrap();
    }
    true
}

/// Read what the program writes until `needle` is among it.
fn read_until(terminal: BorrowedFd<'_>, seen: &mut Vec<u8>, needle: &[u8]) {
    let deadline = Instant::now() + Duration::from_secs(60);
    while !seen.windows(needle.len()).any(|w| w == needle) {
        assert!(
            Instant::now() < deadline,
            "no {:?} from the program; it wrote:\n{}",
            String::from_utf8_lossy(needle),
            String::from_utf8_lossy(seen)
        );
        read_some(terminal, seen, Duration::from_millis(100));
    }
}

/// Read what the program writes until it has written nothing for `quiet`: the interface is
/// idle, waiting for input (where a hang-up used to catch it).
fn read_until_quiet(terminal: BorrowedFd<'_>, seen: &mut Vec<u8>, quiet: Duration) {
    let deadline = Instant::now() + Duration::from_secs(60);
    while read_some(terminal, seen, quiet) {
        assert!(Instant::now() < deadline, "the interface never went quiet");
    }
}

/// The shell the test starts the interface under; it and what it started are killed however
/// the test ends (a spinning interface must not outlive a failed test).
struct Started(Box<dyn portable_pty::Child + Send + Sync>);

impl Drop for Started {
    fn drop(&mut self) {
        if let Some(shell) = self.0.process_id() {
            for pid in children(shell).into_iter().filter_map(Pid::from_raw) {
                let _ = rustix::process::kill_process(pid, Signal::KILL);
            }
        }
        let _ = self.0.kill();
    }
}

/// The processes `parent` started, from /proc.
fn children(parent: u32) -> Vec<i32> {
    std::fs::read_to_string(format!("/proc/{parent}/task/{parent}/children"))
        .unwrap_or_default()
        .split_whitespace()
        .filter_map(|pid| pid.parse().ok())
        .collect()
}

// Several threads: the terminal is read with blocking calls while the model server answers.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_terminal_that_hangs_up_without_a_sighup_ends_the_interface_with_its_session_saved() {
    let env = env();
    let server = FakeServer::start(vec![Reply::sse(chat::text("pong"))]).await;
    let base = server.v1();
    let exit_file = env.home.path().join("exit-code");
    let pair = native_pty_system()
        .openpty(PtySize {
            rows: support::pty::ROWS,
            cols: support::pty::COLS,
            pixel_width: 0,
            pixel_height: 0,
        })
        .unwrap();
    // sh leads the terminal's session and ignores SIGHUP: the hang-up sends it nowhere else.
    let script = "trap '' HUP; \"$0\" \"$@\"; echo $? > \"$EXIT_FILE\"";
    let command = support::pty::agent_command(
        Some(&["sh", "-c", script]),
        &["--base-url", &base, "--model", "test-model"],
        env.home.path(),
        env.cwd.path(),
        &[("EXIT_FILE", exit_file.to_str().unwrap())],
    );
    let shell = Started(pair.slave.spawn_command(command).unwrap());
    drop(pair.slave);
    let master = pair.master;
    let raw = master.as_raw_fd().unwrap();
    // SAFETY: `master` owns the descriptor and outlives every use of this borrow below.
    let terminal = unsafe { BorrowedFd::borrow_raw(raw) };
    let mut seen = Vec::new();
    read_until(terminal, &mut seen, b"Ask anything");
    rustix::io::write(terminal, b"ping\r").unwrap();
    read_until(terminal, &mut seen, b"pong");
    read_until_quiet(terminal, &mut seen, Duration::from_millis(300));

    // Its one descriptor closed, the terminal hangs up.
    drop(master);
    let deadline = Instant::now() + Duration::from_secs(30);
    let code = loop {
        if let Ok(code) = std::fs::read_to_string(&exit_file)
            && !code.is_empty()
        {
            break code;
        }
        if Instant::now() > deadline {
            let agents = shell.0.process_id().map(children);
            panic!("the interface ({agents:?}) is still running 30 s after its terminal hung up");
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    };
    let log = std::fs::read_to_string(env.home.path().join("logs/agent.log")).unwrap_or_default();
    assert_eq!(code.trim(), "129", "it ends as on SIGHUP; its log:\n{log}");
    let sessions: Vec<String> = env
        .session_files()
        .iter()
        .filter_map(|file| std::fs::read_to_string(file).ok())
        .collect();
    assert!(
        sessions
            .iter()
            .any(|s| s.contains("ping") && s.contains("pong")),
        "the conversation is in its session file"
    );
    drop(shell);
}
