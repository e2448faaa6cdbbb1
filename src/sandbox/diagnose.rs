//! Telling the user (and the model) that a command failed because of the sandbox, which
//! boundary it ran into, and what can be done about it. The kernel reports a sandbox
//! refusal only as an errno (`Permission denied`, `Read-only file system`, `Operation not
//! permitted`), so the command's own error messages are read: a refused path the policy
//! does not let commands write — and that the agent itself could write, so the sandbox is
//! what stood in the way — or a network error while the network is off.

use super::guard::{Guarded, What};
use super::{Policy, SandboxMode};
use std::path::{Component, Path, PathBuf};

/// A boundary a command ran into.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Blocked {
    /// `write outside the workspace: /etc/x`, `network disabled`.
    pub boundary: String,
    /// What the user can do about it.
    pub remedy: String,
}

const WRITE_ERRORS: &[&str] = &[
    "Permission denied",
    "Read-only file system",
    "Operation not permitted",
    "Device or resource busy",
];

const NETWORK_ERRORS: &[&str] = &[
    "Could not resolve host",
    "Could not resolve hostname",
    "Temporary failure in name resolution",
    "Name or service not known",
    "Network is unreachable",
    "Couldn't connect to server",
    "Failed to connect",
    "getaddrinfo",
    "socket: Operation not permitted",
    "connect: Operation not permitted",
    "[Errno 1] Operation not permitted",
    "EPERM: operation not permitted",
];

/// Why `output` (what a command under `policy`, started in `cwd`, printed) looks like the
/// sandbox stopped it; `None` when nothing points at the sandbox.
pub fn diagnose(policy: &Policy, cwd: &Path, output: &str) -> Option<Blocked> {
    for line in output.lines() {
        if let Some(blocked) = blocked_write(policy, cwd, line) {
            return Some(blocked);
        }
    }
    if !policy.network {
        let hit = output.lines().any(|line| {
            NETWORK_ERRORS.iter().any(|e| line.contains(e))
                || (line.contains("Operation not permitted")
                    && ["socket", "connect", "network"]
                        .iter()
                        .any(|w| line.to_lowercase().contains(w)))
        });
        if hit {
            return Some(Blocked {
                boundary: "network disabled".to_string(),
                remedy: "Sandboxed commands have no network: set `network = true` under \
                         [sandbox] in config.toml, or run the agent with `--sandbox off`."
                    .to_string(),
            });
        }
    }
    None
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

fn blocked_write(policy: &Policy, cwd: &Path, line: &str) -> Option<Blocked> {
    if !WRITE_ERRORS.iter().any(|e| line.contains(e)) {
        return None;
    }
    let path = candidates(line)
        .into_iter()
        .map(|p| absolute(cwd, &p))
        .find(|p| refused_by_sandbox(policy, p))?;
    if let Some(guarded) = policy.guards.as_ref().and_then(|g| g.read_only_at(&path)) {
        return Some(read_only_guard(guarded, cwd, &path));
    }
    if policy.mode == SandboxMode::ReadOnly {
        return Some(Blocked {
            boundary: format!("write in a read-only sandbox: {}", path.display()),
            remedy: "The sandbox is read-only (--sandbox read-only): run the agent with \
                     `--sandbox workspace-write` to let commands write in the workspace, or \
                     `--sandbox off`."
                .to_string(),
        });
    }
    Some(Blocked {
        boundary: format!("write outside the workspace: {}", path.display()),
        remedy: "Sandboxed commands write only under the working directory, the temp \
                 directory and `writable_roots`: add the directory to `writable_roots` under \
                 [sandbox] in config.toml, or run the agent with `--sandbox off`."
            .to_string(),
    })
}

/// A write to a path `guard` keeps read-only: what it is and why.
fn read_only_guard(guarded: &Guarded, cwd: &Path, path: &Path) -> Blocked {
    let name = guarded
        .path
        .strip_prefix(cwd)
        .unwrap_or(&guarded.path)
        .display()
        .to_string();
    let boundary = format!("write to {name}, which stays read-only: {}", path.display());
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

/// Whether the sandbox, and not the file's permissions, refuses writing `path`: the policy
/// forbids it and the agent itself could write it (or create it in its directory).
fn refused_by_sandbox(policy: &Policy, path: &Path) -> bool {
    if policy.may_write(path) || path.starts_with("/proc") || path.starts_with("/sys") {
        return false;
    }
    let existing = if path.symlink_metadata().is_ok() {
        path
    } else {
        match path.parent() {
            Some(parent) => parent,
            None => return false,
        }
    };
    writable_by_us(existing)
}

fn writable_by_us(path: &Path) -> bool {
    use std::os::unix::ffi::OsStrExt;
    let Ok(c_path) = std::ffi::CString::new(path.as_os_str().as_bytes()) else {
        return false;
    };
    // SAFETY: access only reads the NUL-terminated path.
    unsafe { libc::access(c_path.as_ptr(), libc::W_OK) == 0 }
}

/// Paths an error line names: quoted ones ('…', "…", ‘…’, `…'), then the fields between
/// `: ` separators that look like paths (`bash: /etc/x: Permission denied`).
fn candidates(line: &str) -> Vec<String> {
    let mut found = Vec::new();
    for (open, close) in [('\'', '\''), ('"', '"'), ('‘', '’'), ('`', '\'')] {
        let mut rest = line;
        while let Some(start) = rest.find(open) {
            let after = &rest[start + open.len_utf8()..];
            let Some(end) = after.find(close) else { break };
            let inner = &after[..end];
            if looks_like_path(inner) {
                found.push(inner.to_string());
            }
            rest = &after[end + close.len_utf8()..];
        }
    }
    for field in line.split(": ") {
        let field = field.trim();
        if looks_like_path(field) && !field.contains(' ') {
            found.push(field.to_string());
        }
    }
    found
}

fn looks_like_path(text: &str) -> bool {
    !text.is_empty()
        && !text.contains('\n')
        && (text.starts_with('/')
            || text.starts_with("./")
            || text.starts_with("../")
            || (text.contains('/') && !text.contains("://")))
}

/// `path` made absolute against `cwd`, with `.` and `..` taken out.
fn absolute(cwd: &Path, path: &str) -> PathBuf {
    let joined = cwd.join(path);
    let mut normal = PathBuf::new();
    for component in joined.components() {
        match component {
            Component::ParentDir => {
                normal.pop();
            }
            Component::CurDir => {}
            other => normal.push(other),
        }
    }
    normal
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
            guards: None,
        };
        policy.guards = Some(super::super::guard::discover(&policy, cwd, &[]));
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
