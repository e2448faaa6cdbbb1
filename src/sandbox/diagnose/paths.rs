//! Which paths an error line names, and where each really is: made absolute against the
//! working directory, `/proc/PID/root/…` and `/proc/PID/cwd/…` taken back to the path they
//! reach, and links followed (a write through a link is a write to its target).

use std::path::{Component, Path, PathBuf};

/// A path an error line names.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Located {
    /// As named, made absolute.
    pub named: PathBuf,
    /// With links followed: what the kernel refused.
    pub real: PathBuf,
}

/// Strings an error line names that may be paths: quoted ones ('…', "…", ‘…’, `…'), then
/// the fields between `: ` separators after the first (the program's name), without
/// spaces (`bash: /etc/x: Permission denied`, `mknod: dev: Permission denied`).
pub fn candidates(line: &str) -> Vec<String> {
    let mut found = Vec::new();
    for (open, close) in [('\'', '\''), ('"', '"'), ('‘', '’'), ('`', '\'')] {
        let mut rest = line;
        while let Some(start) = rest.find(open) {
            let after = &rest[start + open.len_utf8()..];
            let Some(end) = after.find(close) else { break };
            let inner = &after[..end];
            if !inner.is_empty() && !found.iter().any(|f| f == inner) {
                found.push(inner.to_string());
            }
            rest = &after[end + close.len_utf8()..];
        }
    }
    for field in line.split(": ").skip(1) {
        let field = field.trim();
        if !field.is_empty()
            && !field.contains(' ')
            && !field.contains(['\'', '"'])
            && !found.iter().any(|f| f == field)
        {
            found.push(field.to_string());
        }
    }
    found
}

/// Whether `text` is written like a path (not a bare name).
pub fn looks_like_path(text: &str) -> bool {
    text.starts_with('/')
        || text.starts_with("./")
        || text.starts_with("../")
        || (text.contains('/') && !text.contains("://"))
}

/// Where `raw` (as a command named it, in `cwd`) is; `None` for bash's network names
/// (`/dev/tcp/…`) and for a path whose directory does not exist (it names nothing).
pub fn locate(cwd: &Path, raw: &str) -> Option<Located> {
    if raw.contains('\n') || raw.starts_with("/dev/tcp/") || raw.starts_with("/dev/udp/") {
        return None;
    }
    let named = normalize(&cwd.join(raw));
    let real = follow(&through_proc(cwd, &named))?;
    Some(Located { named, real })
}

/// `/proc/PID/root/X` is `/X`, `/proc/PID/cwd/X` is (as far as can be told) `cwd/X`.
fn through_proc(cwd: &Path, path: &Path) -> PathBuf {
    let mut parts = path.components().skip(1);
    let (Some(proc), Some(pid), Some(link)) = (parts.next(), parts.next(), parts.next()) else {
        return path.to_path_buf();
    };
    let pid = pid.as_os_str().to_string_lossy();
    let is_process =
        pid == "self" || pid == "thread-self" || pid.bytes().all(|b| b.is_ascii_digit());
    if proc.as_os_str() != "proc" || !is_process {
        return path.to_path_buf();
    }
    let rest: PathBuf = parts.collect();
    match link.as_os_str().to_str() {
        Some("root") => Path::new("/").join(rest),
        Some("cwd") => cwd.join(rest),
        _ => path.to_path_buf(),
    }
}

/// `path` with `.` and `..` taken out, without touching the file system.
fn normalize(path: &Path) -> PathBuf {
    let mut normal = PathBuf::new();
    for component in path.components() {
        match component {
            Component::ParentDir => {
                normal.pop();
            }
            Component::CurDir => {}
            other => normal.push(other),
        }
    }
    normal
}

/// `path` with its links followed, also a dangling link at its end (writing through it
/// creates its target); `None` when its directory does not exist.
fn follow(path: &Path) -> Option<PathBuf> {
    let mut path = path.to_path_buf();
    for _ in 0..40 {
        if let Ok(real) = std::fs::canonicalize(&path) {
            return Some(real);
        }
        let parent = path.parent()?;
        match std::fs::read_link(&path) {
            Ok(target) => path = normalize(&parent.join(target)),
            Err(_) => {
                let name = path.file_name()?;
                return std::fs::canonicalize(parent).ok().map(|p| p.join(name));
            }
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_quoted_and_field_paths_and_bare_names() {
        assert_eq!(
            candidates("mv: cannot move 'sub' to 'sub2': Device or resource busy"),
            ["sub", "sub2"]
        );
        assert_eq!(candidates("mknod: dev: Permission denied"), ["dev"]);
        assert_eq!(
            candidates("bash: line 1: /etc/x: Permission denied"),
            ["/etc/x"]
        );
    }

    #[test]
    fn takes_proc_links_back_and_follows_links() {
        let dir = tempfile::tempdir().unwrap();
        let cwd = std::fs::canonicalize(dir.path()).unwrap();
        let located = locate(&cwd, "/proc/123/root/etc/hostname").unwrap();
        assert_eq!(located.real, PathBuf::from("/etc/hostname"));
        assert_eq!(located.named, PathBuf::from("/proc/123/root/etc/hostname"));
        let located = locate(&cwd, "/proc/self/cwd/x").unwrap();
        assert_eq!(located.real, cwd.join("x"));
        std::os::unix::fs::symlink("/etc/agent-test-missing", cwd.join("link")).unwrap();
        let located = locate(&cwd, "link").unwrap();
        assert_eq!(located.named, cwd.join("link"));
        assert_eq!(located.real, PathBuf::from("/etc/agent-test-missing"));
        assert_eq!(locate(&cwd, "/dev/tcp/127.0.0.1/80"), None);
        assert_eq!(locate(&cwd, "/no/such/dir/file"), None);
    }
}
