//! What stays read-only inside the writable roots, found just before each command starts:
//! files whose content later runs, or decides what runs, outside the sandbox — so that
//! nothing a sandboxed command plants there runs with the user's full rights:
//!
//! - every git repository's control files (`git`): of the repository holding the working
//!   directory or a writable root (git looks upward, so one above the workspace too), of
//!   those found inside the workspace at start (`walk`), their linked worktrees and
//!   submodules (`index`);
//! - the agent's own project files: `.agent/` and `.claude/` (settings and their hooks,
//!   commands, skills, agents) from the working directory up to the repository root;
//! - `$AGENT_HOME` (config, trusted projects, commands, skills, agents);
//! - the user's start-up files (shell profiles, git's global config, `~/.ssh`, user
//!   services, `~/.local/bin`…), when the home directory lies in a writable root.
//!
//! The directories holding a read-only path are pinned (they cannot be renamed or
//! removed), so that nothing can move a guarded `.git` aside and put another in its place.
//! Also recorded: the directories where a new `.git` would take over the user's git
//! (`watched`), looked at again after the command; and what `deny_read` keeps from the
//! command (`unreadable`): the denied paths that exist, what its patterns matched at start
//! (`walk`) and what they match now in the directories from the working directory up to
//! its repository's root (a `.env` made since).

mod git;
pub mod index;
pub mod walk;

use super::Policy;
use serde::{Deserialize, Serialize};
use std::collections::HashSet;
use std::path::{Path, PathBuf};
use walk::inside;

/// At most this many read-only paths per command (each is a mount).
const MAX_READ_ONLY: usize = 1000;

/// Start-up files in the home directory: shells, git, ssh, the user's services and
/// programs on its `PATH`.
pub const STARTUP_FILES: &[&str] = &[
    ".bashrc",
    ".bash_profile",
    ".bash_login",
    ".bash_logout",
    ".profile",
    ".zshrc",
    ".zshenv",
    ".zprofile",
    ".zlogin",
    ".zlogout",
    ".config/fish",
    ".gitconfig",
    ".config/git",
    ".ssh",
    ".config/systemd",
    ".config/autostart",
    ".local/bin",
    ".cargo/bin",
    ".cargo/config.toml",
    ".npmrc",
];

/// Why a path stays read-only.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum What {
    /// A repository's control directory (`.git`, a linked worktree's or a submodule's git
    /// directory, a common directory).
    GitDir,
    /// A `.git` file naming where the control directory is.
    GitPointer,
    /// The directory of a submodule that is not checked out.
    Submodule,
    /// The project's `.agent` or `.claude` folder.
    AgentProject,
    /// `$AGENT_HOME`.
    AgentHome,
    /// A start-up file in the user's home.
    StartupFile,
}

impl What {
    /// What it is, for the user: `git's control files`, `the agent's project settings`.
    pub fn describe(self) -> &'static str {
        match self {
            What::GitDir => "a git repository's control directory",
            What::GitPointer => "a .git file naming a repository's control directory",
            What::Submodule => "a git submodule that is not checked out",
            What::AgentProject => "the agent's project settings, hooks, commands and skills",
            What::AgentHome => "the agent's own configuration ($AGENT_HOME)",
            What::StartupFile => "a start-up file in your home directory",
        }
    }
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Guarded {
    pub path: PathBuf,
    pub what: What,
}

/// What stays read-only for one command.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Guards {
    /// Outer paths before the ones inside them.
    pub read_only: Vec<Guarded>,
    /// Directories that may not be renamed or removed, outer ones first.
    pub pinned: Vec<PathBuf>,
    /// Directories without a `.git` where one would be found by git run in the working
    /// directory (from it up to its repository, or to the writable root above it).
    pub watched: Vec<PathBuf>,
    /// Paths the command may not read (files and directories), outer ones first.
    pub unreadable: Vec<PathBuf>,
}

impl Guards {
    /// The read-only path `path` lies in, if any.
    pub fn read_only_at(&self, path: &Path) -> Option<&Guarded> {
        self.read_only.iter().find(|g| path.starts_with(&g.path))
    }

    /// The `.git` entries that appeared in a watched directory since the guards were made.
    pub fn planted_repositories(&self) -> Vec<PathBuf> {
        self.watched
            .iter()
            .map(|dir| dir.join(".git"))
            .filter(|dot_git| dot_git.symlink_metadata().is_ok())
            .collect()
    }
}

/// The guards for a command started in `cwd` under `policy`; `found`: what the search at
/// start found (nested repositories, what `deny_read`'s patterns match).
pub fn discover(policy: &Policy, cwd: &Path, found: &walk::Found) -> Guards {
    // Found once for both uses (each is a search upwards for the repository).
    let cwd_projects = project_dirs(cwd);
    let unreadable = unreadable(policy, &cwd_projects, found);
    if policy.writable.is_empty() {
        return Guards {
            unreadable,
            ..Guards::default()
        };
    }
    let mut finder = Finder {
        roots: &policy.writable,
        guards: Guards {
            unreadable,
            ..Guards::default()
        },
        guarded: HashSet::new(),
        visited: HashSet::new(),
    };
    let starts = [cwd, policy.cwd.as_path()]
        .into_iter()
        .chain(policy.writable.iter().map(PathBuf::as_path));
    let mut looked_at = HashSet::new();
    for start in starts {
        // The starts share most of their ancestors (often they are the same directory).
        for dir in start
            .ancestors()
            .take_while(|dir| looked_at.insert(dir.to_path_buf()))
        {
            if dir.join(".git").symlink_metadata().is_ok() {
                finder.repository(dir, 0);
            }
        }
    }
    for repository in &found.repositories {
        finder.repository(repository, 0);
    }
    for dir in cwd.ancestors() {
        if !inside(&policy.writable, dir) || dir.join(".git").symlink_metadata().is_ok() {
            break;
        }
        finder.guards.watched.push(dir.to_path_buf());
    }
    let policy_projects = if policy.cwd == cwd {
        Vec::new()
    } else {
        project_dirs(&policy.cwd)
    };
    for project in cwd_projects.iter().chain(&policy_projects) {
        for name in [".agent", ".claude"] {
            let path = project.join(name);
            if path.exists() {
                finder.read_only(path, What::AgentProject);
            }
        }
    }
    if let Some(home) = policy.agent_home.as_ref().filter(|h| h.exists()) {
        finder.read_only(home.clone(), What::AgentHome);
    }
    if let Some(home) = &policy.home {
        for name in STARTUP_FILES {
            let path = home.join(name);
            if path.exists() {
                finder.read_only(path, What::StartupFile);
            }
        }
    }
    let mut guards = finder.guards;
    guards.pinned.sort_by_key(|p| p.components().count());
    guards
        .read_only
        .sort_by_key(|g| g.path.components().count());
    guards
}

/// What `deny_read` keeps from a command whose working directory's `project_dirs` are
/// `projects`: outer paths first, none inside another.
fn unreadable(policy: &Policy, projects: &[PathBuf], found: &walk::Found) -> Vec<PathBuf> {
    let matcher = policy.deny_read.matcher();
    let mut paths = policy.deny_read.existing_paths(&matcher);
    let denied = |path: &Path| {
        path.symlink_metadata()
            .is_ok_and(|m| !m.is_symlink() && matcher.denies(path, m.is_dir()).is_some())
    };
    paths.extend(found.denied.iter().filter(|p| denied(p)).cloned());
    if matcher.has_patterns() {
        for dir in projects {
            let Ok(entries) = std::fs::read_dir(dir) else {
                continue;
            };
            paths.extend(entries.flatten().map(|e| e.path()).filter(|p| denied(p)));
        }
    }
    paths.sort_by_key(|p| p.components().count());
    let mut kept: Vec<PathBuf> = Vec::new();
    for path in paths {
        if !kept.iter().any(|k| path.starts_with(k)) {
            kept.push(path);
        }
    }
    kept
}

/// The working directory and its ancestors whose project files the agent may load: up to
/// the repository root as git finds it (`crate::repository`, which `extensions::sources`
/// and the context files use), and at least up to the nearest `.git` of any kind — a broken
/// one (an empty directory a command planted) must not end the walk below the root.
fn project_dirs(cwd: &Path) -> Vec<PathBuf> {
    let to_root = crate::repository::dirs_up_to_root(cwd);
    let mut to_any_git = Vec::new();
    for dir in cwd.ancestors() {
        to_any_git.push(dir.to_path_buf());
        if dir.join(".git").symlink_metadata().is_ok() {
            break;
        }
    }
    if to_any_git
        .last()
        .is_none_or(|top| top.join(".git").symlink_metadata().is_err())
    {
        to_any_git = vec![cwd.to_path_buf()];
    }
    // Both lists run from `cwd` upwards: the longer one holds the other.
    if to_root.len() >= to_any_git.len() {
        to_root
    } else {
        to_any_git
    }
}

/// Collects the guards.
pub struct Finder<'a> {
    roots: &'a [PathBuf],
    guards: Guards,
    guarded: HashSet<PathBuf>,
    /// `.git` entries already looked at.
    visited: HashSet<PathBuf>,
}

impl Finder<'_> {
    fn inside(&self, path: &Path) -> bool {
        inside(self.roots, path)
    }

    /// Whether `dot_git` is seen for the first time.
    fn visit(&mut self, dot_git: &Path) -> bool {
        self.visited.insert(dot_git.to_path_buf())
    }

    /// Keep `path` read-only if a command could write it, and pin the directories it lies
    /// in below its writable root (a root is a mount point already).
    fn read_only(&mut self, path: PathBuf, what: What) {
        // A path inside one already read-only is read-only too.
        if !self.inside(&path)
            || self.guarded.contains(&path)
            || self.guards.read_only_at(&path).is_some()
        {
            return;
        }
        if self.guards.read_only.len() == MAX_READ_ONLY {
            tracing::warn!(path = %path.display(), "too many paths to keep read-only");
            return;
        }
        for dir in path.ancestors().skip(1) {
            if self.roots.iter().any(|root| root == dir) || !self.inside(dir) {
                break;
            }
            if !self.guards.pinned.iter().any(|p| p == dir) {
                self.guards.pinned.push(dir.to_path_buf());
            }
        }
        self.guarded.insert(path.clone());
        self.guards.read_only.push(Guarded { path, what });
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sandbox::{SandboxConfig, SandboxMode};

    fn policy(cwd: &Path) -> Policy {
        let config = SandboxConfig {
            mode: SandboxMode::WorkspaceWrite,
            ..SandboxConfig::default()
        };
        Policy::resolve(&config, cwd).unwrap()
    }

    fn paths(guards: &Guards) -> Vec<(PathBuf, What)> {
        guards
            .read_only
            .iter()
            .map(|g| (g.path.clone(), g.what))
            .collect()
    }

    #[test]
    fn guards_git_control_paths_pointers_and_the_agents_files() {
        let dir = tempfile::tempdir().unwrap();
        let root = std::fs::canonicalize(dir.path()).unwrap();
        std::fs::create_dir_all(root.join(".git/modules/sub")).unwrap();
        std::fs::create_dir_all(root.join("sub")).unwrap();
        std::fs::write(root.join("sub/.git"), "gitdir: ../.git/modules/sub\n").unwrap();
        std::fs::create_dir_all(root.join("a/b/nested/.git")).unwrap();
        std::fs::create_dir_all(root.join(".agent/commands")).unwrap();
        let nested = [root.join("a/b/nested"), root.join("sub")];
        let found = walk::Found {
            repositories: nested.to_vec(),
            ..walk::Found::default()
        };
        let guards = discover(&policy(&root), &root, &found);
        let found = paths(&guards);
        for expected in [
            (root.join(".git"), What::GitDir),
            (root.join("sub/.git"), What::GitPointer),
            (root.join("a/b/nested/.git"), What::GitDir),
            (root.join(".agent"), What::AgentProject),
        ] {
            assert!(found.contains(&expected), "{expected:?} in {found:?}");
        }
        assert!(
            !found
                .iter()
                .any(|(p, _)| p == &root.join(".git/modules/sub"))
        );
        for pinned in ["a", "a/b", "a/b/nested", "sub"] {
            assert!(guards.pinned.contains(&root.join(pinned)), "{pinned}");
        }
        assert!(!guards.pinned.contains(&root));
        assert!(guards.watched.is_empty());
        let sub = root.join("a");
        let guards = discover(&policy(&sub), &sub, &walk::Found::default());
        assert_eq!(guards.watched, std::slice::from_ref(&sub));
        assert!(guards.planted_repositories().is_empty());
        std::fs::create_dir(sub.join(".git")).unwrap();
        assert_eq!(guards.planted_repositories(), [sub.join(".git")]);
    }
}
