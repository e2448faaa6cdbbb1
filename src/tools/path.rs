//! Resolving the paths a model gives: relative to the working directory, `~` expanded.

use std::path::{Path, PathBuf};

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
    if expanded.is_absolute() {
        expanded
    } else {
        cwd.join(expanded)
    }
}

fn home() -> Option<PathBuf> {
    std::env::var_os("HOME")
        .filter(|h| !h.is_empty())
        .map(PathBuf::from)
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
        if let Some(home) = home() {
            assert_eq!(resolve(cwd, "~/x"), home.join("x"));
        }
        assert_eq!(display(cwd, Path::new("/work/repo/a.txt")), "a.txt");
        assert_eq!(display(cwd, Path::new("/tmp/a.txt")), "/tmp/a.txt");
    }
}
