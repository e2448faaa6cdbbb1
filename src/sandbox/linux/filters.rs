//! The two kernel filters a sandboxed command runs under, built in the parent:
//!
//! - Landlock (ABI pinned to V5): read and execute everywhere but in /dev (each entry of
//!   `/` but `/dev` gets the read rights; `/` itself only listing), so that root cannot
//!   read a disk or the kernel log through its device; under the writable roots every
//!   right but creating device nodes (`MAKE_CHAR`, `MAKE_BLOCK`); on a few devices
//!   (/dev/null, terminals) reading, writing and ioctl. The ABI is pinned rather than
//!   "newest": from V9 on, the full set of rights covers connecting to path-named unix
//!   sockets (ssh-agent, docker), which a read rule on `/` does not grant.
//! - Without network, a seccomp filter refusing `socket` for every family but `AF_UNIX`
//!   (INET, INET6, raw and netlink sockets) and `io_uring_setup` (io_uring can open sockets
//!   without `socket`). The filter kills a process of another architecture (a 32-bit
//!   binary), which could otherwise reach `socketcall`.

use super::super::{DEVICES, Policy};
use landlock::{
    ABI, Access, AccessFs, BitFlags, CompatLevel, Compatible, Ruleset, RulesetAttr, RulesetCreated,
    RulesetCreatedAttr, path_beneath_rules,
};
use seccompiler::{
    BpfProgram, SeccompAction, SeccompCmpArgLen, SeccompCmpOp, SeccompCondition, SeccompFilter,
    SeccompRule, TargetArch,
};
use std::collections::BTreeMap;

const LANDLOCK_ABI: ABI = ABI::V5;

/// What a command may do under a writable root: everything but making device nodes.
pub fn writable_rights() -> BitFlags<AccessFs> {
    AccessFs::from_all(LANDLOCK_ABI) & !(AccessFs::MakeChar | AccessFs::MakeBlock)
}

/// What a command may do with the devices of `DEVICES`: use them, not make any.
fn device_rights() -> BitFlags<AccessFs> {
    AccessFs::from_read(LANDLOCK_ABI)
        | AccessFs::WriteFile
        | AccessFs::Truncate
        | AccessFs::IoctlDev
}

/// What is readable: every entry of `/` but `/dev` (read when the command is prepared: a
/// mount that appears at the top later is not readable to it).
fn readable() -> Vec<std::path::PathBuf> {
    std::fs::read_dir("/")
        .map(|entries| {
            entries
                .flatten()
                .map(|e| e.path())
                .filter(|p| p != std::path::Path::new("/dev"))
                .collect()
        })
        .unwrap_or_default()
}

pub fn ruleset(policy: &Policy) -> Result<RulesetCreated, landlock::RulesetError> {
    Ruleset::default()
        // Older kernels enforce what they know (a V3 kernel cannot restrict ioctl on
        // devices); a kernel without Landlock is caught by the status check in `apply`.
        .set_compatibility(CompatLevel::BestEffort)
        .handle_access(AccessFs::from_all(LANDLOCK_ABI))?
        .create()?
        .add_rules(path_beneath_rules(["/"], AccessFs::ReadDir))?
        .add_rules(path_beneath_rules(
            readable(),
            AccessFs::from_read(LANDLOCK_ABI),
        ))?
        .add_rules(path_beneath_rules(DEVICES, device_rights()))?
        // A root that does not exist (yet) is skipped.
        .add_rules(path_beneath_rules(&policy.writable, writable_rights()))
}

pub(super) fn target_arch() -> Option<TargetArch> {
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

/// The seccomp filter with the network off: `socket` of any family but unix fails with
/// `EPERM`, and so does `io_uring_setup` (its operations would open sockets unseen).
pub fn network_filter() -> Result<BpfProgram, String> {
    sockets_only_of(&[libc::AF_UNIX])
}

/// A seccomp filter under which `socket` fails with `EPERM` for every address family but
/// `families`, and `io_uring_setup` always does.
pub(super) fn sockets_only_of(families: &[i32]) -> Result<BpfProgram, String> {
    let error = |e: seccompiler::BackendError| e.to_string();
    let arch = target_arch().ok_or_else(|| "no seccomp support for this CPU".to_string())?;
    // One rule whose conditions must all hold: the family is none of those allowed.
    let conditions = families
        .iter()
        .map(|family| {
            let family = u64::try_from(*family).unwrap_or(u64::MAX);
            SeccompCondition::new(0, SeccompCmpArgLen::Dword, SeccompCmpOp::Ne, family)
                .map_err(error)
        })
        .collect::<Result<Vec<_>, _>>()?;
    let other_family = SeccompRule::new(conditions).map_err(error)?;
    let mut rules: BTreeMap<i64, Vec<SeccompRule>> = BTreeMap::new();
    rules.insert(libc::SYS_socket, vec![other_family]);
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn no_rule_grants_making_devices() {
        assert!(!writable_rights().contains(AccessFs::MakeChar));
        assert!(!writable_rights().contains(AccessFs::MakeBlock));
        assert!(writable_rights().contains(AccessFs::MakeReg | AccessFs::RemoveDir));
        assert!(!device_rights().contains(AccessFs::MakeChar));
        assert!(!device_rights().contains(AccessFs::MakeBlock));
    }
}
