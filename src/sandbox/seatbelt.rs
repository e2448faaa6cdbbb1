//! The macOS form of a `Policy`: a Seatbelt profile for `/usr/bin/sandbox-exec -p PROFILE
//! -- command…`, which the command and everything it starts inherit. Same rules as on
//! Linux: read everything, write only under the writable roots (never what `guard` keeps
//! read-only: `.git`, the agent's files) and a few devices, nothing `deny_read` keeps, no
//! network unless allowed (unix sockets stay usable).
//! Built on every platform so it is tested everywhere; only macOS runs it, and that run is
//! not tested on the Linux machines this project is built on (docs/security.md).

use super::Policy;
use std::ffi::OsString;
use std::path::Path;

pub const SANDBOX_EXEC: &str = "/usr/bin/sandbox-exec";

/// The profile text for `policy`.
pub fn profile(policy: &Policy) -> String {
    let mut text = String::from(
        "(version 1)\n(deny default)\n(allow process-exec)\n(allow process-fork)\n\
         (allow signal (target same-sandbox))\n(allow sysctl-read)\n(allow mach-lookup)\n\
         (allow ipc-posix-shm)\n(allow file-read*)\n\
         (allow file-write* (literal \"/dev/null\") (literal \"/dev/zero\") \
         (literal \"/dev/tty\") (regex #\"^/dev/ttys[0-9]+$\") (literal \"/dev/ptmx\"))\n\
         (allow file-ioctl (literal \"/dev/tty\") (regex #\"^/dev/ttys[0-9]+$\"))\n",
    );
    // What deny_read keeps: a later rule wins over the `allow file-read*` above.
    for path in policy.guards.iter().flat_map(|g| &g.unreadable) {
        text.push_str(&format!(
            "(deny file-read* file-write* (subpath {}))\n",
            quote(path)
        ));
    }
    if !policy.writable.is_empty() {
        text.push_str("(allow file-write*\n");
        for root in &policy.writable {
            let protected: Vec<&Path> = policy
                .guards
                .iter()
                .flat_map(|g| &g.read_only)
                .map(|g| g.path.as_path())
                .filter(|p| p.starts_with(root))
                .collect();
            if protected.is_empty() {
                text.push_str(&format!("  (subpath {})\n", quote(root)));
            } else {
                text.push_str(&format!("  (require-all (subpath {})", quote(root)));
                for path in protected {
                    text.push_str(&format!(" (require-not (subpath {}))", quote(path)));
                }
                text.push_str(")\n");
            }
        }
        text.push_str(")\n");
    }
    if policy.network {
        text.push_str("(allow network*)\n");
    } else {
        text.push_str(
            "(allow network* (remote unix-socket))\n(allow network-bind (local unix-socket))\n",
        );
    }
    text
}

/// `argv` wrapped in `sandbox-exec` with the profile for `policy`.
pub fn wrap(policy: &Policy, argv: &[OsString]) -> Vec<OsString> {
    let mut wrapped = vec![
        OsString::from(SANDBOX_EXEC),
        OsString::from("-p"),
        OsString::from(profile(policy)),
        OsString::from("--"),
    ];
    wrapped.extend(argv.iter().cloned());
    wrapped
}

/// A path as a Seatbelt string literal.
fn quote(path: &Path) -> String {
    let text = path.display().to_string();
    format!("\"{}\"", text.replace('\\', "\\\\").replace('"', "\\\""))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sandbox::SandboxMode;
    use crate::sandbox::guard::{Guarded, Guards, What};
    use std::path::PathBuf;

    #[test]
    fn the_profile_writes_only_under_the_roots_and_keeps_git_hooks_out() {
        let policy = Policy {
            mode: SandboxMode::WorkspaceWrite,
            network: false,
            writable: vec![PathBuf::from("/repo"), PathBuf::from("/tmp")],
            allow_hosts: Vec::new(),
            cwd: PathBuf::from("/repo"),
            agent_home: None,
            home: None,
            deny_read: Default::default(),
            guards: Some(Guards {
                read_only: vec![Guarded {
                    path: PathBuf::from("/repo/.git"),
                    what: What::GitDir,
                }],
                unreadable: vec![PathBuf::from("/home/u/.ssh")],
                ..Guards::default()
            }),
            local_binding: false,
        };
        let text = profile(&policy);
        assert!(text.contains("(deny default)"));
        let read = text.find("(allow file-read*)").unwrap();
        let denied = text
            .find("(deny file-read* file-write* (subpath \"/home/u/.ssh\"))")
            .unwrap();
        assert!(read < denied, "the deny comes after the allow: {text}");
        assert!(
            text.contains(
                "(require-all (subpath \"/repo\") (require-not (subpath \"/repo/.git\")))"
            )
        );
        assert!(text.contains("  (subpath \"/tmp\")\n"));
        assert!(text.contains("(remote unix-socket)"));
        assert!(!text.contains("(allow network*)\n"));
        let open = Policy {
            network: true,
            writable: Vec::new(),
            guards: None,
            ..policy
        };
        let text = profile(&open);
        assert!(text.contains("(allow network*)\n"));
        assert!(!text.contains("subpath"));
        assert_eq!(quote(Path::new("/a \"b\"")), "\"/a \\\"b\\\"\"");
    }
}
