//! A checkpoint made from the last one and the directories that changed since (`watch`):
//! each changed directory is read again — its entries stat'ed, what changed read — with
//! the same rules as a walk (`scan`); a directory new below one is read whole, one gone is
//! dropped with everything under it; then the listings on the path from each change to the
//! root are written anew. The result is the tree a walk would record, at the cost of the
//! changed directories alone.

use super::error::CheckpointError;
use super::index::{Index, Listing};
use super::scan::{Admit, Caps, Item, Scan, Seen1, Skipped, Walker, walk_builder};
use super::store::Store;
use super::tree::{self, Entry, Kind};
use std::collections::{BTreeSet, HashMap};
use std::ffi::OsStr;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};

pub enum Relisted {
    Done(Scan),
    /// The changed directories cannot tell: the tree must be walked, for this reason. The
    /// index comes back, still good for the walk to reuse.
    Walk(Index, &'static str),
}

/// One directory read again.
struct Listed {
    entries: Vec<Entry>,
    skipped: Vec<Skipped>,
    /// The directories in it.
    dirs: Vec<PathBuf>,
    new_bytes: u64,
}

/// Record `cwd` from `index` (the last checkpoint's) and the directories `changed` since.
/// `watch_new` is called for each directory before it is read (so a change made while it
/// is read is reported next time).
pub fn relist(
    store: &Store,
    cwd: &Path,
    exclude: &[PathBuf],
    caps: Caps,
    mut index: Index,
    changed: &BTreeSet<PathBuf>,
    watch_new: &mut dyn FnMut(&Path),
) -> Result<Relisted, CheckpointError> {
    // Shallowest first: a directory is read only while its parent (read again already, or
    // unchanged) still lists it.
    let mut queue: BTreeSet<(usize, PathBuf)> =
        changed.iter().map(|p| (depth(p), p.clone())).collect();
    let mut fresh: HashMap<PathBuf, Listed> = HashMap::new();
    let mut gone: Vec<PathBuf> = Vec::new();
    let mut new_bytes = 0;
    while let Some((level, dir)) = queue.pop_first() {
        if fresh.contains_key(&dir) || !still_listed(&dir, &fresh, &index) {
            continue;
        }
        watch_new(&dir);
        let walker = Walker {
            store,
            cwd,
            caps,
            previous: &index,
        };
        let Some(listed) = list(&walker, exclude, &dir)? else {
            return Ok(Relisted::Walk(
                index,
                "a changed directory could not be read",
            ));
        };
        new_bytes += listed.new_bytes;
        for child in &listed.dirs {
            if index.listing(child).is_none() {
                queue.insert((level + 1, child.clone()));
            }
        }
        if let Some(old) = index.listing(&dir) {
            for entry in old.entries.iter().filter(|e| e.kind == Kind::Dir) {
                let still = listed
                    .entries
                    .iter()
                    .any(|e| e.kind == Kind::Dir && e.name == entry.name);
                if !still {
                    gone.push(dir.join(OsStr::from_bytes(&entry.name)));
                }
            }
        }
        fresh.insert(dir, listed);
    }
    for dir in &gone {
        index.remove_below(dir);
    }

    // Deepest first, so each directory's hash is known before its parent's listing.
    let mut touched: BTreeSet<(std::cmp::Reverse<usize>, PathBuf)> = BTreeSet::new();
    for dir in fresh.keys() {
        for above in dir.ancestors() {
            touched.insert((std::cmp::Reverse(depth(above)), above.to_path_buf()));
        }
    }
    let dirs_listed = fresh.len();
    let mut listings_written = 0;
    for (_, dir) in touched {
        let (mut entries, skipped) = match fresh.remove(&dir) {
            Some(listed) => (listed.entries, listed.skipped),
            None => match index.listing(&dir) {
                Some(old) => (old.entries.clone(), old.skipped.clone()),
                None => {
                    return Ok(Relisted::Walk(
                        index,
                        "a changed directory was not recorded",
                    ));
                }
            },
        };
        entries.sort_by(|a, b| a.name.cmp(&b.name));
        for entry in entries.iter_mut().filter(|e| e.kind == Kind::Dir) {
            let child = dir.join(OsStr::from_bytes(&entry.name));
            match index.listing(&child) {
                Some(listing) => entry.hash = Some(listing.hash.clone()),
                None => return Ok(Relisted::Walk(index, "a new directory was not read")),
            }
        }
        let hash = match index.listing(&dir) {
            Some(old) if old.entries == entries => old.hash.clone(),
            _ => {
                listings_written += 1;
                store.put(&tree::encode(&entries))?
            }
        };
        index.insert(
            dir,
            Listing {
                entries,
                hash,
                skipped,
            },
        );
    }

    let totals = index.totals();
    if totals.candidates > caps.max_files {
        return Ok(Relisted::Walk(index, "the tree grew over max_files"));
    }
    let Some(root) = index.listing(Path::new("")).map(|l| l.hash.clone()) else {
        return Ok(Relisted::Walk(
            index,
            "the working directory was not recorded",
        ));
    };
    Ok(Relisted::Done(Scan {
        root,
        files: totals.files,
        bytes: totals.bytes,
        new_bytes,
        listings_written,
        dirs_listed,
        complete: true,
        skipped: totals.skipped,
        index,
    }))
}

fn depth(path: &Path) -> usize {
    path.components().count()
}

/// Whether `dir` is still a directory of the recorded tree: its parent (as read again, or
/// as recorded and itself still there) lists it as one. The workspace itself always is.
fn still_listed(dir: &Path, fresh: &HashMap<PathBuf, Listed>, index: &Index) -> bool {
    let (Some(parent), Some(name)) = (dir.parent(), dir.file_name()) else {
        return true;
    };
    let name = name.as_bytes();
    let is_it = |e: &Entry| e.kind == Kind::Dir && e.name == name;
    match fresh.get(parent) {
        Some(listed) => listed.entries.iter().any(is_it),
        None => {
            index
                .listing(parent)
                .is_some_and(|l| l.entries.iter().any(is_it))
                && still_listed(parent, fresh, index)
        }
    }
}

/// Read directory `dir` (relative to the workspace) as a walk would; `None` when it is no
/// longer a readable directory (whoever changed it raced this checkpoint).
fn list(
    walker: &Walker<'_>,
    exclude: &[PathBuf],
    dir: &Path,
) -> Result<Option<Listed>, CheckpointError> {
    let absolute = walker.cwd.join(dir);
    if !std::fs::symlink_metadata(&absolute).is_ok_and(|m| m.is_dir()) {
        return Ok(None);
    }
    let mut builder = walk_builder(&absolute, exclude);
    builder.max_depth(Some(1));
    let mut listed = Listed {
        entries: Vec::new(),
        skipped: Vec::new(),
        dirs: Vec::new(),
        new_bytes: 0,
    };
    for item in builder.build() {
        match walker.see(item, || Admit::Yes)? {
            Seen1::Item(Item::Dir(path, entry)) => {
                listed.dirs.push(path);
                listed.entries.push(entry);
            }
            Seen1::Item(Item::Entry {
                entry,
                new_bytes,
                skipped,
                ..
            }) => {
                listed.new_bytes += new_bytes;
                listed.skipped.extend(skipped);
                listed.entries.push(entry);
            }
            Seen1::Item(Item::Skipped(skipped)) => listed.skipped.push(skipped),
            Seen1::Nothing | Seen1::OverCap(_) => {}
        }
    }
    Ok(Some(listed))
}
