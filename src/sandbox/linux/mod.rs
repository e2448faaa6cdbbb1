//! Enforcing a `Policy` on Linux, in the child between fork and exec, in this order:
//!
//! 1. A mount namespace of the command's own (`mounts`): writable roots `nodev`, the paths
//!    `guard` keeps read-only bound read-only, the directories holding them pinned, the
//!    paths `deny_read` keeps from reading covered by empty, unopenable mounts.
//! 2. Every capability dropped (`privileges`): root inside the sandbox cannot make devices,
//!    mount, or override file modes.
//! 3. Landlock, which also sets `no_new_privs` and forbids unmounting what step 1 mounted,
//!    and the seccomp filter for the network (`filters`).
//!
//! With `[sandbox] allow_hosts` (the policy's `egress`), between steps 1 and 2 the command
//! also gets a network namespace of its own whose one way out is the egress proxy's
//! listener (`netns`), and the seccomp filter lets it make the sockets that reach it.
//!
//! With `[sandbox] allow_local_binding` (the policy's `local_binding`) the command first
//! joins its session's loopback-only network namespace (`session_net`), before step 1, and
//! the seccomp filter lets it make IPv4 and IPv6 sockets there.
//!
//! Everything that allocates or opens paths happens in `Prepared::new`, in the parent; the
//! child (`Prepared::apply`) only makes system calls, so it is safe after a fork of a
//! process with threads (and from a fork server).

mod filters;
mod mounts;
pub mod netns;
mod privileges;
pub mod session_net;

use super::Policy;
use landlock::{RulesetCreated, RulesetStatus};
use mounts::{Kind, Plan};
use seccompiler::BpfProgram;

/// Where applying the sandbox failed, with the errno.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Failure {
    /// A mount (or user) namespace could not be made.
    Namespace(i32),
    /// A mount of the plan could not be made.
    Mount(i32),
    /// A capability could not be dropped.
    Privileges(i32),
    /// Landlock refused.
    Landlock(i32),
    /// The kernel has no (enabled) Landlock.
    LandlockMissing,
    /// The seccomp filter could not be installed.
    Seccomp(i32),
    /// The network namespace for `allow_hosts` could not be made.
    Network(i32),
    /// The session's loopback network namespace could not be joined.
    SessionNet(i32),
}

impl Failure {
    pub fn describe(self) -> String {
        let os = |errno: i32| std::io::Error::from_raw_os_error(errno).to_string();
        match self {
            Failure::Namespace(e) => format!(
                "cannot make a mount namespace to keep .git and the agent's files read-only ({})",
                os(e)
            ),
            Failure::Mount(e) => format!(
                "cannot mount the writable roots nodev or the protected paths read-only ({})",
                os(e)
            ),
            Failure::Privileges(e) => format!("cannot drop the capabilities ({})", os(e)),
            Failure::Landlock(e) => format!("Landlock refused the rules ({})", os(e)),
            Failure::LandlockMissing => {
                "this kernel does not enforce Landlock (it needs Linux 5.13 or newer with \
                 Landlock enabled, e.g. lsm=landlock)"
                    .to_string()
            }
            Failure::Seccomp(e) => format!(
                "cannot install the seccomp filter that turns the network off ({})",
                os(e)
            ),
            Failure::Network(e) => format!(
                "cannot make the network namespace that lets commands reach [sandbox] \
                 allow_hosts through the agent's proxy ({})",
                os(e)
            ),
            Failure::SessionNet(e) => format!(
                "cannot join the session's loopback network namespace for [sandbox] \
                 allow_local_binding ({})",
                os(e)
            ),
        }
    }

    /// The errno a `pre_exec` hook fails with.
    fn errno(self) -> i32 {
        match self {
            Failure::Namespace(e)
            | Failure::Mount(e)
            | Failure::Privileges(e)
            | Failure::Landlock(e)
            | Failure::Seccomp(e)
            | Failure::Network(e)
            | Failure::SessionNet(e) => e,
            Failure::LandlockMissing => libc::ENOSYS,
        }
    }

    /// Two integers that cross a pipe (the probe's child to its parent).
    fn encode(self) -> [i32; 2] {
        match self {
            Failure::Namespace(e) => [1, e],
            Failure::Mount(e) => [2, e],
            Failure::Landlock(e) => [3, e],
            Failure::LandlockMissing => [4, 0],
            Failure::Seccomp(e) => [5, e],
            Failure::Privileges(e) => [6, e],
            Failure::Network(e) => [7, e],
            Failure::SessionNet(e) => [8, e],
        }
    }

    fn decode(code: [i32; 2]) -> Option<Failure> {
        Some(match code {
            [0, _] => return None,
            [1, e] => Failure::Namespace(e),
            [2, e] => Failure::Mount(e),
            [3, e] => Failure::Landlock(e),
            [4, _] => Failure::LandlockMissing,
            [6, e] => Failure::Privileges(e),
            [7, e] => Failure::Network(e),
            [8, e] => Failure::SessionNet(e),
            [_, e] => Failure::Seccomp(e),
        })
    }
}

/// Everything the child needs, built in the parent.
pub struct Prepared {
    /// `None` once applied.
    ruleset: Option<RulesetCreated>,
    filter: Option<BpfProgram>,
    plan: Plan,
    /// With `allow_hosts`: the command's network namespace and the proxy's listener.
    bridge: Option<netns::Bridge>,
    /// Whether the policy lets the command join its session's namespace.
    local_binding: bool,
    /// The session's namespace to join (network, user), once given (`join_session_net`).
    session_net: Option<(std::os::fd::RawFd, Option<std::os::fd::RawFd>)>,
}

#[derive(Debug, thiserror::Error)]
pub enum PrepareError {
    #[error("cannot build the Landlock rules: {0}")]
    Landlock(#[from] landlock::RulesetError),
    #[error("cannot build the seccomp filter: {0}")]
    Seccomp(String),
}

impl Prepared {
    /// Prepare `policy`; its guards are found now when it has none yet.
    pub fn new(policy: &Policy) -> Result<Prepared, PrepareError> {
        let found;
        let guards = match &policy.guards {
            Some(guards) => guards,
            None => {
                found = super::guard::discover(policy, &policy.cwd, &Default::default());
                &found
            }
        };
        // Outer mounts before the ones inside them.
        let mut writable: Vec<_> = policy.writable.iter().collect();
        writable.sort_by_key(|p| p.components().count());
        let plan = Plan::new(
            writable
                .into_iter()
                .map(|p| (Kind::Writable, p.as_path()))
                .chain(guards.pinned.iter().map(|p| (Kind::Pin, p.as_path())))
                .chain(
                    guards
                        .read_only
                        .iter()
                        .map(|g| (Kind::ReadOnly, g.path.as_path())),
                )
                .chain(
                    guards
                        .unreadable
                        .iter()
                        .map(|p| (Kind::Mask(p.is_dir()), p.as_path())),
                ),
        );
        let bridge = policy.egress_bridge().then(netns::Bridge::default);
        let filter = if policy.network {
            None
        } else if bridge.is_some() {
            Some(netns::loopback_filter().map_err(PrepareError::Seccomp)?)
        } else {
            Some(filters::network_filter().map_err(PrepareError::Seccomp)?)
        };
        Ok(Prepared {
            ruleset: Some(filters::ruleset(policy)?),
            filter,
            plan,
            bridge,
            local_binding: policy.local_binding && !policy.network && !policy.egress_bridge(),
            session_net: None,
        })
    }

    /// With `local_binding`: join the session's namespace (`handles` stays open until the
    /// command has started), and only then allow IPv4 and IPv6 sockets. A policy without
    /// `local_binding` ignores it: the command keeps the unix-only filter.
    pub fn join_session_net(&mut self, handles: &session_net::Handles) -> Result<(), PrepareError> {
        use std::os::fd::AsRawFd;
        if !self.local_binding {
            return Ok(());
        }
        self.filter = Some(netns::loopback_filter().map_err(PrepareError::Seccomp)?);
        self.session_net = Some((
            handles.net.as_raw_fd(),
            handles.user.as_ref().map(AsRawFd::as_raw_fd),
        ));
        Ok(())
    }

    /// With `allow_hosts`: send the proxy's listener over the unix socket `socket` (kept
    /// open until the command has started), where the agent receives it.
    pub fn send_listener_to(&mut self, socket: std::os::fd::RawFd) {
        if let Some(bridge) = &mut self.bridge {
            bridge.send_to(socket);
        }
    }

    /// Apply the sandbox to the calling (single-threaded, forked) process. Makes system
    /// calls only: no allocation, no locks.
    pub fn apply(&mut self) -> Result<(), Failure> {
        if let Some((net, user)) = self.session_net {
            session_net::join(net, user).map_err(Failure::SessionNet)?;
        }
        self.plan.apply()?;
        if let Some(bridge) = &self.bridge {
            bridge.enter().map_err(Failure::Network)?;
        }
        privileges::drop_all().map_err(Failure::Privileges)?;
        if let Some(ruleset) = self.ruleset.take() {
            match ruleset.restrict_self() {
                Ok(status) if status.ruleset == RulesetStatus::NotEnforced => {
                    return Err(Failure::LandlockMissing);
                }
                Ok(_) => {}
                Err(_) => return Err(Failure::Landlock(last_errno())),
            }
        }
        if let Some(filter) = &self.filter {
            match seccompiler::apply_filter(filter) {
                Ok(()) => {}
                Err(seccompiler::Error::Seccomp(e) | seccompiler::Error::Prctl(e)) => {
                    return Err(Failure::Seccomp(e.raw_os_error().unwrap_or(libc::EINVAL)));
                }
                Err(_) => return Err(Failure::Seccomp(libc::EINVAL)),
            }
        }
        Ok(())
    }

    /// For `pre_exec`: the failure as an errno (spawn fails with it).
    pub fn apply_in_child(&mut self) -> std::io::Result<()> {
        self.apply()
            .map_err(|failure| std::io::Error::from_raw_os_error(failure.errno()))
    }
}

/// Whether this machine enforces `policy`: applies it in a forked child and reports how
/// that went. The child makes system calls only, so this is safe with threads running.
pub fn probe(policy: &Policy) -> Result<(), String> {
    let mut prepared = Prepared::new(policy).map_err(|e| e.to_string())?;
    let mut fds = [0; 2];
    // SAFETY: fork with a child that only makes system calls (apply, write, _exit) on
    // memory prepared before the fork; the parent waits for it.
    unsafe {
        if libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) != 0 {
            return Err(format!(
                "cannot test the sandbox: {}",
                std::io::Error::last_os_error()
            ));
        }
        let pid = libc::fork();
        if pid == 0 {
            libc::close(fds[0]);
            let code = match prepared.apply() {
                Ok(()) => [0, 0],
                Err(failure) => failure.encode(),
            };
            libc::write(fds[1], code.as_ptr().cast(), std::mem::size_of_val(&code));
            libc::_exit(0);
        }
        libc::close(fds[1]);
        if pid < 0 {
            libc::close(fds[0]);
            return Err(format!(
                "cannot test the sandbox: {}",
                std::io::Error::last_os_error()
            ));
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
            return Err("the sandbox test process died".to_string());
        }
        match Failure::decode(code) {
            None => Ok(()),
            Some(failure) => Err(failure.describe()),
        }
    }
}

fn last_errno() -> i32 {
    std::io::Error::last_os_error()
        .raw_os_error()
        .unwrap_or(libc::EINVAL)
}
