//! The fork server (Linux): a small process forked from the agent at start-up, while the
//! agent still has a single thread, that forks a supervisor (`supervisor::supervise`) for
//! each command. Without it every command starts the agent's own binary again as its
//! supervisor: an `exec` of a large program, its dynamic linking and start-up, about
//! 2.8 ms a command; a fork of this small, single-threaded process costs a fraction of it.
//! (The agent cannot fork its supervisors itself: it runs many threads by then, and a
//! forked copy of a multi-threaded process may only make async-signal-safe calls until it
//! `exec`s, while a supervisor allocates, reads `/proc` and starts threads.)
//!
//! The supervisor it forks is the same code with the same three descriptors as one the
//! agent starts (plus, with `[sandbox] allow_local_binding`, the session's network
//! namespace for its command to join, as `supervisor::SESSION_NET_FLAG` passes it): its
//! stdin is the agent's control pipe (end of file when the agent goes away, however it
//! ends), its stdout the report, its stderr the command's output. The agent passes them
//! over a socket (SCM_RIGHTS) with each request, and the server closes its copies as soon
//! as the supervisor is forked, so every guarantee of `supervisor` holds unchanged: the
//! whole tree below it dies on a kill, a timeout, an abort or the agent's death. The agent
//! gets a pidfd of each supervisor in return, to wait for it and (should it hang) kill it
//! without racing a reused pid, the server being its parent.
//!
//! The server is in a process group of its own (the terminal's Ctrl+C is the agent's),
//! holds nothing of the terminal (its stdio is /dev/null), and ends when the agent's end
//! of the socket closes (or, as a second line, by `PR_SET_PDEATHSIG` when the agent ends).
//! Where it cannot start (no pidfds: Linux before 5.3) or has gone, commands start as
//! before: the agent's binary executed again (`super::start`).
//!
//! Written against the system calls (through `rustix` and `libc`) because what runs
//! between the fork and a supervisor's start has to be exactly this; no crate offers a
//! fork server for a program's own code.

use super::supervisor;
use std::ffi::OsString;
use std::io::{IoSlice, IoSliceMut, Read, Write};
use std::mem::MaybeUninit;
use std::os::fd::{AsFd, AsRawFd, BorrowedFd, OwnedFd};
use std::os::unix::ffi::{OsStrExt, OsStringExt};
use std::sync::{Mutex, OnceLock, PoisonError};

use rustix::net::{
    AddressFamily, RecvAncillaryBuffer, RecvAncillaryMessage, RecvFlags, SendAncillaryBuffer,
    SendAncillaryMessage, SendFlags, SocketFlags, SocketType,
};

/// The agent's end of the socket to the server; `None` once the server is gone.
static SERVER: OnceLock<Mutex<Option<std::os::unix::net::UnixStream>>> = OnceLock::new();

/// The most descriptors a request carries: the supervisor's three stdio, and a session's
/// network and user namespaces.
const MAX_FDS: usize = 5;

/// The largest request accepted (the command line and environment are far below it;
/// the kernel's own limit for both together is 2 MB on most systems).
const MAX_REQUEST: usize = 64 * 1024 * 1024;

/// Start the fork server. Does nothing where pidfds are missing.
///
/// # Safety
///
/// The process must have a single thread: the server is a fork of it that goes on running
/// Rust code (allocating, among others).
pub unsafe fn start() {
    if SERVER.get().is_some() {
        return;
    }
    // A pidfd is how the agent waits for and kills a supervisor it is not the parent of.
    if rustix::process::pidfd_open(
        rustix::process::getpid(),
        rustix::process::PidfdFlags::empty(),
    )
    .is_err()
    {
        return;
    }
    let Ok((agent_end, server_end)) = rustix::net::socketpair(
        AddressFamily::UNIX,
        SocketType::STREAM,
        SocketFlags::CLOEXEC,
        None,
    ) else {
        return;
    };
    // SAFETY: getpid has no preconditions.
    let agent = unsafe { libc::getpid() };
    // SAFETY: the process has one thread (the caller's contract), so the child may run
    // any code; it never returns from `serve`.
    match unsafe { libc::fork() } {
        -1 => {}
        0 => {
            drop(agent_end);
            serve(server_end, agent)
        }
        _ => {
            drop(server_end);
            let _ = SERVER.set(Mutex::new(Some(agent_end.into())));
        }
    }
}

/// Whether commands can be started through the server.
pub fn running() -> bool {
    SERVER.get().is_some_and(|server| {
        server
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .is_some()
    })
}

/// What the server is asked to start.
pub struct Request {
    /// The command's working directory.
    pub cwd: OsString,
    /// Its whole environment.
    pub env: Vec<(OsString, OsString)>,
    /// The sandbox policy (JSON), if any.
    pub sandbox: Option<String>,
    pub argv: Vec<OsString>,
}

/// A supervisor the server forked: its pidfd.
pub struct Forked {
    pub pidfd: OwnedFd,
}

/// Why a request did not give a supervisor.
pub enum SpawnError {
    /// There is no server (any more): start the supervisor the other way.
    NotRunning,
    /// The server could not fork one.
    Failed(std::io::Error),
}

/// Ask the server for a supervisor with `control` as its stdin, `report` as its stdout
/// and `output` as its stderr, and — with `[sandbox] allow_local_binding` — the session's
/// network namespace (`net`, then its user namespace if any) for its command to join.
/// Blocking (a fork's time): call it off the async threads.
pub fn spawn(
    request: &Request,
    control: BorrowedFd<'_>,
    report: BorrowedFd<'_>,
    output: BorrowedFd<'_>,
    net: &[BorrowedFd<'_>],
) -> Result<Forked, SpawnError> {
    let Some(server) = SERVER.get() else {
        return Err(SpawnError::NotRunning);
    };
    let mut guard = server.lock().unwrap_or_else(PoisonError::into_inner);
    let Some(socket) = guard.as_mut() else {
        return Err(SpawnError::NotRunning);
    };
    let mut fds = vec![control, report, output];
    fds.extend(net.iter().take(2));
    match exchange(socket, request, &fds) {
        Ok(Ok(pidfd)) => Ok(Forked { pidfd }),
        Ok(Err(errno)) => Err(SpawnError::Failed(std::io::Error::from_raw_os_error(errno))),
        Err(error) => {
            // The server is gone (or the socket broke): never used again.
            tracing::warn!(%error, "the command fork server is gone; supervisors are started from the binary");
            *guard = None;
            Err(SpawnError::NotRunning)
        }
    }
}

/// One request and its answer: the pidfd, or the server's errno.
fn exchange(
    socket: &mut std::os::unix::net::UnixStream,
    request: &Request,
    fds: &[BorrowedFd<'_>],
) -> std::io::Result<Result<OwnedFd, i32>> {
    let payload = encode(request);
    let length = u32::try_from(payload.len())
        .map_err(|_| std::io::Error::other("the command and its environment are too large"))?;
    let header = length.to_le_bytes();
    let mut space = [MaybeUninit::uninit(); rustix::cmsg_space!(ScmRights(MAX_FDS))];
    let mut control = SendAncillaryBuffer::new(&mut space);
    if !control.push(SendAncillaryMessage::ScmRights(fds)) {
        return Err(std::io::Error::other("no room for the descriptors"));
    }
    let sent = rustix::net::sendmsg(
        socket.as_fd(),
        &[IoSlice::new(&header)],
        &mut control,
        SendFlags::NOSIGNAL,
    )?;
    socket.write_all(&header[sent..])?;
    socket.write_all(&payload)?;
    let mut answer = [0u8; 4];
    let (read, mut fds) = receive_with_fds(socket.as_fd(), &mut answer)?;
    if read == 0 {
        return Err(std::io::ErrorKind::UnexpectedEof.into());
    }
    socket.read_exact(&mut answer[read..])?;
    let errno = i32::from_le_bytes(answer);
    if errno != 0 {
        return Ok(Err(errno));
    }
    match fds.pop() {
        Some(pidfd) if fds.is_empty() => Ok(Ok(pidfd)),
        _ => Err(std::io::Error::other(
            "the fork server answered without a pidfd",
        )),
    }
}

/// `recvmsg` into `buffer`, with the descriptors that came along (close-on-exec).
fn receive_with_fds(
    socket: BorrowedFd<'_>,
    buffer: &mut [u8],
) -> std::io::Result<(usize, Vec<OwnedFd>)> {
    let mut space = [MaybeUninit::uninit(); rustix::cmsg_space!(ScmRights(MAX_FDS + 1))];
    let mut control = RecvAncillaryBuffer::new(&mut space);
    let received = loop {
        match rustix::net::recvmsg(
            socket,
            &mut [IoSliceMut::new(buffer)],
            &mut control,
            RecvFlags::CMSG_CLOEXEC,
        ) {
            Err(rustix::io::Errno::INTR) => continue,
            other => break other?,
        }
    };
    let mut fds = Vec::new();
    for message in control.drain() {
        if let RecvAncillaryMessage::ScmRights(rights) = message {
            fds.extend(rights);
        }
    }
    Ok((received.bytes, fds))
}

/// A request as bytes: counts, then length-prefixed fields (paths, arguments and the
/// environment are bytes, not necessarily UTF-8).
fn encode(request: &Request) -> Vec<u8> {
    let mut fields: Vec<&[u8]> = vec![
        request.cwd.as_bytes(),
        request.sandbox.as_deref().map_or(&[][..], str::as_bytes),
    ];
    fields.extend(request.argv.iter().map(|a| a.as_bytes()));
    for (name, value) in &request.env {
        fields.push(name.as_bytes());
        fields.push(value.as_bytes());
    }
    let mut out = Vec::with_capacity(fields.iter().map(|f| f.len() + 4).sum::<usize>() + 12);
    for count in [
        usize::from(request.sandbox.is_some()),
        request.argv.len(),
        request.env.len(),
    ] {
        out.extend_from_slice(&u32::try_from(count).unwrap_or(u32::MAX).to_le_bytes());
    }
    for field in fields {
        out.extend_from_slice(&u32::try_from(field.len()).unwrap_or(u32::MAX).to_le_bytes());
        out.extend_from_slice(field);
    }
    out
}

fn decode(bytes: &[u8]) -> Option<Request> {
    let mut reader = Reader { rest: bytes };
    let (sandboxed, argc, envc) = (reader.number()?, reader.number()?, reader.number()?);
    let cwd = reader.field()?;
    let sandbox = reader.field()?;
    let sandbox = match sandboxed {
        0 => None,
        _ => Some(sandbox.into_string().ok()?),
    };
    let argv = (0..argc)
        .map(|_| reader.field())
        .collect::<Option<Vec<_>>>()?;
    let env = (0..envc)
        .map(|_| Some((reader.field()?, reader.field()?)))
        .collect::<Option<Vec<_>>>()?;
    Some(Request {
        cwd,
        env,
        sandbox,
        argv,
    })
}

struct Reader<'a> {
    rest: &'a [u8],
}

impl Reader<'_> {
    fn number(&mut self) -> Option<usize> {
        let (head, tail) = self.rest.split_first_chunk::<4>()?;
        self.rest = tail;
        usize::try_from(u32::from_le_bytes(*head)).ok()
    }

    fn field(&mut self) -> Option<OsString> {
        let length = self.number()?;
        let (value, tail) = self.rest.split_at_checked(length)?;
        self.rest = tail;
        Some(OsString::from_vec(value.to_vec()))
    }
}

/// SIGCHLD only interrupts the server's wait (then it reaps).
extern "C" fn on_child(_: libc::c_int) {}

/// The server's life: answer requests until the agent's end of the socket closes.
fn serve(socket: OwnedFd, agent: libc::pid_t) -> ! {
    // SAFETY: plain system calls on this process's own state and descriptors; the signal
    // handler does nothing (async-signal-safe by being empty).
    let unblocked = unsafe {
        libc::setpgid(0, 0);
        let null = libc::open(c"/dev/null".as_ptr(), libc::O_RDWR);
        if null >= 0 {
            for fd in 0..3 {
                libc::dup2(null, fd);
            }
            if null > 2 {
                libc::close(null);
            }
        }
        libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL, 0, 0, 0);
        if libc::getppid() != agent {
            libc::_exit(0);
        }
        let mut action: libc::sigaction = std::mem::zeroed();
        action.sa_sigaction = on_child as *const () as libc::sighandler_t;
        action.sa_flags = libc::SA_NOCLDSTOP;
        libc::sigemptyset(&mut action.sa_mask);
        libc::sigaction(libc::SIGCHLD, &action, std::ptr::null_mut());
        // SIGCHLD is blocked except inside `ppoll`: a supervisor ending at any moment
        // interrupts the wait, never a read of a request.
        let mut child: libc::sigset_t = std::mem::zeroed();
        libc::sigemptyset(&mut child);
        libc::sigaddset(&mut child, libc::SIGCHLD);
        let mut unblocked: libc::sigset_t = std::mem::zeroed();
        libc::sigprocmask(libc::SIG_BLOCK, &child, &mut unblocked);
        libc::sigdelset(&mut unblocked, libc::SIGCHLD);
        unblocked
    };
    let mut stream = std::os::unix::net::UnixStream::from(socket);
    loop {
        reap();
        let mut poll = libc::pollfd {
            fd: stream.as_raw_fd(),
            events: libc::POLLIN,
            revents: 0,
        };
        // SAFETY: one valid pollfd, no timeout, a valid signal mask.
        if unsafe { libc::ppoll(&mut poll, 1, std::ptr::null(), &unblocked) } < 0 {
            continue; // EINTR: a supervisor ended.
        }
        let Some((request, fds)) = read_request(&mut stream) else {
            // The agent is gone (or sent what it never sends): nothing more to serve.
            // SAFETY: _exit ends this process without running the agent's exit code.
            unsafe { libc::_exit(0) }
        };
        let answer = fork_supervisor(&stream, request, fds);
        let errno = match &answer {
            Ok(_) => 0,
            Err(errno) => *errno,
        };
        let bytes = errno.to_le_bytes();
        let sent = match &answer {
            Ok(pidfd) => {
                let mut space = [MaybeUninit::uninit(); rustix::cmsg_space!(ScmRights(1))];
                let mut control = SendAncillaryBuffer::new(&mut space);
                let fds = [pidfd.as_fd()];
                let _ = control.push(SendAncillaryMessage::ScmRights(&fds));
                rustix::net::sendmsg(
                    stream.as_fd(),
                    &[IoSlice::new(&bytes)],
                    &mut control,
                    SendFlags::NOSIGNAL,
                )
                .map_err(std::io::Error::from)
                .and_then(|sent| stream.write_all(&bytes[sent..]))
            }
            Err(_) => stream.write_all(&bytes),
        };
        drop(answer);
        if sent.is_err() {
            // SAFETY: as above.
            unsafe { libc::_exit(0) }
        }
    }
}

/// Reap every supervisor that has ended.
fn reap() {
    // SAFETY: waitpid with WNOHANG on this process's own children.
    while unsafe { libc::waitpid(-1, std::ptr::null_mut(), libc::WNOHANG) } > 0 {}
}

/// A request and its descriptors (the three stdio, then a session's namespaces if any);
/// `None` at end of file or on anything malformed.
fn read_request(stream: &mut std::os::unix::net::UnixStream) -> Option<(Request, Vec<OwnedFd>)> {
    let mut header = [0u8; 4];
    let (read, fds) = receive_with_fds(stream.as_fd(), &mut header).ok()?;
    if read == 0 {
        return None;
    }
    stream.read_exact(&mut header[read..]).ok()?;
    let length = usize::try_from(u32::from_le_bytes(header)).ok()?;
    if length > MAX_REQUEST {
        return None;
    }
    let mut payload = vec![0u8; length];
    stream.read_exact(&mut payload).ok()?;
    if !(3..=MAX_FDS).contains(&fds.len()) {
        return None;
    }
    Some((decode(&payload)?, fds))
}

/// Fork a supervisor for `request`: its pidfd, or the errno of what failed.
fn fork_supervisor(
    stream: &std::os::unix::net::UnixStream,
    request: Request,
    fds: Vec<OwnedFd>,
) -> Result<OwnedFd, i32> {
    let errno = || {
        std::io::Error::last_os_error()
            .raw_os_error()
            .unwrap_or(libc::EIO)
    };
    // SAFETY: this process has a single thread (the server never starts one).
    match unsafe { libc::fork() } {
        -1 => Err(errno()),
        0 => become_supervisor(stream.as_raw_fd(), request, fds),
        pid => {
            drop(fds);
            // The child cannot have been reaped yet (only `reap` does), so the pid is its.
            let pidfd = rustix::process::Pid::from_raw(pid).and_then(|pid| {
                rustix::process::pidfd_open(pid, rustix::process::PidfdFlags::empty()).ok()
            });
            match pidfd {
                Some(pidfd) => Ok(pidfd),
                None => {
                    // SAFETY: kill of our own unreaped child.
                    unsafe { libc::kill(pid, libc::SIGKILL) };
                    Err(errno())
                }
            }
        }
    }
}

/// In the forked child: take the three descriptors as stdio, leave the server's state
/// behind, and supervise the command; never returns.
fn become_supervisor(server: i32, request: Request, mut fds: Vec<OwnedFd>) -> ! {
    // After the three stdio: the session's namespaces (close-on-exec, as received).
    let mut net = fds.split_off(3.min(fds.len())).into_iter();
    let session_net = net
        .next()
        .map(|net_fd| crate::sandbox::linux::session_net::Handles {
            net: net_fd,
            user: net.next(),
        });
    // SAFETY: system calls on this process's own signal state and descriptors; the
    // descriptors in `fds` are open and owned here.
    unsafe {
        let mut empty: libc::sigset_t = std::mem::zeroed();
        libc::sigemptyset(&mut empty);
        libc::sigprocmask(libc::SIG_SETMASK, &empty, std::ptr::null_mut());
        libc::signal(libc::SIGCHLD, libc::SIG_DFL);
        // Its own process group, as a supervisor the agent starts (see `super::start`).
        libc::setpgid(0, 0);
        libc::close(server);
        for (target, fd) in [0, 1, 2].into_iter().zip(&fds) {
            // dup2 clears close-on-exec on the copy: these three are the supervisor's
            // stdio, as if it had been started with them.
            if libc::dup2(fd.as_raw_fd(), target) < 0 {
                libc::_exit(1);
            }
        }
    }
    // The originals go: a copy of the output pipe left open here would keep the agent
    // from seeing the pipe end when the command's processes are done.
    drop(fds);
    let code = supervisor::supervise_request(request, session_net);
    // SAFETY: _exit ends this process without running the agent's exit code (the
    // supervisor's report is flushed line by line).
    unsafe { libc::_exit(code) }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_request_survives_its_encoding_byte_for_byte() {
        let request = Request {
            cwd: OsString::from_vec(b"/tmp/\xffodd dir".to_vec()),
            env: vec![
                ("PATH".into(), "/usr/bin:/bin".into()),
                ("EMPTY".into(), "".into()),
            ],
            sandbox: Some("{\"mode\":\"x\"}".to_string()),
            argv: vec!["bash".into(), "-c".into(), "echo 'a b'\n".into()],
        };
        let decoded = decode(&encode(&request)).unwrap();
        assert_eq!(decoded.cwd, request.cwd);
        assert_eq!(decoded.env, request.env);
        assert_eq!(decoded.sandbox, request.sandbox);
        assert_eq!(decoded.argv, request.argv);
        let unsandboxed = Request {
            sandbox: None,
            ..request
        };
        assert_eq!(decode(&encode(&unsandboxed)).unwrap().sandbox, None);
        let bytes = encode(&unsandboxed);
        assert!(decode(&bytes[..bytes.len() - 1]).is_none());
    }
}
