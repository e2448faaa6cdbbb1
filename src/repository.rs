//! Which directory is the root of the git repository a working directory is in, decided as
//! git decides it: the nearest ancestor whose `.git` is a real git directory (a `HEAD`, an
//! object store and refs, or a `gitdir:` file pointing at one), never looking into or above a
//! directory named in `GIT_CEILING_DIRECTORIES`. An empty or broken `.git` (a leftover in the
//! temp directory, say) is not a repository, for git or for us. Context files, project
//! commands, skills and hooks are looked for from this root down to the working directory.
//!
//! Written by hand: the checks are a few `stat`s, and a git library would be a large
//! dependency for them.

use std::path::{Path, PathBuf};

/// The root of the repository `cwd` is in, if any.
pub fn root(cwd: &Path) -> Option<PathBuf> {
    root_within(cwd, &ceilings())
}

/// `cwd` and its ancestors up to the repository root, nearest first; just `cwd` outside a
/// repository.
pub fn dirs_up_to_root(cwd: &Path) -> Vec<PathBuf> {
    match root(cwd) {
        Some(root) => cwd
            .ancestors()
            .take_while(|dir| dir.starts_with(&root))
            .map(Path::to_path_buf)
            .collect(),
        None => vec![cwd.to_path_buf()],
    }
}

/// `root`, with the ceiling directories given.
pub fn root_within(cwd: &Path, ceilings: &[PathBuf]) -> Option<PathBuf> {
    for dir in cwd.ancestors() {
        if is_repository(dir) {
            return Some(dir.to_path_buf());
        }
        // Git stops before entering a ceiling directory: the ceiling itself is not searched.
        if dir
            .parent()
            .is_some_and(|parent| ceilings.iter().any(|c| c == parent))
        {
            return None;
        }
    }
    None
}

/// Whether `dir/.git` is a git directory (or a `gitdir:` file naming one).
pub fn is_repository(dir: &Path) -> bool {
    let dot_git = dir.join(".git");
    let Ok(metadata) = dot_git.metadata() else {
        return false;
    };
    if metadata.is_dir() {
        return is_git_dir(&dot_git);
    }
    // A linked worktree or a submodule: `.git` is a file `gitdir: PATH`.
    std::fs::read_to_string(&dot_git)
        .ok()
        .and_then(|text| {
            text.lines()
                .next()
                .and_then(|line| line.strip_prefix("gitdir:"))
                .map(|path| dir.join(path.trim()))
        })
        .is_some_and(|git_dir| is_git_dir(&git_dir))
}

/// What git checks before it takes a directory for a git directory: a `HEAD` file, and an
/// object store and refs of its own or, in a linked worktree, through `commondir`.
fn is_git_dir(git_dir: &Path) -> bool {
    if !git_dir.join("HEAD").is_file() {
        return false;
    }
    let common = match std::fs::read_to_string(git_dir.join("commondir")) {
        Ok(text) => git_dir.join(text.trim()),
        Err(_) => git_dir.to_path_buf(),
    };
    common.join("objects").is_dir() && common.join("refs").is_dir()
}

/// `GIT_CEILING_DIRECTORIES`: colon-separated absolute paths (empty entries ignored, as git
/// does).
fn ceilings() -> Vec<PathBuf> {
    std::env::var_os("GIT_CEILING_DIRECTORIES")
        .map(|value| {
            std::env::split_paths(&value)
                .filter(|path| path.is_absolute())
                .collect()
        })
        .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn git_init(dir: &Path) {
        let status = std::process::Command::new("git")
            .args(["init", "-q"])
            .current_dir(dir)
            .status()
            .unwrap();
        assert!(status.success());
    }

    #[test]
    fn a_real_repository_is_found_from_below() {
        let repo = tempfile::tempdir().unwrap();
        git_init(repo.path());
        let sub = repo.path().join("a/b");
        std::fs::create_dir_all(&sub).unwrap();
        assert_eq!(root_within(&sub, &[]).as_deref(), Some(repo.path()));
    }

    #[test]
    fn an_empty_or_broken_dot_git_is_not_a_repository() {
        let dir = tempfile::tempdir().unwrap();
        let inner = dir.path().join("work");
        std::fs::create_dir_all(inner.join(".git")).unwrap();
        assert!(!is_repository(&inner));
        // HEAD alone is not enough either, nor a gitdir file pointing nowhere.
        std::fs::write(inner.join(".git/HEAD"), "ref: refs/heads/main\n").unwrap();
        assert!(!is_repository(&inner));
        let linked = dir.path().join("linked");
        std::fs::create_dir_all(&linked).unwrap();
        std::fs::write(linked.join(".git"), "gitdir: /nowhere/at/all\n").unwrap();
        assert!(!is_repository(&linked));
        // With the search kept inside the temp directory, nothing is found.
        let ceiling = dir.path().to_path_buf();
        assert_eq!(root_within(&inner, std::slice::from_ref(&ceiling)), None);
        assert_eq!(root_within(&linked, &[ceiling]), None);
    }

    #[test]
    fn a_linked_worktree_is_a_repository() {
        let dir = tempfile::tempdir().unwrap();
        let main = dir.path().join("main");
        std::fs::create_dir_all(&main).unwrap();
        git_init(&main);
        let run = |args: &[&str]| {
            let status = std::process::Command::new("git")
                .args(args)
                .current_dir(&main)
                .status()
                .unwrap();
            assert!(status.success(), "git {args:?}");
        };
        run(&[
            "-c",
            "user.name=t",
            "-c",
            "user.email=t@t",
            "commit",
            "-q",
            "--allow-empty",
            "-m",
            "first",
        ]);
        let linked = dir.path().join("linked");
        run(&["worktree", "add", "-q", linked.to_str().unwrap()]);
        assert!(linked.join(".git").is_file());
        assert!(is_repository(&linked));
    }

    #[test]
    fn the_search_stops_below_a_ceiling_directory() {
        let repo = tempfile::tempdir().unwrap();
        git_init(repo.path());
        let sub = repo.path().join("a/b");
        std::fs::create_dir_all(&sub).unwrap();
        let ceiling = repo.path().join("a");
        assert_eq!(root_within(&sub, &[ceiling]), None);
        // A ceiling above the root does not hide it.
        let above = repo.path().parent().unwrap().to_path_buf();
        assert_eq!(root_within(&sub, &[above]).as_deref(), Some(repo.path()));
    }
}
