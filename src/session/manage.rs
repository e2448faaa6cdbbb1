//! Managing saved sessions from outside a conversation (`agent sessions rename|rm`):
//! naming one (a `session_info` entry appended under the file's lock) and removing one
//! with everything that belongs to it — its `<stem>.files/` (tool outputs, pasted images)
//! and `<stem>.agents/` (its sub-agents' sessions, at every depth, with theirs). A session
//! a running agent holds (its lock) is neither renamed nor removed. The checkpoint records
//! of the removed sessions are the checkpoint store's to drop (`checkpoint::gc`), given the
//! ids this module reports; `housekeeping` puts the two together.
//!
//! A removal is crash-safe: the session file is first renamed to `<stem>.deleted` (a
//! tombstone: the session leaves every listing at once, and its lock stays), then the
//! checkpoint logs go, then the directories, then the tombstone. A crash at any step leaves
//! the tombstone and what it names, which the next collection of orphans (`orphans`,
//! `agent sessions gc`) finishes.

use super::error::SessionError;
use super::format::NewEntry;
use super::lock::LockedFile;
use super::store::id_of;
use super::writer::SessionWriter;
use std::path::{Path, PathBuf};

/// Name the session at `path` (`title` trimmed; it must not be empty). Refused with
/// `SessionError::Locked` while an agent has the session open: rename it there.
pub async fn rename(path: &Path, title: &str) -> Result<String, SessionError> {
    let title = title.trim();
    if title.is_empty() {
        return Err(SessionError::EmptyTitle);
    }
    let locked = SessionWriter::lock_existing(path)?;
    let loaded = super::load::load(path)?;
    let writer = SessionWriter::reopen(
        locked,
        path,
        &loaded.header.id,
        loaded.valid_len,
        loaded.last_entry_id,
    )?;
    writer.append(NewEntry::SessionInfo { name: title }).await?;
    writer.sync().await?;
    Ok(title.to_string())
}

/// What removing a session takes away, found (and locked) before anything goes.
pub struct Removal {
    /// The session's file.
    pub file: PathBuf,
    pub id: String,
    /// The ids of its sub-agents' sessions, at every depth.
    pub child_ids: Vec<String>,
    /// The directories that go with it (`.files/`, `.agents/`), those that exist.
    pub dirs: Vec<PathBuf>,
    /// Every file that goes, the session's own first, then what the directories hold.
    pub files: Vec<PathBuf>,
    /// The locks of the session and of its sub-agents' sessions, held until they are gone.
    _locks: Vec<LockedFile>,
}

impl Removal {
    /// The session's id and its sub-agents'.
    pub fn ids(&self) -> impl Iterator<Item = &str> {
        std::iter::once(self.id.as_str()).chain(self.child_ids.iter().map(String::as_str))
    }

    /// Remove the session: its file becomes a tombstone (`<stem>.deleted`: it leaves every
    /// listing at once), `forget` drops the checkpoint logs of its ids, then its
    /// directories go, then the tombstone. A step that fails stops the removal with the
    /// tombstone left, so `agent sessions gc` finishes it; `forget`'s error is given back
    /// as it came.
    pub fn execute<E>(
        self,
        forget: impl FnOnce(&[&str]) -> Result<(), E>,
    ) -> Result<(), Interrupted<E>> {
        let tombstone = tombstone_of(&self.file);
        std::fs::rename(&self.file, &tombstone)
            .map_err(|e| Interrupted::Session(SessionError::io(&self.file, e)))?;
        let ids: Vec<&str> = self.ids().collect();
        forget(&ids).map_err(Interrupted::Forget)?;
        remove_dirs(&self.dirs).map_err(Interrupted::Session)?;
        std::fs::remove_file(&tombstone)
            .map_err(|e| Interrupted::Session(SessionError::io(&tombstone, e)))
    }
}

/// Why a removal stopped part way (its tombstone is left for `agent sessions gc`).
#[derive(Debug)]
pub enum Interrupted<E> {
    Session(SessionError),
    /// The checkpoint logs could not be dropped.
    Forget(E),
}

/// Remove `dirs` whole (those already gone are fine); the first failure, after the
/// others went.
pub(super) fn remove_dirs(dirs: &[PathBuf]) -> Result<(), SessionError> {
    let mut failed = None;
    for dir in dirs {
        if let Err(e) = std::fs::remove_dir_all(dir)
            && e.kind() != std::io::ErrorKind::NotFound
        {
            failed.get_or_insert(SessionError::io(dir, e));
        }
    }
    failed.map_or(Ok(()), Err)
}

/// `<stem>.deleted` beside the session file `path`: what a removal renames it to first.
pub fn tombstone_of(path: &Path) -> PathBuf {
    beside(path, "deleted")
}

/// Find what removing the session at `path` takes away, locking it and every sub-agent
/// session under it: `SessionError::Locked` names the one a running agent holds.
pub fn plan_removal(path: &Path) -> Result<Removal, SessionError> {
    let id = id_of(path)
        .ok_or_else(|| SessionError::NotASession {
            path: path.to_path_buf(),
            reason: "its name is not <time>_<id>.jsonl".to_string(),
        })?
        .to_string();
    let mut removal = Removal {
        file: path.to_path_buf(),
        id,
        child_ids: Vec::new(),
        dirs: Vec::new(),
        files: vec![path.to_path_buf()],
        _locks: vec![SessionWriter::lock_existing(path)?],
    };
    add_dirs(path, &mut removal)?;
    Ok(removal)
}

/// Add what `<stem>.files/` and `<stem>.agents/` beside `path` hold to `removal`.
fn add_dirs(path: &Path, removal: &mut Removal) -> Result<(), SessionError> {
    for dir in [beside(path, "files"), beside(path, "agents")] {
        if dir.symlink_metadata().is_ok() {
            walk(&dir, removal)?;
            removal.dirs.push(dir);
        }
    }
    Ok(())
}

/// What finishing the removal a tombstone (`<stem>.deleted`) marks takes away: a removal
/// that stopped part way (a crash, a failure). `SessionError::Locked` while the removal is
/// still going on (its lock is held).
pub(super) fn plan_finishing(tombstone: &Path) -> Result<Removal, SessionError> {
    let session = beside(tombstone, "jsonl");
    let id = id_of(&session)
        .ok_or_else(|| SessionError::NotASession {
            path: tombstone.to_path_buf(),
            reason: "its name is not <time>_<id>.deleted".to_string(),
        })?
        .to_string();
    let mut removal = Removal {
        file: tombstone.to_path_buf(),
        id,
        child_ids: Vec::new(),
        dirs: Vec::new(),
        files: vec![tombstone.to_path_buf()],
        _locks: vec![SessionWriter::lock_existing(tombstone)?],
    };
    add_dirs(&session, &mut removal)?;
    Ok(removal)
}

impl Removal {
    /// Finish a removal its tombstone marks (`plan_finishing`): the checkpoint logs, the
    /// directories, the tombstone.
    pub fn finish<E>(
        self,
        forget: impl FnOnce(&[&str]) -> Result<(), E>,
    ) -> Result<(), Interrupted<E>> {
        let ids: Vec<&str> = self.ids().collect();
        forget(&ids).map_err(Interrupted::Forget)?;
        remove_dirs(&self.dirs).map_err(Interrupted::Session)?;
        std::fs::remove_file(&self.file)
            .map_err(|e| Interrupted::Session(SessionError::io(&self.file, e)))
    }
}

/// `<stem>.<suffix>` beside the session file `path` (or its tombstone).
pub(super) fn beside(path: &Path, suffix: &str) -> PathBuf {
    let name = path
        .file_name()
        .unwrap_or(path.as_os_str())
        .to_string_lossy();
    let stem = name
        .strip_suffix(".jsonl")
        .or_else(|| name.strip_suffix(".deleted"))
        .unwrap_or(&name);
    path.with_file_name(format!("{stem}.{suffix}"))
}

/// Every file under `dir` (symbolic links are listed, never followed), locking the
/// sub-agent sessions among them.
fn walk(dir: &Path, removal: &mut Removal) -> Result<(), SessionError> {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return Ok(());
    };
    let mut entries: Vec<PathBuf> = entries.flatten().map(|e| e.path()).collect();
    entries.sort();
    for path in entries {
        let is_dir = path.symlink_metadata().is_ok_and(|m| m.is_dir());
        if is_dir {
            walk(&path, removal)?;
            continue;
        }
        if dir.extension().is_some_and(|e| e == "agents")
            && path.extension().is_some_and(|e| e == "jsonl")
            && let Some(child) = id_of(&path)
        {
            removal._locks.push(SessionWriter::lock_existing(&path)?);
            removal.child_ids.push(child.to_string());
        }
        removal.files.push(path);
    }
    Ok(())
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
    fn a_removal_takes_the_outputs_and_the_sub_agents_at_every_depth() {
        let root = tempfile::tempdir().unwrap();
        let file = root.path().join("d/T_parent1.jsonl");
        session(&file);
        let child = root.path().join("d/T_parent1.agents/T_child1.jsonl");
        session(&child);
        let grandchild = root
            .path()
            .join("d/T_parent1.agents/T_child1.agents/T_grand1.jsonl");
        session(&grandchild);
        std::fs::create_dir_all(root.path().join("d/T_parent1.files")).unwrap();
        std::fs::write(root.path().join("d/T_parent1.files/bash-1.log"), "x").unwrap();
        let other = root.path().join("d/T_other.jsonl");
        session(&other);

        let removal = plan_removal(&file).unwrap();
        let mut ids: Vec<&str> = removal.ids().collect();
        ids.sort_unstable();
        assert_eq!(ids, ["child1", "grand1", "parent1"]);
        assert_eq!(removal.files.len(), 4, "{:?}", removal.files);
        // Held: another process could not open the sub-agent's session now.
        assert!(matches!(
            SessionWriter::lock_existing(&grandchild),
            Err(SessionError::Locked(_))
        ));
        let mut forgotten = Vec::new();
        removal
            .execute(|ids: &[&str]| {
                forgotten.extend(ids.iter().map(|id| id.to_string()));
                Ok::<(), ()>(())
            })
            .unwrap();
        assert_eq!(forgotten.len(), 3);
        let left: Vec<_> = std::fs::read_dir(root.path().join("d"))
            .unwrap()
            .flatten()
            .map(|e| e.path())
            .collect();
        assert_eq!(left, [other]);
    }

    #[test]
    fn a_session_in_use_is_not_removed() {
        let root = tempfile::tempdir().unwrap();
        let file = root.path().join("d/T_busy1.jsonl");
        session(&file);
        let _held = SessionWriter::lock_existing(&file).unwrap();
        assert!(matches!(plan_removal(&file), Err(SessionError::Locked(_))));
        assert!(file.exists());
    }
}

#[cfg(test)]
mod crash_tests {
    use super::*;
    use crate::session::format::Header;

    fn session(path: &Path) {
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        let header = serde_json::to_string(&Header::new("x", "/w", 0)).unwrap() + "\n";
        std::fs::write(path, header).unwrap();
    }

    /// A removal that stops after its first step leaves the tombstone and everything it
    /// names, and finishing it takes them all.
    #[test]
    fn a_removal_stopped_part_way_leaves_a_tombstone_that_finishing_clears() {
        let root = tempfile::tempdir().unwrap();
        let file = root.path().join("d/T_gone1.jsonl");
        session(&file);
        session(&root.path().join("d/T_gone1.agents/T_kid1.jsonl"));
        std::fs::create_dir_all(root.path().join("d/T_gone1.files")).unwrap();
        let removal = plan_removal(&file).unwrap();
        let stopped = removal.execute(|_: &[&str]| Err("the store is read-only"));
        assert!(matches!(
            stopped,
            Err(Interrupted::Forget("the store is read-only"))
        ));
        let tombstone = root.path().join("d/T_gone1.deleted");
        assert!(!file.exists() && tombstone.is_file());
        assert!(root.path().join("d/T_gone1.files").is_dir());

        let finishing = plan_finishing(&tombstone).unwrap();
        let mut ids: Vec<String> = finishing.ids().map(String::from).collect();
        ids.sort();
        assert_eq!(ids, ["gone1", "kid1"]);
        finishing.finish(|_: &[&str]| Ok::<(), ()>(())).unwrap();
        assert_eq!(std::fs::read_dir(root.path().join("d")).unwrap().count(), 0);
    }
}
