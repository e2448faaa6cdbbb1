//! Enforcing a `Policy` on Linux, in the child between fork and exec:
//!
//! 1. `.git/hooks` and `.git/config` inside a writable root become read-only bind mounts
//!    in a mount namespace of the command's own (Landlock only ever adds rights, so a
//!    subtree of a writable root cannot be taken out by it). Without `CAP_SYS_ADMIN` the
//!    namespace is made inside a user namespace that maps the user to itself.
//! 2. Landlock (ABI pinned to V5): everything readable, everything writable under the
//!    writable roots and a few devices (/dev/null, terminals). Landlock also forbids the
//!    command to unmount what step 1 mounted.
//! 3. Without network: a seccomp filter refusing `socket` for every family but `AF_UNIX`
//!    (INET, INET6, raw and netlink sockets) and `io_uring_setup` (io_uring can open
//!    sockets without `socket`). The filter kills a process of another architecture (a
//!    32-bit binary), which could otherwise reach `socketcall`.
//!
//! Everything that allocates or opens paths happens in `Prepared::new`, in the parent; the
//! child (`Prepared::apply`) only makes system calls, so it is safe after a fork of a
//! process with threads. The ABI is pinned rather than "newest": from V9 on, the full set
//! of rights covers connecting to path-named unix sockets (ssh-agent, docker), which a
//! read rule on `/` does not grant.

use super::Policy;
use landlock::{
    ABI, Access, AccessFs, CompatLevel, Compatible, Ruleset, RulesetAttr, RulesetCreated,
    RulesetCreatedAttr, RulesetStatus, path_beneath_rules,
};
use seccompiler::{
    BpfProgram, SeccompAction, SeccompCmpArgLen, SeccompCmpOp, SeccompCondition, SeccompFilter,
    SeccompRule, TargetArch,
};
use std::collections::BTreeMap;
use std::ffi::CString;
use std::os::unix::ffi::OsStrExt;
use std::path::Path;

const LANDLOCK_ABI: ABI = ABI::V5;

/// Devices every command may write (and use terminals through).
const DEVICES: &[&str] = &[
    "/dev/null",
    "/dev/zero",
    "/dev/full",
    "/dev/tty",
    "/dev/ptmx",
    "/dev/pts",
    "/dev/random",
    "/dev/urandom",
];

/// Where applying the sandbox failed, with the errno.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Failure {
    /// A mount (or user) namespace could not be made.
    Namespace(i32),
    /// A protected path could not be made read-only.
    Protect(i32),
    /// Landlock refused.
    Landlock(i32),
    /// The kernel has no (enabled) Landlock.
    LandlockMissing,
    /// The seccomp filter could not be installed.
    Seccomp(i32),
}

impl Failure {
    pub fn describe(self) -> String {
        let os = |errno: i32| std::io::Error::from_raw_os_error(errno).to_string();
        match self {
            Failure::Namespace(e) => format!(
                "cannot make a mount namespace to keep .git/hooks and .git/config read-only ({})",
                os(e)
            ),
            Failure::Protect(e) => format!(
                "cannot make .git/hooks or .git/config read-only ({})",
                os(e)
            ),
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
        }
    }

    /// The errno a `pre_exec` hook fails with.
    fn errno(self) -> i32 {
        match self {
            Failure::Namespace(e)
            | Failure::Protect(e)
            | Failure::Landlock(e)
            | Failure::Seccomp(e) => e,
            Failure::LandlockMissing => libc::ENOSYS,
        }
    }
}

/// A path to make read-only, and the flags its mount already has (a remount inside a user
/// namespace must keep them).
struct Protected {
    path: CString,
    flags: libc::c_ulong,
}

/// `/proc/self/{uid,gid}_map` lines that map the user to itself in a user namespace.
struct UserMaps {
    uid: Vec<u8>,
    gid: Vec<u8>,
}

/// Everything the child needs, built in the parent.
pub struct Prepared {
    /// `None` once applied.
    ruleset: Option<RulesetCreated>,
    filter: Option<BpfProgram>,
    protected: Vec<Protected>,
    /// `Some` when the mount namespace needs a user namespace around it.
    user_maps: Option<UserMaps>,
}

#[derive(Debug, thiserror::Error)]
pub enum PrepareError {
    #[error("cannot build the Landlock rules: {0}")]
    Landlock(#[from] landlock::RulesetError),
    #[error("cannot build the seccomp filter: {0}")]
    Seccomp(String),
    #[error("cannot prepare {path}: {error}")]
    Path { path: String, error: std::io::Error },
}

impl Prepared {
    pub fn new(policy: &Policy) -> Result<Prepared, PrepareError> {
        let mut protected = Vec::new();
        for path in &policy.protected {
            ensure_exists(path).map_err(|error| PrepareError::Path {
                path: path.display().to_string(),
                error,
            })?;
            let Ok(c_path) = CString::new(path.as_os_str().as_bytes()) else {
                continue;
            };
            let flags = mount_flags(&c_path);
            protected.push(Protected {
                path: c_path,
                flags,
            });
        }
        let user_maps = (!protected.is_empty() && !has_sys_admin()).then(|| {
            // SAFETY: getuid and getgid cannot fail and touch no memory.
            let (uid, gid) = unsafe { (libc::getuid(), libc::getgid()) };
            UserMaps {
                uid: format!("{uid} {uid} 1\n").into_bytes(),
                gid: format!("{gid} {gid} 1\n").into_bytes(),
            }
        });
        let filter = if policy.network {
            None
        } else {
            Some(network_filter()?)
        };
        Ok(Prepared {
            ruleset: Some(ruleset(policy)?),
            filter,
            protected,
            user_maps,
        })
    }

    /// Apply the sandbox to the calling (single-threaded, forked) process. Makes system
    /// calls only: no allocation, no locks.
    pub fn apply(&mut self) -> Result<(), Failure> {
        if !self.protected.is_empty() {
            self.protect()?;
        }
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

    fn protect(&self) -> Result<(), Failure> {
        // SAFETY: plain system calls on NUL-terminated strings this struct owns.
        unsafe {
            let flags = match self.user_maps {
                Some(_) => libc::CLONE_NEWUSER | libc::CLONE_NEWNS,
                None => libc::CLONE_NEWNS,
            };
            if libc::unshare(flags) != 0 {
                return Err(Failure::Namespace(last_errno()));
            }
            if let Some(maps) = &self.user_maps {
                write_proc(c"/proc/self/setgroups", b"deny").map_err(Failure::Namespace)?;
                write_proc(c"/proc/self/uid_map", &maps.uid).map_err(Failure::Namespace)?;
                write_proc(c"/proc/self/gid_map", &maps.gid).map_err(Failure::Namespace)?;
            }
            // Nothing mounted here may propagate back to the user's namespace.
            let none = std::ptr::null();
            if libc::mount(
                none,
                c"/".as_ptr(),
                none,
                libc::MS_REC | libc::MS_PRIVATE,
                std::ptr::null(),
            ) != 0
            {
                return Err(Failure::Namespace(last_errno()));
            }
            for protected in &self.protected {
                let path = protected.path.as_ptr();
                if libc::mount(path, path, none, libc::MS_BIND, std::ptr::null()) != 0 {
                    return Err(Failure::Protect(last_errno()));
                }
                let flags = libc::MS_REMOUNT | libc::MS_BIND | libc::MS_RDONLY | protected.flags;
                if libc::mount(none, path, none, flags, std::ptr::null()) != 0 {
                    return Err(Failure::Protect(last_errno()));
                }
            }
        }
        Ok(())
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
            let code: [i32; 2] = match prepared.apply() {
                Ok(()) => [0, 0],
                Err(Failure::Namespace(e)) => [1, e],
                Err(Failure::Protect(e)) => [2, e],
                Err(Failure::Landlock(e)) => [3, e],
                Err(Failure::LandlockMissing) => [4, 0],
                Err(Failure::Seccomp(e)) => [5, e],
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
        let failure = match code {
            [0, _] => return Ok(()),
            [1, e] => Failure::Namespace(e),
            [2, e] => Failure::Protect(e),
            [3, e] => Failure::Landlock(e),
            [4, _] => Failure::LandlockMissing,
            [_, e] => Failure::Seccomp(e),
        };
        Err(failure.describe())
    }
}

fn ruleset(policy: &Policy) -> Result<RulesetCreated, landlock::RulesetError> {
    let all = AccessFs::from_all(LANDLOCK_ABI);
    Ruleset::default()
        // Older kernels enforce what they know (a V3 kernel cannot restrict ioctl on
        // devices); a kernel without Landlock is caught by the status check in `apply`.
        .set_compatibility(CompatLevel::BestEffort)
        .handle_access(all)?
        .create()?
        .add_rules(path_beneath_rules(["/"], AccessFs::from_read(LANDLOCK_ABI)))?
        .add_rules(path_beneath_rules(DEVICES, all))?
        // A root that does not exist (yet) is skipped.
        .add_rules(path_beneath_rules(&policy.writable, all))
}

fn target_arch() -> Option<TargetArch> {
    if cfg!(target_arch = "x86_64") {
        Some(TargetArch::x86_64)
    } else if cfg!(target_arch = "aarch64") {
        Some(TargetArch::aarch64)
    } else if cfg!(target_arch = "riscv64") {
        Some(TargetArch::riscv64)
    } else {
        None
    }
}

fn network_filter() -> Result<BpfProgram, PrepareError> {
    let error = |e: seccompiler::BackendError| PrepareError::Seccomp(e.to_string());
    let arch = target_arch()
        .ok_or_else(|| PrepareError::Seccomp("no seccomp support for this CPU".to_string()))?;
    let unix = u64::try_from(libc::AF_UNIX).unwrap_or(1);
    let not_unix = SeccompRule::new(vec![
        SeccompCondition::new(0, SeccompCmpArgLen::Dword, SeccompCmpOp::Ne, unix).map_err(error)?,
    ])
    .map_err(error)?;
    let mut rules: BTreeMap<i64, Vec<SeccompRule>> = BTreeMap::new();
    rules.insert(libc::SYS_socket, vec![not_unix]);
    // An empty list matches every call.
    rules.insert(libc::SYS_io_uring_setup, Vec::new());
    let eperm = u32::try_from(libc::EPERM).unwrap_or(1);
    SeccompFilter::new(
        rules,
        SeccompAction::Allow,
        SeccompAction::Errno(eperm),
        arch,
    )
    .map_err(error)?
    .try_into()
    .map_err(error)
}

/// A missing `.git/hooks` is made (git makes it too) and a missing `.git/config` is made
/// empty, so that neither can be created by a command.
fn ensure_exists(path: &Path) -> std::io::Result<()> {
    if path.symlink_metadata().is_ok() {
        return Ok(());
    }
    if path.file_name().is_some_and(|n| n == "hooks") {
        std::fs::create_dir_all(path)
    } else {
        std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(path)
            .map(drop)
    }
}

/// The flags of the mount `path` is on, as `mount` takes them.
fn mount_flags(path: &CString) -> libc::c_ulong {
    // SAFETY: statvfs writes into the zeroed struct it is given.
    let mut stat: libc::statvfs = unsafe { std::mem::zeroed() };
    if unsafe { libc::statvfs(path.as_ptr(), &mut stat) } != 0 {
        return 0;
    }
    let pairs = [
        (libc::ST_NOSUID, libc::MS_NOSUID),
        (libc::ST_NODEV, libc::MS_NODEV),
        (libc::ST_NOEXEC, libc::MS_NOEXEC),
        (libc::ST_NOATIME, libc::MS_NOATIME),
        (libc::ST_NODIRATIME, libc::MS_NODIRATIME),
        (libc::ST_RELATIME, libc::MS_RELATIME),
    ];
    pairs
        .iter()
        .filter(|(st, _)| stat.f_flag & st != 0)
        .fold(0, |flags, (_, ms)| flags | ms)
}

/// Whether this process may mount without a user namespace.
fn has_sys_admin() -> bool {
    const CAP_SYS_ADMIN: u32 = 21;
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|status| {
            status
                .lines()
                .find_map(|l| l.strip_prefix("CapEff:"))
                .and_then(|hex| u64::from_str_radix(hex.trim(), 16).ok())
        })
        .is_some_and(|caps| caps & (1 << CAP_SYS_ADMIN) != 0)
}

fn last_errno() -> i32 {
    std::io::Error::last_os_error()
        .raw_os_error()
        .unwrap_or(libc::EINVAL)
}

/// Write `data` to a /proc file with raw system calls.
unsafe fn write_proc(path: &std::ffi::CStr, data: &[u8]) -> Result<(), i32> {
    // SAFETY: open/write/close on a NUL-terminated path and a live buffer.
    unsafe {
        let fd = libc::open(path.as_ptr(), libc::O_WRONLY | libc::O_CLOEXEC);
        if fd < 0 {
            return Err(last_errno());
        }
        let written = libc::write(fd, data.as_ptr().cast(), data.len());
        let errno = last_errno();
        libc::close(fd);
        if usize::try_from(written).ok() != Some(data.len()) {
            return Err(errno);
        }
    }
    Ok(())
}
