//! Walking a directory tree for `grep` and `find`: the `ignore` crate's walker, honouring
//! `.gitignore` and `.ignore` files (also outside a git repository), showing hidden files
//! but never descending into `.git`, in a stable (sorted) order. Also the glob filters both
//! tools take, built with `globset`.

use globset::{GlobBuilder, GlobMatcher};
use std::path::{Path, PathBuf};

/// Every entry under `root` (or `root` itself when it is a file), sorted by name.
pub fn walk(root: &Path) -> ignore::Walk {
    ignore::WalkBuilder::new(root)
        .hidden(false)
        .git_ignore(true)
        .git_exclude(true)
        .require_git(false)
        .filter_entry(|entry| entry.file_name() != ".git")
        .sort_by_file_name(|a, b| a.cmp(b))
        .build()
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
        let seen: Vec<String> = walk(root)
            .filter_map(Result::ok)
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
}
