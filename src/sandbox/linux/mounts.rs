//! The command's own mount namespace (inside a user namespace that maps the user to itself
//! when the process may not mount otherwise), and what is mounted in it before exec:
//!
//! - each writable root is bound onto itself and made `nodev` and `nosuid` (with all its
//!   submounts): a device node found there cannot be opened, whoever made it;
//! - each pinned directory is bound onto itself: a mount point cannot be renamed or removed,
//!   so the read-only paths below it stay where git and the agent look for them;
//! - each read-only path is bound onto itself and made read-only (and `nodev`, `nosuid`);
//! - each path the command may not read (`deny_read`) is covered: a directory by an empty
//!   read-only tmpfs of mode 000, a file by `/dev/null` bound read-only and `nodev` (so it
//!   cannot be opened at all). With its capabilities dropped even root cannot open either,
//!   and what was there is out of sight. Nothing is made on disk for them: the supervisor
//!   needs no writable directory, and nothing is left behind.
//!
//! Why mounts and not Landlock for `deny_read`: Landlock only grants, each rule for a whole
//! hierarchy, so a hole below a readable directory would need read granted on every sibling
//! on the way down, frozen when the command starts (a file made there later would be
//! unreadable), and inside a writable root, where the command holds every right on the tree,
//! no hole can be expressed at all. A mount covers exactly the path, whatever route leads
//! to it (links, `..`, `/proc/self/root`), and Landlock keeps the command from unmounting it.
//!
//! Landlock, applied after, keeps the command from unmounting any of it. Mounts never
//! propagate back to the user's namespace. Everything is prepared in the parent (`Plan::new`);
//! `Plan::apply` makes system calls only, for the child between fork and exec.

use super::{Failure, last_errno};
use std::ffi::CString;
use std::os::unix::ffi::OsStrExt;
use std::path::Path;

/// What one mount does.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    /// A writable root: `nodev`, `nosuid`.
    Writable,
    /// A directory that may not be renamed or removed.
    Pin,
    /// A path that stays read-only.
    ReadOnly,
    /// A path covered by a placeholder: a directory (`true`) or a file.
    Mask(bool),
}

struct Op {
    kind: Kind,
    path: CString,
    /// The flags of the mount `path` is on now, which a remount inside a user namespace
    /// must keep (only used where the kernel has no `mount_setattr`).
    flags: libc::c_ulong,
}

/// `/proc/self/{uid,gid}_map` lines that map the user to itself in a user namespace.
struct UserMaps {
    uid: Vec<u8>,
    gid: Vec<u8>,
}

/// The namespace and the mounts for one command.
pub struct Plan {
    ops: Vec<Op>,
    /// `Some` when the mount namespace needs a user namespace around it.
    user_maps: Option<UserMaps>,
    /// Room for the working directory's path, re-entered once the mounts are made (a
    /// directory entered before is on the mounts beneath them).
    cwd: Vec<u8>,
}

/// `struct mount_attr` of `mount_setattr(2)`.
#[repr(C)]
struct MountAttr {
    attr_set: u64,
    attr_clr: u64,
    propagation: u64,
    userns_fd: u64,
}

/// PATH_MAX and its NUL.
const CWD_ROOM: usize = 4097;

const MOUNT_ATTR_RDONLY: u64 = 0x1;
const MOUNT_ATTR_NOSUID: u64 = 0x2;
const MOUNT_ATTR_NODEV: u64 = 0x4;

impl Plan {
    /// The mounts for `(kind, path)` in order; paths that do not exist are left out (a
    /// root that is not there yet, a read-only path removed meanwhile).
    pub fn new<'a>(paths: impl IntoIterator<Item = (Kind, &'a Path)>) -> Plan {
        let ops = paths
            .into_iter()
            .filter(|(_, path)| path.exists())
            .filter_map(|(kind, path)| {
                let path = CString::new(path.as_os_str().as_bytes()).ok()?;
                let flags = mount_flags(&path);
                Some(Op { kind, path, flags })
            })
            .collect();
        let user_maps = (!has_sys_admin()).then(|| {
            // SAFETY: getuid and getgid cannot fail and touch no memory.
            let (uid, gid) = unsafe { (libc::getuid(), libc::getgid()) };
            UserMaps {
                uid: format!("{uid} {uid} 1\n").into_bytes(),
                gid: format!("{gid} {gid} 1\n").into_bytes(),
            }
        });
        Plan {
            ops,
            user_maps,
            cwd: vec![0; CWD_ROOM],
        }
    }

    /// Make the namespaces and the mounts. System calls only.
    pub fn apply(&mut self) -> Result<(), Failure> {
        // SAFETY: plain system calls on NUL-terminated strings and buffers this struct owns.
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
            for op in &self.ops {
                let path = op.path.as_ptr();
                let mounted = match op.kind {
                    Kind::Mask(true) => libc::mount(
                        c"none".as_ptr(),
                        path,
                        c"tmpfs".as_ptr(),
                        libc::MS_RDONLY | libc::MS_NODEV | libc::MS_NOSUID | libc::MS_NOEXEC,
                        c"mode=000,size=4k,nr_inodes=2".as_ptr().cast(),
                    ),
                    Kind::Mask(false) => libc::mount(
                        c"/dev/null".as_ptr(),
                        path,
                        none,
                        libc::MS_BIND,
                        std::ptr::null(),
                    ),
                    _ => libc::mount(
                        path,
                        path,
                        none,
                        libc::MS_BIND | libc::MS_REC,
                        std::ptr::null(),
                    ),
                };
                if mounted != 0 {
                    // Removed since the plan was made: nothing left to keep.
                    if last_errno() == libc::ENOENT {
                        continue;
                    }
                    return Err(Failure::Mount(last_errno()));
                }
                let attributes = match op.kind {
                    Kind::Writable => MOUNT_ATTR_NODEV | MOUNT_ATTR_NOSUID,
                    // Made read-only, nodev and nosuid above.
                    Kind::Pin | Kind::Mask(true) => continue,
                    Kind::ReadOnly | Kind::Mask(false) => {
                        MOUNT_ATTR_RDONLY | MOUNT_ATTR_NODEV | MOUNT_ATTR_NOSUID
                    }
                };
                set_attributes(op, attributes)?;
            }
            let cwd = self.cwd.as_mut_ptr().cast();
            if !libc::getcwd(cwd, self.cwd.len()).is_null() {
                libc::chdir(cwd);
            }
        }
        Ok(())
    }
}

/// Set mount attributes on `op.path` and every mount below it; where the kernel has no
/// `mount_setattr` (before 5.12), remount the top one.
unsafe fn set_attributes(op: &Op, attributes: u64) -> Result<(), Failure> {
    let attr = MountAttr {
        attr_set: attributes,
        attr_clr: 0,
        propagation: 0,
        userns_fd: 0,
    };
    // SAFETY: mount_setattr and mount with a NUL-terminated path and a live struct.
    unsafe {
        if libc::syscall(
            libc::SYS_mount_setattr,
            libc::AT_FDCWD,
            op.path.as_ptr(),
            libc::AT_RECURSIVE as libc::c_uint,
            &attr,
            std::mem::size_of::<MountAttr>(),
        ) == 0
        {
            return Ok(());
        }
        if last_errno() != libc::ENOSYS {
            return Err(Failure::Mount(last_errno()));
        }
        let mut flags = libc::MS_REMOUNT | libc::MS_BIND | op.flags;
        if attributes & MOUNT_ATTR_RDONLY != 0 {
            flags |= libc::MS_RDONLY;
        }
        if attributes & MOUNT_ATTR_NODEV != 0 {
            flags |= libc::MS_NODEV;
        }
        if attributes & MOUNT_ATTR_NOSUID != 0 {
            flags |= libc::MS_NOSUID;
        }
        let none = std::ptr::null();
        if libc::mount(none, op.path.as_ptr(), none, flags, std::ptr::null()) != 0 {
            return Err(Failure::Mount(last_errno()));
        }
    }
    Ok(())
}

/// The flags of the mount `path` is on, as `mount` takes them.
fn mount_flags(path: &CString) -> libc::c_ulong {
    // SAFETY: statvfs writes into the zeroed struct it is given.
    let mut stat: libc::statvfs = unsafe { std::mem::zeroed() };
    if unsafe { libc::statvfs(path.as_ptr(), &mut stat) } != 0 {
        return 0;
    }
    let pairs = [
        (libc::ST_RDONLY, libc::MS_RDONLY),
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
pub(super) fn has_sys_admin() -> bool {
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

/// Write `data` to a /proc file with raw system calls.
pub(super) unsafe fn write_proc(path: &std::ffi::CStr, data: &[u8]) -> Result<(), i32> {
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
