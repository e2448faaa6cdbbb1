//! A git repository's files that can make git run something — everything under its control
//! directory (config, hooks, info/attributes, commondir, modules, worktrees) and the
//! `gitdir:` pointers that say where that directory is — for the repository of a work
//! tree, the repositories it shares files with (a linked worktree's common directory, the
//! main repository's other worktrees) and its submodules, populated or not.

use super::{Finder, What, index};
use std::path::{Path, PathBuf};

/// How deep submodules of submodules are followed.
const MAX_DEPTH: usize = 8;

impl Finder<'_> {
    /// Guard the repository whose work tree is `work_tree` (it holds a `.git`).
    pub fn repository(&mut self, work_tree: &Path, depth: usize) {
        let dot_git = work_tree.join(".git");
        let Ok(meta) = dot_git.symlink_metadata() else {
            return;
        };
        if !self.visit(&dot_git) {
            return;
        }
        if meta.is_dir() {
            self.read_only(dot_git.clone(), What::GitDir);
            self.git_dir(&dot_git, work_tree, depth);
        } else if meta.is_file() {
            self.read_only(dot_git.clone(), What::GitPointer);
            if let Some(git_dir) = pointer(&dot_git) {
                self.read_only(git_dir.clone(), What::GitDir);
                self.git_dir(&git_dir, work_tree, depth);
            }
        } else if let Ok(target) = std::fs::canonicalize(&dot_git) {
            // A symbolic link: its target is guarded (the link itself can be replaced).
            if target.is_dir() {
                self.read_only(target.clone(), What::GitDir);
                self.git_dir(&target, work_tree, depth);
            }
        }
    }

    fn git_dir(&mut self, git_dir: &Path, work_tree: &Path, depth: usize) {
        let common = match std::fs::read_to_string(git_dir.join("commondir")) {
            Ok(text) => {
                let common = resolve(git_dir, text.trim());
                self.read_only(common.clone(), What::GitDir);
                common
            }
            Err(_) => git_dir.to_path_buf(),
        };
        self.worktrees(&common);
        if depth >= MAX_DEPTH {
            return;
        }
        let hash_len = hash_len(&common);
        for path in index::gitlinks(&git_dir.join("index"), hash_len) {
            let submodule = work_tree.join(path);
            if submodule.join(".git").symlink_metadata().is_ok() {
                self.repository(&submodule, depth + 1);
                continue;
            }
            // Not populated: kept empty, so that no `.git` can appear in it (git would run
            // `git status` in it whenever the user runs it in the outer repository).
            if !submodule.exists()
                && self.inside(&submodule)
                && submodule.parent().is_some_and(Path::is_dir)
            {
                let _ = std::fs::create_dir(&submodule);
            }
            if submodule.is_dir() {
                self.read_only(submodule, What::Submodule);
            }
        }
    }

    /// The `.git` files of the linked worktrees of the repository whose common directory
    /// is `common`.
    fn worktrees(&mut self, common: &Path) {
        let Ok(entries) = std::fs::read_dir(common.join("worktrees")) else {
            return;
        };
        for entry in entries.flatten() {
            if let Ok(text) = std::fs::read_to_string(entry.path().join("gitdir")) {
                let dot_git = resolve(&entry.path(), text.trim());
                self.read_only(dot_git, What::GitPointer);
            }
        }
    }
}

/// Where a `.git` file (`gitdir: PATH`) points, if it does.
fn pointer(dot_git: &Path) -> Option<PathBuf> {
    let text = std::fs::read_to_string(dot_git).ok()?;
    let target = text.trim().strip_prefix("gitdir:")?.trim();
    let base = dot_git.parent()?;
    Some(resolve(base, target))
}

/// `path` (absolute, or relative to `base`), with links resolved where it exists.
fn resolve(base: &Path, path: &str) -> PathBuf {
    let joined = base.join(path);
    std::fs::canonicalize(&joined).unwrap_or(joined)
}

/// The length of an object name in the repository: 32 bytes in a SHA-256 one.
fn hash_len(common: &Path) -> usize {
    let config = std::fs::read_to_string(common.join("config")).unwrap_or_default();
    let squeezed: String = config
        .to_ascii_lowercase()
        .chars()
        .filter(|c| !c.is_whitespace())
        .collect();
    if squeezed.contains("objectformat=sha256") {
        32
    } else {
        20
    }
}
