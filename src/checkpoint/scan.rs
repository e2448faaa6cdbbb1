//! Recording the state of a working tree: every file the `ignore` crate's rules do not
//! ignore (`.gitignore`, `.ignore`, git's excludes; hidden files included; `.git` never),
//! within the caps — a file over `max_file_bytes` is listed without its content, and past
//! `max_files` the walk stops — with everything not covered reported, never silently left
//! out. Incremental: a file whose size, modification time and inode match the previous
//! checkpoint's is not read again.

use super::error::CheckpointError;
use super::store::Store;
use super::tree::{self, Entry, Kind};
use serde::Serialize;
use std::collections::{BTreeMap, HashMap};
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

/// The caps of one checkpoint.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Caps {
    pub max_file_bytes: u64,
    pub max_files: usize,
}

/// Something in the working tree a checkpoint does not cover, and why.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, serde::Deserialize)]
pub struct Skipped {
    pub path: String,
    pub reason: String,
}

/// The files and links of the last checkpoint by path, to reuse what did not change.
pub type Index = HashMap<PathBuf, Entry>;

pub struct Scan {
    /// The hash of the root listing.
    pub root: String,
    pub files: u64,
    pub bytes: u64,
    /// Bytes read and stored anew (what changed since the previous checkpoint).
    pub new_bytes: u64,
    /// `false` when the walk stopped at `max_files`: files after that point are unknown.
    pub complete: bool,
    pub skipped: Vec<Skipped>,
    pub index: Index,
}

/// Record `cwd` in `store`. `exclude` are directories never entered (the agent's own
/// files when they live inside the workspace).
pub fn scan(
    store: &Store,
    cwd: &Path,
    exclude: &[PathBuf],
    caps: Caps,
    previous: &Index,
) -> Result<Scan, CheckpointError> {
    let mut children: BTreeMap<PathBuf, Vec<Entry>> = BTreeMap::new();
    let mut dirs: Vec<(PathBuf, Entry)> = Vec::new();
    children.insert(PathBuf::new(), Vec::new());
    let mut scan = Scan {
        root: String::new(),
        files: 0,
        bytes: 0,
        new_bytes: 0,
        complete: true,
        skipped: Vec::new(),
        index: Index::new(),
    };
    let excluded: Vec<PathBuf> = exclude.to_vec();
    let walk = ignore::WalkBuilder::new(cwd)
        .hidden(false)
        .git_ignore(true)
        .git_exclude(true)
        .require_git(false)
        .filter_entry(move |entry| {
            if entry.file_name() == ".git" {
                return false;
            }
            let is_dir = entry.file_type().is_some_and(|t| t.is_dir());
            !is_dir
                || !(excluded.iter().any(|e| e == entry.path())
                    || crate::tools::walk::unsafe_ignore_file(entry.path()).is_some())
        })
        .sort_by_file_name(|a, b| a.cmp(b))
        .build();
    for item in walk {
        let entry = match item {
            Ok(entry) => entry,
            Err(error) => {
                scan.skipped.push(Skipped {
                    path: error_path(&error, cwd),
                    reason: format!("cannot be read: {error}"),
                });
                continue;
            }
        };
        if entry.depth() == 0 {
            continue;
        }
        let Ok(relative) = entry.path().strip_prefix(cwd) else {
            continue;
        };
        let relative = relative.to_path_buf();
        let shown = relative.to_string_lossy().into_owned();
        let metadata = match entry.metadata() {
            Ok(metadata) => metadata,
            Err(error) => {
                scan.skipped.push(Skipped {
                    path: shown,
                    reason: format!("cannot be read: {error}"),
                });
                continue;
            }
        };
        let kind = metadata.file_type();
        let mut record = Entry {
            name: relative
                .file_name()
                .map(|n| n.as_bytes().to_vec())
                .unwrap_or_default(),
            kind: Kind::File,
            mode: metadata.mode() & 0o7777,
            size: metadata.len(),
            mtime: metadata.mtime(),
            mtime_nsec: metadata.mtime_nsec(),
            ino: metadata.ino(),
            hash: None,
        };
        if kind.is_dir() {
            record.kind = Kind::Dir;
            (record.size, record.mtime, record.mtime_nsec, record.ino) = (0, 0, 0, 0);
            children.insert(relative.clone(), Vec::new());
            dirs.push((relative, record));
            continue;
        }
        if !kind.is_file() && !kind.is_symlink() {
            let what = crate::tools::regular::irregular_kind(&metadata).unwrap_or("special");
            scan.skipped.push(Skipped {
                path: shown,
                reason: format!("{what}: only files and links are covered"),
            });
            continue;
        }
        if usize::try_from(scan.files).unwrap_or(usize::MAX) >= caps.max_files {
            scan.complete = false;
            scan.skipped.push(Skipped {
                path: shown,
                reason: format!(
                    "the checkpoint reached max_files ({}): this file and the ones after it are not covered",
                    caps.max_files
                ),
            });
            break;
        }
        if kind.is_symlink() {
            record.kind = Kind::Symlink;
        }
        let reused = previous
            .get(&relative)
            .filter(|old| old.same_stat(&record) && old.hash.is_some());
        if let Some(old) = reused {
            record.hash = old.hash.clone();
        } else if kind.is_symlink() {
            match std::fs::read_link(entry.path()) {
                Ok(target) => {
                    record.hash = Some(store.put(target.as_os_str().as_bytes())?);
                    scan.new_bytes += record.size;
                }
                Err(error) => {
                    record.kind = Kind::Unreadable;
                    scan.skipped.push(Skipped {
                        path: shown.clone(),
                        reason: format!("cannot be read: {error}"),
                    });
                }
            }
        } else if record.size > caps.max_file_bytes {
            record.kind = Kind::TooLarge;
            scan.skipped.push(Skipped {
                path: shown.clone(),
                reason: format!(
                    "{} bytes, over max_file_bytes ({})",
                    record.size, caps.max_file_bytes
                ),
            });
        } else {
            match store.put_file(entry.path(), record.size) {
                Ok(Some(hash)) => {
                    record.hash = Some(hash);
                    scan.new_bytes += record.size;
                }
                // Removed while the walk went by: it is not there.
                Ok(None) => continue,
                Err(CheckpointError::Workspace { source, .. }) => {
                    record.kind = Kind::Unreadable;
                    scan.skipped.push(Skipped {
                        path: shown.clone(),
                        reason: format!("cannot be read: {source}"),
                    });
                }
                Err(error) => return Err(error),
            }
        }
        if record.kind.covered() {
            scan.files += 1;
            scan.bytes += record.size;
            scan.index.insert(relative.clone(), record.clone());
        }
        let parent = relative.parent().map(Path::to_path_buf).unwrap_or_default();
        children.entry(parent).or_default().push(record);
    }
    // Listings from the deepest directory up, so each directory's hash is known before
    // its parent's listing is written.
    dirs.sort_by_key(|(path, _)| std::cmp::Reverse(path.components().count()));
    for (path, mut record) in dirs {
        let mut entries = children.remove(&path).unwrap_or_default();
        entries.sort_by(|a, b| a.name.cmp(&b.name));
        record.hash = Some(store.put(&tree::encode(&entries))?);
        let parent = path.parent().map(Path::to_path_buf).unwrap_or_default();
        children.entry(parent).or_default().push(record);
    }
    let mut top = children.remove(Path::new("")).unwrap_or_default();
    top.sort_by(|a, b| a.name.cmp(&b.name));
    scan.root = store.put(&tree::encode(&top))?;
    Ok(scan)
}

fn error_path(error: &ignore::Error, cwd: &Path) -> String {
    fn find(error: &ignore::Error) -> Option<&Path> {
        match error {
            ignore::Error::WithPath { path, .. } => Some(path),
            ignore::Error::WithDepth { err, .. } | ignore::Error::WithLineNumber { err, .. } => {
                find(err)
            }
            _ => None,
        }
    }
    find(error)
        .map(|p| {
            p.strip_prefix(cwd)
                .unwrap_or(p)
                .to_string_lossy()
                .into_owned()
        })
        .unwrap_or_default()
}
