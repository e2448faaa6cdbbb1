//! Recording the state of a working tree: every file the `ignore` crate's rules do not
//! ignore (`.gitignore`, `.ignore`, git's excludes; hidden files included; `.git` never),
//! within the caps — a file over `max_file_bytes` is listed without its content, and past
//! `max_files` the walk stops — with everything not covered reported, never silently left
//! out. Incremental: a file whose size, modification time and inode match the previous
//! checkpoint's is not read again, and only the listings of changed directories are
//! written (`index`).
//!
//! The walk runs on every core (`ignore`'s parallel walker: the time is one `stat` per
//! file, and reading what changed); listings are sorted afterwards, so the result does not
//! depend on which thread saw what. Where the order matters — a tree over `max_files`,
//! whose covered part must be the same every time — the tree is walked again in order.

use super::error::CheckpointError;
use super::index::{self, Index};
use super::store::Store;
use super::tree::{Entry, Kind};
use ignore::{DirEntry, ParallelVisitor, ParallelVisitorBuilder, WalkBuilder, WalkState};
use serde::Serialize;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Mutex, PoisonError};

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

pub struct Scan {
    /// The hash of the root listing.
    pub root: String,
    pub files: u64,
    pub bytes: u64,
    /// Bytes read and stored anew (what changed since the previous checkpoint).
    pub new_bytes: u64,
    /// Directory listings written anew (where something changed since the previous one).
    pub listings_written: usize,
    /// Directories read: all of them for a walk, the changed ones for a `relist`.
    pub dirs_listed: usize,
    /// `false` when the walk stopped at `max_files`: files after that point are unknown.
    pub complete: bool,
    pub skipped: Vec<Skipped>,
    pub index: Index,
}

/// Record `cwd` in `store`. `exclude` are directories never entered (the agent's own
/// files when they live inside the workspace); `previous` is the last checkpoint's index.
pub fn scan(
    store: &Store,
    cwd: &Path,
    exclude: &[PathBuf],
    caps: Caps,
    previous: Index,
) -> Result<Scan, CheckpointError> {
    let walker = Walker {
        store,
        cwd,
        caps,
        previous: &previous,
    };
    let mut builder = walk_builder(cwd, exclude);
    // A few threads are enough to keep the disk's metadata busy; more only contend.
    let threads = std::thread::available_parallelism().map_or(1, |n| n.get().min(4));
    let seen = match threads {
        1 => None,
        _ => walker.in_parallel(builder.threads(threads))?,
    };
    let seen = match seen {
        Some(seen) => seen,
        None => walker.in_order(builder.sort_by_file_name(|a, b| a.cmp(b)))?,
    };
    let mut scan = Scan {
        root: String::new(),
        files: 0,
        bytes: 0,
        new_bytes: 0,
        listings_written: 0,
        dirs_listed: seen.dirs.len() + 1,
        complete: seen.complete,
        skipped: seen.skipped,
        index: Index::default(),
    };
    scan.skipped
        .sort_by(|a, b| Path::new(&a.path).cmp(Path::new(&b.path)));
    for (_, entry) in &seen.entries {
        if entry.kind.covered() {
            scan.files += 1;
            scan.bytes += entry.size;
        }
    }
    scan.new_bytes = seen.new_bytes;
    let assembled = index::assemble(store, seen.dirs, seen.entries, &scan.skipped, previous)?;
    scan.root = assembled.root;
    scan.index = assembled.index;
    scan.listings_written = assembled.listings_written;
    Ok(scan)
}

pub(super) fn walk_builder(cwd: &Path, exclude: &[PathBuf]) -> WalkBuilder {
    let excluded: Vec<PathBuf> = exclude.to_vec();
    let mut builder = WalkBuilder::new(cwd);
    builder
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
        });
    builder
}

/// Everything a walk saw.
#[derive(Default)]
struct Seen {
    /// Each directory entered (by path relative to the workspace) with its own entry.
    dirs: Vec<(PathBuf, Entry)>,
    /// Each file or link listed, with the directory it is in.
    entries: Vec<(PathBuf, Entry)>,
    skipped: Vec<Skipped>,
    new_bytes: u64,
    complete: bool,
}

impl Seen {
    fn add(&mut self, item: Item) {
        match item {
            Item::Dir(path, entry) => self.dirs.push((path, entry)),
            Item::Entry {
                parent,
                entry,
                new_bytes,
                skipped,
            } => {
                self.new_bytes += new_bytes;
                self.skipped.extend(skipped);
                self.entries.push((parent, entry));
            }
            Item::Skipped(skipped) => self.skipped.push(skipped),
        }
    }

    fn merge(&mut self, other: Seen) {
        self.dirs.extend(other.dirs);
        self.entries.extend(other.entries);
        self.skipped.extend(other.skipped);
        self.new_bytes += other.new_bytes;
    }
}

/// What a checkpoint makes of one walked entry.
pub(super) enum Item {
    Dir(PathBuf, Entry),
    /// A file or link, listed (and reported too when its content is not kept).
    Entry {
        parent: PathBuf,
        entry: Entry,
        new_bytes: u64,
        skipped: Option<Skipped>,
    },
    Skipped(Skipped),
}

/// The answer to "may one more file be covered?" (the `max_files` cap).
pub(super) enum Admit {
    Yes,
    /// Over the cap: the walk stops here.
    No,
}

pub(super) struct Walker<'a> {
    pub store: &'a Store,
    pub cwd: &'a Path,
    pub caps: Caps,
    pub previous: &'a Index,
}

impl Walker<'_> {
    /// The walk in file-name order, stopping at `max_files`.
    fn in_order(&self, builder: &WalkBuilder) -> Result<Seen, CheckpointError> {
        let mut seen = Seen {
            complete: true,
            ..Seen::default()
        };
        let mut files = 0usize;
        for item in builder.build() {
            let admit = || {
                if files < self.caps.max_files {
                    Admit::Yes
                } else {
                    Admit::No
                }
            };
            match self.see(item, admit)? {
                Seen1::Item(item) => {
                    if let Item::Entry { entry, .. } = &item
                        && entry.kind.covered()
                    {
                        files += 1;
                    }
                    seen.add(item);
                }
                Seen1::Nothing => {}
                Seen1::OverCap(path) => {
                    seen.complete = false;
                    seen.skipped.push(self.over_cap(path));
                    break;
                }
            }
        }
        Ok(seen)
    }

    /// The walk on several threads; `None` when the tree has more than `max_files` files
    /// (then the covered part is decided by a walk in order).
    fn in_parallel(&self, builder: &WalkBuilder) -> Result<Option<Seen>, CheckpointError> {
        let shared = Shared {
            seen: Mutex::new(Seen {
                complete: true,
                ..Seen::default()
            }),
            failure: Mutex::new(None),
            candidates: AtomicUsize::new(0),
            over_cap: AtomicBool::new(false),
        };
        builder.build_parallel().visit(&mut VisitorBuilder {
            walker: self,
            shared: &shared,
        });
        if let Some(error) = shared
            .failure
            .into_inner()
            .unwrap_or_else(PoisonError::into_inner)
        {
            return Err(error);
        }
        if shared.over_cap.load(Ordering::Relaxed) {
            return Ok(None);
        }
        Ok(Some(
            shared
                .seen
                .into_inner()
                .unwrap_or_else(PoisonError::into_inner),
        ))
    }

    fn over_cap(&self, path: String) -> Skipped {
        Skipped {
            path,
            reason: format!(
                "the checkpoint reached max_files ({}): this file and the ones after it are not covered",
                self.caps.max_files
            ),
        }
    }

    /// What one walked entry is. `admit` is asked before a file or link is covered.
    pub(super) fn see(
        &self,
        item: Result<DirEntry, ignore::Error>,
        admit: impl FnOnce() -> Admit,
    ) -> Result<Seen1, CheckpointError> {
        let entry = match item {
            Ok(entry) => entry,
            Err(error) => {
                return Ok(Seen1::Item(Item::Skipped(Skipped {
                    path: error_path(&error, self.cwd),
                    reason: format!("cannot be read: {error}"),
                })));
            }
        };
        if entry.depth() == 0 {
            return Ok(Seen1::Nothing);
        }
        let Ok(relative) = entry.path().strip_prefix(self.cwd) else {
            return Ok(Seen1::Nothing);
        };
        let shown = || relative.to_string_lossy().into_owned();
        let skipped = |reason: String| Skipped {
            path: shown(),
            reason,
        };
        let metadata = match entry.metadata() {
            Ok(metadata) => metadata,
            Err(error) => {
                return Ok(Seen1::Item(Item::Skipped(skipped(format!(
                    "cannot be read: {error}"
                )))));
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
            return Ok(Seen1::Item(Item::Dir(relative.to_path_buf(), record)));
        }
        if !kind.is_file() && !kind.is_symlink() {
            let what = crate::tools::regular::irregular_kind(&metadata).unwrap_or("special");
            return Ok(Seen1::Item(Item::Skipped(skipped(format!(
                "{what}: only files and links are covered"
            )))));
        }
        if let Admit::No = admit() {
            return Ok(Seen1::OverCap(shown()));
        }
        if kind.is_symlink() {
            record.kind = Kind::Symlink;
        }
        let mut new_bytes = 0;
        let mut not_covered = None;
        let reused = self
            .previous
            .file(relative)
            .filter(|old| old.same_stat(&record) && old.hash.is_some());
        if let Some(old) = reused {
            record.hash.clone_from(&old.hash);
        } else if kind.is_symlink() {
            match std::fs::read_link(entry.path()) {
                Ok(target) => {
                    record.hash = Some(self.store.put(target.as_os_str().as_bytes())?);
                    new_bytes = record.size;
                }
                Err(error) => {
                    record.kind = Kind::Unreadable;
                    not_covered = Some(skipped(format!("cannot be read: {error}")));
                }
            }
        } else if record.size > self.caps.max_file_bytes {
            record.kind = Kind::TooLarge;
            not_covered = Some(skipped(format!(
                "{} bytes, over max_file_bytes ({})",
                record.size, self.caps.max_file_bytes
            )));
        } else {
            match self.store.put_file(entry.path(), record.size) {
                Ok(Some(hash)) => {
                    record.hash = Some(hash);
                    new_bytes = record.size;
                }
                // Removed while the walk went by: it is not there.
                Ok(None) => return Ok(Seen1::Nothing),
                Err(CheckpointError::Workspace { source, .. }) => {
                    record.kind = Kind::Unreadable;
                    not_covered = Some(skipped(format!("cannot be read: {source}")));
                }
                Err(error) => return Err(error),
            }
        }
        Ok(Seen1::Item(Item::Entry {
            parent: relative.parent().map(Path::to_path_buf).unwrap_or_default(),
            entry: record,
            new_bytes,
            skipped: not_covered,
        }))
    }
}

/// The outcome of looking at one walked entry.
pub(super) enum Seen1 {
    Item(Item),
    /// Nothing to record (the workspace itself, a file that vanished).
    Nothing,
    /// A file past `max_files` (its path as shown).
    OverCap(String),
}

/// What the threads of a parallel walk share.
struct Shared {
    seen: Mutex<Seen>,
    failure: Mutex<Option<CheckpointError>>,
    /// Files and links seen so far (against `max_files`).
    candidates: AtomicUsize,
    over_cap: AtomicBool,
}

struct VisitorBuilder<'a, 'w> {
    walker: &'a Walker<'w>,
    shared: &'a Shared,
}

impl<'s> ParallelVisitorBuilder<'s> for VisitorBuilder<'s, '_> {
    fn build(&mut self) -> Box<dyn ParallelVisitor + 's> {
        Box::new(Visitor {
            walker: self.walker,
            shared: self.shared,
            seen: Seen::default(),
        })
    }
}

/// One thread's part of a parallel walk, merged into the shared result when it ends.
struct Visitor<'a, 'w> {
    walker: &'a Walker<'w>,
    shared: &'a Shared,
    seen: Seen,
}

impl ParallelVisitor for Visitor<'_, '_> {
    fn visit(&mut self, item: Result<DirEntry, ignore::Error>) -> WalkState {
        let shared = self.shared;
        let admit = || {
            if shared.candidates.fetch_add(1, Ordering::Relaxed) < self.walker.caps.max_files {
                Admit::Yes
            } else {
                Admit::No
            }
        };
        match self.walker.see(item, admit) {
            Ok(Seen1::Item(item)) => {
                self.seen.add(item);
                WalkState::Continue
            }
            Ok(Seen1::Nothing) => WalkState::Continue,
            Ok(Seen1::OverCap(_)) => {
                shared.over_cap.store(true, Ordering::Relaxed);
                WalkState::Quit
            }
            Err(error) => {
                shared
                    .failure
                    .lock()
                    .unwrap_or_else(PoisonError::into_inner)
                    .get_or_insert(error);
                WalkState::Quit
            }
        }
    }
}

impl Drop for Visitor<'_, '_> {
    fn drop(&mut self) {
        let mine = std::mem::take(&mut self.seen);
        self.shared
            .seen
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .merge(mine);
    }
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

#[cfg(test)]
mod tests {
    use super::*;

    fn caps() -> Caps {
        Caps {
            max_file_bytes: 1024,
            max_files: 100,
        }
    }

    #[test]
    fn only_the_listings_on_the_path_of_a_change_are_written_again() {
        let home = tempfile::tempdir().unwrap();
        let work = tempfile::tempdir().unwrap();
        let cwd = work.path();
        for dir in ["a/b", "a/c", "d"] {
            std::fs::create_dir_all(cwd.join(dir)).unwrap();
        }
        for file in ["a/b/x", "a/c/y", "d/z", "top"] {
            std::fs::write(cwd.join(file), file).unwrap();
        }
        let store = Store::open(&home.path().join("checkpoints"));
        let first = scan(&store, cwd, &[], caps(), Index::default()).unwrap();
        assert_eq!((first.files, first.listings_written), (4, 5));
        assert_eq!(first.index.dirs(), 5);

        let same = scan(&store, cwd, &[], caps(), first.index).unwrap();
        assert_eq!(
            (same.root.as_str(), same.new_bytes),
            (first.root.as_str(), 0)
        );
        assert_eq!(same.listings_written, 0);

        std::fs::write(cwd.join("a/b/x"), "changed").unwrap();
        let changed = scan(&store, cwd, &[], caps(), same.index).unwrap();
        assert_eq!(changed.new_bytes, 7);
        // a/b, a and the workspace's own listing; a/c and d are reused as they were.
        assert_eq!(changed.listings_written, 3);
        assert_ne!(changed.root, first.root);
        // The same tree as a scan that reuses nothing.
        let full = scan(&store, cwd, &[], caps(), Index::default()).unwrap();
        assert_eq!(full.root, changed.root);

        std::fs::remove_file(cwd.join("d/z")).unwrap();
        let removed = scan(&store, cwd, &[], caps(), changed.index).unwrap();
        assert_eq!((removed.files, removed.listings_written), (3, 2));
    }

    #[test]
    fn a_tree_over_max_files_covers_the_same_files_every_time() {
        let home = tempfile::tempdir().unwrap();
        let work = tempfile::tempdir().unwrap();
        for dir in 0..4 {
            let path = work.path().join(format!("d{dir}"));
            std::fs::create_dir(&path).unwrap();
            for file in 0..5 {
                std::fs::write(path.join(format!("f{file}")), format!("{dir}{file}")).unwrap();
            }
        }
        let store = Store::open(&home.path().join("checkpoints"));
        let caps = Caps {
            max_file_bytes: 1024,
            max_files: 7,
        };
        let first = scan(&store, work.path(), &[], caps, Index::default()).unwrap();
        assert!(!first.complete);
        assert_eq!(first.files, 7);
        assert_eq!(first.skipped.len(), 1);
        assert_eq!(first.skipped[0].path, "d1/f2");
        for _ in 0..3 {
            let again = scan(&store, work.path(), &[], caps, Index::default()).unwrap();
            assert_eq!((again.root.as_str(), again.files), (first.root.as_str(), 7));
        }
    }
}
