//! Ways out of the command sandbox, tried as a hostile model's `bash` calls would, with
//! real processes below the real supervisor — as root and as an unprivileged user where
//! the sandbox takes another path (a user namespace):
//!
//! - root is not a way out: no device nodes made, none planted opened, no capabilities;
//! - nothing planted inside the sandbox runs outside it: git's control files (of the
//!   workspace's repository, of one above it, of nested ones, submodules and linked
//!   worktrees) and the agent's own project files stay read-only, `.git` cannot be moved
//!   away and replaced.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // test code fails loudly

use crate::support;

use std::path::Path;
use support::sandbox::{User, bash, blocked, config, sandbox, scratch, temp, text};

/// Make a character device with /dev/null's numbers (1, 3) at `path`: harmless if opened.
fn plant_null_device(path: &Path) {
    let c_path = std::ffi::CString::new(path.as_os_str().as_encoded_bytes()).unwrap();
    // SAFETY: mknod on a NUL-terminated path.
    let made = unsafe { libc::mknod(c_path.as_ptr(), libc::S_IFCHR | 0o666, libc::makedev(1, 3)) };
    assert_eq!(made, 0, "mknod {}", path.display());
}

#[tokio::test]
async fn root_is_no_way_out_no_devices_no_capabilities() {
    for user in User::both() {
        let workspace = scratch(user);
        let tmp = temp(user);
        plant_null_device(&workspace.path().join("planted"));
        plant_null_device(&tmp.path().join("planted"));
        let command = format!(
            "echo uid=$(id -u); grep ^Cap /proc/self/status; \
             mknod made c 1 3 && echo made-device; \
             echo x > planted && echo wrote-planted; \
             cat planted && echo read-planted; \
             echo x > {tmp}/planted && echo wrote-tmp-planted; \
             true",
            tmp = tmp.path().display()
        );
        let output = bash(
            user,
            workspace.path(),
            sandbox(workspace.path(), &config(false)),
            &command,
        )
        .await;
        let text = text(&output);
        support::sandbox::assert_ran_as(user, &text);
        let caps: Vec<&str> = text.lines().filter(|l| l.starts_with("Cap")).collect();
        assert_eq!(caps.len(), 5, "{user:?}: {text}");
        for line in caps {
            assert!(
                line.ends_with("\t0000000000000000"),
                "{user:?}: a capability is left: {line}\n{text}"
            );
        }
        assert!(
            !workspace.path().join("made").exists(),
            "{user:?}: a device was made: {text}"
        );
        for escaped in [
            "made-device",
            "wrote-planted",
            "read-planted",
            "wrote-tmp-planted",
        ] {
            assert!(!text.contains(escaped), "{user:?}: {escaped}: {text}");
        }
        let _ = blocked(&output);
    }
}
