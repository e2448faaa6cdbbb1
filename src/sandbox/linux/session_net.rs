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

/// In the maker process (single-threaded): make the namespace and send its descriptors
/// over the unix socket `to`.
pub fn make_here_and_send(to: RawFd) -> Result<(), String> {
    let privileged = super::mounts::has_sys_admin();
    let failed = |what: &str, errno: i32| {
        format!(
            "cannot {what}: {}",
            std::io::Error::from_raw_os_error(errno)
        )
    };
    // SAFETY: getuid and getgid cannot fail and touch no memory.
    let (uid, gid) = unsafe { (libc::getuid(), libc::getgid()) };
    // SAFETY: plain system calls on NUL-terminated strings and buffers owned here; the
    // process has one thread (a fresh supervisor process), as unshare of a user namespace
    // requires.
    unsafe {
        let flags = if privileged {
            libc::CLONE_NEWNET
        } else {
            libc::CLONE_NEWUSER | libc::CLONE_NEWNET
        };
        if libc::unshare(flags) != 0 {
            return Err(failed("make a network namespace", last_errno()));
        }
        if !privileged {
            let maps = [
                (c"/proc/self/setgroups", "deny".to_string()),
                (c"/proc/self/uid_map", format!("{uid} {uid} 1\n")),
                (c"/proc/self/gid_map", format!("{gid} {gid} 1\n")),
            ];
            for (path, text) in maps {
                super::mounts::write_proc(path, text.as_bytes())
                    .map_err(|e| failed("map the user namespace's ids", e))?;
            }
        }
        loopback_up().map_err(|e| failed("bring the loopback interface up", e))?;
        let mut sent = Vec::new();
        if !privileged {
            sent.push((c"/proc/self/ns/user", USER_TAG));
        }
        sent.push((c"/proc/self/ns/net", NET_TAG));
        for (path, tag) in sent {
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
