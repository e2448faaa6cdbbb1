//! The git repositories inside the working directory and the configured writable roots
//! (nested ones: vendored clones, tools' checkouts), and the files and directories a
//! `deny_read` pattern matches there (`.env`), looked for once when the agent starts, on a
//! thread of its own; the first command waits for the answer. The search reads directories
//! only (their entries' types come with them), never follows symbolic links, never enters
//! a `.git`, and stops after `MAX_DIRECTORIES`.

use crate::sandbox::deny_read::DenyRead;
use std::collections::VecDeque;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, OnceLock};
use std::thread::JoinHandle;

/// How many directories the search reads at most.
pub const MAX_DIRECTORIES: usize = 20_000;

/// The search: running, or its answer.
#[derive(Clone, Default)]
pub struct Nested {
    inner: Arc<Inner>,
}

#[derive(Default)]
struct Inner {
    found: OnceLock<Found>,
    worker: Mutex<Option<JoinHandle<Found>>>,
}

/// What the search found.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Found {
    /// Work trees holding a `.git` (directory or file).
    pub repositories: Vec<PathBuf>,
    /// What a `deny_read` pattern matches (directories too, for a pattern ending in `/`).
    pub denied: Vec<PathBuf>,
    /// The search stopped at `MAX_DIRECTORIES` before it saw everything.
    pub incomplete: bool,
}

impl std::fmt::Debug for Nested {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Nested")
            .field("found", &self.inner.found.get())
            .finish()
    }
}

impl Nested {
    /// Start looking under `roots` on a thread of its own (in the calling thread when one
    /// cannot be started).
    pub fn search(roots: Vec<PathBuf>, deny_read: DenyRead) -> Nested {
        let nested = Nested::default();
        let worker = std::thread::Builder::new()
            .name("sandbox-repositories".to_string())
            .spawn({
                let (roots, deny_read) = (roots.clone(), deny_read.clone());
                move || search(&roots, MAX_DIRECTORIES, &deny_read)
            });
        match worker {
            Ok(handle) => {
                *nested
                    .inner
                    .worker
                    .lock()
                    .unwrap_or_else(|e| e.into_inner()) = Some(handle);
            }
            Err(_) => {
                let _ = nested
                    .inner
                    .found
                    .set(search(&roots, MAX_DIRECTORIES, &deny_read));
            }
        }
        nested
    }

    /// The answer, waiting for the search if it still runs.
    pub fn get(&self) -> Found {
        if let Some(found) = self.inner.found.get() {
            return found.clone();
        }
        let handle = self
            .inner
            .worker
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .take();
        if let Some(handle) = handle {
            let found = handle.join().unwrap_or_default();
            if found.incomplete {
                tracing::warn!(
                    "the search for nested git repositories stopped after {MAX_DIRECTORIES} \
                     directories"
                );
            }
            let _ = self.inner.found.set(found);
        }
        self.inner.found.get().cloned().unwrap_or_default()
    }
}

/// Breadth first under each root, at most `budget` directories read.
pub fn search(roots: &[PathBuf], budget: usize, deny_read: &DenyRead) -> Found {
    let matcher = deny_read.matcher();
    let mut found = Found::default();
    let mut queue: VecDeque<PathBuf> = roots.iter().cloned().collect();
    let mut read = 0;
    while let Some(dir) = queue.pop_front() {
        if read == budget {
            found.incomplete = true;
            break;
        }
        read += 1;
        let Ok(entries) = std::fs::read_dir(&dir) else {
            continue;
        };
        for entry in entries.flatten() {
            let Ok(kind) = entry.file_type() else {
                continue;
            };
            if entry.file_name() == ".git" {
                if !found.repositories.contains(&dir) {
                    found.repositories.push(dir.clone());
                }
                continue;
            }
            let path = entry.path();
            if matcher.has_patterns()
                && !kind.is_symlink()
                && matcher.denies_itself(&path, kind.is_dir()).is_some()
            {
                found.denied.push(path);
            } else if kind.is_dir() {
                queue.push_back(path);
            }
        }
    }
    found
}

/// Whether `path` lies in one of `roots`.
pub fn inside(roots: &[PathBuf], path: &Path) -> bool {
    roots.iter().any(|root| path.starts_with(root))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_nested_repositories_without_entering_git_or_following_links() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        std::fs::create_dir_all(root.join(".git/modules/x/.git")).unwrap();
        std::fs::create_dir_all(root.join("vendor/a/.git")).unwrap();
        std::fs::create_dir_all(root.join("deep/er/b")).unwrap();
        std::fs::write(
            root.join("deep/er/b/.git"),
            "gitdir: ../../../.git/modules/b",
        )
        .unwrap();
        let outside = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(outside.path().join("c/.git")).unwrap();
        std::os::unix::fs::symlink(outside.path(), root.join("link")).unwrap();
        let none = DenyRead::default();
        let found = search(&[root.to_path_buf()], 100, &none);
        let mut repositories = found.repositories.clone();
        repositories.sort();
        assert_eq!(
            repositories,
            [
                root.to_path_buf(),
                root.join("deep/er/b"),
                root.join("vendor/a")
            ]
        );
        assert!(!found.incomplete);
        assert!(search(&[root.to_path_buf()], 2, &none).incomplete);
        let nested = Nested::search(vec![root.to_path_buf()], none.clone());
        assert_eq!(nested.get().repositories.len(), 3);
        assert_eq!(nested.get().repositories.len(), 3);
    }
}
