//! Background shells: `bash {command, background: true}` starts a command below its own
//! supervisor (as `bash` does, same sandbox) and returns at once; the command's output is
//! collected here until the model reads it (`bash_output`) or stops it (`kill_shell`).
//! The registry belongs to the agent: dropping it kills every shell still running, and when
//! the agent's process ends the supervisors see their control pipes close and kill what
//! they watch — so no background command outlives the agent.
//!
//! A command that ended on its own is not told to "leave" what it started: its supervisor
//! keeps watching until the shell is killed or the agent goes, so grandchildren go too.

pub mod tools;

use super::process::{self, Exit, Supervised};
use crate::sandbox::Policy;
use std::collections::{BTreeMap, VecDeque};
use std::ffi::OsStr;
use std::os::fd::OwnedFd;
use std::path::Path;
use std::sync::atomic::Ordering;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::{Duration, Instant, SystemTime};
use tokio::io::AsyncReadExt;
use tokio::sync::watch;
use tokio_util::sync::CancellationToken;

/// Output kept per shell; older output is dropped (and the reader told how much).
const KEPT_BYTES: usize = 4 * 1024 * 1024;
/// Ended shells kept for `bash_output` and `/ps`; past this, starting another forgets the
/// oldest ended ones (their supervisors end, taking what the command left running).
pub const ENDED_KEPT: usize = 16;
/// The longest the start waits for the command to settle (`wait_to_settle`) before
/// returning.
pub const FIRST_OUTPUT_WAIT: Duration = Duration::from_secs(1);
/// How long the output must stay quiet after the first output for the start to return
/// (a server that printed its banner and waits; a traceback that is still coming is not).
pub const SETTLE_QUIET: Duration = Duration::from_millis(150);
/// How long to keep reading after the command exits, for output still in the pipe.
const DRAIN_AFTER_EXIT: Duration = Duration::from_millis(200);
/// How much of the end of a shell's output an exit note looks at.
const LAST_LINES_BYTES: usize = 16 * 1024;
/// How many of its last lines an exit note quotes.
const NOTE_LINES: usize = 3;

/// Where a background shell is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ShellStatus {
    Running,
    Exited(Exit),
    /// `kill_shell`, `/ps`, or the registry dropped.
    Killed,
}

impl ShellStatus {
    pub fn describe(self) -> String {
        match self {
            ShellStatus::Running => "running".to_string(),
            ShellStatus::Exited(Exit::Code(code)) => format!("exited with code {code}"),
            // 0: the supervisor went before it could tell how the command ended.
            ShellStatus::Exited(Exit::Signal(0)) => "ended (exit status unknown)".to_string(),
            ShellStatus::Exited(Exit::Signal(signal)) => format!("killed by signal {signal}"),
            ShellStatus::Killed => "killed".to_string(),
        }
    }
}

/// What the model has not read yet of a shell's output.
pub struct NewOutput {
    pub text: String,
    /// Bytes dropped (over the kept size) before the model could read them.
    pub dropped: usize,
    pub status: ShellStatus,
    /// What the sandbox refused, as this output shows it.
    pub blocked: Option<crate::sandbox::diagnose::Blocked>,
}

/// A background shell that ended without the model reading its end — on its own, or
/// stopped by the user (`/ps`): told once, with the next tool result or the next message
/// (`agent::run`).
#[derive(Clone, Debug)]
pub struct ExitNote {
    pub id: String,
    pub status: ShellStatus,
    /// The user stopped it (the model did not, and it did not end on its own).
    pub by_user: bool,
    /// Its last lines of output (blank lines left out), joined by newlines.
    pub last_lines: String,
    /// What the sandbox refused, as the end of its output shows it.
    pub blocked: Option<crate::sandbox::diagnose::Blocked>,
}

impl ExitNote {
    /// One line for the model: `[shell_1 exited with code 1 — last lines: …; sandbox: …]`,
    /// `[shell_1 was stopped by the user — last lines: …]`.
    pub fn render(&self) -> String {
        let mut text = if self.by_user {
            format!("[{} was stopped by the user", self.id)
        } else {
            format!("[{} {}", self.id, self.status.describe())
        };
        if !self.last_lines.is_empty() {
            text.push_str(" — last lines: ");
            text.push_str(&self.last_lines.replace('\n', " | "));
        }
        if let Some(blocked) = &self.blocked {
            text.push_str(&format!(
                "; blocked by the sandbox: {}. {}",
                blocked.boundary, blocked.remedy
            ));
        }
        text.push_str("; read the rest with bash_output]");
        text
    }
}

/// When a starting command has settled: some output arrived and then none for `quiet`.
struct Settle {
    quiet: Duration,
    /// Bytes seen at the last look, and when that count last changed.
    total: usize,
    changed: Option<tokio::time::Instant>,
}

impl Settle {
    fn new(quiet: Duration) -> Settle {
        Settle {
            quiet,
            total: 0,
            changed: None,
        }
    }

    /// Look at the output's byte count at `now`: whether it has settled.
    fn observe(&mut self, now: tokio::time::Instant, total: usize) -> bool {
        if total != self.total {
            self.total = total;
            self.changed = Some(now);
        }
        self.changed
            .is_some_and(|changed| now.saturating_duration_since(changed) >= self.quiet)
    }
}

/// One shell as `/ps` lists it.
#[derive(Clone, Debug)]
pub struct ShellView {
    pub id: String,
    pub command: String,
    pub started: SystemTime,
    pub elapsed: Duration,
    pub status: ShellStatus,
    pub pid: i32,
}

/// A shell's output: a ring of the last `cap` bytes (dropping old output costs what is
/// dropped, not what is kept).
struct Output {
    bytes: VecDeque<u8>,
    cap: usize,
    /// Bytes dropped from the front of `bytes` so far.
    dropped: usize,
    /// Absolute offset the model has read up to.
    seen: usize,
}

impl Output {
    fn new(cap: usize) -> Output {
        Output {
            bytes: VecDeque::new(),
            cap,
            dropped: 0,
            seen: 0,
        }
    }

    fn push(&mut self, bytes: &[u8]) {
        // Only the last `cap` bytes of a huge chunk can be kept.
        let skip = bytes.len().saturating_sub(self.cap);
        let bytes = &bytes[skip..];
        self.dropped += skip;
        let excess = (self.bytes.len() + bytes.len()).saturating_sub(self.cap);
        self.bytes.drain(..excess);
        self.dropped += excess;
        self.bytes.extend(bytes);
    }

    /// Every byte that arrived so far, kept or dropped.
    fn total(&self) -> usize {
        self.dropped + self.bytes.len()
    }

    /// The last `lines` lines of what is kept (read or not), for a note about the end.
    fn last_lines(&self, lines: usize) -> String {
        let start = self.bytes.len().saturating_sub(LAST_LINES_BYTES);
        let bytes: Vec<u8> = self.bytes.range(start..).copied().collect();
        let text = String::from_utf8_lossy(&bytes);
        let all: Vec<&str> = text.lines().filter(|l| !l.trim().is_empty()).collect();
        all[all.len().saturating_sub(lines)..].join("\n")
    }

    /// Whether anything arrived (kept or dropped) that was not read yet.
    fn has_unread(&self) -> bool {
        self.dropped + self.bytes.len() > self.seen
    }

    /// What was not read yet (marking it read), and how many unread bytes were dropped.
    /// `complete`: the command has ended, so nothing more follows; until then a character
    /// whose last bytes have not arrived stays for the next read. A character cut by a
    /// drop is counted as dropped.
    fn take(&mut self, complete: bool) -> (String, usize) {
        let mut start = self.seen.max(self.dropped);
        let mut from = start - self.dropped;
        while from < self.bytes.len() && start > self.seen && is_continuation(self.bytes[from]) {
            from += 1;
            start += 1;
        }
        let dropped = start - self.seen;
        let unread: Vec<u8> = self.bytes.range(from..).copied().collect();
        let end = if complete {
            unread.len()
        } else {
            complete_utf8_end(&unread)
        };
        self.seen = start + end;
        (
            String::from_utf8_lossy(&unread[..end]).into_owned(),
            dropped,
        )
    }
}

fn is_continuation(byte: u8) -> bool {
    byte & 0xc0 == 0x80
}

/// Where `bytes` ends without its last character cut short (the length when it is not).
fn complete_utf8_end(bytes: &[u8]) -> usize {
    // The start of the last character: at most three continuation bytes back.
    let tail = bytes.len().saturating_sub(4);
    let Some(lead) = (tail..bytes.len())
        .rev()
        .find(|&i| !is_continuation(bytes[i]))
    else {
        return bytes.len();
    };
    let needed = match bytes[lead] {
        b if b >= 0xf0 => 4,
        b if b >= 0xe0 => 3,
        b if b >= 0xc0 => 2,
        _ => 1,
    };
    if bytes.len() - lead < needed {
        lead
    } else {
        bytes.len()
    }
}

struct Shell {
    command: String,
    pid: i32,
    started: SystemTime,
    since: Instant,
    /// When it stopped running (`/ps` elapsed stops there).
    stopped: Mutex<Option<Instant>>,
    output: Mutex<Output>,
    status: watch::Sender<ShellStatus>,
    /// Set once the shell has finished its ending (killed, or the registry dropped).
    ended: watch::Sender<bool>,
    kill: CancellationToken,
    /// With `[sandbox] allow_hosts`: what its proxy refused, and how many of those the
    /// model has been told about.
    refusals: Option<crate::sandbox::egress::Refusals>,
    refusals_told: Mutex<usize>,
    /// The policy it runs under and where, to explain what the sandbox refused.
    sandbox: Option<(Policy, std::path::PathBuf)>,
    /// Whether the model was told how it ended (a read after the end, or an exit note).
    end_told: std::sync::atomic::AtomicBool,
    /// The user stopped it while it ran (`/ps`): the model is told, as of an exit.
    stopped_by_user: std::sync::atomic::AtomicBool,
}

/// The agent's background shells.
#[derive(Default)]
pub struct BackgroundShells {
    inner: Mutex<Inner>,
}

#[derive(Default)]
struct Inner {
    started: u64,
    shells: BTreeMap<u64, Arc<Shell>>,
}

impl Inner {
    /// Forget the oldest ended shells past `ENDED_KEPT` (making room for one more): their
    /// supervisors are told to end, which kills what they left running and reaps them.
    fn forget_ended(&mut self) {
        let ended: Vec<u64> = self
            .shells
            .iter()
            .filter(|(_, shell)| *shell.status.borrow() != ShellStatus::Running)
            .map(|(number, _)| *number)
            .collect();
        let excess = (ended.len() + 1).saturating_sub(ENDED_KEPT);
        for number in ended.into_iter().take(excess) {
            if let Some(shell) = self.shells.remove(&number) {
                shell.kill.cancel();
            }
        }
    }
}

fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}

/// What `start` needs besides the command.
pub struct StartOptions<'a> {
    pub supervisor: &'a Path,
    pub sandbox: Option<&'a Policy>,
    pub cwd: &'a Path,
    pub hidden_env: &'a [String],
    /// The session's loopback network namespace (`[sandbox] allow_local_binding`).
    pub session_net: Option<&'a super::process::session_net::SessionNet>,
}

impl BackgroundShells {
    /// Start `command` in the background; its id (`shell_N`).
    pub async fn start(&self, command: &str, options: StartOptions<'_>) -> std::io::Result<String> {
        let (reader, writer) = std::io::pipe()?;
        let argv = [OsStr::new("bash"), OsStr::new("-c"), OsStr::new(command)];
        let running: Supervised = process::start_command(
            options.supervisor,
            &argv,
            options.sandbox,
            OwnedFd::from(writer),
            process::CommandEnv {
                cwd: options.cwd,
                set: &[("PAGER", "cat"), ("GIT_PAGER", "cat")],
                hidden: options.hidden_env,
                session_net: options.session_net,
            },
        )
        .await?;
        let pipe = tokio::net::unix::pipe::Receiver::from_owned_fd(OwnedFd::from(reader))?;
        let shell = Arc::new(Shell {
            command: command.to_string(),
            pid: running.pid,
            started: SystemTime::now(),
            since: Instant::now(),
            stopped: Mutex::new(None),
            output: Mutex::new(Output::new(KEPT_BYTES)),
            status: watch::Sender::new(ShellStatus::Running),
            ended: watch::Sender::new(false),
            kill: CancellationToken::new(),
            refusals: running.egress_refusals(),
            refusals_told: Mutex::new(0),
            sandbox: options
                .sandbox
                .map(|policy| (policy.clone(), options.cwd.to_path_buf())),
            end_told: Default::default(),
            stopped_by_user: Default::default(),
        });
        let number = {
            let mut inner = lock(&self.inner);
            inner.started += 1;
            let number = inner.started;
            inner.forget_ended();
            inner.shells.insert(number, shell.clone());
            number
        };
        crate::tasks::spawn(watch_shell(shell, running, pipe));
        Ok(format!("shell_{number}"))
    }

    /// Whether `id` named a shell that ended and was forgotten (past `ENDED_KEPT`).
    pub fn forgotten(&self, id: &str) -> bool {
        let Some(number) = id
            .strip_prefix("shell_")
            .and_then(|n| n.parse::<u64>().ok())
        else {
            return false;
        };
        let inner = lock(&self.inner);
        number >= 1 && number <= inner.started && !inner.shells.contains_key(&number)
    }

    fn get(&self, id: &str) -> Option<Arc<Shell>> {
        let number: u64 = id.strip_prefix("shell_")?.parse().ok()?;
        lock(&self.inner).shells.get(&number).cloned()
    }

    /// The ids of the shells, for an error naming them.
    pub fn ids(&self) -> Vec<String> {
        lock(&self.inner)
            .shells
            .keys()
            .map(|n| format!("shell_{n}"))
            .collect()
    }

    /// Wait until shell `id` has output not read yet or has ended, at most `wait` (output
    /// already read does not end the wait: a caller looping on it would spin).
    pub async fn wait_for_output(&self, id: &str, wait: Duration) {
        let Some(shell) = self.get(id) else {
            return;
        };
        let mut status = shell.status.subscribe();
        let deadline = tokio::time::Instant::now() + wait;
        loop {
            if lock(&shell.output).has_unread() || *status.borrow() != ShellStatus::Running {
                return;
            }
            // Output has no signal of its own: look again every few milliseconds.
            tokio::select! {
                _ = tokio::time::sleep_until(deadline) => return,
                _ = status.changed() => {}
                _ = tokio::time::sleep(Duration::from_millis(10)) => {}
            }
        }
    }

    /// Wait until shell `id` has settled: it ended, or its output has stayed quiet for
    /// `quiet` after some arrived — at most `limit`. A command that fails at once is seen
    /// ending (its whole error read), not caught halfway through its first lines.
    pub async fn wait_to_settle(&self, id: &str, quiet: Duration, limit: Duration) {
        let Some(shell) = self.get(id) else {
            return;
        };
        let mut status = shell.status.subscribe();
        let deadline = tokio::time::Instant::now() + limit;
        let mut settle = Settle::new(quiet);
        loop {
            if *status.borrow() != ShellStatus::Running {
                return;
            }
            let total = lock(&shell.output).total();
            if settle.observe(tokio::time::Instant::now(), total) {
                return;
            }
            // Output has no signal of its own: look again every few milliseconds.
            tokio::select! {
                _ = tokio::time::sleep_until(deadline) => return,
                _ = status.changed() => {}
                _ = tokio::time::sleep(Duration::from_millis(10)) => {}
            }
        }
    }

    /// Shells that ended on their own, or that the user stopped, since the model last looked
    /// at them and whose end it was not told yet — each once (later calls leave them out).
    pub fn unreported_exits(&self) -> Vec<ExitNote> {
        let shells: Vec<(u64, Arc<Shell>)> = lock(&self.inner)
            .shells
            .iter()
            .map(|(number, shell)| (*number, shell.clone()))
            .collect();
        shells
            .into_iter()
            .filter(|(_, shell)| match *shell.status.borrow() {
                ShellStatus::Exited(_) => true,
                ShellStatus::Killed => shell.stopped_by_user.load(Ordering::SeqCst),
                ShellStatus::Running => false,
            })
            .filter(|(_, shell)| !shell.end_told.swap(true, Ordering::SeqCst))
            .map(|(number, shell)| {
                let status = *shell.status.borrow();
                let by_user = status == ShellStatus::Killed;
                let output = lock(&shell.output);
                let last_lines = output.last_lines(NOTE_LINES);
                let start = output.bytes.len().saturating_sub(LAST_LINES_BYTES);
                let end: Vec<u8> = output.bytes.range(start..).copied().collect();
                drop(output);
                let blocked = shell.sandbox.as_ref().and_then(|(policy, cwd)| {
                    crate::sandbox::diagnose::diagnose(policy, cwd, &String::from_utf8_lossy(&end))
                });
                ExitNote {
                    id: format!("shell_{number}"),
                    status,
                    by_user,
                    last_lines,
                    blocked,
                }
            })
            .collect()
    }

    /// The output of shell `id` the model has not read yet (marking it read); `None` for an
    /// unknown id.
    pub fn take_new_output(&self, id: &str) -> Option<NewOutput> {
        let shell = self.get(id)?;
        // The status first: output read after an exit is complete.
        let status = *shell.status.borrow();
        if status != ShellStatus::Running {
            // The reader learns how it ended: no exit note about it later.
            shell.end_told.store(true, Ordering::SeqCst);
        }
        let (text, dropped) = lock(&shell.output).take(status != ShellStatus::Running);
        // Connections the egress proxy refused since the last look: known, not guessed.
        let refused = match &shell.refusals {
            Some(refusals) => {
                let all = refusals.list();
                let mut told = lock(&shell.refusals_told);
                let new = all.get(*told..).unwrap_or_default().to_vec();
                *told = all.len();
                new
            }
            None => Vec::new(),
        };
        let blocked = crate::sandbox::egress::explain(&refused).or_else(|| {
            shell
                .sandbox
                .as_ref()
                .and_then(|(policy, cwd)| crate::sandbox::diagnose::diagnose(policy, cwd, &text))
        });
        Some(NewOutput {
            text,
            dropped,
            status,
            blocked,
        })
    }

    /// Kill shell `id` and everything it started for the model (`kill_shell`); its status
    /// once it is gone (`None` for an unknown id). A shell that ended already is only
    /// cleaned up.
    pub async fn kill(&self, id: &str) -> Option<ShellStatus> {
        let status = self.end(id).await?;
        // The caller (the model's tool) says how it ended.
        if let Some(shell) = self.get(id) {
            shell.end_told.store(true, Ordering::SeqCst);
        }
        Some(status)
    }

    /// Kill shell `id` and everything it started for the user (`/ps`): the model is told
    /// with its next tool result or message that the user stopped it (`unreported_exits`),
    /// else it would go on believing it runs. A shell that had ended already is only
    /// cleaned up; its end is told as any end is.
    pub async fn stop_by_user(&self, id: &str) -> Option<ShellStatus> {
        let shell = self.get(id)?;
        shell.stopped_by_user.store(true, Ordering::SeqCst);
        self.end(id).await
    }

    /// Kill shell `id` and wait until it is gone; its status then.
    async fn end(&self, id: &str) -> Option<ShellStatus> {
        let shell = self.get(id)?;
        shell.kill.cancel();
        let mut ended = shell.ended.subscribe();
        let _ = ended.wait_for(|ended| *ended).await;
        let status = *shell.status.borrow();
        Some(status)
    }

    /// Every shell, oldest first.
    pub fn list(&self) -> Vec<ShellView> {
        lock(&self.inner)
            .shells
            .iter()
            .map(|(number, shell)| ShellView {
                id: format!("shell_{number}"),
                command: shell.command.clone(),
                started: shell.started,
                elapsed: lock(&shell.stopped)
                    .unwrap_or_else(Instant::now)
                    .saturating_duration_since(shell.since),
                status: *shell.status.borrow(),
                pid: shell.pid,
            })
            .collect()
    }

    /// Kill every shell still running and wait until they are gone.
    pub async fn kill_all(&self) {
        let shells: Vec<Arc<Shell>> = lock(&self.inner).shells.values().cloned().collect();
        for shell in &shells {
            shell.kill.cancel();
        }
        for shell in shells {
            let mut ended = shell.ended.subscribe();
            let _ = ended.wait_for(|ended| *ended).await;
        }
    }
}

impl Drop for BackgroundShells {
    fn drop(&mut self) {
        for shell in lock(&self.inner).shells.values() {
            shell.kill.cancel();
        }
    }
}

/// Collect a shell's output and status until it is killed; then kill what is left and read
/// what it wrote before it died. The pipe
/// is read to its end even after the command exits (what it left running may still write,
/// and must never block on a full pipe); the exit is published once the pipe is drained, or
/// `DRAIN_AFTER_EXIT` after the exit when something still holds it open, so output read
/// after the status says "exited" is complete.
async fn watch_shell(
    shell: Arc<Shell>,
    mut running: Supervised,
    mut pipe: tokio::net::unix::pipe::Receiver,
) {
    let mut chunk = vec![0u8; 16 * 1024];
    let mut exit: Option<Exit> = None;
    let mut published = false;
    let mut pipe_open = true;
    let mut drain_until: Option<tokio::time::Instant> = None;
    loop {
        if let Some(code) = exit
            && !published
            && (!pipe_open || drain_until.is_some_and(|t| tokio::time::Instant::now() >= t))
        {
            set_status(&shell, ShellStatus::Exited(code));
            published = true;
        }
        let drain_timer =
            tokio::time::sleep_until(drain_until.unwrap_or_else(tokio::time::Instant::now));
        tokio::select! {
            _ = shell.kill.cancelled() => break,
            ended = running.exited(), if exit.is_none() => {
                drain_until = Some(tokio::time::Instant::now() + DRAIN_AFTER_EXIT);
                // `None`: the supervisor is gone; the status it cannot give is unknown.
                exit = Some(ended.unwrap_or(Exit::Signal(0)));
            }
            read = pipe.read(&mut chunk), if pipe_open => match read {
                Ok(0) | Err(_) => pipe_open = false,
                Ok(n) => push(&shell, &chunk[..n]),
            },
            _ = drain_timer, if exit.is_some() && !published => {}
        }
    }
    let finished = running.kill().await;
    // What the shell wrote before it died may still be in the pipe: read it, so that the
    // last lines are there for `bash_output` and `/ps`. The tree is gone, so the pipe ends;
    // bounded in case something outside it still holds the pipe open.
    if pipe_open {
        let _ = tokio::time::timeout(DRAIN_AFTER_EXIT, async {
            while let Ok(n @ 1..) = pipe.read(&mut chunk).await {
                push(&shell, &chunk[..n]);
            }
        })
        .await;
    }
    drop(pipe);
    match (exit, finished.exit) {
        (None, _) => set_status(&shell, ShellStatus::Killed),
        (Some(_), Some(code)) | (Some(code), None) => set_status(&shell, ShellStatus::Exited(code)),
    }
    shell.ended.send_replace(true);
}

fn push(shell: &Shell, bytes: &[u8]) {
    lock(&shell.output).push(bytes);
}

/// Publish that the shell stopped running, noting when.
fn set_status(shell: &Shell, status: ShellStatus) {
    lock(&shell.stopped).get_or_insert_with(Instant::now);
    shell.status.send_replace(status);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_character_is_never_split_across_reads() {
        let mut output = Output::new(1024);
        let text = "héllo ✓ 🎉";
        let bytes = text.as_bytes();
        let mut read = String::new();
        // Every byte arrives on its own: each read returns only whole characters.
        for byte in bytes {
            output.push(std::slice::from_ref(byte));
            let (chunk, dropped) = output.take(false);
            assert_eq!(dropped, 0);
            assert!(!chunk.contains('\u{fffd}'), "{chunk:?}");
            read.push_str(&chunk);
        }
        assert_eq!(read, text);
        // A command that ended with half a character: given as it is.
        output.push(&"✓".as_bytes()[..2]);
        assert_eq!(output.take(false).0, "");
        assert_eq!(output.take(true).0, "\u{fffd}");
    }

    #[test]
    fn output_already_read_is_not_new() {
        let mut output = Output::new(8);
        assert!(!output.has_unread());
        output.push(b"abc");
        assert!(output.has_unread());
        output.take(false);
        assert!(
            !output.has_unread(),
            "read once, nothing new until more comes"
        );
        output.push(b"0123456789");
        assert!(output.has_unread(), "dropped bytes arrived too");
        output.take(false);
        assert!(!output.has_unread());
    }

    #[test]
    fn the_ring_keeps_the_last_bytes_and_counts_what_it_dropped() {
        let mut output = Output::new(8);
        output.push(b"abcdef");
        output.push(b"ghij");
        assert_eq!(output.bytes.len(), 8);
        assert_eq!(output.take(false), ("cdefghij".to_string(), 2));
        output.push(b"0123456789abc");
        assert_eq!(output.take(false), ("56789abc".to_string(), 5));
        // A character cut by the drop is counted as dropped, never shown in halves.
        output.push("ab✓✓✓".as_bytes());
        let (text, dropped) = output.take(false);
        assert_eq!(text, "✓✓");
        assert_eq!(dropped, 5);
    }

    /// A shell with no process behind it, registered as `shell_N`, for the registry's own
    /// bookkeeping.
    fn fake_shell(shells: &BackgroundShells, output: &[u8], status: ShellStatus) -> String {
        let shell = Arc::new(Shell {
            command: "fake".to_string(),
            pid: 0,
            started: SystemTime::now(),
            since: Instant::now(),
            stopped: Mutex::new(None),
            output: Mutex::new(Output::new(KEPT_BYTES)),
            status: watch::Sender::new(status),
            ended: watch::Sender::new(false),
            kill: CancellationToken::new(),
            refusals: None,
            refusals_told: Mutex::new(0),
            sandbox: None,
            end_told: Default::default(),
            stopped_by_user: Default::default(),
        });
        lock(&shell.output).push(output);
        let mut inner = lock(&shells.inner);
        inner.started += 1;
        let number = inner.started;
        inner.shells.insert(number, shell);
        format!("shell_{number}")
    }

    #[test]
    fn a_start_settles_only_after_its_output_has_been_quiet() {
        let quiet = Duration::from_millis(150);
        let t0 = tokio::time::Instant::now();
        let at = |ms: u64| t0 + Duration::from_millis(ms);
        let mut settle = Settle::new(quiet);
        // Nothing printed yet: never settled (the limit ends that wait).
        assert!(!settle.observe(at(0), 0));
        assert!(!settle.observe(at(900), 0));
        // The first lines of a traceback: not settled while more may come.
        assert!(!settle.observe(at(1000), 120));
        assert!(!settle.observe(at(1100), 120));
        // More output starts the quiet period again.
        assert!(!settle.observe(at(1140), 480));
        assert!(!settle.observe(at(1289), 480));
        assert!(settle.observe(at(1290), 480));
    }

    #[test]
    fn an_exit_is_noted_once_and_not_at_all_when_the_model_read_it() {
        let shells = BackgroundShells::default();
        let exited = ShellStatus::Exited(Exit::Code(1));
        let noted = fake_shell(&shells, b"one\n\ntwo\nthree\nfour\n", exited);
        let read = fake_shell(&shells, b"done\n", exited);
        let running = fake_shell(&shells, b"serving\n", ShellStatus::Running);
        assert!(shells.take_new_output(&read).is_some());
        let notes = shells.unreported_exits();
        let ids: Vec<&str> = notes.iter().map(|n| n.id.as_str()).collect();
        assert_eq!(ids, [noted.as_str()], "{running} runs, {read} was read");
        let text = notes[0].render();
        assert!(
            text.starts_with(&format!(
                "[{noted} exited with code 1 — last lines: two | three | four;"
            )),
            "{text}"
        );
        assert!(shells.unreported_exits().is_empty(), "told once");
    }

    #[test]
    fn describing_an_unknown_end_never_says_signal_0() {
        let text = ShellStatus::Exited(Exit::Signal(0)).describe();
        assert!(!text.contains("signal"), "{text}");
        assert_eq!(
            ShellStatus::Exited(Exit::Signal(9)).describe(),
            "killed by signal 9"
        );
    }
}
