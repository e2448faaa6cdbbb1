//! The network of a command under `[sandbox] allow_hosts`: a network namespace of its own,
//! in which only the loopback interface exists, and one listening socket on it
//! (`127.0.0.1:PROXY_PORT`) that the agent's egress proxy serves.
//!
//! The listener is made by the child between fork and exec — inside the new namespace, so
//! it belongs to it — and handed out over a unix socket (`SCM_RIGHTS`) before the child
//! closes its own copy and execs. A socket keeps the namespace it was made in wherever its
//! descriptor goes, so the agent accepts the command's connections on it directly from its
//! own namespace and opens the upstream connections there. This is the choice of where
//! the "in-namespace forwarder" lives: nowhere. No thread or process relays bytes between
//! the namespace and the proxy (no supervisor thread, nothing a fork server would have to
//! carry), so a connection costs the proxy's work and nothing more, and the command's only
//! way out of its namespace is that one listener.
//!
//! The seccomp filter in this mode lets the command make IPv4, IPv6 and unix sockets (a
//! client must reach the listener, and a test server may listen on loopback); every other
//! family (netlink, packet) and `io_uring_setup` stay refused. What the command reaches
//! with them is its own loopback and nothing else.
//!
//! `Bridge::enter` makes system calls only (no allocation), for the child after fork.

use super::last_errno;
use seccompiler::BpfProgram;
use std::os::fd::{AsRawFd, BorrowedFd, FromRawFd, OwnedFd, RawFd};

/// The port the proxy listens on inside the command's namespace. Any port is free in a
/// namespace that was just made; 3128 is the one proxies are known by.
pub const PROXY_PORT: u16 = 3128;

/// The namespace and its listener, for one command.
#[derive(Debug, Default)]
pub struct Bridge {
    /// Where the listener goes: a unix socket to the agent (`None` in the probe, which
    /// only finds out whether the namespace can be made).
    to: Option<RawFd>,
}

impl Bridge {
    /// Send the listener over `socket` (which must stay open until the child has run).
    pub fn send_to(&mut self, socket: RawFd) {
        self.to = Some(socket);
    }

    /// In the child: a network namespace with `lo` up and the proxy's listener on it,
    /// sent where `send_to` said. `Err(errno)` on failure. System calls only.
    pub fn enter(&self) -> Result<(), i32> {
        // SAFETY: plain system calls on stack values this function owns.
        unsafe {
            if libc::unshare(libc::CLONE_NEWNET) != 0 {
                return Err(last_errno());
            }
            loopback_up()?;
            let listener = libc::socket(libc::AF_INET, libc::SOCK_STREAM | libc::SOCK_CLOEXEC, 0);
            if listener < 0 {
                return Err(last_errno());
            }
            let result = listen(listener).and_then(|()| match self.to {
                Some(to) => send_fd(to, listener, 0),
                None => Ok(()),
            });
            libc::close(listener);
            result
        }
    }
}

/// Bring the namespace's `lo` up (it starts down).
pub(super) unsafe fn loopback_up() -> Result<(), i32> {
    // SAFETY: socket/ioctl/close with a zeroed `ifreq` on the stack.
    unsafe {
        let fd = libc::socket(libc::AF_INET, libc::SOCK_DGRAM | libc::SOCK_CLOEXEC, 0);
        if fd < 0 {
            return Err(last_errno());
        }
        let mut request: libc::ifreq = std::mem::zeroed();
        for (slot, byte) in request.ifr_name.iter_mut().zip(b"lo\0") {
            *slot = *byte as libc::c_char;
        }
        let mut result = Ok(());
        if libc::ioctl(fd, libc::SIOCGIFFLAGS, &mut request) != 0 {
            result = Err(last_errno());
        } else {
            let up = libc::c_short::try_from(libc::IFF_UP | libc::IFF_RUNNING).unwrap_or(1);
            request.ifr_ifru.ifru_flags |= up;
            if libc::ioctl(fd, libc::SIOCSIFFLAGS, &request) != 0 {
                result = Err(last_errno());
            }
        }
        libc::close(fd);
        result
    }
}

/// Bind `fd` to 127.0.0.1:PROXY_PORT and listen.
unsafe fn listen(fd: RawFd) -> Result<(), i32> {
    let address = libc::sockaddr_in {
        sin_family: libc::sa_family_t::try_from(libc::AF_INET).unwrap_or(2),
        sin_port: PROXY_PORT.to_be(),
        sin_addr: libc::in_addr {
            s_addr: u32::from(std::net::Ipv4Addr::LOCALHOST).to_be(),
        },
        sin_zero: [0; 8],
    };
    // SAFETY: bind/listen with a live sockaddr_in and its size.
    unsafe {
        if libc::bind(
            fd,
            (&raw const address).cast(),
            libc::socklen_t::try_from(std::mem::size_of::<libc::sockaddr_in>()).unwrap_or(16),
        ) != 0
            || libc::listen(fd, 128) != 0
        {
            return Err(last_errno());
        }
    }
    Ok(())
}

/// The size of a descriptor in a control message.
const FD_SIZE: u32 = 4;
const _: () = assert!(std::mem::size_of::<RawFd>() == FD_SIZE as usize);

/// Room for one `SCM_RIGHTS` message carrying one descriptor (`CMSG_SPACE(4)` is 24 on
/// 64-bit Linux, 16 on 32-bit), aligned for `cmsghdr`.
#[repr(C, align(8))]
struct ControlRoom([u8; 32]);

/// Send `fd` over the unix socket `to`, with one byte of data, `tag`.
pub(super) unsafe fn send_fd(to: RawFd, fd: RawFd, tag: u8) -> Result<(), i32> {
    // SAFETY: sendmsg with a message whose buffers live on this stack frame; the CMSG
    // macros stay inside `room` (its size is checked against CMSG_SPACE).
    unsafe {
        let mut byte = [tag; 1];
        let mut iov = libc::iovec {
            iov_base: byte.as_mut_ptr().cast(),
            iov_len: 1,
        };
        let mut room = ControlRoom([0; 32]);
        let space = libc::CMSG_SPACE(FD_SIZE) as usize;
        if space > room.0.len() {
            return Err(libc::EINVAL);
        }
        let mut message: libc::msghdr = std::mem::zeroed();
        message.msg_iov = &mut iov;
        message.msg_iovlen = 1;
        message.msg_control = room.0.as_mut_ptr().cast();
        message.msg_controllen = space as _;
        let header = libc::CMSG_FIRSTHDR(&message);
        if header.is_null() {
            return Err(libc::EINVAL);
        }
        (*header).cmsg_level = libc::SOL_SOCKET;
        (*header).cmsg_type = libc::SCM_RIGHTS;
        (*header).cmsg_len = libc::CMSG_LEN(FD_SIZE) as _;
        std::ptr::write_unaligned(libc::CMSG_DATA(header).cast::<RawFd>(), fd);
        loop {
            if libc::sendmsg(to, &message, libc::MSG_NOSIGNAL) == 1 {
                return Ok(());
            }
            if last_errno() != libc::EINTR {
                return Err(last_errno());
            }
        }
    }
}

/// In the agent, once the command runs: the listener its child sent over `socket`
/// (without waiting: it was sent before the command started).
pub fn receive_listener(socket: BorrowedFd<'_>) -> std::io::Result<std::net::TcpListener> {
    let Some((_, owned)) = receive_fd(socket)? else {
        return Err(std::io::Error::other(
            "the command's network namespace sent no listener",
        ));
    };
    let listener = std::net::TcpListener::from(owned);
    listener.set_nonblocking(true)?;
    Ok(listener)
}

/// One descriptor sent over `socket` with `send_fd` and its tag, without waiting (close-on-
/// exec here); `None` when nothing (more) was sent.
pub(super) fn receive_fd(socket: BorrowedFd<'_>) -> std::io::Result<Option<(u8, OwnedFd)>> {
    let mut byte = [0u8; 1];
    let mut iov = libc::iovec {
        iov_base: byte.as_mut_ptr().cast(),
        iov_len: 1,
    };
    let mut room = ControlRoom([0; 32]);
    // SAFETY: a zeroed msghdr pointing at buffers on this stack frame; recvmsg fills them
    // and the CMSG macros read inside `room` (msg_controllen is what the kernel wrote).
    unsafe {
        let mut message: libc::msghdr = std::mem::zeroed();
        message.msg_iov = &mut iov;
        message.msg_iovlen = 1;
        message.msg_control = room.0.as_mut_ptr().cast();
        message.msg_controllen = room.0.len() as _;
        let received = libc::recvmsg(
            socket.as_raw_fd(),
            &mut message,
            libc::MSG_DONTWAIT | libc::MSG_CMSG_CLOEXEC,
        );
        if received < 0 {
            let error = std::io::Error::last_os_error();
            if error.kind() == std::io::ErrorKind::WouldBlock {
                return Ok(None);
            }
            return Err(error);
        }
        let header = libc::CMSG_FIRSTHDR(&message);
        if received != 1
            || header.is_null()
            || (*header).cmsg_level != libc::SOL_SOCKET
            || (*header).cmsg_type != libc::SCM_RIGHTS
        {
            return Ok(None);
        }
        let fd = std::ptr::read_unaligned(libc::CMSG_DATA(header).cast::<RawFd>());
        Ok(Some((byte[0], OwnedFd::from_raw_fd(fd))))
    }
}

/// The seccomp filter under `allow_hosts`: `socket` of any family but unix, IPv4 and IPv6
/// fails with `EPERM`, and so does `io_uring_setup`.
pub fn loopback_filter() -> Result<BpfProgram, String> {
    super::filters::sockets_only_of(&[libc::AF_UNIX, libc::AF_INET, libc::AF_INET6])
}
