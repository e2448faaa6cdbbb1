//! What a checkpoint keeps in memory from the one before it, and how a scan's entries
//! become stored listings. The index holds every directory of the last recorded state —
//! its entries, sorted by name, and the hash of its listing — so the next scan reads no
//! file whose size, modification time and inode are the same, and writes (encodes and
//! hashes) only the listings of directories where something changed: with one file
//! changed, the listings on the path from it to the root, nothing else. Each listing also
//! keeps what in it was not covered, so a checkpoint that lists only the changed
//! directories (`relist`) still reports everything skipped.

use super::error::CheckpointError;
use super::scan::Skipped;
use super::store::{Hash, Store};
use super::tree::{self, Entry, Kind};
use std::collections::HashMap;
use std::ffi::{OsStr, OsString};
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};

/// One directory as a checkpoint recorded it.
#[derive(Debug)]
pub struct Listing {
    /// Sorted by name (as stored).
    pub entries: Vec<Entry>,
    pub hash: Hash,
    /// What in this directory is not covered (and, when it could not be read, itself).
    pub skipped: Vec<Skipped>,
}

impl Listing {
    fn find(&self, name: &[u8]) -> Option<&Entry> {
        self.entries
            .binary_search_by(|e| e.name.as_slice().cmp(name))
            .ok()
            .and_then(|i| self.entries.get(i))
    }
}

/// The directories of the last recorded state by path relative to the workspace (the
/// workspace itself is the empty path). Keyed by the path's bytes: hashing a `Path`
/// parses its components, which costs more than the lookup itself.
#[derive(Debug, Default)]
pub struct Index {
    dirs: HashMap<OsString, Listing>,
}

impl Index {
    /// The directories of tree `root` in the store (what a new process starts from).
    pub fn read(store: &Store, root: &str) -> Result<Index, CheckpointError> {
        let mut dirs = HashMap::new();
        let mut pending = vec![(PathBuf::new(), root.to_string())];
        while let Some((path, hash)) = pending.pop() {
            let entries = tree::read(store, &hash)?;
            for entry in &entries {
                if let (Kind::Dir, Some(hash)) = (entry.kind, &entry.hash) {
                    pending.push((path.join(OsStr::from_bytes(&entry.name)), hash.clone()));
                }
            }
            let skipped = Vec::new();
            dirs.insert(
                path.into_os_string(),
                Listing {
                    entries,
                    hash,
                    skipped,
                },
            );
        }
        Ok(Index { dirs })
    }

    /// The recorded entry of the file or link at `path` (relative to the workspace).
    pub fn file(&self, path: &Path) -> Option<&Entry> {
        let listing = self
            .dirs
            .get(path.parent().unwrap_or(Path::new("")).as_os_str())?;
        listing.find(path.file_name()?.as_bytes())
    }

    /// How many directories it holds.
    pub fn dirs(&self) -> usize {
        self.dirs.len()
    }

    /// The paths of the directories it holds (the workspace itself is the empty path).
    pub fn dir_paths(&self) -> impl Iterator<Item = &Path> {
        self.dirs.keys().map(Path::new)
    }

    pub fn listing(&self, dir: &Path) -> Option<&Listing> {
        self.dirs.get(dir.as_os_str())
    }

    pub fn insert(&mut self, dir: PathBuf, listing: Listing) {
        self.dirs.insert(dir.into_os_string(), listing);
    }

    /// Forget directory `dir` and every directory below it.
    pub fn remove_below(&mut self, dir: &Path) {
        self.dirs
            .retain(|path, _| !Path::new(path).starts_with(dir));
    }

    /// The files and links it records (covered or not), the bytes of the covered ones,
    /// and everything not covered, sorted by path.
    pub fn totals(&self) -> Totals {
        let mut totals = Totals::default();
        for listing in self.dirs.values() {
            for entry in listing.entries.iter().filter(|e| e.kind != Kind::Dir) {
                totals.candidates += 1;
                if entry.kind.covered() {
                    totals.files += 1;
                    totals.bytes += entry.size;
                }
            }
            totals.skipped.extend(listing.skipped.iter().cloned());
        }
        totals
            .skipped
            .sort_by(|a, b| Path::new(&a.path).cmp(Path::new(&b.path)));
        totals
    }
}

#[derive(Default)]
pub struct Totals {
    pub candidates: usize,
    pub files: u64,
    pub bytes: u64,
    pub skipped: Vec<Skipped>,
}

/// A scan's directories and entries, turned into stored listings.
pub struct Assembled {
    /// The hash of the workspace's own listing.
    pub root: Hash,
    pub index: Index,
    /// Listings encoded and stored anew (the directories where something changed).
    pub listings_written: usize,
}

/// Store the listings of `dirs` (every directory the scan entered, with its own entry)
/// holding `entries` (each file or link with the directory it is in), reusing from
/// `previous` the hash of every directory whose entries did not change. Each of `skipped`
/// is kept with the directory it names, or else the one it is in.
pub fn assemble(
    store: &Store,
    dirs: Vec<(PathBuf, Entry)>,
    entries: Vec<(PathBuf, Entry)>,
    skipped: &[Skipped],
    mut previous: Index,
) -> Result<Assembled, CheckpointError> {
    let mut children: HashMap<OsString, Vec<Entry>> = HashMap::with_capacity(dirs.len() + 1);
    children.insert(OsString::new(), Vec::new());
    for (path, _) in &dirs {
        children.insert(path.clone().into_os_string(), Vec::new());
    }
    let mut skipped_in: HashMap<OsString, Vec<Skipped>> = HashMap::new();
    for item in skipped {
        let path = Path::new(&item.path);
        let owner = if children.contains_key(path.as_os_str()) {
            path
        } else {
            path.parent().unwrap_or(Path::new(""))
        };
        skipped_in
            .entry(owner.as_os_str().to_os_string())
            .or_default()
            .push(item.clone());
    }
    for (parent, entry) in entries {
        match children.get_mut(parent.as_os_str()) {
            Some(list) => list.push(entry),
            None => children
                .entry(parent.into_os_string())
                .or_default()
                .push(entry),
        }
    }
    let mut assembled = Assembled {
        root: Hash::new(),
        index: Index::default(),
        listings_written: 0,
    };
    let mut store_listing =
        |path: PathBuf, mut entries: Vec<Entry>| -> Result<Hash, CheckpointError> {
            if !entries.is_sorted_by(|a, b| a.name <= b.name) {
                entries.sort_by(|a, b| a.name.cmp(&b.name));
            }
            let hash = match previous.dirs.remove(path.as_os_str()) {
                Some(old) if old.entries == entries => old.hash,
                _ => {
                    assembled.listings_written += 1;
                    store.put(&tree::encode(&entries))?
                }
            };
            let skipped = skipped_in.remove(path.as_os_str()).unwrap_or_default();
            assembled.index.dirs.insert(
                path.into_os_string(),
                Listing {
                    entries,
                    hash: hash.clone(),
                    skipped,
                },
            );
            Ok(hash)
        };
    // From the deepest directory up, so each directory's hash is known before its
    // parent's listing is written.
    let mut dirs = dirs;
    dirs.sort_by_key(|(path, _)| std::cmp::Reverse(path.components().count()));
    for (path, mut entry) in dirs {
        let parent = path
            .parent()
            .map(|p| p.as_os_str().to_os_string())
            .unwrap_or_default();
        let list = children.remove(path.as_os_str()).unwrap_or_default();
        entry.hash = Some(store_listing(path, list)?);
        children.entry(parent).or_default().push(entry);
    }
    let top = children.remove(OsStr::new("")).unwrap_or_default();
    let root = store_listing(PathBuf::new(), top)?;
    assembled.root = root;
    Ok(assembled)
}
