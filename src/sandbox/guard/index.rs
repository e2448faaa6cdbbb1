//! The submodule paths (gitlinks, mode 160000) of a git index file: git runs `git status`
//! inside every populated one when the user runs it in the outer repository, so each must
//! stay out of a sandboxed command's reach. Read by hand: the format (Documentation/
//! gitformat-index.txt) is small, and the crates that read it pull in a whole git
//! implementation. Results are kept per index file until it changes.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::time::SystemTime;

/// Indexes larger than this are not read (their submodules are not guarded).
const MAX_INDEX: u64 = 256 << 20;

const GITLINK: u32 = 0o160000;
const TYPE_MASK: u32 = 0o170000;

/// What an index file held, and how it looked then.
struct Cached {
    modified: SystemTime,
    len: u64,
    gitlinks: Vec<PathBuf>,
}

static CACHE: Mutex<BTreeMap<PathBuf, Cached>> = Mutex::new(BTreeMap::new());

/// The gitlink paths (relative to the work tree) in `index`; `hash_len` is 20 (SHA-1) or
/// 32 (SHA-256). An unreadable or malformed index has none.
pub fn gitlinks(index: &Path, hash_len: usize) -> Vec<PathBuf> {
    let Ok(meta) = std::fs::metadata(index) else {
        return Vec::new();
    };
    let (modified, len) = (
        meta.modified().unwrap_or(SystemTime::UNIX_EPOCH),
        meta.len(),
    );
    if len > MAX_INDEX {
        tracing::warn!(index = %index.display(), len, "index too large to look for submodules in");
        return Vec::new();
    }
    let mut cache = CACHE.lock().unwrap_or_else(|e| e.into_inner());
    if let Some(cached) = cache.get(index)
        && cached.modified == modified
        && cached.len == len
    {
        return cached.gitlinks.clone();
    }
    let gitlinks = std::fs::read(index)
        .ok()
        .and_then(|bytes| parse(&bytes, hash_len))
        .unwrap_or_default();
    cache.insert(
        index.to_path_buf(),
        Cached {
            modified,
            len,
            gitlinks: gitlinks.clone(),
        },
    );
    gitlinks
}

fn be32(bytes: &[u8], at: usize) -> Option<u32> {
    let word: [u8; 4] = bytes.get(at..at + 4)?.try_into().ok()?;
    Some(u32::from_be_bytes(word))
}

/// The gitlinks of an index's bytes; `None` when they are not an index.
pub fn parse(bytes: &[u8], hash_len: usize) -> Option<Vec<PathBuf>> {
    if bytes.get(..4)? != b"DIRC" {
        return None;
    }
    let version = be32(bytes, 4)?;
    if !(2..=4).contains(&version) {
        return None;
    }
    let count = be32(bytes, 8)?;
    let mut at = 12;
    let mut name: Vec<u8> = Vec::new();
    let mut found = Vec::new();
    for _ in 0..count {
        let start = at;
        // ctime, mtime (8 each), dev, ino: then the mode.
        let mode = be32(bytes, at + 24)?;
        at += 40 + hash_len;
        let flags = u16::from_be_bytes(bytes.get(at..at + 2)?.try_into().ok()?);
        at += 2;
        if version >= 3 && flags & 0x4000 != 0 {
            at += 2;
        }
        if version == 4 {
            let (strip, used) = varint(bytes.get(at..)?)?;
            at += used;
            let keep = name.len().checked_sub(usize::try_from(strip).ok()?)?;
            name.truncate(keep);
            let end = at + bytes.get(at..)?.iter().position(|&b| b == 0)?;
            name.extend_from_slice(&bytes[at..end]);
            at = end + 1;
        } else {
            let end = at + bytes.get(at..)?.iter().position(|&b| b == 0)?;
            name.clear();
            name.extend_from_slice(&bytes[at..end]);
            // 1 to 8 NULs pad the entry to a multiple of 8 bytes.
            let length = end - start;
            at = start + (length + 8) / 8 * 8;
        }
        if mode & TYPE_MASK == GITLINK {
            use std::os::unix::ffi::OsStrExt;
            found.push(PathBuf::from(std::ffi::OsStr::from_bytes(&name)));
        }
    }
    found.dedup();
    Some(found)
}

/// Git's offset varint (`varint.c`): 7 bits a byte, each continuation adding one.
fn varint(bytes: &[u8]) -> Option<(u64, usize)> {
    let mut iter = bytes.iter();
    let mut byte = *iter.next()?;
    let mut value = u64::from(byte & 0x7f);
    let mut used = 1;
    while byte & 0x80 != 0 {
        byte = *iter.next()?;
        used += 1;
        value = value.checked_add(1)?;
        if value >> 57 != 0 {
            return None;
        }
        value = (value << 7) | u64::from(byte & 0x7f);
    }
    Some((value, used))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn git(dir: &Path, args: &[&str]) {
        let out = std::process::Command::new("git")
            .args(["-c", "safe.directory=*", "-c", "protocol.file.allow=always"])
            .args(args)
            .current_dir(dir)
            .env("GIT_CONFIG_NOSYSTEM", "1")
            .env("GIT_CONFIG_GLOBAL", "/dev/null")
            .env("GIT_AUTHOR_NAME", "t")
            .env("GIT_AUTHOR_EMAIL", "t@t")
            .env("GIT_COMMITTER_NAME", "t")
            .env("GIT_COMMITTER_EMAIL", "t@t")
            .output()
            .unwrap();
        assert!(out.status.success(), "{args:?}: {out:?}");
    }

    #[test]
    fn reads_the_gitlinks_of_real_indexes_of_every_version() {
        let dir = tempfile::tempdir().unwrap();
        let inner = dir.path().join("inner");
        std::fs::create_dir(&inner).unwrap();
        git(&inner, &["init", "-q"]);
        std::fs::write(inner.join("f"), "x").unwrap();
        git(&inner, &["add", "f"]);
        git(&inner, &["commit", "-qm", "x"]);
        let outer = dir.path().join("outer");
        std::fs::create_dir(&outer).unwrap();
        git(&outer, &["init", "-q"]);
        std::fs::create_dir_all(outer.join("a/deep")).unwrap();
        std::fs::write(outer.join("a/deep/file"), "x").unwrap();
        git(&outer, &["add", "a"]);
        let url = inner.display().to_string();
        git(&outer, &["submodule", "add", "-q", &url, "vendor/lib"]);
        git(&outer, &["submodule", "add", "-q", &url, "vendor/lib-two"]);
        for version in ["2", "3", "4"] {
            git(&outer, &["update-index", "--index-version", version]);
            let bytes = std::fs::read(outer.join(".git/index")).unwrap();
            assert_eq!(
                parse(&bytes, 20).unwrap(),
                [PathBuf::from("vendor/lib"), PathBuf::from("vendor/lib-two")],
                "index version {version}"
            );
        }
        assert_eq!(parse(b"not an index", 20), None);
        assert_eq!(parse(b"DIRC\0\0\0\x02\0\0\0\x05", 20), None);
    }
}
