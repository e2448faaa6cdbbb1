//! Resolving the paths a model gives: relative to the working directory, `~` expanded, `.`
//! and `..` folded away; whether a path stays inside the working directory; and, for a path
//! that does not exist, the names in its directory that look like what was meant.

use std::path::{Component, Path, PathBuf};

pub fn resolve(cwd: &Path, raw: &str) -> PathBuf {
    let raw = raw.trim();
    let expanded = if raw == "~" {
        home().unwrap_or_else(|| PathBuf::from(raw))
    } else if let Some(rest) = raw.strip_prefix("~/") {
        match home() {
            Some(home) => home.join(rest),
            None => PathBuf::from(raw),
        }
    } else {
        PathBuf::from(raw)
    };
    let absolute = if expanded.is_absolute() {
        expanded
    } else {
        cwd.join(expanded)
    };
    normalize(&absolute)
}

fn home() -> Option<PathBuf> {
    std::env::var_os("HOME")
        .filter(|h| !h.is_empty())
        .map(PathBuf::from)
}

/// Fold `.` and `..` without touching the file system (`/a/b/../c` → `/a/c`).
pub fn normalize(path: &Path) -> PathBuf {
    let mut out = PathBuf::new();
    for component in path.components() {
        match component {
            Component::CurDir => {}
            Component::ParentDir => {
                if !out.pop() {
                    out.push(component);
                }
            }
            other => out.push(other),
        }
    }
    out
}

/// `path` relative to `cwd` when it is inside it, for messages.
pub fn display(cwd: &Path, path: &Path) -> String {
    path.strip_prefix(cwd)
        .ok()
        .filter(|p| !p.as_os_str().is_empty())
        .unwrap_or(path)
        .display()
        .to_string()
}

/// Whether `path` (absolute, normalised) lies inside `cwd`, both as written and after
/// following symbolic links, so a link inside the project cannot smuggle a write out of it.
pub fn is_inside(cwd: &Path, path: &Path) -> bool {
    if !path.starts_with(cwd) {
        return false;
    }
    let real_cwd = std::fs::canonicalize(cwd).unwrap_or_else(|_| cwd.to_path_buf());
    real_path(path).starts_with(real_cwd)
}

/// `path` with symbolic links followed as far as it exists; the missing rest is appended.
pub fn real_path(path: &Path) -> PathBuf {
    let mut existing = path;
    let mut rest = Vec::new();
    loop {
        if let Ok(real) = std::fs::canonicalize(existing) {
            let mut out = real;
            out.extend(rest.iter().rev());
            return out;
        }
        match (existing.parent(), existing.file_name()) {
            (Some(parent), Some(name)) => {
                rest.push(name.to_os_string());
                existing = parent;
            }
            _ => return path.to_path_buf(),
        }
    }
}

/// The error for a path that does not exist, naming similar files in its directory.
pub fn not_found_message(cwd: &Path, path: &Path) -> String {
    let shown = display(cwd, path);
    let Some(parent) = path.parent() else {
        return format!("File not found: {shown}");
    };
    if !parent.is_dir() {
        return format!(
            "File not found: {shown} (the directory {} does not exist either)",
            display(cwd, parent)
        );
    }
    let similar = similar_names(
        parent,
        path.file_name().and_then(|n| n.to_str()).unwrap_or(""),
    );
    if similar.is_empty() {
        return format!("File not found: {shown}");
    }
    let shown_parent = if parent == cwd {
        "the working directory".to_string()
    } else {
        display(cwd, parent)
    };
    format!(
        "File not found: {shown}. Similar names in {shown_parent}: {}",
        similar.join(", ")
    )
}

/// Up to five entries of `dir` whose names resemble `wanted` (by edit distance, or one
/// containing the other), closest first.
pub fn similar_names(dir: &Path, wanted: &str) -> Vec<String> {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return Vec::new();
    };
    let wanted_lower = wanted.to_lowercase();
    let mut scored: Vec<(usize, String)> = entries
        .filter_map(Result::ok)
        .filter_map(|entry| entry.file_name().into_string().ok())
        .filter_map(|name| {
            let lower = name.to_lowercase();
            let distance = edit_distance(&lower, &wanted_lower);
            let budget = (wanted_lower.chars().count() / 3).max(2);
            let contains = wanted_lower.len() >= 3
                && (lower.contains(&wanted_lower) || wanted_lower.contains(&lower));
            let stem_matches = stem(&lower) == stem(&wanted_lower);
            (distance <= budget || contains || stem_matches).then_some((distance, name))
        })
        .collect();
    scored.sort();
    scored.into_iter().take(5).map(|(_, name)| name).collect()
}

fn stem(name: &str) -> &str {
    name.split_once('.').map(|(stem, _)| stem).unwrap_or(name)
}

/// Levenshtein distance over characters.
fn edit_distance(a: &str, b: &str) -> usize {
    let b: Vec<char> = b.chars().collect();
    let mut previous: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.chars().enumerate() {
        let mut current = vec![i + 1; b.len() + 1];
        for (j, cb) in b.iter().enumerate() {
            let substitution = previous[j] + usize::from(ca != *cb);
            current[j + 1] = substitution.min(previous[j + 1] + 1).min(current[j] + 1);
        }
        previous = current;
    }
    previous[b.len()]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn resolves_relative_absolute_and_home_paths() {
        let cwd = Path::new("/work/repo");
        assert_eq!(
            resolve(cwd, "src/main.rs"),
            PathBuf::from("/work/repo/src/main.rs")
        );
        assert_eq!(resolve(cwd, "/etc/hosts"), PathBuf::from("/etc/hosts"));
        assert_eq!(
            resolve(cwd, "./src/../../other/x"),
            PathBuf::from("/work/other/x")
        );
        if let Some(home) = home() {
            assert_eq!(resolve(cwd, "~/x"), home.join("x"));
        }
        assert_eq!(display(cwd, Path::new("/work/repo/a.txt")), "a.txt");
        assert_eq!(display(cwd, Path::new("/tmp/a.txt")), "/tmp/a.txt");
    }

    #[test]
    fn inside_follows_symbolic_links() {
        let dir = tempfile::tempdir().unwrap();
        let outside = tempfile::tempdir().unwrap();
        let cwd = dir.path();
        std::os::unix::fs::symlink(outside.path(), cwd.join("escape")).unwrap();
        assert!(is_inside(cwd, &cwd.join("src/new.rs")));
        assert!(!is_inside(cwd, &cwd.join("escape/new.rs")));
        assert!(!is_inside(cwd, outside.path()));
    }

    #[test]
    fn missing_files_suggest_similar_names() {
        let dir = tempfile::tempdir().unwrap();
        for name in ["main.rs", "lib.rs", "README.md", "unrelated.toml"] {
            std::fs::write(dir.path().join(name), "").unwrap();
        }
        let message = not_found_message(dir.path(), &dir.path().join("mian.rs"));
        assert_eq!(
            message,
            "File not found: mian.rs. Similar names in the working directory: main.rs"
        );
        let message = not_found_message(dir.path(), &dir.path().join("readme.txt"));
        assert!(message.ends_with(": README.md"), "{message}");
        let message = not_found_message(dir.path(), &dir.path().join("zzz/a.rs"));
        assert!(message.contains("does not exist either"), "{message}");
        assert_eq!(edit_distance("kitten", "sitting"), 3);
    }
}
