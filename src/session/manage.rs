//! Managing saved sessions from outside a conversation (`agent sessions rename|rm`):
//! naming one (a `session_info` entry appended under the file's lock) and removing one
//! with everything that belongs to it — its `<stem>.files/` (tool outputs, pasted images)
//! and `<stem>.agents/` (its sub-agents' sessions, at every depth, with theirs). A session
//! a running agent holds (its lock) is neither renamed nor removed. The checkpoint records
//! of the removed sessions are the checkpoint store's to drop (`checkpoint::gc::forget`),
//! given the ids this module reports.

use super::error::SessionError;
use super::format::NewEntry;
use super::store::id_of;
use super::writer::SessionWriter;
use std::fs::File;
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
    _locks: Vec<File>,
}

impl Removal {
    /// The session's id and its sub-agents'.
    pub fn ids(&self) -> impl Iterator<Item = &str> {
        std::iter::once(self.id.as_str()).chain(self.child_ids.iter().map(String::as_str))
    }

    /// Remove the session file first (the session leaves every listing at once), then its
    /// directories. A directory that cannot be removed is reported, after the others went.
    pub fn execute(self) -> Result<(), SessionError> {
        std::fs::remove_file(&self.file).map_err(|e| SessionError::io(&self.file, e))?;
        let mut failed = None;
        for dir in &self.dirs {
            if let Err(e) = std::fs::remove_dir_all(dir)
                && e.kind() != std::io::ErrorKind::NotFound
            {
                failed.get_or_insert(SessionError::io(dir, e));
            }
        }
        failed.map_or(Ok(()), Err)
    }
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
    for dir in [beside(path, "files"), beside(path, "agents")] {
        if dir.symlink_metadata().is_ok() {
            walk(&dir, &mut removal)?;
            removal.dirs.push(dir);
        }
    }
    Ok(removal)
}

/// `<stem>.<suffix>` beside the session file `path`.
fn beside(path: &Path, suffix: &str) -> PathBuf {
    let name = path
        .file_name()
        .unwrap_or(path.as_os_str())
        .to_string_lossy();
    let stem = name.strip_suffix(".jsonl").unwrap_or(&name);
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
        removal.execute().unwrap();
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
