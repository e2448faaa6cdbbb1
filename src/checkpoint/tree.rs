//! Directory listings ("trees") as stored objects: one line per entry — kind, mode, size,
//! modification time, inode, content hash, name — sorted by name. A directory's entry
//! carries the hash of its own listing, so two checkpoints share every unchanged
//! directory, and two trees with the same hash are the same down to the last file.
//!
//! The format is written by hand (not JSON): file names are bytes, not always UTF-8, and a
//! line per entry is both compact and quick to read back.

use super::error::CheckpointError;
use super::store::{Hash, Store};
use std::collections::BTreeMap;
use std::ffi::OsStr;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    File,
    Symlink,
    Dir,
    /// A file over `max_file_bytes`: listed, its content not kept.
    TooLarge,
    /// A file that could not be read: listed, its content not kept.
    Unreadable,
}

impl Kind {
    fn code(self) -> u8 {
        match self {
            Kind::File => b'f',
            Kind::Symlink => b'l',
            Kind::Dir => b'd',
            Kind::TooLarge => b's',
            Kind::Unreadable => b'u',
        }
    }

    fn from_code(code: u8) -> Option<Kind> {
        Some(match code {
            b'f' => Kind::File,
            b'l' => Kind::Symlink,
            b'd' => Kind::Dir,
            b's' => Kind::TooLarge,
            b'u' => Kind::Unreadable,
            _ => return None,
        })
    }

    /// Whether the checkpoint holds what is needed to bring it back.
    pub fn covered(self) -> bool {
        matches!(self, Kind::File | Kind::Symlink | Kind::Dir)
    }
}

/// One entry of a directory as it was when the checkpoint was taken.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Entry {
    pub name: Vec<u8>,
    pub kind: Kind,
    /// Permission bits (`st_mode & 0o7777`).
    pub mode: u32,
    pub size: u64,
    pub mtime: i64,
    pub mtime_nsec: i64,
    pub ino: u64,
    /// The content (a file's bytes, a link's target, a directory's listing).
    pub hash: Option<Hash>,
}

impl Entry {
    /// Same content and mode: restoring one over the other changes nothing.
    pub fn same_content(&self, other: &Entry) -> bool {
        self.kind == other.kind && self.mode == other.mode && self.hash == other.hash
    }

    /// Same size, modification time and inode: a file that was not re-read.
    pub fn same_stat(&self, other: &Entry) -> bool {
        self.kind == other.kind
            && self.size == other.size
            && self.mtime == other.mtime
            && self.mtime_nsec == other.mtime_nsec
            && self.ino == other.ino
    }
}

pub fn encode(entries: &[Entry]) -> Vec<u8> {
    let mut out = Vec::with_capacity(entries.len() * 100);
    for entry in entries {
        out.push(entry.kind.code());
        out.extend_from_slice(
            format!(
                " {:o} {} {}.{} {} {} ",
                entry.mode,
                entry.size,
                entry.mtime,
                entry.mtime_nsec,
                entry.ino,
                entry.hash.as_deref().unwrap_or("-")
            )
            .as_bytes(),
        );
        for &byte in &entry.name {
            match byte {
                b'\\' => out.extend_from_slice(b"\\\\"),
                b'\n' => out.extend_from_slice(b"\\n"),
                _ => out.push(byte),
            }
        }
        out.push(b'\n');
    }
    out
}

fn text(field: Option<&[u8]>) -> Option<&str> {
    std::str::from_utf8(field?).ok()
}

pub fn decode(bytes: &[u8]) -> Option<Vec<Entry>> {
    let mut entries = Vec::new();
    for line in bytes.split(|&b| b == b'\n').filter(|l| !l.is_empty()) {
        let mut fields = line.splitn(7, |&b| b == b' ');
        let kind = Kind::from_code(*fields.next()?.first()?)?;
        let mode = u32::from_str_radix(text(fields.next())?, 8).ok()?;
        let size = text(fields.next())?.parse().ok()?;
        let (mtime, mtime_nsec) = text(fields.next())?.split_once('.')?;
        let ino = text(fields.next())?.parse().ok()?;
        let hash = match text(fields.next())? {
            "-" => None,
            hash => Some(hash.to_string()),
        };
        let mut name = Vec::new();
        let mut escaped = false;
        for &byte in fields.next()? {
            match (escaped, byte) {
                (false, b'\\') => escaped = true,
                (true, b'n') => {
                    name.push(b'\n');
                    escaped = false;
                }
                (_, byte) => {
                    name.push(byte);
                    escaped = false;
                }
            }
        }
        entries.push(Entry {
            name,
            kind,
            mode,
            size,
            mtime: mtime.parse().ok()?,
            mtime_nsec: mtime_nsec.parse().ok()?,
            ino,
            hash,
        });
    }
    Some(entries)
}

/// The listing `hash` from the store.
pub fn read(store: &Store, hash: &str) -> Result<Vec<Entry>, CheckpointError> {
    decode(&store.get(hash)?).ok_or_else(|| CheckpointError::Damaged(hash.to_string()))
}

/// Every entry under the tree `root`, by path relative to the workspace (directories
/// included).
pub type Flat = BTreeMap<PathBuf, Entry>;

pub fn flatten(store: &Store, root: &str) -> Result<Flat, CheckpointError> {
    let mut flat = Flat::new();
    let mut pending = vec![(PathBuf::new(), root.to_string())];
    while let Some((dir, hash)) = pending.pop() {
        for entry in read(store, &hash)? {
            let path = dir.join(OsStr::from_bytes(&entry.name));
            if let (Kind::Dir, Some(hash)) = (entry.kind, &entry.hash) {
                pending.push((path.clone(), hash.clone()));
            }
            flat.insert(path, entry);
        }
    }
    Ok(flat)
}

/// The entries at `paths` in tree `root` (`None` where there is none), reading only the
/// listings on the way to them.
pub fn lookup(
    store: &Store,
    root: &str,
    paths: &[&Path],
) -> Result<Vec<Option<Entry>>, CheckpointError> {
    let mut cache: BTreeMap<PathBuf, Option<Vec<Entry>>> = BTreeMap::new();
    let mut found = Vec::with_capacity(paths.len());
    for path in paths {
        let mut hash = Some(root.to_string());
        let mut dir = PathBuf::new();
        let mut result = None;
        let components: Vec<_> = path.components().collect();
        for (i, component) in components.iter().enumerate() {
            let Some(current) = hash.take() else { break };
            let listing = match cache.get(&dir) {
                Some(listing) => listing.clone(),
                None => {
                    let listing = Some(read(store, &current)?);
                    cache.insert(dir.clone(), listing.clone());
                    listing
                }
            };
            let name = component.as_os_str().as_bytes();
            let Some(entry) = listing
                .unwrap_or_default()
                .into_iter()
                .find(|e| e.name == name)
            else {
                break;
            };
            if i + 1 == components.len() {
                result = Some(entry);
            } else if entry.kind == Kind::Dir {
                hash = entry.hash.clone();
                dir.push(component);
            }
        }
        found.push(result);
    }
    Ok(found)
}

/// The paths whose content or mode differ between trees `a` and `b` (present in one only,
/// or different), descending only into directories whose listings differ.
pub fn changed_paths(store: &Store, a: &str, b: &str) -> Result<Vec<PathBuf>, CheckpointError> {
    let mut changed = Vec::new();
    let mut pending = vec![(PathBuf::new(), Some(a.to_string()), Some(b.to_string()))];
    while let Some((dir, a, b)) = pending.pop() {
        if a == b {
            continue;
        }
        let listing = |hash: &Option<String>| -> Result<BTreeMap<Vec<u8>, Entry>, CheckpointError> {
            Ok(match hash {
                Some(hash) => read(store, hash)?
                    .into_iter()
                    .map(|e| (e.name.clone(), e))
                    .collect(),
                None => BTreeMap::new(),
            })
        };
        let (left, right) = (listing(&a)?, listing(&b)?);
        let names: std::collections::BTreeSet<&Vec<u8>> = left.keys().chain(right.keys()).collect();
        for name in names {
            let path = dir.join(OsStr::from_bytes(name));
            let (x, y) = (left.get(name), right.get(name));
            let dir_hash = |e: Option<&Entry>| {
                e.filter(|e| e.kind == Kind::Dir)
                    .and_then(|e| e.hash.clone())
            };
            match (x, y) {
                (Some(x), Some(y)) if x.kind == Kind::Dir && y.kind == Kind::Dir => {
                    if x.mode != y.mode {
                        changed.push(path.clone());
                    }
                    pending.push((path, x.hash.clone(), y.hash.clone()));
                }
                (Some(x), Some(y)) if x.same_content(y) => {}
                _ => {
                    changed.push(path.clone());
                    let (dx, dy) = (dir_hash(x), dir_hash(y));
                    if dx.is_some() || dy.is_some() {
                        pending.push((path, dx, dy));
                    }
                }
            }
        }
    }
    Ok(changed)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry(name: &[u8], kind: Kind, hash: Option<&str>) -> Entry {
        Entry {
            name: name.to_vec(),
            kind,
            mode: 0o644,
            size: 3,
            mtime: -5,
            mtime_nsec: 17,
            ino: 9,
            hash: hash.map(String::from),
        }
    }

    #[test]
    fn listings_round_trip_any_name() {
        let entries = vec![
            entry(b"a b\\c\nd", Kind::File, Some("ab12")),
            entry(b"\xff\xfe", Kind::TooLarge, None),
            entry(b"dir", Kind::Dir, Some("cd34")),
        ];
        assert_eq!(decode(&encode(&entries)).unwrap(), entries);
        assert!(decode(b"x 1 2 3.4 5 - name\n").is_none());
    }

    #[test]
    fn differences_are_found_below_changed_directories_only() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(dir.path());
        let put = |entries: &[Entry]| store.put(&encode(entries)).unwrap();
        let sub_a = put(&[entry(b"x", Kind::File, Some("1"))]);
        let sub_b = put(&[entry(b"x", Kind::File, Some("2"))]);
        let same = put(&[entry(b"y", Kind::File, Some("3"))]);
        let a = put(&[
            entry(b"keep", Kind::Dir, Some(&same)),
            entry(b"sub", Kind::Dir, Some(&sub_a)),
            entry(b"gone", Kind::File, Some("4")),
        ]);
        let b = put(&[
            entry(b"keep", Kind::Dir, Some(&same)),
            entry(b"sub", Kind::Dir, Some(&sub_b)),
            entry(b"new", Kind::File, Some("5")),
        ]);
        let mut changed = changed_paths(&store, &a, &b).unwrap();
        changed.sort();
        assert_eq!(
            changed,
            [
                PathBuf::from("gone"),
                PathBuf::from("new"),
                PathBuf::from("sub/x")
            ]
        );
        let flat = flatten(&store, &a).unwrap();
        assert_eq!(flat.len(), 5);
        let found = lookup(
            &store,
            &b,
            &[Path::new("sub/x"), Path::new("gone"), Path::new("keep/y")],
        )
        .unwrap();
        assert_eq!(found[0].as_ref().unwrap().hash.as_deref(), Some("2"));
        assert!(found[1].is_none());
        assert_eq!(found[2].as_ref().unwrap().hash.as_deref(), Some("3"));
    }
}
