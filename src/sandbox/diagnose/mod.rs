//! Telling the user (and the model) that the sandbox refused something during a command,
//! which boundary it was, and what can be done about it — whatever the command's exit code.
//! The kernel reports a refusal only as an errno (`Permission denied`, `Read-only file
//! system`, `Operation not permitted`, `Device or resource busy`, `Invalid cross-device
//! link`), so the command's own error lines are read: each path a line names is located
//! (`paths`: through links and `/proc/PID/root`) and matched against the policy — a device,
//! a path that stays read-only, a pinned directory, a write outside the writable roots that
//! the agent itself could make, a file root may only write with the privileges the sandbox
//! drops. With the network off, a resolver or connection error that names no path is the
//! network boundary.

mod paths;

use super::guard::{Guarded, What};
use super::{Policy, SandboxMode};
use paths::{Located, candidates, locate, looks_like_path};
use std::os::unix::fs::{FileTypeExt, MetadataExt};
use std::path::Path;

/// A boundary a command ran into.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Blocked {
    /// `write outside the workspace: /etc/x`, `network disabled`.
    pub boundary: String,
    /// What the user can do about it.
    pub remedy: String,
}

/// The error a line reports.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Error {
    /// EACCES
    Denied,
    /// EROFS
    ReadOnly,
    /// EPERM
    NotPermitted,
    /// EBUSY: a mount point
    Busy,
    /// EXDEV: across mounts
    CrossDevice,
}

fn error_of(line: &str) -> Option<Error> {
    let lower = line.to_ascii_lowercase();
    [
        ("permission denied", Error::Denied),
        ("read-only file system", Error::ReadOnly),
        ("operation not permitted", Error::NotPermitted),
        ("device or resource busy", Error::Busy),
        ("invalid cross-device link", Error::CrossDevice),
    ]
    .into_iter()
    .find(|(text, _)| lower.contains(text))
    .map(|(_, error)| error)
}

/// Errors only the network gives.
const NETWORK_ERRORS: &[&str] = &[
    "Could not resolve host",
    "Could not resolve hostname",
    "Temporary failure in name resolution",
    "Name or service not known",
    "Network is unreachable",
    "Couldn't connect to server",
    "Failed to connect",
    "getaddrinfo",
];

/// `Operation not permitted` from a socket: the network, when the line names no path.
const SOCKET_ERRORS: &[&str] = &[
    "socket: Operation not permitted",
    "connect: Operation not permitted",
    "[Errno 1] Operation not permitted",
    "EPERM: operation not permitted",
];

/// Why `output` (what a command under `policy`, started in `cwd`, printed) shows the
/// sandbox refused something; `None` when nothing points at the sandbox.
pub fn diagnose(policy: &Policy, cwd: &Path, output: &str) -> Option<Blocked> {
    for line in output.lines() {
        if let Some(blocked) = refused_path(policy, cwd, line) {
            return Some(blocked);
        }
    }
    if !policy.network && output.lines().any(|line| network_error(cwd, line)) {
        if policy.egress_bridge() {
            return Some(super::egress::unproxied());
        }
        let loopback = if policy.local_binding {
            "They reach only the session's own loopback (127.0.0.1: the servers its \
             commands started), not the host's services or other hosts."
        } else {
            "To let them listen on 127.0.0.1 (a dev server, a test's own server) and \
             reach each other there, set `allow_local_binding = true` under [sandbox]."
        };
        return Some(Blocked {
            boundary: "network disabled".to_string(),
            remedy: format!(
                "Sandboxed commands have no network: set `network = true` under [sandbox] in \
                 config.toml, or run the agent with `--sandbox off`. {loopback}"
            ),
        });
    }
    None
}

fn network_error(cwd: &Path, line: &str) -> bool {
    if NETWORK_ERRORS.iter().any(|e| line.contains(e)) {
        return true;
    }
    // A path written as one, or a name that is there: a file, not a socket, was refused.
    let names_a_path = candidates(line).iter().any(|c| {
        (looks_like_path(c) && !c.starts_with("/dev/tcp/") && !c.starts_with("/dev/udp/"))
            || locate(cwd, c).is_some_and(|p| p.real.symlink_metadata().is_ok())
    });
    if names_a_path {
        return false;
    }
    SOCKET_ERRORS.iter().any(|e| line.contains(e))
        || (line.contains("Operation not permitted")
            && ["socket", "connect", "network"]
                .iter()
                .any(|w| line.to_lowercase().contains(w)))
}

fn refused_path(policy: &Policy, cwd: &Path, line: &str) -> Option<Blocked> {
    let error = error_of(line)?;
    candidates(line)
        .iter()
        .filter_map(|raw| locate(cwd, raw))
        .find_map(|path| boundary(policy, cwd, line, error, &path))
}

/// The boundary refusing `error` on `path`, if the sandbox is what refused it.
fn boundary(
    policy: &Policy,
    cwd: &Path,
    line: &str,
    error: Error,
    path: &Located,
) -> Option<Blocked> {
    let real = &path.real;
    if real.starts_with("/proc") || real.starts_with("/sys") {
        return None;
    }
    let shown = shown(path);
    if matches!(error, Error::Denied | Error::NotPermitted) {
        let matcher = policy.deny_read.matcher();
        let is_dir = real.is_dir();
        if let Some(entry) = matcher
            .denies(real, is_dir)
            .or_else(|| matcher.denies(&path.named, is_dir))
        {
            return Some(Blocked {
                boundary: format!("read of a path deny_read keeps from commands: {shown}"),
                remedy: format!(
                    "`[sandbox] deny_read` (the entry `{entry}`) keeps it from commands and \
                     the agent's tools. If the model should read it, the user can lift it \
                     with `allow_read = [\"{entry}\"]` under [sandbox] in config.toml."
                ),
            });
        }
    }
    let meta = real.metadata().ok();
    let is_device = meta
        .as_ref()
        .is_some_and(|m| m.file_type().is_char_device() || m.file_type().is_block_device());
    if meta.is_none()
        && line.contains("mknod")
        && matches!(error, Error::Denied | Error::NotPermitted)
    {
        return Some(Blocked {
            boundary: format!("make a device node: {shown}"),
            remedy: "Sandboxed commands never make device nodes (root in the sandbox has no \
                     privileges). If it is meant, run the command outside the sandbox: allow \
                     that when asked, or run the agent with `--sandbox off`."
                .to_string(),
        });
    }
    if is_device && !super::DEVICES.iter().any(|d| real.starts_with(d)) {
        let in_root = policy.writable.iter().any(|root| real.starts_with(root));
        let boundary = if in_root {
            format!("open a device node in a writable root: {shown}")
        } else {
            format!("use a device the sandbox does not allow: {shown}")
        };
        return Some(Blocked {
            boundary,
            remedy: format!(
                "Sandboxed commands may use only {} (writable roots are nodev: a device node \
                 there cannot be opened). If it is meant, run the command outside the \
                 sandbox: allow that when asked, or run the agent with `--sandbox off`.",
                super::DEVICES.join(", ")
            ),
        });
    }
    let guards = policy.guards.as_ref();
    if let Some(guarded) = guards.and_then(|g| g.read_only_at(real)) {
        return Some(read_only_guard(guarded, cwd, &shown));
    }
    if error == Error::Busy {
        if guards.is_some_and(|g| g.pinned.iter().any(|p| p == real)) {
            return Some(Blocked {
                boundary: format!("move or remove {shown}, which holds paths that stay read-only"),
                remedy: "A directory holding a repository's .git or the agent's files cannot \
                         be moved or removed in the sandbox (nothing may take its place). If it \
                         is meant, run the command outside the sandbox: allow that when asked, \
                         or do it yourself."
                    .to_string(),
            });
        }
        if policy.writable.iter().any(|root| root == real) {
            return Some(Blocked {
                boundary: format!("move or remove a writable root: {shown}"),
                remedy: "The working directory and the other writable roots cannot be moved or \
                         removed by sandboxed commands (their contents can)."
                    .to_string(),
            });
        }
    }
    if error == Error::CrossDevice && policy.may_write(real) {
        return Some(Blocked {
            boundary: format!("rename or hard link across writable roots: {shown}"),
            remedy: "Each writable root (the working directory, the temp directory, …) is a \
                     mount of its own in the sandbox, as if on another file system: copy \
                     instead (`mv` and `cp` do)."
                .to_string(),
        });
    }
    if !policy.may_write(real) {
        return refused_write(policy, real, &shown);
    }
    root_without_privileges(line, error, real, &shown)
}

/// The path as the user reads it: what the command named, and where a link led.
fn shown(path: &Located) -> String {
    if path.named == path.real {
        path.real.display().to_string()
    } else {
        format!("{} (through {})", path.real.display(), path.named.display())
    }
}

/// A write the policy forbids, when the agent itself could make it (so the sandbox, not
/// the file's own permissions, stood in the way).
fn refused_write(policy: &Policy, real: &Path, shown: &str) -> Option<Blocked> {
    let existing = if real.symlink_metadata().is_ok() {
        real
    } else {
        real.parent()?
    };
    if !writable_by_us(existing) {
        return None;
    }
    if policy.mode == SandboxMode::ReadOnly {
        return Some(Blocked {
            boundary: format!("write in a read-only sandbox: {shown}"),
            remedy: "The sandbox is read-only (--sandbox read-only): run the agent with \
                     `--sandbox workspace-write` to let commands write in the workspace, or \
                     `--sandbox off`."
                .to_string(),
        });
    }
    Some(Blocked {
        boundary: format!("write outside the workspace: {shown}"),
        remedy: "Sandboxed commands write only under the working directory, the temp \
                 directory and `writable_roots`: add the directory to `writable_roots` under \
                 [sandbox] in config.toml, or run the agent with `--sandbox off`."
            .to_string(),
    })
}

/// Root (the agent runs as root) refused in a writable root: the sandbox dropped root's
/// privileges, so a file root does not own is only as writable as its mode says.
fn root_without_privileges(line: &str, error: Error, real: &Path, shown: &str) -> Option<Blocked> {
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } != 0 || !matches!(error, Error::Denied | Error::NotPermitted) {
        return None;
    }
    let remedy = "Root in the sandbox is an ordinary user without privileges: it can only \
                  write what its ownership and the file's mode allow, and cannot change \
                  owners. If it is meant, run the command outside the sandbox: allow that when \
                  asked, or run the agent with `--sandbox off`."
        .to_string();
    if line.contains("changing ownership") || line.contains("chown") {
        return Some(Blocked {
            boundary: format!("change a file's owner (root's privileges are dropped): {shown}"),
            remedy,
        });
    }
    let existing = if real.symlink_metadata().is_ok() {
        real
    } else {
        real.parent()?
    };
    let meta = existing.metadata().ok()?;
    let bits = if meta.uid() == 0 {
        0o200
    } else if meta.gid() == 0 {
        0o020
    } else {
        0o002
    };
    (meta.mode() & bits == 0).then(|| Blocked {
        boundary: format!("write to a file root may only write with privileges: {shown}"),
        remedy,
    })
}

/// What to say when the command made a `.git` where git run in the working directory now
/// finds it (`guard::Guards::watched`): it was not refused, and it will run what it holds.
pub fn planted_repository(policy: &Policy) -> Option<String> {
    let planted = policy.guards.as_ref()?.planted_repositories();
    let dot_git = planted.first()?;
    let dir = dot_git.parent()?;
    Some(format!(
        "The command made {git}: git commands run in {dir} (a shell prompt that shows git's \
         status too) now use that repository and run what its config and hooks name, outside \
         the sandbox. Remove it unless it was meant: rm -rf {git}",
        git = dot_git.display(),
        dir = dir.display()
    ))
}

/// A write to a path `guard` keeps read-only: what it is and why.
fn read_only_guard(guarded: &Guarded, cwd: &Path, shown: &str) -> Blocked {
    let name = guarded
        .path
        .strip_prefix(cwd)
        .unwrap_or(&guarded.path)
        .display()
        .to_string();
    let boundary = format!("write to {name}, which stays read-only: {shown}");
    let remedy = match guarded.what {
        What::GitDir | What::GitPointer | What::Submodule => {
            "A repository's .git stays read-only in the sandbox, so that nothing planted there \
             (hooks, config, a pointer to another .git) runs later outside it: git commands \
             that change the repository (add, commit, checkout, stash, fetch, submodule \
             update) do not work in the sandbox. Allow running the command again outside the \
             sandbox when asked, or run it yourself."
        }
        What::AgentProject | What::AgentHome => {
            "The agent's settings, hooks, commands, skills and agents stay read-only to \
             sandboxed commands (they decide what runs outside the sandbox): change them with \
             the edit tools, which ask first, or yourself."
        }
        What::StartupFile => {
            "Start-up files in your home directory run outside the sandbox and stay \
             read-only to sandboxed commands: change them yourself if the change is meant."
        }
    };
    Blocked {
        boundary,
        remedy: remedy.to_string(),
    }
}

fn writable_by_us(path: &Path) -> bool {
    use std::os::unix::ffi::OsStrExt;
    let Ok(c_path) = std::ffi::CString::new(path.as_os_str().as_bytes()) else {
        return false;
    };
    // SAFETY: access only reads the NUL-terminated path.
    unsafe { libc::access(c_path.as_ptr(), libc::W_OK) == 0 }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn policy(cwd: &Path) -> Policy {
        let mut policy = Policy {
            mode: SandboxMode::WorkspaceWrite,
            network: false,
            writable: vec![cwd.to_path_buf()],
            cwd: cwd.to_path_buf(),
            agent_home: None,
            home: None,
            deny_read: Default::default(),
            guards: None,
            allow_hosts: Vec::new(),
            local_binding: false,
        };
        policy.guards = Some(super::super::guard::discover(
            &policy,
            cwd,
            &Default::default(),
        ));
        policy
    }

    #[test]
    fn names_the_path_written_outside_the_workspace() {
        let dir = tempfile::tempdir().unwrap();
        let outside = tempfile::tempdir().unwrap();
        let target = outside.path().join("x");
        let p = policy(dir.path());
        for line in [
            format!("bash: line 1: {}: Permission denied", target.display()),
            format!(
                "touch: cannot touch '{}': Permission denied",
                target.display()
            ),
            format!(
                "PermissionError: [Errno 13] Permission denied: '{}'",
                target.display()
            ),
        ] {
            let blocked = diagnose(&p, dir.path(), &line).unwrap();
            assert_eq!(
                blocked.boundary,
                format!("write outside the workspace: {}", target.display()),
                "{line}"
            );
            assert!(blocked.remedy.contains("writable_roots"));
        }
        let inside = format!("bash: {}/a: Permission denied", dir.path().display());
        assert_eq!(diagnose(&p, dir.path(), &inside), None);
        assert_eq!(diagnose(&p, dir.path(), "all good"), None);
    }

    #[test]
    fn names_protected_paths_and_the_network() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(dir.path().join(".git/hooks")).unwrap();
        let p = policy(dir.path());
        let blocked = diagnose(
            &p,
            dir.path(),
            "bash: .git/hooks/pre-commit: Read-only file system",
        )
        .unwrap();
        assert!(
            blocked
                .boundary
                .starts_with("write to .git, which stays read-only"),
            "{blocked:?}"
        );
        let blocked = diagnose(
            &p,
            dir.path(),
            "curl: (6) Could not resolve host: example.com",
        )
        .unwrap();
        assert_eq!(blocked.boundary, "network disabled");
        let open = Policy { network: true, ..p };
        assert_eq!(
            diagnose(&open, dir.path(), "curl: (6) Could not resolve host: x"),
            None
        );
    }
}
