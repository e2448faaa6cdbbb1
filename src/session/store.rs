//! Where sessions live: `sessions/<directory slug>/<time>_<id>.jsonl`, grouped by working
//! directory and named so they sort by creation time; finding the latest one of a
//! directory and finding one by id prefix. Listings carry each session's title and size
//! (`title`), derived on read.

use super::error::SessionError;
use super::format::Header;
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::time::SystemTime;

/// The directory holding the sessions of `cwd`.
pub fn dir_for(root: &Path, cwd: &Path) -> PathBuf {
    let slug: String = cwd
        .to_string_lossy()
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '.' || c == '_' {
                c
            } else {
                '-'
            }
        })
        .collect();
    root.join(format!("-{}-", slug.trim_matches('-')))
}

pub fn new_path(root: &Path, cwd: &Path, id: &str, millis: i64) -> PathBuf {
    dir_for(root, cwd).join(format!("{}_{id}.jsonl", crate::time::file_stamp(millis)))
}

/// A new session file beside `existing` (the same working directory).
pub fn sibling_path(existing: &Path, id: &str, millis: i64) -> PathBuf {
    let name = format!("{}_{id}.jsonl", crate::time::file_stamp(millis));
    match existing.parent() {
        Some(dir) => dir.join(name),
        None => PathBuf::from(name),
    }
}

/// The session id in a file name `<time>_<id>.jsonl`.
pub fn id_of(path: &Path) -> Option<&str> {
    let name = path.file_name()?.to_str()?.strip_suffix(".jsonl")?;
    name.rsplit_once('_').map(|(_, id)| id)
}

pub fn read_header(path: &Path) -> Option<Header> {
    let file = std::fs::File::open(path).ok()?;
    let mut line = String::new();
    BufReader::new(file).read_line(&mut line).ok()?;
    serde_json::from_str(&line).ok()
}

#[derive(Clone, Debug)]
pub struct SessionSummary {
    pub path: PathBuf,
    pub id: String,
    pub modified: SystemTime,
    /// The session this one was forked from.
    pub parent: Option<String>,
    /// The working directory it ran in.
    pub cwd: String,
    /// When it was created (milliseconds since the epoch, from its header).
    pub created: i64,
    /// Its name, else its first prompt's first line (`None`: neither yet).
    pub title: Option<String>,
    /// Whether `title` is a name someone gave.
    pub named: bool,
    /// Messages on its current branch.
    pub messages: usize,
}

/// The sessions of `cwd`, most recently used first, with their titles.
pub fn list_for(root: &Path, cwd: &Path) -> Vec<SessionSummary> {
    let cwd_text = cwd.to_string_lossy();
    let mut sessions = summaries(&dir_for(root, cwd), Some(&cwd_text));
    sessions.iter_mut().for_each(describe);
    sessions
}

/// The most recently used session of `cwd`, found without reading the sessions through
/// (`-c` stays quick however many and however long they are); it has no title filled in.
pub fn latest_for(root: &Path, cwd: &Path) -> Option<SessionSummary> {
    let cwd_text = cwd.to_string_lossy();
    summaries(&dir_for(root, cwd), Some(&cwd_text))
        .into_iter()
        .next()
}

/// The sessions of every directory, most recently used first, with their titles.
pub fn list_all(root: &Path) -> Vec<SessionSummary> {
    let dirs = std::fs::read_dir(root)
        .map(|d| d.flatten().map(|e| e.path()).collect::<Vec<_>>())
        .unwrap_or_default();
    let mut sessions: Vec<SessionSummary> = dirs
        .iter()
        .filter(|dir| dir.is_dir())
        .flat_map(|dir| summaries(dir, None))
        .collect();
    sort_newest_first(&mut sessions);
    sessions.iter_mut().for_each(describe);
    sessions
}

/// The sessions in `dir` (of the working directory `cwd`, when given), newest first,
/// without titles.
fn summaries(dir: &Path, cwd: Option<&str>) -> Vec<SessionSummary> {
    let mut sessions: Vec<SessionSummary> = session_files(dir)
        .into_iter()
        .filter_map(|path| {
            let header = read_header(&path).filter(|h| cwd.is_none_or(|cwd| h.cwd == cwd))?;
            let modified = std::fs::metadata(&path).and_then(|m| m.modified()).ok()?;
            let id = id_of(&path)?.to_string();
            Some(SessionSummary {
                path,
                id,
                modified,
                parent: header.parent_session,
                cwd: header.cwd,
                created: header.timestamp,
                title: None,
                named: false,
                messages: 0,
            })
        })
        .collect();
    sort_newest_first(&mut sessions);
    sessions
}

fn sort_newest_first(sessions: &mut [SessionSummary]) {
    sessions.sort_by(|a, b| {
        b.modified
            .cmp(&a.modified)
            .then_with(|| b.path.cmp(&a.path))
    });
}

/// Fill in the title and size (a file that cannot be read keeps none).
fn describe(summary: &mut SessionSummary) {
    if let Ok(described) = super::title::describe(&summary.path) {
        summary.title = described.title;
        summary.named = described.named;
        summary.messages = described.messages;
    }
}

/// `sessions` (most recent first) with every fork placed under the session it was forked
/// from (most recent first among siblings), and its depth in that tree.
pub fn forks_under_parents(sessions: Vec<SessionSummary>) -> Vec<(usize, SessionSummary)> {
    let ids: std::collections::HashSet<String> = sessions.iter().map(|s| s.id.clone()).collect();
    let (roots, forks): (Vec<_>, Vec<_>) = sessions
        .into_iter()
        .partition(|s| s.parent.as_ref().is_none_or(|p| !ids.contains(p)));
    let mut out = Vec::new();
    let mut pending: Vec<(usize, SessionSummary)> =
        roots.into_iter().rev().map(|s| (0, s)).collect();
    let mut forks = forks;
    while let Some((depth, session)) = pending.pop() {
        let (children, rest): (Vec<_>, Vec<_>) = forks
            .into_iter()
            .partition(|f| f.parent.as_deref() == Some(session.id.as_str()));
        forks = rest;
        pending.extend(children.into_iter().rev().map(|c| (depth + 1, c)));
        out.push((depth, session));
    }
    out
}

/// The session whose id starts with `prefix`, in any directory.
pub fn find_by_id(root: &Path, prefix: &str) -> Result<PathBuf, SessionError> {
    let prefix = prefix.trim();
    let mut matches = Vec::new();
    let dirs = std::fs::read_dir(root)
        .map(|d| d.flatten().map(|e| e.path()).collect::<Vec<_>>())
        .unwrap_or_default();
    for dir in dirs {
        collect_by_id(&dir, prefix, CHILD_DEPTH_SEARCHED, &mut matches);
    }
    match matches.len() {
        0 => Err(SessionError::NotFound(prefix.to_string())),
        1 => Ok(matches.remove(0)),
        _ => Err(SessionError::Ambiguous {
            prefix: prefix.to_string(),
            candidates: matches
                .iter()
                .filter_map(|p| id_of(p))
                .take(5)
                .collect::<Vec<_>>()
                .join(", "),
        }),
    }
}

/// How many levels of sub-agent directories (`<session>.agents/`) an id search descends.
const CHILD_DEPTH_SEARCHED: usize = 4;

/// The session files in `dir` whose id starts with `prefix`, and those of the sub-agents'
/// directories (`<session>.agents/`) in it, down to `depth` levels, so that `-r ID` finds a
/// sub-agent's session by the id the parent's tool result and `/agents` show.
fn collect_by_id(dir: &Path, prefix: &str, depth: usize, matches: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for path in entries.flatten().map(|e| e.path()) {
        let extension = path.extension().and_then(|e| e.to_str());
        if extension == Some("jsonl") {
            if id_of(&path).is_some_and(|id| id.starts_with(prefix)) {
                matches.push(path);
            }
        } else if extension == Some("agents") && depth > 0 && path.is_dir() {
            collect_by_id(&path, prefix, depth - 1, matches);
        }
    }
}

fn session_files(dir: &Path) -> Vec<PathBuf> {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return Vec::new();
    };
    entries
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|e| e == "jsonl"))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_group_by_directory_and_sort_by_time() {
        let root = Path::new("/home/u/.agent/sessions");
        assert_eq!(
            dir_for(root, Path::new("/work/my repo")),
            root.join("-work-my-repo-")
        );
        let path = new_path(root, Path::new("/w"), "abc123", 1_795_296_007_089);
        assert_eq!(path, root.join("-w-/2026-11-21T21-20-07-089Z_abc123.jsonl"));
        assert_eq!(id_of(&path), Some("abc123"));
    }

    #[test]
    fn an_id_search_finds_sub_agent_sessions_but_listing_does_not() {
        let root = tempfile::tempdir().unwrap();
        let cwd = Path::new("/w");
        let parent = new_path(root.path(), cwd, "parent1", 1_795_296_007_089);
        let child = parent
            .with_file_name("2026-11-21T21-20-07-089Z_parent1.agents")
            .join("2026-11-21T21-20-08-000Z_child9.jsonl");
        std::fs::create_dir_all(child.parent().unwrap()).unwrap();
        let header = serde_json::to_string(&Header::new("x", "/w", 0)).unwrap() + "\n";
        std::fs::write(&parent, &header).unwrap();
        std::fs::write(&child, &header).unwrap();
        assert_eq!(find_by_id(root.path(), "child").unwrap(), child);
        assert_eq!(find_by_id(root.path(), "parent1").unwrap(), parent);
        assert!(matches!(
            find_by_id(root.path(), "nobody"),
            Err(SessionError::NotFound(_))
        ));
        let listed = list_for(root.path(), cwd);
        assert_eq!(listed.len(), 1);
        assert_eq!(listed[0].path, parent);
    }

    #[test]
    fn forks_come_right_under_their_parent() {
        let summary = |id: &str, parent: Option<&str>| SessionSummary {
            path: PathBuf::from(id),
            id: id.to_string(),
            modified: SystemTime::UNIX_EPOCH,
            parent: parent.map(String::from),
            cwd: "/w".to_string(),
            created: 0,
            title: None,
            named: false,
            messages: 0,
        };
        // Most recent first: a fork of a fork, a plain session, a fork, its parent.
        let ordered = forks_under_parents(vec![
            summary("ff", Some("f")),
            summary("b", None),
            summary("f", Some("a")),
            summary("a", None),
            summary("orphan", Some("gone")),
        ]);
        let shown: Vec<(usize, &str)> = ordered.iter().map(|(d, s)| (*d, s.id.as_str())).collect();
        assert_eq!(
            shown,
            [(0, "b"), (0, "a"), (1, "f"), (2, "ff"), (0, "orphan")]
        );
    }
}
