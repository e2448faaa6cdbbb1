//! Clean-up of the checkpoint store: records older than `keep_days` are dropped from the
//! session logs (a log whose newest record is that old goes whole), then every object no
//! remaining record reaches is removed. It runs at most once a day, holding the store's
//! lock exclusively (checkpoints being recorded hold it shared, so nothing they are about
//! to name disappears), and bumps the store's generation so a running agent stops reusing
//! what it remembered of removed objects. `collect` sweeps without the daily gate and
//! without dropping records, after a session was deleted (`agent sessions rm`, the
//! picker) or orphans were collected (`agent sessions gc`).

use super::error::CheckpointError;
use super::log::{self, Record};
use super::store::Store;
use super::tree::{self, Kind};
use std::collections::HashSet;
use std::fs::File;
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

const DAY: Duration = Duration::from_secs(24 * 60 * 60);

pub fn lock_path(root: &Path) -> PathBuf {
    root.join("lock")
}

fn generation_path(root: &Path) -> PathBuf {
    root.join("generation")
}

/// The store's clean-up generation (empty before the first clean-up).
pub fn generation(root: &Path) -> String {
    std::fs::read_to_string(generation_path(root)).unwrap_or_default()
}

/// What a clean-up removed.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Cleaned {
    pub records: usize,
    pub objects: usize,
}

/// Clean up when the last clean-up is a day old (or there was none); `Ok(None)` when it
/// was not due or another process holds the store.
pub fn run_if_due(root: &Path, keep_days: u32) -> Result<Option<Cleaned>, CheckpointError> {
    let marker = root.join("last-clean-up");
    let recent = std::fs::metadata(&marker)
        .and_then(|m| m.modified())
        .ok()
        .and_then(|t| SystemTime::now().duration_since(t).ok())
        .is_some_and(|age| age < DAY);
    if recent || !root.join("objects").is_dir() {
        return Ok(None);
    }
    let cleaned = run(root, keep_days)?;
    if cleaned.is_some() {
        std::fs::write(&marker, b"").map_err(|e| CheckpointError::store(&marker, e))?;
    }
    Ok(cleaned)
}

/// Clean up now; `Ok(None)` when another process is recording or restoring.
pub fn run(root: &Path, keep_days: u32) -> Result<Option<Cleaned>, CheckpointError> {
    let cutoff = crate::protocol::message::now_millis()
        .saturating_sub(i64::from(keep_days).saturating_mul(86_400_000));
    clean(root, Some(cutoff))
}

/// Remove every object no remaining session log reaches, keeping every record (a
/// session's log was just deleted with it); `Ok(None)` when another process is recording
/// or restoring, and nothing at all when there is no store.
pub fn collect(root: &Path) -> Result<Option<Cleaned>, CheckpointError> {
    if !root.join("objects").is_dir() {
        return Ok(Some(Cleaned::default()));
    }
    clean(root, None)
}

/// Drop the checkpoint logs of the sessions `ids` (sessions being deleted, every record
/// counted as removed), then every object no remaining log reaches (`collect`).
pub fn forget<'a>(
    root: &Path,
    ids: impl IntoIterator<Item = &'a str>,
) -> Result<Option<Cleaned>, CheckpointError> {
    let records = drop_logs(root, ids)?;
    let collected = collect(root)?;
    Ok(collected.map(|cleaned| Cleaned {
        records: cleaned.records + records,
        ..cleaned
    }))
}

/// Drop the checkpoint logs of the sessions `ids` (those that have none are fine): how
/// many records they held. The objects they alone reached stay until the next sweep
/// (`collect`).
pub fn drop_logs<'a>(
    root: &Path,
    ids: impl IntoIterator<Item = &'a str>,
) -> Result<usize, CheckpointError> {
    let mut records = 0;
    for id in ids {
        let path = log::path_for(root, id);
        records += log::read(&path)?.len();
        match std::fs::remove_file(&path) {
            Ok(()) => {}
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(e) => return Err(CheckpointError::store(&path, e)),
        }
    }
    Ok(records)
}

/// Every session log in the store: its session id, its path, and when it was last written.
pub fn logs(root: &Path) -> Vec<(String, PathBuf, SystemTime)> {
    files_in(&root.join("sessions"))
        .into_iter()
        .filter(|path| path.extension().is_some_and(|e| e == "jsonl"))
        .filter_map(|path| {
            let id = path.file_stem()?.to_str()?.to_string();
            let modified = std::fs::metadata(&path).and_then(|m| m.modified()).ok()?;
            Some((id, path, modified))
        })
        .collect()
}

/// Drop the records older than `cutoff` (none without one), then sweep.
fn clean(root: &Path, cutoff: Option<i64>) -> Result<Option<Cleaned>, CheckpointError> {
    let store = Store::open(root);
    let lock_file = lock_path(root);
    let lock = File::options()
        .create(true)
        .truncate(false)
        .write(true)
        .open(&lock_file)
        .map_err(|e| CheckpointError::store(&lock_file, e))?;
    if lock.try_lock().is_err() {
        return Ok(None);
    }
    let mut cleaned = Cleaned::default();
    let mut kept: Vec<Record> = Vec::new();
    let sessions = root.join("sessions");
    for path in files_in(&sessions) {
        let records = log::read(&path)?;
        let before = records.len();
        let fresh: Vec<Record> = records
            .into_iter()
            .filter(|r| cutoff.is_none_or(|cutoff| r.timestamp >= cutoff))
            .collect();
        cleaned.records += before - fresh.len();
        if fresh.is_empty() {
            std::fs::remove_file(&path).map_err(|e| CheckpointError::store(&path, e))?;
        } else if fresh.len() < before {
            rewrite(&path, &fresh)?;
        }
        kept.extend(fresh);
    }
    let mut reachable: HashSet<String> = HashSet::new();
    for record in &kept {
        mark(&store, &record.root, &mut reachable)?;
    }
    for fan in dirs_in(&root.join("objects")) {
        let Some(prefix) = fan.file_name().map(|n| n.to_string_lossy().into_owned()) else {
            continue;
        };
        for object in files_in(&fan) {
            let Some(rest) = object.file_name().map(|n| n.to_string_lossy().into_owned()) else {
                continue;
            };
            if !reachable.contains(&format!("{prefix}{rest}")) {
                std::fs::remove_file(&object).map_err(|e| CheckpointError::store(&object, e))?;
                cleaned.objects += 1;
            }
        }
    }
    // Temporary files a crash left behind.
    for temp in files_in(&root.join("tmp")) {
        let old = std::fs::metadata(&temp)
            .and_then(|m| m.modified())
            .ok()
            .and_then(|t| SystemTime::now().duration_since(t).ok())
            .is_some_and(|age| age > Duration::from_secs(3600));
        if old {
            let _ = std::fs::remove_file(&temp);
        }
    }
    let generation = generation_path(root);
    std::fs::write(&generation, crate::session::new_id())
        .map_err(|e| CheckpointError::store(&generation, e))?;
    Ok(Some(cleaned))
}

/// Every object reachable from the listing `root`.
fn mark(store: &Store, root: &str, reachable: &mut HashSet<String>) -> Result<(), CheckpointError> {
    let mut pending = vec![root.to_string()];
    while let Some(hash) = pending.pop() {
        if !reachable.insert(hash.clone()) {
            continue;
        }
        let entries = match tree::read(store, &hash) {
            Ok(entries) => entries,
            // A damaged or missing listing reaches nothing more.
            Err(CheckpointError::Damaged(_) | CheckpointError::Store { .. }) => continue,
            Err(error) => return Err(error),
        };
        for entry in entries {
            match (entry.kind, entry.hash) {
                (Kind::Dir, Some(hash)) => pending.push(hash),
                (_, Some(hash)) => {
                    reachable.insert(hash);
                }
                _ => {}
            }
        }
    }
    Ok(())
}

fn rewrite(path: &Path, records: &[Record]) -> Result<(), CheckpointError> {
    let temp = path.with_extension("jsonl.tmp");
    let _ = std::fs::remove_file(&temp);
    log::append(&temp, records)?;
    std::fs::rename(&temp, path).map_err(|e| CheckpointError::store(path, e))
}

fn files_in(dir: &Path) -> Vec<PathBuf> {
    entries(dir, false)
}

fn dirs_in(dir: &Path) -> Vec<PathBuf> {
    entries(dir, true)
}

fn entries(dir: &Path, dirs: bool) -> Vec<PathBuf> {
    let Ok(read) = std::fs::read_dir(dir) else {
        return Vec::new();
    };
    read.flatten()
        .filter(|e| e.file_type().is_ok_and(|t| t.is_dir() == dirs))
        .map(|e| e.path())
        .collect()
}
