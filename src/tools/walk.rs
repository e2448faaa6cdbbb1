//! Walking a directory tree for `grep` and `find`: the `ignore` crate's walker, honouring
//! `.gitignore` and `.ignore` files (also outside a git repository), showing hidden files
//! but never descending into `.git`, in a stable (sorted) order. Entries the permission
//! rules hide (`visibility`) are left out and counted, and so are what `[sandbox]
//! deny_read` keeps from reading (`Denied`: directories always, files when the caller reads
//! their content). A directory whose ignore file is no regular file is left out too (the
//! walker would block forever opening a FIFO there).
//! Also the glob filters both tools take, built with `globset`.

use super::identity::{File, LazyNamed};
use super::regular::irregular_kind;
use super::visibility::Hidden;
use globset::{GlobBuilder, GlobMatcher};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, PoisonError};

/// The files the walker reads in each directory it enters (and in the root's ancestors).
const IGNORE_FILES: &[&str] = &[".gitignore", ".ignore", ".git", ".git/info/exclude"];

/// What `deny_read` leaves out of a walk.
pub struct Denied {
    pub matcher: crate::sandbox::deny_read::Matcher,
    /// Files too (their content is read), not only directories; a file with other names
    /// (hard links) is compared with the denied files and `known` (what the patterns
    /// matched at start).
    pub files: bool,
    pub known: Vec<PathBuf>,
}

#[cfg(test)]
impl Denied {
    /// Nothing denied.
    pub fn none() -> Denied {
        Denied {
            matcher: crate::sandbox::deny_read::DenyRead::default().matcher(),
            files: true,
            known: Vec::new(),
        }
    }
}

/// Every entry under a root (or the root itself when it is a file), sorted by name, with
/// what was left out.
pub struct Walk {
    entries: ignore::Walk,
    hidden: Option<Arc<Hidden>>,
    /// The files the rules name, by device and inode (hard links and bind mounts to them
    /// are left out too).
    named: Option<LazyNamed>,
    /// Entries the permission rules hid.
    hidden_count: Arc<AtomicUsize>,
    /// Entries `deny_read` kept out.
    denied_count: Arc<AtomicUsize>,
    /// Directories left out because of an ignore file that is no regular file, and why.
    unreadable: Arc<Mutex<Vec<String>>>,
}

/// Walk `root`, leaving out what `hidden` hides and what `denied` keeps. `Err` with the
/// message for a root (or one of its ancestors) whose ignore file cannot be read safely,
/// or that `deny_read` keeps.
pub fn walk(root: &Path, hidden: Option<Arc<Hidden>>, denied: Denied) -> Result<Walk, String> {
    if let Some(refusal) = denied.matcher.refuse(root, &[]) {
        return Err(refusal);
    }
    for dir in root.ancestors() {
        if let Some(problem) = unsafe_ignore_file(dir) {
            return Err(format!(
                "Cannot search {}: {problem}, so its ignore rules cannot be read",
                root.display()
            ));
        }
    }
    let hidden_count = Arc::new(AtomicUsize::new(0));
    let denied_count = Arc::new(AtomicUsize::new(0));
    let filter_denied = denied_count.clone();
    let unreadable = Arc::new(Mutex::new(Vec::new()));
    // Entries under the root are real directories (symbolic links are not followed), so
    // where an entry really is follows from where the root is.
    let real_root = hidden.as_ref().map(|h| h.real(root));
    let named = hidden.as_ref().map(|h| h.named_files());
    let (filter_hidden, filter_count, filter_unreadable) =
        (hidden.clone(), hidden_count.clone(), unreadable.clone());
    let root_owned = root.to_path_buf();
    let entries = ignore::WalkBuilder::new(root)
        .hidden(false)
        .git_ignore(true)
        .git_exclude(true)
        .require_git(false)
        .filter_entry(move |entry| {
            if entry.file_name() == ".git" {
                return false;
            }
            let path = entry.path();
            let is_dir = entry.file_type().is_some_and(|t| t.is_dir());
            let other_names = || {
                use std::os::unix::fs::MetadataExt;
                entry.metadata().is_ok_and(|m| m.is_file() && m.nlink() > 1)
            };
            if (is_dir || denied.files) && denied.matcher.denies_itself(path, is_dir).is_some()
                || (denied.files
                    && !is_dir
                    && other_names()
                    && denied.matcher.refuse(path, &denied.known).is_some())
            {
                filter_denied.fetch_add(1, Ordering::Relaxed);
                return false;
            }
            if let Some(hidden) = &filter_hidden {
                let real = match (&real_root, entry.path_is_symlink()) {
                    (Some(real_root), false) => path
                        .strip_prefix(&root_owned)
                        .ok()
                        .map(|rest| real_root.join(rest)),
                    _ => None,
                };
                if hidden.hides(path, real.as_deref()) {
                    filter_count.fetch_add(1, Ordering::Relaxed);
                    return false;
                }
            }
            if entry.file_type().is_some_and(|t| t.is_dir())
                && let Some(problem) = unsafe_ignore_file(path)
            {
                filter_unreadable
                    .lock()
                    .unwrap_or_else(PoisonError::into_inner)
                    .push(problem);
                return false;
            }
            true
        })
        .sort_by_file_name(|a, b| a.cmp(b))
        .build();
    Ok(Walk {
        entries,
        hidden,
        named,
        hidden_count,
        denied_count,
        unreadable,
    })
}

/// Why `dir`'s ignore files cannot be read without risk, if one of them exists but is no
/// regular file (`.git` may also be a directory).
pub(crate) fn unsafe_ignore_file(dir: &Path) -> Option<String> {
    for name in IGNORE_FILES {
        let path = dir.join(name);
        let Ok(metadata) = std::fs::metadata(&path) else {
            continue;
        };
        if *name == ".git" && metadata.is_dir() {
            continue;
        }
        if let Some(kind) = irregular_kind(&metadata) {
            return Some(format!("{} is {kind}", path.display()));
        }
    }
    None
}

impl Walk {
    /// Whether a file the search opened is one the rules name, reached by another path (a
    /// hard link, a bind mount): then it is left out too, and counted.
    pub fn leaves_out(&self, file: &std::fs::File, metadata: &std::fs::Metadata) -> bool {
        self.leaves_out_file(&File::of_open(file, metadata))
    }

    /// The same for an entry the search shows without opening it (`find`).
    pub fn leaves_out_path(&self, path: &Path) -> bool {
        File::of_path(path).is_some_and(|file| self.leaves_out_file(&file))
    }

    fn leaves_out_file(&self, file: &File) -> bool {
        let named = self
            .named
            .as_ref()
            .is_some_and(|named| named.path_of(file).is_some());
        if named {
            self.hidden_count.fetch_add(1, Ordering::Relaxed);
        }
        named
    }

    /// How many entries the permission rules left out.
    pub fn hidden_count(&self) -> usize {
        self.hidden_count.load(Ordering::Relaxed)
    }

    /// Notes to append to a search's result about what was left out (empty: nothing).
    pub fn notes(&self) -> Vec<String> {
        let mut notes = Vec::new();
        let hidden = self.hidden_count();
        if hidden > 0 {
            notes.push(super::visibility::hidden_note(hidden));
        }
        let denied = self.denied_count.load(Ordering::Relaxed);
        if denied > 0 {
            let plural = if denied == 1 {
                "path was"
            } else {
                "paths were"
            };
            notes.push(format!(
                "[{denied} {plural} left out: `[sandbox] deny_read` keeps them from being read.]"
            ));
        }
        for problem in self
            .unreadable
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .iter()
        {
            notes.push(format!(
                "[Skipped a directory: {problem}, not a regular file, so its ignore rules cannot be read.]"
            ));
        }
        notes
    }
}

impl Iterator for Walk {
    type Item = ignore::DirEntry;

    /// The next entry; entries that cannot be read are skipped, as ripgrep does.
    fn next(&mut self) -> Option<ignore::DirEntry> {
        loop {
            let entry = self.entries.next()?;
            let Ok(entry) = entry else { continue };
            // The filter does not see the root itself.
            if entry.depth() == 0
                && let Some(hidden) = &self.hidden
                && hidden.hides(entry.path(), None)
            {
                self.hidden_count.fetch_add(1, Ordering::Relaxed);
                continue;
            }
            return Some(entry);
        }
    }
}

/// A glob a file must match: against its path relative to the search root when the
/// pattern contains a `/`, otherwise against its name (`*.rs` finds Rust files anywhere).
pub struct PathGlob {
    matcher: GlobMatcher,
    whole_path: bool,
}

impl PathGlob {
    pub fn new(pattern: &str) -> Result<PathGlob, String> {
        let pattern = pattern.trim().trim_start_matches("./");
        let whole_path = pattern.contains('/');
        let glob = GlobBuilder::new(pattern)
            .literal_separator(whole_path)
            .backslash_escape(true)
            .build()
            .map_err(|e| format!("invalid glob `{pattern}`: {}", e.kind()))?;
        Ok(PathGlob {
            matcher: glob.compile_matcher(),
            whole_path,
        })
    }

    /// Whether `path` (under `root`) matches.
    pub fn is_match(&self, root: &Path, path: &Path) -> bool {
        if self.whole_path {
            let relative = path.strip_prefix(root).unwrap_or(path);
            self.matcher.is_match(relative)
        } else {
            path.file_name()
                .is_some_and(|name| self.matcher.is_match(Path::new(name)))
        }
    }
}

/// The directory or file a search starts from: the `path` argument resolved, or the
/// working directory. `Err` with the message for a missing path.
pub fn search_root(cwd: &Path, path: Option<&str>) -> Result<PathBuf, String> {
    let root = match path.map(str::trim).filter(|p| !p.is_empty()) {
        Some(raw) => super::path::resolve(cwd, raw),
        None => cwd.to_path_buf(),
    };
    if root.exists() {
        Ok(root)
    } else {
        Err(super::path::not_found_message(cwd, &root))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn honours_gitignore_and_skips_the_git_directory() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        for file in [
            ".gitignore",
            "src/a.rs",
            "target/out.rs",
            ".git/config",
            ".github/ci.yml",
        ] {
            let path = root.join(file);
            std::fs::create_dir_all(path.parent().unwrap()).unwrap();
            std::fs::write(path, "").unwrap();
        }
        std::fs::write(root.join(".gitignore"), "target/\n").unwrap();
        let seen: Vec<String> = walk(root, None, Denied::none())
            .unwrap()
            .filter(|e| e.file_type().is_some_and(|t| t.is_file()))
            .map(|e| e.path().strip_prefix(root).unwrap().display().to_string())
            .collect();
        assert_eq!(seen, [".github/ci.yml", ".gitignore", "src/a.rs"]);
    }

    #[test]
    fn globs_match_names_or_relative_paths() {
        let root = Path::new("/r");
        let by_name = PathGlob::new("*.rs").unwrap();
        assert!(by_name.is_match(root, Path::new("/r/src/deep/x.rs")));
        assert!(!by_name.is_match(root, Path::new("/r/src/x.rs.bak")));
        let by_path = PathGlob::new("src/*.rs").unwrap();
        assert!(by_path.is_match(root, Path::new("/r/src/x.rs")));
        assert!(!by_path.is_match(root, Path::new("/r/src/deep/x.rs")));
        let deep = PathGlob::new("src/**/*.rs").unwrap();
        assert!(deep.is_match(root, Path::new("/r/src/deep/x.rs")));
        assert!(PathGlob::new("src/[").is_err());
    }

    #[test]
    fn a_directory_whose_ignore_file_is_a_fifo_is_skipped_not_waited_on() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        std::fs::create_dir_all(root.join("odd")).unwrap();
        std::fs::write(root.join("odd/inside.txt"), "").unwrap();
        std::fs::write(root.join("kept.txt"), "").unwrap();
        let status = std::process::Command::new("mkfifo")
            .arg(root.join("odd/.gitignore"))
            .status()
            .unwrap();
        assert!(status.success());
        let mut walk = walk(root, None, Denied::none()).unwrap();
        let seen: Vec<String> = walk
            .by_ref()
            .map(|e| e.path().strip_prefix(root).unwrap().display().to_string())
            .collect();
        assert_eq!(seen, ["", "kept.txt"]);
        let notes = walk.notes();
        assert_eq!(notes.len(), 1);
        assert!(
            notes[0].contains("odd/.gitignore is a FIFO (named pipe)"),
            "{notes:?}"
        );
        let error = super::walk(&root.join("odd"), None, Denied::none())
            .err()
            .unwrap();
        assert!(error.contains("is a FIFO"), "{error}");
    }
}
