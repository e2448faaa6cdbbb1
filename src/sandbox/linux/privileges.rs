//! Taking every capability away from the sandboxed command, in the child between fork and
//! exec: the bounding set (so that executing a program as root cannot give them back), the
//! ambient set, and the effective, permitted and inheritable sets. Root inside the sandbox
//! is then an ordinary user: no device creation, no mounts, no overriding of file modes.
//! `no_new_privs` is set by Landlock's `restrict_self` right after. System calls only.

use super::last_errno;

/// `_LINUX_CAPABILITY_VERSION_3`: 64-bit capability sets in two 32-bit halves.
const CAPABILITY_VERSION_3: u32 = 0x2008_0522;

#[repr(C)]
struct CapHeader {
    version: u32,
    pid: i32,
}

#[repr(C)]
#[derive(Clone, Copy)]
struct CapData {
    effective: u32,
    permitted: u32,
    inheritable: u32,
}

/// Drop every capability of the calling process: `Err(errno)` when one stays.
pub fn drop_all() -> Result<(), i32> {
    // SAFETY: prctl and capset with plain integers and pointers to live stack values.
    unsafe {
        // The bounding set: capabilities past the kernel's last one answer EINVAL.
        for cap in 0..64 {
            match libc::prctl(libc::PR_CAPBSET_READ, cap, 0, 0, 0) {
                1 => {
                    if libc::prctl(libc::PR_CAPBSET_DROP, cap, 0, 0, 0) != 0 {
                        return Err(last_errno());
                    }
                }
                0 => {}
                _ => break,
            }
        }
        // Kernels before 4.3 have no ambient set (EINVAL): nothing to clear then.
        if libc::prctl(
            libc::PR_CAP_AMBIENT,
            libc::PR_CAP_AMBIENT_CLEAR_ALL,
            0,
            0,
            0,
        ) != 0
            && last_errno() != libc::EINVAL
        {
            return Err(last_errno());
        }
        let header = CapHeader {
            version: CAPABILITY_VERSION_3,
            pid: 0,
        };
        let data = [CapData {
            effective: 0,
            permitted: 0,
            inheritable: 0,
        }; 2];
        if libc::syscall(libc::SYS_capset, &header, data.as_ptr()) != 0 {
            return Err(last_errno());
        }
    }
    Ok(())
}
