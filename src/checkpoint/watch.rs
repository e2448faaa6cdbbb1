//! Which directories of the working tree may have changed since the last checkpoint, as
//! the kernel tells it (inotify): one watch per recorded directory, whose events are read —
//! never waited for — when the next checkpoint starts, so that checkpoint lists those
//! directories again instead of walking the whole tree (`relist`).
//!
//! Whenever the events cannot say for sure what changed, the answer is "walk": every
//! checkpoint of a process until its walks have cost `WATCH_AFTER_WALKING` (nothing is
//! watched before: a small tree in a short run is cheaper to walk than to watch), the one
//! after a walk that had to add
//! watches (a directory read before its watch existed may have changed unseen), a kernel
//! queue overflow, a `.gitignore`/`.ignore` changed or a directory moved, ignore rules
//! outside the tree changed (`.git/info/exclude`, a parent's `.gitignore`, git's global
//! excludes), a watch that could not be added, a walk that stopped at `max_files`, and
//! at least every `WALK_EVERY` whatever the events say (changes no event reports, like
//! writes through a memory map, are caught within that time). Not used off Linux nor on
//! network or FUSE file systems (changes made on another machine raise no event here), nor
//! for a tree with more directories than a quarter of the user's inotify watches (editors
//! and other tools watch from the same allowance): there every checkpoint walks.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

/// A walk at least this often, whatever the events say.
pub const WALK_EVERY: Duration = Duration::from_secs(300);

/// How long walking may take, in total, before the tree is watched: what releasing the
/// watches costs when the process ends. Closing an inotify instance that holds watches
/// waits for the kernel's grace period (about 8 ms here, up to 20 ms when other watches
/// are being released), and every process ends by closing it — a one-shot `-p` run on a
/// small tree would pay more for that than for walking it. So a tree is watched once the
/// walks of this process have cost as much as the release will (renting before buying:
/// at most twice the cheaper of the two): at once for a large tree, after a few
/// checkpoints for a small one, never for a short run on a small one.
pub const WATCH_AFTER_WALKING: Duration = Duration::from_millis(10);

/// What the next checkpoint has to look at.
#[derive(Debug, PartialEq, Eq)]
pub enum Plan {
    /// Walk the whole tree, for this reason.
    Walk(&'static str),
    /// Only these directories (relative to the workspace; the entries in them, and their
    /// own entries in their parents) may differ from the last checkpoint.
    Relist(BTreeSet<PathBuf>),
}

/// The watches of one working tree, and when it was last walked.
pub struct Tracker {
    cwd: PathBuf,
    state: State,
    /// Walking time after which the tree is watched (`WATCH_AFTER_WALKING`).
    watch_after: Duration,
    /// Time spent walking so far, while not watching.
    walking: Duration,
}

enum State {
    /// No watch yet: the next checkpoint walks, then starts watching once the walks have
    /// cost `watch_after`.
    NotStarted,
    Watching(Box<Watching>),
    /// Watching is not possible here (said once in the log); every checkpoint walks.
    Off,
}

struct Watching {
    watch: platform::Watch,
    /// A walk is due at the next checkpoint, and why.
    walk_due: Option<&'static str>,
    last_walk: Instant,
    /// The ignore files outside the tree as they were at the last checkpoint.
    outside_rules: Vec<(PathBuf, Option<Stamp>)>,
}

impl Tracker {
    /// A tracker that starts watching once walking has taken `watch_after` in total
    /// (`Duration::ZERO`: after the first walk).
    pub fn new(cwd: &Path, watch_after: Duration) -> Tracker {
        Tracker {
            cwd: cwd.to_path_buf(),
            state: State::NotStarted,
            watch_after,
            walking: Duration::ZERO,
        }
    }

    /// What the checkpoint starting now has to look at. Reads (and so forgets) the events
    /// so far: a walk starting now sees everything they say.
    pub fn plan(&mut self) -> Plan {
        let State::Watching(watching) = &mut self.state else {
            return Plan::Walk(match self.state {
                State::NotStarted => "the tree is not watched yet",
                _ => "the working tree is not watched",
            });
        };
        let events = watching.watch.read();
        let rules = outside_rules(&self.cwd);
        let rules_changed = rules != watching.outside_rules;
        watching.outside_rules = rules;
        if let Some(reason) = watching.walk_due.take() {
            return Plan::Walk(reason);
        }
        if watching.last_walk.elapsed() >= WALK_EVERY {
            return Plan::Walk("the last walk was five minutes ago");
        }
        if rules_changed {
            return Plan::Walk("ignore rules outside the working tree changed");
        }
        match events {
            Ok(dirs) => Plan::Relist(dirs),
            Err(reason) => Plan::Walk(reason),
        }
    }

    /// Watch `dir` (relative to the workspace) before it is listed for the first time.
    /// When that fails, watching stops and the next checkpoint walks.
    pub fn watch_new(&mut self, dir: &Path) {
        if let State::Watching(watching) = &mut self.state
            && let Err(reason) = watching.watch.add(&self.cwd, dir)
        {
            self.stop(&reason);
        }
    }

    /// After a walk that took `took` and recorded `dirs` (`complete`: not stopped at
    /// `max_files`): watch exactly those directories from now on — once walking has cost
    /// enough that watching pays (see `WATCH_AFTER_WALKING`).
    pub fn walked<'a>(
        &mut self,
        dirs: impl Iterator<Item = &'a Path>,
        complete: bool,
        took: Duration,
    ) {
        if let State::NotStarted = self.state {
            self.walking = self.walking.saturating_add(took);
            if self.walking < self.watch_after {
                return;
            }
            match platform::Watch::start(&self.cwd) {
                Ok(watch) => {
                    self.state = State::Watching(Box::new(Watching {
                        watch,
                        walk_due: None,
                        last_walk: Instant::now(),
                        outside_rules: outside_rules(&self.cwd),
                    }))
                }
                Err(reason) => {
                    tracing::info!(%reason, "checkpoints walk the whole tree every time");
                    self.state = State::Off;
                }
            }
        }
        let State::Watching(watching) = &mut self.state else {
            return;
        };
        match watching.watch.cover(&self.cwd, dirs) {
            Ok(added) => {
                watching.last_walk = Instant::now();
                watching.walk_due = if !complete {
                    Some("the last walk stopped at max_files")
                } else if added {
                    Some("directories were watched only after they were read")
                } else {
                    None
                };
            }
            Err(reason) => self.stop(&reason),
        }
    }

    /// Something went wrong after a plan was made: the next checkpoint walks.
    pub fn walk_next(&mut self, reason: &'static str) {
        if let State::Watching(watching) = &mut self.state {
            watching.walk_due = Some(reason);
        }
    }

    /// Whether the tree is being watched (checkpoints list only what changed).
    pub fn watching(&self) -> bool {
        matches!(self.state, State::Watching(_))
    }

    fn stop(&mut self, reason: &str) {
        tracing::warn!(%reason, "checkpoints stop watching the working tree and walk it every time");
        self.state = State::Off;
    }
}

/// Size, modification time and inode of a file, to notice it changed.
#[derive(Debug, PartialEq, Eq)]
struct Stamp(u64, i64, i64, u64);

fn stamp(path: &Path) -> Option<Stamp> {
    use std::os::unix::fs::MetadataExt;
    let m = std::fs::metadata(path).ok()?;
    Some(Stamp(m.len(), m.mtime(), m.mtime_nsec(), m.ino()))
}

/// The files outside the tree whose rules decide what in it is ignored: each parent's
/// `.gitignore` and `.ignore`, each level's `.git/info/exclude` (the workspace's own
/// included: `.git` is never watched), git's config (it may name another excludes file)
/// and its default global excludes.
fn outside_rules(cwd: &Path) -> Vec<(PathBuf, Option<Stamp>)> {
    let mut paths = Vec::new();
    for (level, dir) in cwd.ancestors().enumerate() {
        if level > 0 {
            paths.push(dir.join(".gitignore"));
            paths.push(dir.join(".ignore"));
        }
        paths.push(dir.join(".git/info/exclude"));
    }
    if let Some(home) = std::env::var_os("HOME").map(PathBuf::from) {
        paths.push(home.join(".gitconfig"));
        let config = std::env::var_os("XDG_CONFIG_HOME")
            .map(PathBuf::from)
            .unwrap_or_else(|| home.join(".config"));
        paths.push(config.join("git/config"));
        paths.push(config.join("git/ignore"));
    }
    paths
        .into_iter()
        .map(|path| {
            let stamp = stamp(&path);
            (path, stamp)
        })
        .collect()
}

/// The names whose change can change what is ignored anywhere below them.
fn is_ignore_file(name: &std::ffi::OsStr) -> bool {
    name == ".gitignore" || name == ".ignore"
}

#[cfg(target_os = "linux")]
mod platform {
    use super::is_ignore_file;
    use inotify::{EventMask, Inotify, WatchDescriptor, WatchMask};
    use std::collections::{BTreeSet, HashMap};
    use std::io::ErrorKind;
    use std::path::{Path, PathBuf};

    /// What a directory's watch reports: every change to its entries or to itself.
    fn mask() -> WatchMask {
        WatchMask::CREATE
            | WatchMask::DELETE
            | WatchMask::MODIFY
            | WatchMask::ATTRIB
            | WatchMask::CLOSE_WRITE
            | WatchMask::MOVED_FROM
            | WatchMask::MOVED_TO
            | WatchMask::DELETE_SELF
            | WatchMask::MOVE_SELF
            | WatchMask::ONLYDIR
            | WatchMask::DONT_FOLLOW
            | WatchMask::EXCL_UNLINK
    }

    /// Watched directories by watch descriptor, and back.
    #[derive(Default)]
    struct Dirs {
        by_id: HashMap<i32, PathBuf>,
        by_path: HashMap<PathBuf, i32>,
    }

    pub struct Watch {
        inotify: Inotify,
        dirs: Dirs,
        descriptors: HashMap<i32, WatchDescriptor>,
        buffer: Vec<u8>,
        /// Directories watched at most.
        budget: usize,
    }

    /// A quarter of the user's inotify watches (`fs.inotify.max_user_watches`; 8,192 when
    /// it cannot be read, the old kernels' default).
    fn budget() -> usize {
        std::fs::read_to_string("/proc/sys/fs/inotify/max_user_watches")
            .ok()
            .and_then(|text| text.trim().parse::<usize>().ok())
            .unwrap_or(8192)
            / 4
    }

    fn over_budget(budget: usize) -> String {
        format!(
            "the working tree has more directories than the {budget} inotify watches checkpoints may use (a quarter of fs.inotify.max_user_watches)"
        )
    }

    impl Watch {
        pub fn start(cwd: &Path) -> Result<Watch, String> {
            if let Some(kind) = remote_file_system(cwd) {
                return Err(format!(
                    "{} is on a {kind} file system, whose changes made elsewhere raise no event here",
                    cwd.display()
                ));
            }
            let inotify = Inotify::init().map_err(|e| format!("inotify: {e}"))?;
            Ok(Watch {
                inotify,
                dirs: Dirs::default(),
                descriptors: HashMap::new(),
                buffer: vec![0; 64 * 1024],
                budget: budget(),
            })
        }

        /// Watch `dir`; `Ok(true)` when it was not watched before.
        pub fn add(&mut self, cwd: &Path, dir: &Path) -> Result<bool, String> {
            if self.descriptors.len() >= self.budget && !self.dirs.by_path.contains_key(dir) {
                return Err(over_budget(self.budget));
            }
            let descriptor = match self.inotify.watches().add(cwd.join(dir), mask()) {
                Ok(descriptor) => descriptor,
                // Gone already: whoever removed it changed its parent, which is watched.
                Err(e) if matches!(e.kind(), ErrorKind::NotFound | ErrorKind::NotADirectory) => {
                    return Ok(false);
                }
                Err(e) if e.raw_os_error() == Some(libc::ENOSPC) => {
                    return Err(
                        "the system's limit of inotify watches is reached (fs.inotify.max_user_watches)"
                            .to_string(),
                    );
                }
                Err(e) => return Err(format!("watching {}: {e}", dir.display())),
            };
            let id = descriptor.get_watch_descriptor_id();
            // The same directory (inode) answers with the same descriptor: a moved
            // directory's watch now names its new path.
            let new = match self.dirs.by_id.insert(id, dir.to_path_buf()) {
                Some(old) if old == dir => false,
                Some(old) => {
                    self.dirs.by_path.remove(&old);
                    true
                }
                None => true,
            };
            self.dirs.by_path.insert(dir.to_path_buf(), id);
            self.descriptors.insert(id, descriptor);
            Ok(new)
        }

        /// Watch exactly `dirs`; `Ok(true)` when one of them was not watched before.
        pub fn cover<'a>(
            &mut self,
            cwd: &Path,
            dirs: impl Iterator<Item = &'a Path>,
        ) -> Result<bool, String> {
            let dirs: Vec<&Path> = dirs.collect();
            if dirs.len() > self.budget {
                return Err(over_budget(self.budget));
            }
            let wanted: std::collections::HashSet<&Path> = dirs.iter().copied().collect();
            let stale: Vec<i32> = self
                .dirs
                .by_id
                .iter()
                .filter(|(_, path)| !wanted.contains(path.as_path()))
                .map(|(&id, _)| id)
                .collect();
            for id in stale {
                self.forget(id);
                if let Some(descriptor) = self.descriptors.remove(&id) {
                    // Fails only for a watch the kernel already dropped.
                    let _ = self.inotify.watches().remove(descriptor);
                }
            }
            let mut added = false;
            for dir in dirs {
                added |= self.add(cwd, dir)?;
            }
            Ok(added)
        }

        fn forget(&mut self, id: i32) {
            if let Some(path) = self.dirs.by_id.remove(&id)
                && self.dirs.by_path.get(&path) == Some(&id)
            {
                self.dirs.by_path.remove(&path);
            }
        }

        /// The directories the events since the last read name, or why they cannot tell.
        pub fn read(&mut self) -> Result<BTreeSet<PathBuf>, &'static str> {
            let mut changed = BTreeSet::new();
            let mut verdict = Ok(());
            loop {
                let events = match self.inotify.read_events(&mut self.buffer) {
                    Ok(events) => events,
                    Err(e) if e.kind() == ErrorKind::WouldBlock => break,
                    Err(e) if e.kind() == ErrorKind::Interrupted => continue,
                    Err(_) => return Err("the kernel's change events could not be read"),
                };
                let mut dropped = Vec::new();
                for event in events {
                    let id = event.wd.get_watch_descriptor_id();
                    if event.mask.contains(EventMask::Q_OVERFLOW) {
                        verdict = Err("the kernel's queue of change events overflowed");
                        continue;
                    }
                    let Some(dir) = self.dirs.by_id.get(&id) else {
                        // A watch removed since: its directory is no longer recorded.
                        continue;
                    };
                    if event.mask.contains(EventMask::IGNORED) {
                        // The directory is gone (its parent's events say so too).
                        dropped.push(id);
                    }
                    if event.mask.contains(EventMask::UNMOUNT) {
                        verdict = Err("a file system in the working tree was unmounted");
                    }
                    let moved = event
                        .mask
                        .intersects(EventMask::MOVED_FROM | EventMask::MOVED_TO);
                    if moved && event.mask.contains(EventMask::ISDIR) {
                        verdict = Err("a directory was moved");
                    }
                    match &event.name {
                        Some(name) if is_ignore_file(name) => {
                            verdict = Err("a .gitignore or .ignore file changed");
                        }
                        Some(name) => {
                            // A directory made or removed under this name: one made
                            // again under the same name is read whole, not taken for
                            // the one recorded.
                            if event.mask.contains(EventMask::ISDIR)
                                && event.mask.intersects(EventMask::CREATE | EventMask::DELETE)
                            {
                                changed.insert(dir.join(name));
                            }
                            changed.insert(dir.clone());
                        }
                        // The directory itself: its entry in its parent changed too.
                        None => {
                            if dir.as_os_str().is_empty() {
                                if event.mask.intersects(
                                    EventMask::DELETE_SELF
                                        | EventMask::MOVE_SELF
                                        | EventMask::IGNORED,
                                ) {
                                    verdict =
                                        Err("the working directory itself was moved or removed");
                                }
                            } else {
                                changed.insert(
                                    dir.parent().map(Path::to_path_buf).unwrap_or_default(),
                                );
                            }
                            changed.insert(dir.clone());
                        }
                    }
                }
                for id in dropped {
                    self.forget(id);
                    self.descriptors.remove(&id);
                }
            }
            verdict.map(|()| changed)
        }
    }

    /// The kind of a network or FUSE file system `path` is on (none for a local one).
    fn remote_file_system(path: &Path) -> Option<&'static str> {
        use std::os::unix::ffi::OsStrExt;
        let c_path = std::ffi::CString::new(path.as_os_str().as_bytes()).ok()?;
        // SAFETY: `statfs` is plain data, fully written by the call on success; the
        // pointers are a NUL-terminated path and that struct, both alive for the call.
        let mut stat: libc::statfs = unsafe { std::mem::zeroed() };
        if unsafe { libc::statfs(c_path.as_ptr(), &mut stat) } != 0 {
            return None;
        }
        // The magic numbers of linux/magic.h (and the kernel sources for the rest).
        #[allow(clippy::unnecessary_cast)]
        let magic = (stat.f_type as u64) & 0xFFFF_FFFF;
        Some(match magic {
            0x6969 => "NFS",
            0x517B | 0xFF53_4D42 | 0xFE53_4D42 => "SMB",
            0x6573_5546 => "FUSE",
            0x0102_1997 => "9P",
            0x00C3_6400 => "Ceph",
            0x5346_414F => "AFS",
            0x0BD0_0BD0 => "Lustre",
            0x0116_1970 => "GFS2",
            0x7461_636F => "OCFS2",
            _ => return None,
        })
    }
}

#[cfg(not(target_os = "linux"))]
mod platform {
    use std::collections::BTreeSet;
    use std::path::{Path, PathBuf};

    /// No watching here: `start` says so and every checkpoint walks.
    #[allow(dead_code)] // never made: `start` says why
    pub struct Watch;

    impl Watch {
        pub fn start(_cwd: &Path) -> Result<Watch, String> {
            Err("watching for changes is implemented on Linux only".to_string())
        }

        pub fn add(&mut self, _cwd: &Path, _dir: &Path) -> Result<bool, String> {
            Ok(false)
        }

        pub fn cover<'a>(
            &mut self,
            _cwd: &Path,
            _dirs: impl Iterator<Item = &'a Path>,
        ) -> Result<bool, String> {
            Ok(false)
        }

        pub fn read(&mut self) -> Result<BTreeSet<PathBuf>, &'static str> {
            Err("not watched")
        }
    }
}

#[cfg(all(test, target_os = "linux"))]
mod tests {
    use super::*;

    fn walk(tracker: &mut Tracker, millis: u64) {
        tracker.walked(std::iter::empty(), true, Duration::from_millis(millis));
    }

    #[test]
    fn a_tree_is_watched_once_walking_it_has_cost_what_the_watch_will() {
        let dir = tempfile::tempdir().unwrap();
        let mut tracker = Tracker::new(dir.path(), Duration::from_millis(10));
        walk(&mut tracker, 4);
        walk(&mut tracker, 4);
        assert!(
            !tracker.watching(),
            "8 ms of walking: still cheaper than a watch"
        );
        assert_eq!(tracker.plan(), Plan::Walk("the tree is not watched yet"));
        walk(&mut tracker, 4);
        assert!(tracker.watching(), "12 ms of walking: watched from now on");
        // A large tree is watched after its first walk.
        let mut large = Tracker::new(dir.path(), Duration::from_millis(10));
        walk(&mut large, 50);
        assert!(large.watching());
    }
}
