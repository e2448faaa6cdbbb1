//! Which file a path is, by device and inode, so that a path rule such as `read(secret.txt)`
//! also covers every other path to the same file: a hard link (`ln secret.txt x`), a bind
//! mount, a second name through a symbolic link. The files a rule names are found by
//! walking from the literal start of its glob (`secret/**` walks `secret`, `**/*.pem` the
//! whole working directory); a file is compared with them by its device and inode. That
//! walk is done only for a file that can have another path — more than one hard link, or
//! on another mount than the working directory (a bind mount) — and at most once a call.

use globset::GlobMatcher;
use std::collections::HashMap;
use std::fs::Metadata;
use std::os::unix::fs::MetadataExt;
use std::path::{Component, Path, PathBuf};
use std::sync::OnceLock;

/// At most this many entries are walked to find the files one rule names. A rule that
/// names more (one starting at `/`) cannot be compared file by file: then a file with
/// more than one hard link counts as named by it.
const MAX_ENTRIES: usize = 200_000;

/// A file's identity.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct FileId {
    pub dev: u64,
    pub ino: u64,
}

/// A file a call works on: its identity, how many hard links it has, and the mount it
/// was reached through.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct File {
    pub id: FileId,
    pub links: u64,
    pub regular: bool,
    /// The mount's id, when the kernel tells it.
    pub mount: Option<u64>,
}

impl File {
    /// An open file.
    pub fn of_open(file: &std::fs::File, metadata: &Metadata) -> File {
        use std::os::fd::AsRawFd;
        File {
            mount: mount_id(file.as_raw_fd(), c"", libc_flags::EMPTY_PATH),
            ..File::of_metadata(metadata)
        }
    }

    /// The file at `path` (symbolic links followed), if it exists.
    pub fn of_path(path: &Path) -> Option<File> {
        let metadata = std::fs::metadata(path).ok()?;
        let c_path = std::ffi::CString::new(path.as_os_str().as_encoded_bytes()).ok()?;
        Some(File {
            mount: mount_id(libc_flags::CWD, &c_path, 0),
            ..File::of_metadata(&metadata)
        })
    }

    fn of_metadata(metadata: &Metadata) -> File {
        File {
            id: FileId {
                dev: metadata.dev(),
                ino: metadata.ino(),
            },
            links: metadata.nlink(),
            regular: metadata.is_file(),
            mount: None,
        }
    }

    /// Whether another path may lead to this file: it has more hard links, or it lies on
    /// another mount than `base` (the working directory's mount), or the mounts are not
    /// known.
    pub fn may_have_other_paths(&self, base: Option<u64>) -> bool {
        (self.regular && self.links > 1) || self.mount.is_none() || self.mount != base
    }
}

/// The id of the mount `path` (relative to `dir`) lies on, from `statx`; `None` where the
/// kernel does not say (before Linux 5.8, other systems).
#[cfg(target_os = "linux")]
fn mount_id(dir: std::os::fd::RawFd, path: &std::ffi::CStr, flags: i32) -> Option<u64> {
    // SAFETY: `statx` writes only into `buf`, a zeroed `statx` struct of the right size;
    // `path` is a valid NUL-terminated string that outlives the call.
    let mut buf: libc::statx = unsafe { std::mem::zeroed() };
    let status = unsafe { libc::statx(dir, path.as_ptr(), flags, libc::STATX_MNT_ID, &mut buf) };
    (status == 0 && buf.stx_mask & libc::STATX_MNT_ID != 0).then_some(buf.stx_mnt_id)
}

#[cfg(not(target_os = "linux"))]
fn mount_id(_dir: i32, _path: &std::ffi::CStr, _flags: i32) -> Option<u64> {
    None
}

#[cfg(target_os = "linux")]
mod libc_flags {
    pub const CWD: i32 = libc::AT_FDCWD;
    pub const EMPTY_PATH: i32 = libc::AT_EMPTY_PATH;
}

#[cfg(not(target_os = "linux"))]
mod libc_flags {
    pub const CWD: i32 = -100;
    pub const EMPTY_PATH: i32 = 0;
}

/// The mount a directory lies on (the base a file is compared with).
pub fn mount_of(dir: &Path) -> Option<u64> {
    File::of_path(dir).and_then(|file| file.mount)
}

/// The files (and directories) a path glob names, by identity.
#[derive(Debug, Default)]
pub struct Named {
    files: HashMap<FileId, PathBuf>,
    /// Whether every file the glob names was found (the walk stayed within its limit).
    complete: bool,
}

impl Named {
    /// Walk from the literal start of `glob` and note every entry it matches.
    pub fn by(glob: &GlobMatcher) -> Named {
        let pattern = glob.glob().glob();
        let (start, depth) = literal_start(pattern);
        let mut named = Named {
            files: HashMap::new(),
            complete: true,
        };
        if std::fs::symlink_metadata(&start).is_err() {
            return named;
        }
        let mut walker = ignore::WalkBuilder::new(&start);
        walker.standard_filters(false).follow_links(false);
        if let Some(depth) = depth {
            walker.max_depth(Some(depth));
        }
        for (count, entry) in walker.build().enumerate() {
            if count >= MAX_ENTRIES {
                named.complete = false;
                break;
            }
            let Ok(entry) = entry else { continue };
            if glob.is_match(entry.path())
                && let Some(file) = File::of_path(entry.path())
            {
                named
                    .files
                    .entry(file.id)
                    .or_insert_with(|| entry.path().to_path_buf());
            }
        }
        named
    }

    /// A path the glob names that is `file`. For a rule too wide to walk, a regular file
    /// with more than one hard link may be one of its files, and counts as one.
    pub fn path_of(&self, file: &File) -> Option<PathBuf> {
        if let Some(path) = self.files.get(&file.id) {
            return Some(path.clone());
        }
        (!self.complete && file.regular && file.links > 1)
            .then(|| PathBuf::from("a file the rule names"))
    }

    /// Add what `other` names.
    pub fn extend(&mut self, other: Named) {
        self.complete &= other.complete;
        for (id, path) in other.files {
            self.files.entry(id).or_insert(path);
        }
    }

    pub fn complete() -> Named {
        Named {
            files: HashMap::new(),
            complete: true,
        }
    }
}

/// The files some rules name, found the first time a file that may have another path is
/// compared with them.
pub struct LazyNamed {
    find: Box<dyn Fn() -> Named + Send + Sync>,
    named: OnceLock<Named>,
    /// The mount of the directory the call works in.
    base: Option<u64>,
}

impl LazyNamed {
    pub fn new(base: &Path, find: impl Fn() -> Named + Send + Sync + 'static) -> LazyNamed {
        LazyNamed {
            find: Box::new(find),
            named: OnceLock::new(),
            base: mount_of(base),
        }
    }

    /// A path the rules name that is `file`, if it is one.
    pub fn path_of(&self, file: &File) -> Option<PathBuf> {
        if !file.may_have_other_paths(self.base) {
            return None;
        }
        self.named.get_or_init(|| (self.find)()).path_of(file)
    }
}

/// The directory a glob's matches all lie under (its components before the first with a
/// glob character), and how deep below it they lie (`None`: any depth, `**`).
fn literal_start(pattern: &str) -> (PathBuf, Option<usize>) {
    let path = Path::new(pattern);
    let mut start = PathBuf::new();
    let mut rest = Vec::new();
    let mut literal = true;
    for component in path.components() {
        let text = component.as_os_str().to_string_lossy();
        let special = text.contains(['*', '?', '[', '{', '\\']);
        if literal && !special {
            start.push(component);
        } else {
            literal = false;
            if let Component::Normal(_) = component {
                rest.push(text.into_owned());
            }
        }
    }
    let depth = if rest.iter().any(|c| c.contains("**")) {
        None
    } else {
        Some(rest.len())
    };
    (start, depth)
}

#[cfg(test)]
mod tests {
    use super::*;
    use globset::GlobBuilder;

    fn glob(pattern: &str) -> GlobMatcher {
        GlobBuilder::new(pattern)
            .literal_separator(true)
            .build()
            .unwrap()
            .compile_matcher()
    }

    #[test]
    fn the_walk_starts_where_the_glob_stops_being_literal() {
        assert_eq!(
            literal_start("/w/secret.txt"),
            (PathBuf::from("/w/secret.txt"), Some(0))
        );
        assert_eq!(
            literal_start("/w/secret/**"),
            (PathBuf::from("/w/secret"), None)
        );
        assert_eq!(literal_start("/w/*.pem"), (PathBuf::from("/w"), Some(1)));
        assert_eq!(literal_start("/w/**/.env"), (PathBuf::from("/w"), None));
    }

    #[test]
    fn a_hard_link_is_the_same_file_as_the_name_a_rule_gives() {
        let dir = tempfile::tempdir().unwrap();
        let secret = dir.path().join("secret.txt");
        std::fs::write(&secret, "token").unwrap();
        std::fs::write(dir.path().join("other.txt"), "token").unwrap();
        std::fs::hard_link(&secret, dir.path().join("x")).unwrap();
        let named = Named::by(&glob(&secret.display().to_string()));
        let link = File::of_path(&dir.path().join("x")).unwrap();
        assert_eq!(named.path_of(&link), Some(secret.clone()));
        let other = File::of_path(&dir.path().join("other.txt")).unwrap();
        assert_eq!(named.path_of(&other), None);
        let under = Named::by(&glob(&format!("{}/**/*.txt", dir.path().display())));
        assert_eq!(
            under.path_of(&link).map(|p| p.ends_with("secret.txt")),
            Some(true)
        );
        assert!(Named::by(&glob("/nonexistent/**")).path_of(&link).is_none());
    }
}
