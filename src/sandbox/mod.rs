//! The OS sandbox commands run in (docs/security.md): what a sandboxed command may write
//! and whether it may use the network (`Policy`), resolved once from `[sandbox]` and
//! `--sandbox`; what stays read-only inside the writable roots, found before each command
//! (`guard`); whether this machine can enforce it (`Status`, from `probe` at start); and
//! how a sandboxed command's failure is explained (`diagnose`). Enforcement is per platform:
//! Landlock plus a seccomp filter on Linux (`linux`), a Seatbelt profile through
//! `sandbox-exec` on macOS (`seatbelt`). Whoever spawns a process applies it between fork
//! and exec, so everything the command starts inherits it.

pub mod deny_read;
pub mod diagnose;
pub mod egress;
pub mod guard;
#[cfg(target_os = "linux")]
pub mod linux;
pub mod own_git;
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
    /// `writable_roots`, except what `guard` keeps read-only there (`.git`, the agent's
    /// files).
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

/// `[sandbox] allow_local_binding` when the config does not say: on — the session's
/// loopback is its own (tests/it/sandbox_loopback.rs attacks that, as root and as an
/// unprivileged user); where the kernel will not make the namespace, commands keep the
/// unix-only filter.
pub const ALLOW_LOCAL_BINDING_DEFAULT: bool = true;

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
    /// `$AGENT_HOME`: kept read-only where it lies in a writable root.
    pub agent_home: Option<PathBuf>,
    /// The user's home directory: its start-up files are kept read-only where they lie in
    /// a writable root.
    pub home: Option<PathBuf>,
    /// What neither commands nor the file tools may read.
    pub deny_read: deny_read::DenyRead,
    /// `[sandbox] allow_local_binding`: with the network off (and no `allow_hosts`),
    /// commands share one loopback-only network namespace per session, where they may
    /// listen and connect (`linux::session_net`).
    pub allow_local_binding: bool,
}

/// What one sandboxed command may do. Serialised to the supervisor, which applies it to
/// the command it starts.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Policy {
    pub mode: SandboxMode,
    pub network: bool,
    /// Directories (and their trees) the command may write under.
    pub writable: Vec<PathBuf>,
    /// With the network off: the hosts the command reaches through the egress proxy, from
    /// a network namespace of its own (`egress`); empty: none (and no namespace).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub allow_hosts: Vec<egress::Pattern>,
    /// The working directory the policy was made for.
    pub cwd: PathBuf,
    pub agent_home: Option<PathBuf>,
    pub home: Option<PathBuf>,
    /// What commands may not read.
    pub deny_read: deny_read::DenyRead,
    /// What stays read-only inside `writable` and what is kept from reading, found for one
    /// command (`Sandbox::command_policy`); `None` until then.
    pub guards: Option<guard::Guards>,
    /// With the network off and no `allow_hosts`: the command joins its session's
    /// loopback-only network namespace (`linux::session_net`) and may make IPv4/IPv6
    /// sockets there. Without a namespace to join it gets the unix-only filter.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub local_binding: bool,
}

impl Policy {
    /// The policy for commands started in `cwd`; `None` when the sandbox is off. The
    /// working directory `/` is never a writable root (it would be everything).
    pub fn resolve(config: &SandboxConfig, cwd: &Path) -> Option<Policy> {
        let cwd = canonical(cwd);
        let writable = match config.mode {
            SandboxMode::Off => return None,
            SandboxMode::ReadOnly => Vec::new(),
            SandboxMode::WorkspaceWrite => {
                let mut roots = Vec::new();
                if cwd != Path::new("/") {
                    roots.push(cwd.clone());
                }
                roots.push(canonical(&std::env::temp_dir()));
                if Path::new("/dev/shm").is_dir() {
                    roots.push(PathBuf::from("/dev/shm"));
                }
                roots.extend(config.writable_roots.iter().map(|r| canonical(r)));
                let mut unique: Vec<PathBuf> = Vec::new();
                for root in roots {
                    if !unique.contains(&root) {
                        unique.push(root);
                    }
                }
                unique
            }
        };
        Some(Policy {
            mode: config.mode,
            network: config.network,
            writable,
            // `network = true` is the whole network: no proxy, no namespace.
            allow_hosts: if config.network {
                Vec::new()
            } else {
                config.allow_hosts.clone()
            },
            cwd,
            agent_home: config.agent_home.as_deref().map(canonical),
            home: config.home.as_deref().map(canonical),
            deny_read: config.deny_read.clone(),
            guards: None,
            local_binding: config.allow_local_binding
                && !config.network
                && config.allow_hosts.is_empty(),
        })
    }

    /// Whether the command gets a network namespace whose one way out is the egress proxy.
    pub fn egress_bridge(&self) -> bool {
        !self.network && !self.allow_hosts.is_empty()
    }

    /// Whether the policy lets a command write `path` (absolute, normalised).
    pub fn may_write(&self, path: &Path) -> bool {
        self.writable.iter().any(|root| path.starts_with(root))
            && self
                .guards
                .as_ref()
                .is_none_or(|g| g.read_only_at(path).is_none())
    }

    /// One line for the user: `workspace-write, network off, writes under /repo, /tmp`.
    pub fn summary(&self) -> String {
        let hosts: Vec<String> = self.allow_hosts.iter().map(ToString::to_string).collect();
        let network = if self.network {
            "network on".to_string()
        } else if self.egress_bridge() {
            format!("network only to {} (proxy)", hosts.join(", "))
        } else if self.local_binding {
            "network off but the session's own loopback (listeners allowed)".to_string()
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

/// Devices every sandboxed command may read and write (and use terminals through); no
/// other device can be opened.
pub const DEVICES: &[&str] = &[
    "/dev/null",
    "/dev/zero",
    "/dev/full",
    "/dev/tty",
    "/dev/ptmx",
    "/dev/pts",
    "/dev/random",
    "/dev/urandom",
];

/// `path` with its links resolved, or as it is when it does not exist.
fn canonical(path: &Path) -> PathBuf {
    std::fs::canonicalize(path).unwrap_or_else(|_| path.to_path_buf())
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
    /// The repositories inside the writable roots, looked for at start.
    pub nested: guard::walk::Nested,
    /// What neither commands nor the file tools may read (the tools honour it also when
    /// commands are not sandboxed).
    pub deny_read: Arc<deny_read::DenyRead>,
    /// Why the kernel would not make the session's loopback-only network namespace at
    /// start, when the policy asks for one (`[sandbox] allow_local_binding`): commands keep
    /// the unix-only filter, so none of them can listen on 127.0.0.1.
    pub loopback_refused: Option<String>,
}

/// No sandbox (`--sandbox off`).
impl Default for Sandbox {
    fn default() -> Self {
        Sandbox {
            mode: SandboxMode::Off,
            policy: None,
            status: Status::Off,
            nested: guard::walk::Nested::default(),
            deny_read: Arc::default(),
            loopback_refused: None,
        }
    }
}

impl Sandbox {
    /// Resolve the config for `cwd` and find out whether this machine enforces it (on
    /// Linux this forks once: call it while the process has one thread).
    pub fn start(config: &SandboxConfig, cwd: &Path) -> Sandbox {
        let deny_read = Arc::new(config.deny_read.clone());
        let Some(policy) = Policy::resolve(config, cwd) else {
            return Sandbox {
                deny_read,
                ..Sandbox::default()
            };
        };
        match probe(&policy) {
            Ok(()) => {
                // The workspace and the configured roots: the temp directory and /dev/shm
                // are shared with everyone and not searched (docs/security.md). Read-only,
                // the workspace still is, for what deny_read's patterns match; for them the
                // search starts at the project's root when the working directory is below it.
                let project = canonical(&config.deny_read.cwd);
                let above = (config.deny_read.has_patterns()
                    && project.is_absolute()
                    && policy.cwd.starts_with(&project)
                    && project != policy.cwd)
                    .then_some(project);
                let searched = std::iter::once(above.unwrap_or_else(|| policy.cwd.clone()))
                    .chain(config.writable_roots.iter().map(|r| canonical(r)))
                    .filter(|_| !policy.writable.is_empty() || config.deny_read.has_patterns())
                    .collect();
                let loopback_refused = loopback_refusal(&policy);
                Sandbox {
                    mode: config.mode,
                    policy: Some(Arc::new(policy)),
                    status: Status::Enforced,
                    nested: guard::walk::Nested::search(searched, config.deny_read.clone()),
                    deny_read,
                    loopback_refused,
                }
            }
            Err(reason) => Sandbox {
                mode: config.mode,
                policy: None,
                status: Status::Unavailable(reason),
                nested: guard::walk::Nested::default(),
                deny_read,
                loopback_refused: None,
            },
        }
    }

    /// The policy for one command started in `cwd`, with what stays read-only for it
    /// found now; `None` when commands are not sandboxed.
    pub fn command_policy(&self, cwd: &Path) -> Option<Policy> {
        let mut policy = self.policy.as_deref()?.clone();
        let nested = self.nested.get();
        policy.guards = Some(guard::discover(&policy, &canonical(cwd), &nested));
        Some(policy)
    }

    /// `command_policy` off the async threads (it reads the file system, and the first
    /// call waits for the search for nested repositories).
    pub async fn command_policy_async(&self, cwd: &Path) -> Option<Policy> {
        self.policy.as_ref()?;
        let sandbox = self.clone();
        let cwd = cwd.to_path_buf();
        match crate::tasks::spawn_blocking(move || sandbox.command_policy(&cwd)).await {
            Ok(policy) => policy,
            // The task cannot be cancelled; a panic in it is no reason to run unguarded.
            Err(_) => self.command_policy(&self.policy.as_deref()?.cwd.clone()),
        }
    }

    /// What the user is told once at start, if anything.
    pub fn notice(&self) -> Option<String> {
        match (&self.status, &self.loopback_refused) {
            (Status::Unavailable(reason), _) => Some(format!(
                "the command sandbox is unavailable: {reason}. Commands will ask before they \
                 run, even in auto mode; `--sandbox off` (or [sandbox] mode = \"off\") runs \
                 them unsandboxed without asking."
            )),
            (Status::Enforced, Some(reason)) => Some(format!(
                "loopback listeners are unavailable in the sandbox: {reason}. [sandbox] \
                 allow_local_binding is on, but without the session's network namespace \
                 sandboxed commands keep the network off entirely, so a server they start \
                 (a dev server, a test's own) cannot listen on 127.0.0.1. Run such a server \
                 outside the sandbox, or set allow_local_binding = false to stop this notice."
            )),
            _ => None,
        }
    }
}

/// Why the session's loopback-only network namespace cannot be made here, when `policy`
/// wants one (Linux; elsewhere the policy never uses one). Tried once at start, so the user
/// hears of it before a server fails to bind.
fn loopback_refusal(policy: &Policy) -> Option<String> {
    if !policy.local_binding {
        return None;
    }
    #[cfg(target_os = "linux")]
    return linux::session_net::probe().err();
    #[cfg(not(target_os = "linux"))]
    None
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
    fn workspace_write_covers_the_workspace_and_temp_but_not_git() {
        let dir = tempfile::tempdir().unwrap();
        let root = std::fs::canonicalize(dir.path()).unwrap();
        std::fs::create_dir_all(root.join(".git/hooks")).unwrap();
        let config = SandboxConfig {
            writable_roots: vec![PathBuf::from("/opt/cache")],
            ..SandboxConfig::default()
        };
        let mut policy = Policy::resolve(&config, &root).unwrap();
        policy.guards = Some(guard::discover(&policy, &root, &Default::default()));
        assert!(policy.may_write(&root.join("src/main.rs")));
        assert!(policy.may_write(&std::env::temp_dir().join("x")));
        assert!(policy.may_write(Path::new("/opt/cache/a")));
        assert!(!policy.may_write(Path::new("/etc/passwd")));
        assert!(!policy.may_write(&root.join(".git/hooks/pre-commit")));
        assert!(!policy.may_write(&root.join(".git/config")));
        assert!(!policy.may_write(&root.join(".git/index")));
        assert!(!policy.network);
        let top = Policy::resolve(&config, Path::new("/")).unwrap();
        assert!(!top.writable.contains(&PathBuf::from("/")));
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

    #[test]
    fn loopback_listeners_come_only_with_the_network_off_and_no_allowed_hosts() {
        let on = SandboxConfig {
            allow_local_binding: true,
            ..SandboxConfig::default()
        };
        let policy = Policy::resolve(&on, Path::new("/repo")).unwrap();
        assert!(policy.local_binding);
        assert!(
            policy.summary().contains("the session's own loopback"),
            "{}",
            policy.summary()
        );
        // The whole network, or the proxy's namespace: no session loopback on top.
        let network = SandboxConfig {
            network: true,
            ..on.clone()
        };
        assert!(
            !Policy::resolve(&network, Path::new("/repo"))
                .unwrap()
                .local_binding
        );
        let hosts = SandboxConfig {
            allow_hosts: vec![egress::Pattern::parse("pypi.org").unwrap()],
            ..on.clone()
        };
        assert!(
            !Policy::resolve(&hosts, Path::new("/repo"))
                .unwrap()
                .local_binding
        );
        let off = Policy::resolve(&SandboxConfig::default(), Path::new("/repo")).unwrap();
        assert!(!off.local_binding);
        assert!(
            off.summary()
                .starts_with("workspace-write, network off, writes under /repo"),
            "{}",
            off.summary()
        );
    }
}
