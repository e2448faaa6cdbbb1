//! What sessions left behind in the store when their file went without a removal finishing:
//! a tombstone (`<stem>.deleted`, a removal stopped part way: `manage`) with what it names,
//! and `<stem>.files/` or `<stem>.agents/` beside no session file (the file deleted by
//! hand). Found here with the ids of every session that is still there, so the checkpoint
//! store can tell which of its logs belong to none (`housekeeping` puts the two together).
//!
//! Nothing a running agent may be using is an orphan: a tombstone whose removal is still
//! going on is locked, a sub-agent session that runs is locked, and a directory beside no
//! session file is left alone until nothing in it changed for `quiet` — a running agent
//! whose new session has no file yet (images pasted before the first message) writes there.

use super::SessionError;
use super::lock::LockedFile;
use super::manage::{self, Removal};
use super::store::id_of;
use super::writer::SessionWriter;
use std::collections::HashSet;
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

/// What `find` found.
#[derive(Default)]
pub struct Orphans {
    /// Removals their tombstones mark, locked: `Removal::finish` completes them.
    pub unfinished: Vec<Removal>,
    /// Directories beside no session file, quiet and unlocked: they go whole.
    pub dirs: Vec<PathBuf>,
    /// Every file under `dirs` (what a dry run lists).
    pub files: Vec<PathBuf>,
    /// The ids of the sessions in `dirs` (their checkpoint logs go too).
    pub orphan_ids: Vec<String>,
    /// The ids of every session still there, at every depth, and of those that may be in
    /// use: a checkpoint log of no other id belongs to no session.
    pub kept_ids: HashSet<String>,
    /// The locks of the sessions in `dirs`, held until they are gone.
    locks: Vec<LockedFile>,
}

impl Orphans {
    /// Remove the orphan directories (the unfinished removals are finished apart).
    pub fn remove_dirs(&self) -> Result<(), SessionError> {
        manage::remove_dirs(&self.dirs)
    }

    /// Whether there is nothing to collect.
    pub fn is_empty(&self) -> bool {
        self.unfinished.is_empty() && self.dirs.is_empty()
    }

    /// How many sessions' locks are held (for a test of the bookkeeping).
    pub fn locks_held(&self) -> usize {
        self.locks.len()
    }
}

/// The orphans under `sessions_dir` (every working directory's); a directory is an orphan
/// once nothing in it changed for `quiet`.
pub fn find(sessions_dir: &Path, quiet: Duration) -> Orphans {
    let mut orphans = Orphans::default();
    for dir in entries(sessions_dir) {
        if dir.is_dir() {
            scan(&dir, quiet, &mut orphans);
        }
    }
    orphans
}

/// Look through one directory of sessions (a working directory's, or a session's
/// `.agents/`).
fn scan(dir: &Path, quiet: Duration, orphans: &mut Orphans) {
    let paths = entries(dir);
    let present: HashSet<&Path> = paths.iter().map(PathBuf::as_path).collect();
    for path in &paths {
        let Some(extension) = path.extension().and_then(|e| e.to_str()) else {
            continue;
        };
        match extension {
            "jsonl" => {
                if let Some(id) = id_of(path) {
                    orphans.kept_ids.insert(id.to_string());
                }
            }
            "deleted" => match manage::plan_finishing(path) {
                Ok(removal) => orphans.unfinished.push(removal),
                // Its removal is still going on (or it cannot be read): left alone, and
                // so is every session it names.
                Err(_) => keep_all(path, orphans),
            },
            "files" | "agents" if path.is_dir() => {
                // Session names hold no dot but the extension's.
                let session = path.with_extension("jsonl");
                let tombstone = path.with_extension("deleted");
                if present.contains(session.as_path()) {
                    if extension == "agents" {
                        scan(path, quiet, orphans);
                    }
                } else if !present.contains(tombstone.as_path()) {
                    orphan_dir(path, quiet, orphans);
                }
            }
            _ => {}
        }
    }
}

/// A directory beside no session file: an orphan when quiet and nothing in it is locked;
/// else every session in it is kept.
fn orphan_dir(dir: &Path, quiet: Duration, orphans: &mut Orphans) {
    let mut files = Vec::new();
    let mut ids = Vec::new();
    let mut locks = Vec::new();
    let mut newest = modified(dir);
    let mut in_use = false;
    let mut pending = vec![dir.to_path_buf()];
    while let Some(dir) = pending.pop() {
        for path in entries(&dir) {
            newest = newest.max(modified(&path));
            if path.symlink_metadata().is_ok_and(|m| m.is_dir()) {
                pending.push(path);
                continue;
            }
            if path.extension().is_some_and(|e| e == "jsonl")
                && let Some(id) = id_of(&path)
            {
                ids.push(id.to_string());
                match SessionWriter::lock_existing(&path) {
                    Ok(lock) => locks.push(lock),
                    Err(_) => in_use = true,
                }
            }
            files.push(path);
        }
    }
    let quiet_since = SystemTime::now()
        .checked_sub(quiet)
        .unwrap_or(SystemTime::UNIX_EPOCH);
    if in_use || newest > quiet_since {
        orphans.kept_ids.extend(ids);
        return;
    }
    orphans.dirs.push(dir.to_path_buf());
    orphans.files.extend(files);
    orphans.orphan_ids.extend(ids);
    orphans.locks.extend(locks);
}

/// Keep every session a tombstone that cannot be finished names.
fn keep_all(tombstone: &Path, orphans: &mut Orphans) {
    if let Some(id) = id_of(&manage::beside(tombstone, "jsonl")) {
        orphans.kept_ids.insert(id.to_string());
    }
    let mut pending = vec![manage::beside(tombstone, "agents")];
    while let Some(dir) = pending.pop() {
        for path in entries(&dir) {
            if path.is_dir() {
                pending.push(path);
            } else if let Some(id) = id_of(&path) {
                orphans.kept_ids.insert(id.to_string());
            }
        }
    }
}

fn modified(path: &Path) -> SystemTime {
    path.symlink_metadata()
        .and_then(|m| m.modified())
        .unwrap_or(SystemTime::UNIX_EPOCH)
}

fn entries(dir: &Path) -> Vec<PathBuf> {
    let Ok(read) = std::fs::read_dir(dir) else {
        return Vec::new();
    };
    let mut paths: Vec<PathBuf> = read.flatten().map(|e| e.path()).collect();
    paths.sort();
    paths
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::session::format::Header;

    fn session(path: &Path) {
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        let header = serde_json::to_string(&Header::new("x", "/w", 0)).unwrap() + "\n";
        std::fs::write(path, header).unwrap();
    }

    #[test]
    fn directories_beside_no_session_are_orphans_once_quiet_and_unlocked() {
        let root = tempfile::tempdir().unwrap();
        let d = root.path().join("-w-");
        // A live session with a sub-agent, and its outputs.
        session(&d.join("T_live1.jsonl"));
        session(&d.join("T_live1.agents/T_kid1.jsonl"));
        std::fs::create_dir_all(d.join("T_live1.files")).unwrap();
        // Hand-deleted: its outputs and its sub-agent stay behind.
        std::fs::create_dir_all(d.join("T_gone1.files")).unwrap();
        std::fs::write(d.join("T_gone1.files/bash-1.log"), "x").unwrap();
        session(&d.join("T_gone1.agents/T_kid2.jsonl"));
        // Beside no session, but one of its sub-agents runs.
        session(&d.join("T_gone2.agents/T_kid3.jsonl"));
        let _running = SessionWriter::lock_existing(&d.join("T_gone2.agents/T_kid3.jsonl"));
        // A removal stopped part way.
        session(&d.join("T_dead1.deleted"));
        std::fs::create_dir_all(d.join("T_dead1.files")).unwrap();

        // Nothing is quiet for a day yet: only the tombstone's removal is unfinished.
        let young = find(root.path(), Duration::from_secs(86_400));
        assert!(young.dirs.is_empty(), "{:?}", young.dirs);
        assert_eq!(young.unfinished.len(), 1);
        assert!(young.kept_ids.contains("kid2"));
        drop(young);

        let orphans = find(root.path(), Duration::ZERO);
        assert_eq!(
            orphans.dirs,
            [d.join("T_gone1.agents"), d.join("T_gone1.files")]
        );
        assert_eq!(orphans.orphan_ids, ["kid2"]);
        assert_eq!(orphans.locks_held(), 1);
        for id in ["live1", "kid1", "kid3"] {
            assert!(orphans.kept_ids.contains(id), "{id}");
        }
        assert!(!orphans.kept_ids.contains("kid2"));
        orphans.remove_dirs().unwrap();
        assert!(!d.join("T_gone1.files").exists());
        assert!(d.join("T_live1.files").is_dir());
        assert!(d.join("T_gone2.agents/T_kid3.jsonl").is_file());
    }
}
