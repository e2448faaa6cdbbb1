//! Whether the user trusts a project's hooks. A repository must not run code on a user's
//! machine merely by being opened, so hooks from a project's settings files run only after
//! the user said yes — once per project and per set of hooks: the store remembers a hash of
//! them, and a change (a new command, another matcher) asks again. Kept in
//! `$AGENT_HOME/trusted-projects.json`.

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
        let (specs, problems) = project_hooks(&files);
        if specs.is_empty() && problems.is_empty() {
            return None;
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
            .map(|s| match &s.matcher {
                Some(m) => format!("{} ({m}): {}", s.event.as_str(), s.command),
                None => format!("{}: {}", s.event.as_str(), s.command),
            })
            .collect()
    }
}

fn hash(specs: &[HookSpec]) -> String {
    let mut context = digest::Context::new(&digest::SHA256);
    for spec in specs {
        for part in [
            spec.event.as_str(),
            spec.matcher.as_deref().unwrap_or(""),
            &spec.command,
            &spec.timeout.as_secs().to_string(),
        ] {
            context.update(part.as_bytes());
            context.update(&[0]);
        }
    }
    context
        .finish()
        .as_ref()
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
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
}
