//! What changed between two recorded states of the working tree, file by file, as unified
//! diffs with their counts of added and removed lines (`/diff`: the session's first
//! checkpoint against the working tree now). A file that is not text (binary, too large to
//! keep, unreadable) is listed with the reason instead of a diff.

use super::error::CheckpointError;
use super::store::Store;
use super::tree::{self, Entry, Kind};
use similar::{ChangeTag, TextDiff};
use std::path::{Path, PathBuf};
use std::time::Duration;

/// A diff that takes longer than this settles for a coarser (still correct) result.
const DIFF_TIMEOUT: Duration = Duration::from_millis(500);

/// How a file changed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ChangeKind {
    Added,
    Removed,
    Modified,
}

/// One changed file.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FileChange {
    /// Relative to the working directory.
    pub path: PathBuf,
    pub kind: ChangeKind,
    /// The unified diff (headed `a/path`, `b/path`), when both sides are text.
    pub diff: Option<String>,
    /// Why there is no diff, or what else changed (the mode).
    pub note: Option<String>,
    pub added: usize,
    pub removed: usize,
}

/// One side of a change.
enum Side {
    Absent,
    Text(String),
    /// Not shown as text, and why.
    Opaque(&'static str),
}

/// Every file (and link) that differs between trees `before` and `after`, by path.
pub fn between(
    store: &Store,
    before: &str,
    after: &str,
) -> Result<Vec<FileChange>, CheckpointError> {
    let mut paths = tree::changed_paths(store, before, after)?;
    paths.sort();
    let refs: Vec<&Path> = paths.iter().map(PathBuf::as_path).collect();
    let old = tree::lookup(store, before, &refs)?;
    let new = tree::lookup(store, after, &refs)?;
    let mut changes = Vec::new();
    for ((path, old), new) in paths.iter().zip(old).zip(new) {
        // A directory's files are listed one by one.
        let old = old.filter(|e| e.kind != Kind::Dir);
        let new = new.filter(|e| e.kind != Kind::Dir);
        let kind = match (&old, &new) {
            (None, None) => continue,
            (None, Some(_)) => ChangeKind::Added,
            (Some(_), None) => ChangeKind::Removed,
            (Some(_), Some(_)) => ChangeKind::Modified,
        };
        let mode_note = match (&old, &new) {
            (Some(a), Some(b)) if a.mode != b.mode => {
                Some(format!("mode {:o} → {:o}", a.mode, b.mode))
            }
            _ => None,
        };
        let change = match (side(store, old.as_ref())?, side(store, new.as_ref())?) {
            (Side::Opaque(why), _) | (_, Side::Opaque(why)) => FileChange {
                path: path.clone(),
                kind,
                diff: None,
                note: Some(why.to_string()),
                added: 0,
                removed: 0,
            },
            (a, b) => {
                let text = |s: &Side| match s {
                    Side::Text(text) => text.clone(),
                    _ => String::new(),
                };
                let (old_text, new_text) = (text(&a), text(&b));
                let shown = path.to_string_lossy();
                let diff = TextDiff::configure()
                    .timeout(DIFF_TIMEOUT)
                    .diff_lines(old_text.as_str(), new_text.as_str());
                let (mut added, mut removed) = (0, 0);
                for change in diff.iter_all_changes() {
                    match change.tag() {
                        ChangeTag::Insert => added += 1,
                        ChangeTag::Delete => removed += 1,
                        ChangeTag::Equal => {}
                    }
                }
                let before_name = match a {
                    Side::Absent => "/dev/null".to_string(),
                    _ => format!("a/{shown}"),
                };
                let after_name = match b {
                    Side::Absent => "/dev/null".to_string(),
                    _ => format!("b/{shown}"),
                };
                let unified = diff
                    .unified_diff()
                    .context_radius(3)
                    .header(&before_name, &after_name)
                    .to_string();
                FileChange {
                    path: path.clone(),
                    kind,
                    diff: (added + removed > 0).then_some(unified),
                    note: mode_note.clone(),
                    added,
                    removed,
                }
            }
        };
        changes.push(change);
    }
    Ok(changes)
}

fn side(store: &Store, entry: Option<&Entry>) -> Result<Side, CheckpointError> {
    let Some(entry) = entry else {
        return Ok(Side::Absent);
    };
    Ok(match (entry.kind, &entry.hash) {
        (Kind::File, Some(hash)) => {
            let bytes = store.get(hash)?;
            if bytes.iter().take(8192).any(|b| *b == 0) {
                Side::Opaque("binary file")
            } else {
                match String::from_utf8(bytes) {
                    Ok(text) => Side::Text(text),
                    Err(_) => Side::Opaque("not UTF-8 text"),
                }
            }
        }
        (Kind::Symlink, Some(hash)) => {
            let target = store.get(hash)?;
            Side::Text(format!(
                "symbolic link to {}\n",
                String::from_utf8_lossy(&target)
            ))
        }
        (Kind::TooLarge, _) => Side::Opaque("too large to keep in a checkpoint"),
        (Kind::Unreadable, _) => Side::Opaque("could not be read"),
        _ => Side::Opaque("no content recorded"),
    })
}
