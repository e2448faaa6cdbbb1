//! The OS sandbox commands run in (docs/security.md): what a sandboxed command may write
//! and whether it may use the network (`Policy`), resolved once from `[sandbox]` and
//! `--sandbox`; whether this machine can enforce it (`Status`, from `probe` at start); and
//! how a sandboxed command's failure is explained (`diagnose`). Enforcement is per platform:
//! Landlock plus a seccomp filter on Linux (`linux`), a Seatbelt profile through
//! `sandbox-exec` on macOS (`seatbelt`). Whoever spawns a process applies it between fork
//! and exec, so everything the command starts inherits it.

pub mod diagnose;
pub mod egress;
#[cfg(target_os = "linux")]
pub mod linux;
pub mod seatbelt;

use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// `--sandbox` / `[sandbox] mode`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize, clap::ValueEnum)]
#[serde(rename_all = "kebab-case")]
pub enum SandboxMode {
    /// Commands run with everything the user may do.
    Off,
    /// Commands may read everything and write nothing (but /dev/null and terminals).
    ReadOnly,
    /// Commands may write under the working directory, the temp directory and
    /// `writable_roots`, except the workspace's `.git/hooks` and `.git/config`.
    #[default]
    WorkspaceWrite,
}

impl SandboxMode {
    pub fn as_str(self) -> &'static str {
        match self {
            SandboxMode::Off => "off",
            SandboxMode::ReadOnly => "read-only",
            SandboxMode::WorkspaceWrite => "workspace-write",
        }
    }
}

/// `[sandbox]` as resolved from the config file and the command line.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct SandboxConfig {
    pub mode: SandboxMode,
    /// Whether sandboxed commands may open network sockets.
    pub network: bool,
    /// More directories sandboxed commands may write under (absolute).
    pub writable_roots: Vec<PathBuf>,
    /// Hosts sandboxed commands reach through the agent's egress proxy while `network` is
    /// off (`egress`); empty: none.
    pub allow_hosts: Vec<egress::Pattern>,
}

/// What one sandboxed command may do. Serialised to the supervisor, which applies it to
/// the command it starts.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Policy {
    pub mode: SandboxMode,
    pub network: bool,
    /// Directories (and their trees) the command may write under.
    pub writable: Vec<PathBuf>,
    /// Paths inside `writable` that stay read-only (`.git/hooks`, `.git/config`).
    pub protected: Vec<PathBuf>,
    /// With the network off: the hosts the command reaches through the egress proxy, from
    /// a network namespace of its own (`egress`); empty: none (and no namespace).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub allow_hosts: Vec<egress::Pattern>,
}

/// Where inside a writable git work tree a command may never write: hooks run code on the
/// user's next commit, and the config can name programs git runs (`core.fsmonitor`,
/// `core.pager`, aliases).
pub const PROTECTED_IN_GIT: &[&str] = &[".git/hooks", ".git/config"];

impl Policy {
    /// The policy for commands started in `cwd`; `None` when the sandbox is off.
    pub fn resolve(config: &SandboxConfig, cwd: &Path) -> Option<Policy> {
        let writable = match config.mode {
            SandboxMode::Off => return None,
            SandboxMode::ReadOnly => Vec::new(),
            SandboxMode::WorkspaceWrite => {
                let mut roots = vec![cwd.to_path_buf(), std::env::temp_dir()];
                if Path::new("/dev/shm").is_dir() {
                    roots.push(PathBuf::from("/dev/shm"));
                }
                roots.extend(config.writable_roots.iter().cloned());
                let mut unique: Vec<PathBuf> = Vec::new();
                for root in roots {
                    if !unique.contains(&root) {
                        unique.push(root);
                    }
                }
                unique
            }
        };
        let protected = writable
            .iter()
            .filter(|root| root.join(".git").is_dir())
            .flat_map(|root| PROTECTED_IN_GIT.iter().map(move |p| root.join(p)))
            .collect();
        Some(Policy {
            mode: config.mode,
            network: config.network,
            writable,
            protected,
            // `network = true` is the whole network: no proxy, no namespace.
            allow_hosts: if config.network {
                Vec::new()
            } else {
                config.allow_hosts.clone()
            },
        })
    }

    /// Whether the command gets a network namespace whose one way out is the egress proxy.
    pub fn egress_bridge(&self) -> bool {
        !self.network && !self.allow_hosts.is_empty()
    }

    /// Whether the policy lets a command write `path` (absolute, normalised).
    pub fn may_write(&self, path: &Path) -> bool {
        self.writable.iter().any(|root| path.starts_with(root))
            && !self.protected.iter().any(|p| path.starts_with(p))
    }

    /// One line for the user: `workspace-write, network off, writes under /repo, /tmp`.
    pub fn summary(&self) -> String {
        let hosts: Vec<String> = self.allow_hosts.iter().map(ToString::to_string).collect();
        let network = if self.network {
            "network on".to_string()
        } else if self.egress_bridge() {
            format!("network only to {} (proxy)", hosts.join(", "))
        } else {
            "network off".to_string()
        };
        if self.writable.is_empty() {
            return format!("{}, {network}, no writes", self.mode.as_str());
        }
        let roots: Vec<String> = self
            .writable
            .iter()
            .map(|r| r.display().to_string())
            .collect();
        format!(
            "{}, {network}, writes under {}",
            self.mode.as_str(),
            roots.join(", ")
        )
    }
}

/// Whether commands run in the sandbox here.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub enum Status {
    /// `--sandbox off`: the user chose to run commands unsandboxed.
    #[default]
    Off,
    /// The sandbox is enforced.
    Enforced,
    /// The sandbox was asked for but this machine cannot enforce it: why. Commands that
    /// would run without asking ask instead.
    Unavailable(String),
}

/// The sandbox as the tools see it: the mode asked for, the policy commands run under
/// (`None`: none) and whether it is enforced.
#[derive(Clone, Debug)]
pub struct Sandbox {
    pub mode: SandboxMode,
    pub policy: Option<Arc<Policy>>,
    pub status: Status,
}

/// No sandbox (`--sandbox off`).
impl Default for Sandbox {
    fn default() -> Self {
        Sandbox {
            mode: SandboxMode::Off,
            policy: None,
            status: Status::Off,
        }
    }
}

impl Sandbox {
    /// Resolve the config for `cwd` and find out whether this machine enforces it (on
    /// Linux this forks once: call it while the process has one thread).
    pub fn start(config: &SandboxConfig, cwd: &Path) -> Sandbox {
        let Some(policy) = Policy::resolve(config, cwd) else {
            return Sandbox::default();
        };
        match probe(&policy) {
            Ok(()) => Sandbox {
                mode: config.mode,
                policy: Some(Arc::new(policy)),
                status: Status::Enforced,
            },
            Err(reason) => Sandbox {
                mode: config.mode,
                policy: None,
                status: Status::Unavailable(reason),
            },
        }
    }

    /// What the user is told once at start, if anything.
    pub fn notice(&self) -> Option<String> {
        match &self.status {
            Status::Unavailable(reason) => Some(format!(
                "the command sandbox is unavailable: {reason}. Commands will ask before they \
                 run, even in auto mode; `--sandbox off` (or [sandbox] mode = \"off\") runs \
                 them unsandboxed without asking."
            )),
            _ => None,
        }
    }
}

/// Set to anything but empty, the probe reports the sandbox as unavailable: how tests (and
/// a curious user) see the fallback on a machine that has Landlock.
pub const SIMULATE_UNAVAILABLE_ENV: &str = "AGENT_SANDBOX_SIMULATE_UNAVAILABLE";

/// Whether this machine enforces `policy`: `Err` says why not.
pub fn probe(policy: &Policy) -> Result<(), String> {
    if std::env::var_os(SIMULATE_UNAVAILABLE_ENV).is_some_and(|v| !v.is_empty()) {
        return Err(format!("{SIMULATE_UNAVAILABLE_ENV} is set"));
    }
    platform_probe(policy)
}

#[cfg(target_os = "linux")]
fn platform_probe(policy: &Policy) -> Result<(), String> {
    linux::probe(policy)
}

#[cfg(target_os = "macos")]
fn platform_probe(_policy: &Policy) -> Result<(), String> {
    if Path::new(seatbelt::SANDBOX_EXEC).is_file() {
        Ok(())
    } else {
        Err(format!("{} is missing", seatbelt::SANDBOX_EXEC))
    }
}

#[cfg(not(any(target_os = "linux", target_os = "macos")))]
fn platform_probe(_policy: &Policy) -> Result<(), String> {
    Err("this operating system has no sandbox the agent knows how to use".to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn workspace_write_covers_the_workspace_and_temp_but_not_git_hooks() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(dir.path().join(".git/hooks")).unwrap();
        let config = SandboxConfig {
            writable_roots: vec![PathBuf::from("/opt/cache")],
            ..SandboxConfig::default()
        };
        let policy = Policy::resolve(&config, dir.path()).unwrap();
        assert!(policy.may_write(&dir.path().join("src/main.rs")));
        assert!(policy.may_write(&std::env::temp_dir().join("x")));
        assert!(policy.may_write(Path::new("/opt/cache/a")));
        assert!(!policy.may_write(Path::new("/etc/passwd")));
        assert!(!policy.may_write(&dir.path().join(".git/hooks/pre-commit")));
        assert!(!policy.may_write(&dir.path().join(".git/config")));
        assert!(policy.may_write(&dir.path().join(".git/index")));
        assert!(!policy.network);
    }

    #[test]
    fn read_only_writes_nothing_and_off_is_no_policy() {
        let config = SandboxConfig {
            mode: SandboxMode::ReadOnly,
            ..SandboxConfig::default()
        };
        let policy = Policy::resolve(&config, Path::new("/repo")).unwrap();
        assert!(!policy.may_write(Path::new("/repo/a")));
        assert!(policy.summary().contains("no writes"));
        let off = SandboxConfig {
            mode: SandboxMode::Off,
            ..SandboxConfig::default()
        };
        assert_eq!(Policy::resolve(&off, Path::new("/repo")), None);
    }
}
