//! Deleting saved sessions and collecting what deleted sessions left behind, with the
//! checkpoint data only they used: the one implementation behind `agent sessions rm|gc` and
//! the session picker's delete key. The session side (`session::manage`,
//! `session::orphans`) finds, locks and removes files; the checkpoint side
//! (`checkpoint::gc`) drops logs and sweeps objects; this module orders the two so that a
//! crash at any step leaves only what the next `gc` collects.

use crate::checkpoint::gc::{self, Cleaned};
use crate::session::manage::{Interrupted, Removal};
use crate::session::orphans::{self, Orphans};
use std::path::{Path, PathBuf};
use std::time::Duration;

/// How long a directory beside no session file, or a checkpoint log of no session, must
/// have been left untouched before `gc` takes it: a running agent whose session has no file
/// (`--no-session`, a new session before its first message) may be writing there.
pub const ORPHAN_QUIET: Duration = Duration::from_secs(24 * 60 * 60);

/// What became of the checkpoint data after sessions went.
#[derive(Debug)]
pub enum Freed {
    /// Records dropped and objects no other session uses removed.
    Cleaned(Cleaned),
    /// A running agent was recording: the objects go at the next clean-up.
    Busy,
    /// The store could not be cleaned (why).
    Failed(String),
}

impl Freed {
    /// One line for the user, `None` when there is nothing to say.
    pub fn describe(&self) -> Option<String> {
        match self {
            Freed::Cleaned(cleaned) if cleaned.records + cleaned.objects == 0 => None,
            Freed::Cleaned(cleaned) => Some(format!(
                "Freed {} checkpoint record(s) and {} object(s) no other session uses.",
                cleaned.records, cleaned.objects
            )),
            Freed::Busy => Some(
                "A running agent is using the checkpoint store: the data only these sessions used is freed at the next clean-up."
                    .to_string(),
            ),
            Freed::Failed(why) => Some(format!(
                "the sessions are deleted, but their checkpoint data could not be freed: {why}"
            )),
        }
    }
}

/// Delete one planned removal (`session::manage::plan_removal`): its file, its checkpoint
/// logs, its directories — in that crash-safe order (see `session::manage`). The records
/// its logs held; the objects are swept by `sweep` once every removal is done.
pub fn delete(removal: Removal, checkpoints_dir: &Path) -> Result<usize, String> {
    let mut records = 0;
    let result = removal.execute(|ids| {
        records = gc::drop_logs(checkpoints_dir, ids.iter().copied())?;
        Ok(())
    });
    result.map(|()| records).map_err(describe)
}

/// Sweep the checkpoint objects no remaining log reaches, adding `records` dropped before.
pub fn sweep(checkpoints_dir: &Path, records: usize) -> Freed {
    match gc::collect(checkpoints_dir) {
        Ok(Some(cleaned)) => Freed::Cleaned(Cleaned {
            records: cleaned.records + records,
            ..cleaned
        }),
        Ok(None) => Freed::Busy,
        Err(e) => Freed::Failed(e.to_string()),
    }
}

fn describe(stopped: Interrupted<crate::checkpoint::CheckpointError>) -> String {
    match stopped {
        Interrupted::Session(e) => format!("{e} (`agent sessions gc` finishes the deletion)"),
        Interrupted::Forget(e) => format!(
            "its checkpoint records could not be dropped: {e} (`agent sessions gc` finishes the deletion)"
        ),
    }
}

/// What `gc` found (and, unless it was a dry run, removed).
pub struct Collected {
    /// Deletions that had stopped part way: the ids of the sessions they finish.
    pub finished: Vec<String>,
    /// Directories beside no session file, and the files in them.
    pub dirs: Vec<PathBuf>,
    pub files: Vec<PathBuf>,
    /// Checkpoint logs of no session.
    pub logs: Vec<PathBuf>,
    /// What became of the checkpoint data (`None` for a dry run).
    pub freed: Option<Freed>,
    /// What could not be removed.
    pub failures: Vec<String>,
}

impl Collected {
    /// Whether there was nothing to collect.
    pub fn is_empty(&self) -> bool {
        self.finished.is_empty() && self.dirs.is_empty() && self.logs.is_empty()
    }
}

/// Collect orphans: finish deletions that stopped part way, remove directories beside no
/// session file and the checkpoint logs of no session (those untouched for `quiet`), then
/// sweep the objects nothing reaches. With `dry_run`, only say what would go.
pub fn gc(
    sessions_dir: &Path,
    checkpoints_dir: &Path,
    quiet: Duration,
    dry_run: bool,
) -> Collected {
    let mut found: Orphans = orphans::find(sessions_dir, quiet);
    let quiet_since = std::time::SystemTime::now()
        .checked_sub(quiet)
        .unwrap_or(std::time::UNIX_EPOCH);
    let finishing: Vec<String> = found
        .unfinished
        .iter()
        .flat_map(|r| r.ids().map(String::from).collect::<Vec<_>>())
        .collect();
    // Logs of sessions whose removal this finishes go with that removal.
    let logs: Vec<(String, PathBuf)> = gc::logs(checkpoints_dir)
        .into_iter()
        .filter(|(id, _, modified)| {
            !finishing.contains(id)
                && (found.orphan_ids.contains(id)
                    || (!found.kept_ids.contains(id) && *modified <= quiet_since))
        })
        .map(|(id, path, _)| (id, path))
        .collect();
    let mut collected = Collected {
        finished: found.unfinished.iter().map(|r| r.id.clone()).collect(),
        dirs: found.dirs.clone(),
        files: found.files.clone(),
        logs: logs.iter().map(|(_, path)| path.clone()).collect(),
        freed: None,
        failures: Vec::new(),
    };
    if dry_run {
        return collected;
    }
    let mut records = 0;
    for removal in std::mem::take(&mut found.unfinished) {
        let id = removal.id.clone();
        let result = removal.finish(|ids| {
            records += gc::drop_logs(checkpoints_dir, ids.iter().copied())?;
            Ok(())
        });
        if let Err(stopped) = result {
            collected
                .failures
                .push(format!("session {id}: {}", describe(stopped)));
        }
    }
    if let Err(e) = found.remove_dirs() {
        collected.failures.push(e.to_string());
    }
    match gc::drop_logs(checkpoints_dir, logs.iter().map(|(id, _)| id.as_str())) {
        Ok(dropped) => records += dropped,
        Err(e) => collected.failures.push(e.to_string()),
    }
    collected.freed = Some(sweep(checkpoints_dir, records));
    collected
}
