//! `[sandbox] allow_local_binding`: one network namespace per agent session, shared by all
//! the session's sandboxed commands, in which only the loopback interface exists. A dev
//! server one command starts in the background listens there, and the next command reaches
//! it on 127.0.0.1; nothing in the namespace reaches the host's loopback, another host, or
//! another session's namespace, because no interface leads there. (Seccomp cannot look at
//! the address a socket binds or connects to, and Landlock's network rules know ports, not
//! addresses — so the loopback-only guarantee has to come from a namespace.)
//!
//! - `make_here_and_send`: in a short-lived process of its own (the supervisor program
//!   started with `MAKE_FLAG`, single-threaded), make the namespace — with a user namespace
//!   around it when the process lacks CAP_SYS_ADMIN, as the mount step does — bring `lo` up,
//!   and send descriptors of the namespaces to the agent (`SCM_RIGHTS`). The agent keeps
//!   them (`Handles`): an open namespace descriptor keeps the namespace alive, and it goes
//!   with the agent and the last process in it.
//! - `join`: in each command's child, between fork and exec and before every other step
//!   of the sandbox, `setns` into the user namespace (when there is one: the child is
//!   single-threaded and its uid owns it) and then the network namespace. The rest of the
//!   sandbox follows unchanged (its own mount namespace nested inside, capabilities
//!   dropped, Landlock, and a seccomp filter that allows IPv4, IPv6 and unix sockets only:
//!   netlink and packet sockets stay refused, so nothing can reconfigure or sniff it).

use super::last_errno;
use super::netns::{loopback_up, receive_fd, send_fd};
use std::os::fd::{AsRawFd, BorrowedFd, FromRawFd, OwnedFd, RawFd};

/// The tag of the user namespace's descriptor.
const USER_TAG: u8 = b'u';
/// The tag of the network namespace's descriptor.
const NET_TAG: u8 = b'n';

/// A session's namespace as the agent holds it.
#[derive(Debug)]
pub struct Handles {
    pub net: OwnedFd,
    /// The user namespace around it (made by an unprivileged agent).
    pub user: Option<OwnedFd>,
}

impl Handles {
    /// The descriptors for the supervisor's command line: `NET` or `NET,USER`.
    pub fn argument(&self) -> String {
        match &self.user {
            Some(user) => format!("{},{}", self.net.as_raw_fd(), user.as_raw_fd()),
            None => self.net.as_raw_fd().to_string(),
        }
    }

    /// Every descriptor, for a child that must inherit them.
    pub fn raw(&self) -> Vec<RawFd> {
        std::iter::once(self.net.as_raw_fd())
            .chain(self.user.as_ref().map(AsRawFd::as_raw_fd))
            .collect()
    }
}

/// Parse `NET` or `NET,USER` (the supervisor's argument) into the descriptors it names,
/// made close-on-exec (the command must not inherit them: it only needs to be in the
/// namespace). `None` when one is not open.
pub fn adopt(argument: &str) -> Option<Handles> {
    let mut parts = argument.split(',');
    let net = adopt_fd(parts.next()?)?;
    let user = match parts.next() {
        Some(user) => Some(adopt_fd(user)?),
        None => None,
    };
    Some(Handles { net, user })
}

fn adopt_fd(text: &str) -> Option<OwnedFd> {
    let fd: RawFd = text.parse().ok().filter(|fd| *fd > 2)?;
    // SAFETY: fcntl on a descriptor number; it is owned from here on only once that shows
    // it is open in this process.
    unsafe {
        if libc::fcntl(fd, libc::F_SETFD, libc::FD_CLOEXEC) != 0 {
            return None;
        }
        Some(OwnedFd::from_raw_fd(fd))
    }
}

/// A step of making the namespace, for what a failure says.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Step {
    Unshare = 1,
    MapIds = 2,
    Loopback = 3,
}

impl Step {
    fn what(self) -> &'static str {
        match self {
            Step::Unshare => "make a network namespace",
            Step::MapIds => "map the user namespace's ids",
            Step::Loopback => "bring the loopback interface up",
        }
    }

    fn decode(code: i32) -> Option<Step> {
        [Step::Unshare, Step::MapIds, Step::Loopback]
            .into_iter()
            .find(|step| *step as i32 == code)
    }
}

fn failed(what: &str, errno: i32) -> String {
    format!(
        "cannot {what}: {}",
        std::io::Error::from_raw_os_error(errno)
    )
}

/// The id maps of the user namespace an unprivileged maker puts around the network
/// namespace (the user mapped to itself), written before any fork.
fn id_maps() -> [(&'static std::ffi::CStr, Vec<u8>); 3] {
    // SAFETY: getuid and getgid cannot fail and touch no memory.
    let (uid, gid) = unsafe { (libc::getuid(), libc::getgid()) };
    [
        (c"/proc/self/setgroups", b"deny".to_vec()),
        (
            c"/proc/self/uid_map",
            format!("{uid} {uid} 1\n").into_bytes(),
        ),
        (
            c"/proc/self/gid_map",
            format!("{gid} {gid} 1\n").into_bytes(),
        ),
    ]
}

/// Make the namespace in this single-threaded process (in a user namespace of its own
/// unless `privileged`) and bring its loopback up. System calls only, on data prepared
/// before (it also runs in a forked child: `probe`).
///
/// # Safety
/// The calling process must have one thread (unshare of a user namespace requires it).
unsafe fn make_here(
    privileged: bool,
    maps: &[(&std::ffi::CStr, Vec<u8>)],
) -> Result<(), (Step, i32)> {
    // SAFETY: plain system calls on NUL-terminated strings and buffers owned by the caller.
    unsafe {
        let flags = if privileged {
            libc::CLONE_NEWNET
        } else {
            libc::CLONE_NEWUSER | libc::CLONE_NEWNET
        };
        if libc::unshare(flags) != 0 {
            return Err((Step::Unshare, last_errno()));
        }
        if !privileged {
            for (path, text) in maps {
                super::mounts::write_proc(path, text).map_err(|e| (Step::MapIds, e))?;
            }
        }
        loopback_up().map_err(|e| (Step::Loopback, e))
    }
}

/// In the maker process (single-threaded): make the namespace and send its descriptors
/// over the unix socket `to`.
pub fn make_here_and_send(to: RawFd) -> Result<(), String> {
    let privileged = super::mounts::has_sys_admin();
    let maps = id_maps();
    // SAFETY: the maker is a fresh supervisor process with one thread.
    unsafe { make_here(privileged, &maps) }.map_err(|(step, e)| failed(step.what(), e))?;
    let mut sent = Vec::new();
    if !privileged {
        sent.push((c"/proc/self/ns/user", USER_TAG));
    }
    sent.push((c"/proc/self/ns/net", NET_TAG));
    for (path, tag) in sent {
        // SAFETY: open/close on a NUL-terminated path; `send_fd` on descriptors owned here.
        unsafe {
            let fd = libc::open(path.as_ptr(), libc::O_RDONLY | libc::O_CLOEXEC);
            if fd < 0 {
                return Err(failed("open the namespace", last_errno()));
            }
            let result = send_fd(to, fd, tag);
            libc::close(fd);
            result.map_err(|e| failed("send the namespace to the agent", e))?;
        }
    }
    Ok(())
}

/// Whether the kernel lets this process make a session's namespace: the maker's steps,
/// tried at start in a forked child that exits at once (so nothing of it stays), and why
/// not — for the start-up notice, since a command would meet the same refusal only later.
/// Call it while the process has one thread, as the sandbox's own probe.
pub fn probe() -> Result<(), String> {
    let privileged = super::mounts::has_sys_admin();
    let maps = id_maps();
    let mut fds = [0; 2];
    // SAFETY: fork with a child that only makes system calls on memory prepared before
    // the fork (`make_here`, write, _exit); the parent waits for it.
    unsafe {
        if libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) != 0 {
            return Err(failed("test the network namespace", last_errno()));
        }
        let pid = libc::fork();
        if pid == 0 {
            libc::close(fds[0]);
            let code = match make_here(privileged, &maps) {
                Ok(()) => [0, 0],
                Err((step, errno)) => [step as i32, errno],
            };
            libc::write(fds[1], code.as_ptr().cast(), std::mem::size_of_val(&code));
            libc::_exit(0);
        }
        libc::close(fds[1]);
        if pid < 0 {
            libc::close(fds[0]);
            return Err(failed("test the network namespace", last_errno()));
        }
        let mut code = [0i32; 2];
        let read = libc::read(
            fds[0],
            code.as_mut_ptr().cast(),
            std::mem::size_of_val(&code),
        );
        libc::close(fds[0]);
        let mut status = 0;
        libc::waitpid(pid, &mut status, 0);
        if usize::try_from(read).ok() != Some(std::mem::size_of_val(&code)) {
            return Err("the network namespace test process died".to_string());
        }
        match Step::decode(code[0]) {
            None => Ok(()),
            Some(step) => Err(failed(step.what(), code[1])),
        }
    }
}

/// In the agent, once the maker has exited: the descriptors it sent over `socket`.
pub fn receive(socket: BorrowedFd<'_>) -> std::io::Result<Handles> {
    let (mut net, mut user) = (None, None);
    while let Some((tag, fd)) = receive_fd(socket)? {
        match tag {
            NET_TAG => net = Some(fd),
            USER_TAG => user = Some(fd),
            _ => {}
        }
    }
    let net = net.ok_or_else(|| std::io::Error::other("the namespace maker sent nothing"))?;
    Ok(Handles { net, user })
}

/// In the command's child: enter the session's namespaces (`setns`). System calls only.
pub(super) fn join(net: RawFd, user: Option<RawFd>) -> Result<(), i32> {
    // SAFETY: setns on descriptor numbers; a bad one fails with EBADF.
    unsafe {
        if let Some(user) = user
            && libc::setns(user, libc::CLONE_NEWUSER) != 0
        {
            return Err(last_errno());
        }
        if libc::setns(net, libc::CLONE_NEWNET) != 0 {
            return Err(last_errno());
        }
    }
    Ok(())
}
