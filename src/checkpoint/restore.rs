//! Bringing a working tree back to a recorded state: what to write, chmod, create and
//! remove (`plan`), and doing it (`apply`). Every file is replaced atomically — its new
//! content goes to a temporary file in the same directory, which is renamed over it — so a
//! crash or SIGKILL leaves each file either as it was or as restored, never torn. Only
//! paths the checkpoints cover are touched: ignored files, `.git`, and anything whose
//! content the checkpoints do not hold (over the size cap, unreadable) stay as they are and
//! are reported.

use super::error::CheckpointError;
use super::scan::Skipped;
use super::store::Store;
use super::tree::{Entry, Flat, Kind};
use serde::Serialize;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Action {
    /// Write a file's or link's content (and mode) over whatever is there.
    Write(PathBuf, Entry),
    Chmod(PathBuf, u32),
    MakeDir(PathBuf, u32),
    /// Remove a file or link.
    Remove(PathBuf),
    /// Remove a directory once it is empty (left in place when it is not).
    RemoveDir(PathBuf),
}

impl Action {
    pub fn path(&self) -> &Path {
        match self {
            Action::Write(path, _)
            | Action::Chmod(path, _)
            | Action::MakeDir(path, _)
            | Action::Remove(path)
            | Action::RemoveDir(path) => path,
        }
    }
}

#[derive(Debug, Default)]
pub struct Plan {
    pub actions: Vec<Action>,
    /// Differences the restore leaves alone, and why.
    pub left: Vec<Skipped>,
}

/// What a restore did.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct Summary {
    /// Files brought back: modified ones rewritten, deleted ones recreated, modes reset.
    pub restored: Vec<String>,
    /// Files (and emptied directories) the checkpoint did not have, removed.
    pub removed: Vec<String>,
    /// What was left as it is, and why.
    #[serde(rename = "notRestored")]
    pub not_restored: Vec<Skipped>,
}

impl Summary {
    /// "3 restored, 1 removed" (and what was left alone).
    pub fn describe(&self) -> String {
        crate::protocol::outcome::restore_counts(
            self.restored.len(),
            self.removed.len(),
            self.not_restored.len(),
        )
    }
}

/// How the temporary files a restore writes beside the files it replaces are named.
pub const RESTORE_TEMP_PREFIX: &str = ".agent-restore-";

fn shown(path: &Path) -> String {
    path.to_string_lossy().into_owned()
}

/// What turns the tree `current` (just recorded, complete or not) into `target`.
pub fn plan(cwd: &Path, target: &Flat, target_complete: bool, current: &Flat) -> Plan {
    let mut plan = Plan::default();
    let leave = |plan: &mut Plan, path: &Path, reason: &str| {
        plan.left.push(Skipped {
            path: shown(path),
            reason: reason.to_string(),
        })
    };
    for (path, wanted) in target {
        let now = current.get(path);
        if !wanted.kind.covered() {
            if now.is_none_or(|now| !now.same_stat(wanted)) {
                leave(
                    &mut plan,
                    path,
                    match wanted.kind {
                        Kind::TooLarge => {
                            "over max_file_bytes when the checkpoint was taken, so its content was not kept"
                        }
                        _ => "could not be read when the checkpoint was taken",
                    },
                );
            }
            continue;
        }
        match now {
            Some(now) if now.kind == Kind::Dir && wanted.kind == Kind::Dir => {
                if now.mode != wanted.mode {
                    plan.actions.push(Action::Chmod(path.clone(), wanted.mode));
                }
            }
            Some(now) if now.same_content(wanted) => {}
            Some(now) if !now.kind.covered() => leave(
                &mut plan,
                path,
                "its current content is not covered (too large or unreadable), so replacing it could not be undone",
            ),
            Some(now) if now.kind == wanted.kind && now.hash == wanted.hash => {
                plan.actions.push(Action::Chmod(path.clone(), wanted.mode));
            }
            Some(now) => {
                // A directory where a file was (or the reverse): its contents go first
                // (they are not in `target`, so they are removed below).
                if now.kind == Kind::Dir {
                    plan.actions.push(Action::RemoveDir(path.clone()));
                } else if wanted.kind == Kind::Dir {
                    plan.actions.push(Action::Remove(path.clone()));
                }
                plan.actions.push(create(path, wanted));
            }
            None => {
                if std::fs::symlink_metadata(cwd.join(path)).is_ok() {
                    leave(
                        &mut plan,
                        path,
                        "it exists but is not covered now (ignored, or past max_files), so it is not replaced",
                    );
                } else {
                    plan.actions.push(create(path, wanted));
                }
            }
        }
    }
    for (path, now) in current {
        if target.contains_key(path) {
            continue;
        }
        if !now.kind.covered() {
            leave(
                &mut plan,
                path,
                "created since the checkpoint, but its content is not covered, so removing it could not be undone",
            );
        } else if !target_complete {
            leave(
                &mut plan,
                path,
                "the checkpoint stopped at max_files, so it cannot tell whether this file existed",
            );
        } else if now.kind == Kind::Dir {
            plan.actions.push(Action::RemoveDir(path.clone()));
        } else {
            plan.actions.push(Action::Remove(path.clone()));
        }
    }
    plan
}

fn create(path: &Path, wanted: &Entry) -> Action {
    if wanted.kind == Kind::Dir {
        Action::MakeDir(path.to_path_buf(), wanted.mode)
    } else {
        Action::Write(path.to_path_buf(), wanted.clone())
    }
}

/// Carry out `plan` under `cwd`. Failures of single paths are reported in the summary
/// (the rest goes on); the store failing stops it.
pub fn apply(store: &Store, cwd: &Path, plan: Plan) -> Result<Summary, CheckpointError> {
    let mut summary = Summary {
        not_restored: plan.left,
        ..Summary::default()
    };
    let depth = |path: &Path| path.components().count();
    let mut removals: Vec<&PathBuf> = Vec::new();
    let mut dir_removals: Vec<&PathBuf> = Vec::new();
    let mut dirs: Vec<(&PathBuf, u32)> = Vec::new();
    let mut writes: Vec<(&PathBuf, &Entry)> = Vec::new();
    let mut chmods: Vec<(&PathBuf, u32)> = Vec::new();
    for action in &plan.actions {
        match action {
            Action::Remove(path) => removals.push(path),
            Action::RemoveDir(path) => dir_removals.push(path),
            Action::MakeDir(path, mode) => dirs.push((path, *mode)),
            Action::Write(path, entry) => writes.push((path, entry)),
            Action::Chmod(path, mode) => chmods.push((path, *mode)),
        }
    }
    let failed = |summary: &mut Summary, path: &Path, error: String| {
        summary.not_restored.push(Skipped {
            path: shown(path),
            reason: error,
        })
    };
    for path in removals {
        match std::fs::remove_file(cwd.join(path)) {
            Ok(()) => summary.removed.push(shown(path)),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(e) => failed(&mut summary, path, format!("could not be removed: {e}")),
        }
    }
    dir_removals.sort_by_key(|p| std::cmp::Reverse(depth(p)));
    for path in dir_removals {
        match std::fs::remove_dir(cwd.join(path)) {
            Ok(()) => summary.removed.push(format!("{}/", shown(path))),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(e) => failed(
                &mut summary,
                path,
                format!("directory kept: {e} (it holds files the checkpoints do not cover)"),
            ),
        }
    }
    dirs.sort_by_key(|(p, _)| depth(p));
    for (path, mode) in dirs {
        let full = cwd.join(path);
        let made = std::fs::create_dir(&full)
            .and_then(|()| std::fs::set_permissions(&full, std::fs::Permissions::from_mode(mode)));
        match made {
            Ok(()) => summary.restored.push(format!("{}/", shown(path))),
            Err(e) => failed(&mut summary, path, format!("could not be created: {e}")),
        }
    }
    for (path, entry) in writes {
        match write_atomically(store, &cwd.join(path), entry) {
            Ok(()) => summary.restored.push(shown(path)),
            Err(CheckpointError::Workspace { source, .. }) => failed(
                &mut summary,
                path,
                format!("could not be written: {source}"),
            ),
            Err(CheckpointError::Damaged(hash)) => failed(
                &mut summary,
                path,
                format!("its stored copy ({hash}) is damaged, so it was left as it is"),
            ),
            Err(error) => return Err(error),
        }
    }
    // Directory modes last: a directory made read-only must not stop the writes into it.
    chmods.sort_by_key(|(p, _)| std::cmp::Reverse(depth(p)));
    for (path, mode) in chmods {
        match std::fs::set_permissions(cwd.join(path), std::fs::Permissions::from_mode(mode)) {
            Ok(()) => summary.restored.push(shown(path)),
            Err(e) => failed(&mut summary, path, format!("mode not restored: {e}")),
        }
    }
    summary.restored.sort();
    summary.restored.dedup();
    summary.removed.sort();
    Ok(summary)
}

/// Put `entry` at `path` all at once: a temporary file (or link) beside it, renamed over
/// it. Missing parent directories are created.
fn write_atomically(store: &Store, path: &Path, entry: &Entry) -> Result<(), CheckpointError> {
    let workspace = |e: std::io::Error| CheckpointError::Workspace {
        path: path.to_path_buf(),
        source: e,
    };
    let hash = entry
        .hash
        .as_deref()
        .ok_or_else(|| CheckpointError::Damaged("(none)".to_string()))?;
    let parent = path
        .parent()
        .filter(|p| !p.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    std::fs::create_dir_all(parent).map_err(workspace)?;
    if entry.kind == Kind::Symlink {
        let target = store.get(hash)?;
        let temp = parent.join(format!("{RESTORE_TEMP_PREFIX}{:016x}", fastrand::u64(..)));
        std::os::unix::fs::symlink(std::ffi::OsStr::from_bytes(&target), &temp)
            .map_err(workspace)?;
        return std::fs::rename(&temp, path).map_err(|e| {
            let _ = std::fs::remove_file(&temp);
            workspace(e)
        });
    }
    let mut temp = tempfile::Builder::new()
        .prefix(RESTORE_TEMP_PREFIX)
        .tempfile_in(parent)
        .map_err(workspace)?;
    store.copy_to(hash, &mut temp)?;
    let file = temp.as_file();
    file.set_permissions(std::fs::Permissions::from_mode(entry.mode))
        .map_err(workspace)?;
    file.sync_data().map_err(workspace)?;
    temp.persist(path).map_err(|e| workspace(e.error))?;
    Ok(())
}
