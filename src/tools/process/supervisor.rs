//! The supervisor: a small process between the agent and each command it runs, so that
//! whatever a command starts can be found and killed — also when the agent itself is
//! killed. It is a fork of the agent's fork server (`super::forkserver`), or, where there
//! is none, the agent binary started again with `FLAG` (`/proc/self/exe`, so a rebuilt
//! binary on disk does not matter), and it:
//!
//! - makes itself a child subreaper (`PR_SET_CHILD_SUBREAPER`): a process below it whose
//!   parent dies (a `setsid -f` daemon, a double fork) becomes its child instead of init's,
//!   so the whole tree stays below it, whatever process group or session it moved to;
//! - starts the command in a process group of its own, stdin from /dev/null, stdout and
//!   stderr into the output pipe the agent gave it as its own stderr (which it then closes,
//!   so the agent sees the pipe end when the command's processes do), and with
//!   `PR_SET_PDEATHSIG` set, so the command dies if the supervisor is killed;
//! - reports on its stdout (`report::Line`, one JSON line each): started, exited, done;
//! - kills the whole tree below it (`tree::kill_subtree`) when the agent asks (a `k` on its
//!   stdin) or goes away (end of file on its stdin: the agent quit, crashed or was killed —
//!   a pipe ends with its process, whichever thread started the supervisor, which is why
//!   this is not left to `PR_SET_PDEATHSIG`, a signal tied to the thread that forked);
//! - when the command ends on its own, reports that and waits for the agent's word: an
//!   `l` (the agent saw the end too) lists what the command left running and exits — a
//!   server it started in the background is the user's, and keeps running; a `k` or end of
//!   file kills it all after all. Deciding on the agent's word, not on the command's end,
//!   matters when the agent goes away first: a command writing to the output nobody reads
//!   any more dies of SIGPIPE, which is no reason to leave its other processes running;
//! - with `SANDBOX_FLAG POLICY` (JSON) before the program, starts the command inside the
//!   OS sandbox (`crate::sandbox`), applied between fork and exec so that everything the
//!   command starts inherits it. The supervisor itself stays outside, free to read `/proc`
//!   and to kill;
//! - with `EGRESS_FLAG FD` after the policy (`[sandbox] allow_hosts`), passes the unix
//!   socket FD on to the sandbox, which sends the command's proxy listener back over it
//!   (`crate::sandbox::egress`), and sets the proxy variables for the command;
//! - with `SESSION_NET_FLAG NET[,USER]` after those (`[sandbox] allow_local_binding`), has
//!   the command join the session's loopback-only network namespace, whose descriptors it
//!   inherited (`crate::sandbox::linux::session_net`);
//! - started as `FLAG MAKE_NET_FLAG FD` instead, it supervises nothing: it makes a
//!   session's namespace and sends it over the unix socket FD, then exits.

use super::events::{Event, Events};
use super::report::{Line, Outcome, Proc, Survivor};
use super::tree::{self, Process};
use crate::sandbox::Policy;
use std::ffi::OsString;
use std::io::Write;
use std::os::fd::AsFd;
use std::os::unix::process::{CommandExt, ExitStatusExt};
use std::process::{ExitCode, Stdio};
use std::time::Duration;

/// The first argument that makes the agent binary a supervisor.
pub const FLAG: &str = "__agent-process-supervisor";

/// The agent's word on the supervisor's stdin: kill everything now.
pub const KILL: u8 = b'k';
/// The agent's word once the command has ended on its own: leave what it left running.
pub const LEAVE: u8 = b'l';

/// Before the program: the next argument is the sandbox policy (JSON) for the command.
pub const SANDBOX_FLAG: &str = "--sandbox-policy";

/// After the policy: the next argument is the descriptor of the unix socket over which the
/// command's egress proxy listener goes to the agent.
pub const EGRESS_FLAG: &str = "--egress";

/// After the policy (and the egress socket): the next argument names the descriptors of the
/// session's network namespace (`NET` or `NET,USER`) the command joins.
pub const SESSION_NET_FLAG: &str = "--session-net";

/// Instead of a program: make a session's network namespace and send it over the unix
/// socket whose descriptor is the next argument.
pub const MAKE_NET_FLAG: &str = "--make-session-net";

/// How long the killing of a tree may take before what still lives is reported.
const PATIENCE: Duration = Duration::from_secs(2);

/// Run as a supervisor if this process was started as one (`agent FLAG PROGRAM ARGS...`):
/// `Some(exit code)` then, `None` for an ordinary start.
pub fn run_if_asked() -> Option<ExitCode> {
    let mut args = std::env::args_os().skip(1);
    if args.next()? != FLAG {
        return None;
    }
    let mut program = args.next();
    #[cfg(target_os = "linux")]
    if program.as_deref() == Some(std::ffi::OsStr::new(MAKE_NET_FLAG)) {
        return Some(make_session_net(args.next()));
    }
    let mut sandbox = None;
    if program.as_deref() == Some(std::ffi::OsStr::new(SANDBOX_FLAG)) {
        let policy = args.next().unwrap_or_default();
        match serde_json::from_str::<Policy>(&policy.to_string_lossy()) {
            Ok(policy) => sandbox = Some(policy),
            Err(e) => {
                report(&Line::Failed {
                    message: format!("the supervisor got an unreadable sandbox policy: {e}"),
                });
                return Some(ExitCode::FAILURE);
            }
        }
        program = args.next();
    }
    let mut egress = None;
    if program.as_deref() == Some(std::ffi::OsStr::new(EGRESS_FLAG)) {
        match args.next().as_deref().and_then(adopt_socket) {
            Some(socket) => egress = Some(socket),
            None => {
                report(&Line::Failed {
                    message: "the supervisor got no egress socket".to_string(),
                });
                return Some(ExitCode::FAILURE);
            }
        }
        program = args.next();
    }
    #[cfg(target_os = "linux")]
    let mut session_net = None;
    #[cfg(target_os = "linux")]
    if program.as_deref() == Some(std::ffi::OsStr::new(SESSION_NET_FLAG)) {
        match args
            .next()
            .as_deref()
            .and_then(std::ffi::OsStr::to_str)
            .and_then(crate::sandbox::linux::session_net::adopt)
        {
            Some(handles) => session_net = Some(handles),
            None => {
                report(&Line::Failed {
                    message: "the supervisor got no session network namespace".to_string(),
                });
                return Some(ExitCode::FAILURE);
            }
        }
        program = args.next();
    }
    #[cfg(not(target_os = "linux"))]
    let session_net = None;
    let Some(program) = program else {
        report(&Line::Failed {
            message: "no command given to the supervisor".to_string(),
        });
        return Some(ExitCode::FAILURE);
    };
    Some(supervise(
        program,
        args.collect(),
        sandbox.as_ref(),
        Descriptors {
            egress,
            session_net,
        },
        None,
    ))
}

/// `MAKE_NET_FLAG FD`: make the namespace and send it; errors on stderr.
#[cfg(target_os = "linux")]
fn make_session_net(socket: Option<OsString>) -> ExitCode {
    use std::os::fd::AsRawFd;
    let Some(socket) = socket.as_deref().and_then(adopt_socket) else {
        eprintln!("no socket to send the session's network namespace over");
        return ExitCode::FAILURE;
    };
    match crate::sandbox::linux::session_net::make_here_and_send(socket.as_raw_fd()) {
        Ok(()) => ExitCode::SUCCESS,
        Err(message) => {
            eprintln!("{message}");
            ExitCode::FAILURE
        }
    }
}

/// What the supervisor inherited for the sandbox besides the policy.
#[derive(Default)]
struct Descriptors {
    /// `[sandbox] allow_hosts`: where the proxy's listener goes.
    egress: Option<std::os::fd::OwnedFd>,
    /// `[sandbox] allow_local_binding`: the session's namespace.
    #[cfg(target_os = "linux")]
    session_net: Option<crate::sandbox::linux::session_net::Handles>,
    #[cfg(not(target_os = "linux"))]
    session_net: Option<()>,
}

/// The inherited socket named by `fd` (a number), made close-on-exec again so that the
/// command does not inherit it: `None` when it is no open socket.
fn adopt_socket(fd: &std::ffi::OsStr) -> Option<std::os::fd::OwnedFd> {
    use std::os::fd::FromRawFd;
    let fd: std::os::fd::RawFd = fd.to_str()?.parse().ok().filter(|fd| *fd > 2)?;
    // SAFETY: fstat into a zeroed struct and fcntl on a descriptor number; the descriptor is
    // owned from here on only once both show it is an open socket of this process.
    unsafe {
        let mut stat: libc::stat = std::mem::zeroed();
        if libc::fstat(fd, &mut stat) != 0 || stat.st_mode & libc::S_IFMT != libc::S_IFSOCK {
            return None;
        }
        if libc::fcntl(fd, libc::F_SETFD, libc::FD_CLOEXEC) != 0 {
            return None;
        }
        Some(std::os::fd::OwnedFd::from_raw_fd(fd))
    }
}

/// The command's working directory and whole environment, when the supervisor was forked
/// (`super::forkserver`) rather than started with them as its own.
pub struct Setup {
    pub cwd: OsString,
    pub env: Vec<(OsString, OsString)>,
}

/// Supervise what the fork server was asked to start, in the process it forked: the
/// exit code.
#[cfg(target_os = "linux")]
pub fn supervise_request(
    request: super::forkserver::Request,
    session_net: Option<crate::sandbox::linux::session_net::Handles>,
) -> i32 {
    let sandbox = match request
        .sandbox
        .as_deref()
        .map(serde_json::from_str::<Policy>)
    {
        None => None,
        Some(Ok(policy)) => Some(policy),
        Some(Err(e)) => {
            report(&Line::Failed {
                message: format!("the supervisor got an unreadable sandbox policy: {e}"),
            });
            return 1;
        }
    };
    let mut argv = request.argv.into_iter();
    let Some(program) = argv.next() else {
        report(&Line::Failed {
            message: "no command given to the supervisor".to_string(),
        });
        return 1;
    };
    let setup = Setup {
        cwd: request.cwd,
        env: request.env,
    };
    let code = supervise(
        program,
        argv.collect(),
        sandbox.as_ref(),
        Descriptors {
            egress: None,
            session_net,
        },
        Some(setup),
    );
    i32::from(code != ExitCode::SUCCESS)
}

fn supervise(
    program: OsString,
    args: Vec<OsString>,
    sandbox: Option<&Policy>,
    descriptors: Descriptors,
    setup: Option<Setup>,
) -> ExitCode {
    // SAFETY: these calls have no memory-safety preconditions.
    let me = unsafe {
        libc::prctl(libc::PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0);
        libc::getpid()
    };
    let started = start(program, args, me, sandbox, descriptors, setup);
    let child = match started {
        Ok(child) => child,
        Err(e) => {
            report(&Line::Failed {
                message: e.to_string(),
            });
            return ExitCode::FAILURE;
        }
    };
    let pid = i32::try_from(child.id()).unwrap_or(i32::MAX);
    report(&Line::Started { pid });
    let Some(mut events) = Events::start(child) else {
        // Without both threads the agent's word or the command's end could go unseen.
        report(&sweep(me, pid));
        return ExitCode::FAILURE;
    };
    // Only once the command has ended may its background processes be left.
    let (mut exit, mut leave) = (None, false);
    let word = loop {
        match events.next() {
            Event::Exited(status) => {
                report(&exited(status));
                exit = Some(status);
                if leave {
                    break Event::Leave;
                }
            }
            Event::Leave if exit.is_some() => break Event::Leave,
            Event::Leave => leave = true,
            Event::Kill => break Event::Kill,
        }
    };
    if matches!(word, Event::Leave) {
        // The command has been reaped; with no child left (`tree::has_children`), nothing
        // lives below this process and `/proc` need not be read (a read of every
        // process's `stat` on the machine: milliseconds on a busy one, per command).
        let left_running = if tree::has_children() {
            tree::descendants(me)
                .iter()
                .filter(|p| p.is_alive())
                .map(|p| proc_of(p, pid))
                .collect()
        } else {
            Vec::new()
        };
        report(&Line::Done(Outcome {
            left_running,
            ..Outcome::default()
        }));
        return ExitCode::SUCCESS;
    }
    let done = sweep(me, pid);
    if exit.is_none()
        && let Some(status) = events.exited_within(PATIENCE)
    {
        report(&exited(status));
    }
    report(&done);
    ExitCode::SUCCESS
}

/// Start the command with the output pipe (our stderr) as its stdout and stderr, then
/// let go of our own copy of the pipe. Called while the supervisor has one thread, so the
/// sandbox's probe may fork.
fn start(
    program: OsString,
    args: Vec<OsString>,
    me: i32,
    sandbox: Option<&Policy>,
    descriptors: Descriptors,
    setup: Option<Setup>,
) -> std::io::Result<std::process::Child> {
    let Descriptors {
        egress,
        session_net,
    } = descriptors;
    let output = std::io::stderr().as_fd().try_clone_to_owned()?;
    #[cfg(target_os = "macos")]
    let (program, args) = match sandbox {
        Some(policy) => {
            let mut argv = vec![program];
            argv.extend(args);
            let mut wrapped = crate::sandbox::seatbelt::wrap(policy, &argv).into_iter();
            let program = wrapped.next().unwrap_or_default();
            (program, wrapped.collect())
        }
        None => (program, args),
    };
    let mut command = std::process::Command::new(program);
    command
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::from(output.try_clone()?))
        .stderr(Stdio::from(output))
        .process_group(0);
    if let Some(setup) = setup {
        command.current_dir(setup.cwd).env_clear().envs(setup.env);
    }
    // SAFETY: the closure runs between fork and exec and only makes async-signal-safe
    // system calls (prctl, getppid).
    unsafe {
        command.pre_exec(move || {
            if libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL, 0, 0, 0) != 0 {
                return Err(std::io::Error::last_os_error());
            }
            // The supervisor died before the signal was armed: do not run at all.
            if libc::getppid() != me {
                return Err(std::io::Error::other("the supervisor is gone"));
            }
            Ok(())
        });
    }
    #[cfg(target_os = "linux")]
    if let Some(policy) = sandbox {
        let mut prepared = crate::sandbox::linux::Prepared::new(policy)
            .map_err(|e| std::io::Error::other(format!("the sandbox could not be set up: {e}")))?;
        crate::sandbox::egress::bridge(policy, &mut command, &mut prepared, egress.as_ref());
        if let Some(handles) = &session_net {
            prepared.join_session_net(handles).map_err(|e| {
                std::io::Error::other(format!("the sandbox could not be set up: {e}"))
            })?;
        }
        // SAFETY: `apply_in_child` only makes system calls on memory prepared here.
        unsafe {
            command.pre_exec(move || prepared.apply_in_child());
        }
    }
    let child = match command.spawn() {
        Ok(child) => child,
        Err(e) => return Err(explain_spawn_failure(e, sandbox)),
    };
    drop(command);
    // The command's child has sent what it had to over the egress socket, and is in the
    // session's namespace (or failed to start).
    drop(egress);
    drop(session_net);
    let null = std::fs::OpenOptions::new().write(true).open("/dev/null")?;
    // SAFETY: dup2 onto stderr with a descriptor this function owns; nothing else in this
    // process holds on to the old stderr.
    if unsafe { libc::dup2(std::os::fd::AsRawFd::as_raw_fd(&null), 2) } < 0 {
        return Err(std::io::Error::last_os_error());
    }
    Ok(child)
}

/// Kill everything below the supervisor; the report of what that did.
fn sweep(me: i32, command: i32) -> Line {
    let sweep = tree::kill_subtree(me, PATIENCE);
    Line::Done(Outcome {
        killed: sweep.killed.iter().map(|p| proc_of(p, command)).collect(),
        survivors: sweep
            .survivors
            .iter()
            .map(|s| Survivor {
                process: proc_of(&s.process, command),
                reason: s.reason.clone(),
            })
            .collect(),
        left_running: Vec::new(),
    })
}

/// A start that failed inside the sandbox says which part of it failed (the errno alone
/// does not): the probe applies the sandbox again in a child of its own.
fn explain_spawn_failure(error: std::io::Error, sandbox: Option<&Policy>) -> std::io::Error {
    let Some(policy) = sandbox else {
        return error;
    };
    match crate::sandbox::probe(policy) {
        Err(reason) => std::io::Error::other(format!(
            "the sandbox could not be applied: {reason}; run the agent with `--sandbox off` \
             to run commands without it"
        )),
        Ok(()) => error,
    }
}

fn exited(status: std::process::ExitStatus) -> Line {
    Line::Exited {
        code: status.code(),
        signal: status.signal(),
    }
}

fn proc_of(process: &Process, command: i32) -> Proc {
    Proc {
        pid: process.pid,
        name: process.name.clone(),
        left_group: process.group != command,
    }
}

/// One report line on stdout. Nobody reads it when the agent is gone: errors are ignored.
///
/// Written to the descriptor itself, not through the process's buffered `Stdout`: a
/// forked supervisor inherits whatever the agent's buffer held when the fork server was
/// forked, which would corrupt the first line.
fn report(line: &Line) {
    static REPORT: std::sync::OnceLock<Option<std::fs::File>> = std::sync::OnceLock::new();
    let report = REPORT.get_or_init(|| {
        std::io::stdout()
            .as_fd()
            .try_clone_to_owned()
            .ok()
            .map(std::fs::File::from)
    });
    if let (Ok(mut text), Some(mut report)) = (serde_json::to_vec(line), report.as_ref()) {
        text.push(b'\n');
        let _ = report.write_all(&text);
    }
}
