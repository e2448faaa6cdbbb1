//! A restore that did not finish: the agent was killed part way through (or the store
//! failed under it). Its log then ends with the `undo` record of a file restore and no
//! record after it, and the working tree is part old, part restored, with the restore's
//! temporary files (`.agent-restore-…`) beside the files it was writing. The next
//! checkpoint operation (the first one after a restart) rolls it back: the temporary files
//! are removed and the files the restore was changing get back the state its `undo` record
//! holds — the state before the rewind, which is where the conversation still is (a rewind
//! moves the conversation only after its files are restored). A `rolled_back` record then
//! marks the restore as never done: the agent made that change, so the next rewind needs
//! no `force`, and "undo last rewind" skips it.

use super::log::{self, Moment, Record};
use super::restore::{self, Action, RESTORE_TEMP_PREFIX};
use super::{CheckpointError, Checkpoints, Current, tree};
use std::collections::HashSet;
use std::path::{Path, PathBuf};

/// Whether `records` end with a file restore that has no record after it.
pub(super) fn pending(records: &[Record]) -> Option<&Record> {
    records.last().filter(|last| {
        last.moment == Moment::Undo
            && last
                .rewind
                .as_ref()
                .is_some_and(|note| note.target.is_some())
    })
}

/// Whether `path` is one of a restore's temporary files.
fn restore_temp(path: &Path) -> bool {
    path.file_name()
        .is_some_and(|name| name.to_string_lossy().starts_with(RESTORE_TEMP_PREFIX))
}

impl Checkpoints {
    /// Roll back the session's interrupted restore, if there is one (see the module's
    /// comment). A failure is logged and left for the next operation to try again: it
    /// must not stop the checkpoint that asked (a rewind then still finds the files
    /// changed, and says so).
    pub(super) fn finish_interrupted(&self, current: &mut Current) {
        let Some(undo) = pending(&current.records).cloned() else {
            return;
        };
        match self.roll_back(current, &undo) {
            Ok(summary) => tracing::warn!(
                undo = %undo.id,
                summary = %summary.describe(),
                "an interrupted restore was rolled back"
            ),
            Err(error) => {
                tracing::warn!(%error, undo = %undo.id, "an interrupted restore could not be rolled back")
            }
        }
    }

    fn roll_back(
        &self,
        current: &mut Current,
        undo: &Record,
    ) -> Result<restore::Summary, CheckpointError> {
        let before = tree::flatten(&self.store, &undo.root)?;
        // What the restore was changing: the paths its plan touched. Anything else that
        // differs now was changed by someone else, and stays as it is.
        let target = undo
            .rewind
            .as_ref()
            .and_then(|note| note.target.as_deref())
            .and_then(|id| current.records.iter().find(|r| r.id == id))
            .cloned();
        let touched: Option<HashSet<PathBuf>> = match &target {
            Some(target) => {
                let wanted = tree::flatten(&self.store, &target.root)?;
                let plan = restore::plan(&self.cwd, &wanted, target.complete, &before);
                Some(
                    plan.actions
                        .iter()
                        .map(|a| a.path().to_path_buf())
                        .collect(),
                )
            }
            None => None,
        };
        let now_record = self.scan(current, Moment::RolledBack, undo.entry_id.as_deref(), None)?;
        let now = tree::flatten(&self.store, &now_record.root)?;
        let mut plan = restore::plan(&self.cwd, &before, undo.complete, &now);
        plan.actions.retain(|action| {
            touched
                .as_ref()
                .is_none_or(|touched| touched.contains(action.path()))
                || restore_temp(action.path())
        });
        plan.left.clear();
        for path in now.keys() {
            let removal = Action::Remove(path.clone());
            if restore_temp(path) && !before.contains_key(path) && !plan.actions.contains(&removal)
            {
                plan.actions.push(removal);
            }
        }
        let summary = restore::apply(&self.store, &self.cwd, plan)?;
        let rolled_back = self.scan(current, Moment::RolledBack, undo.entry_id.as_deref(), None)?;
        log::append(&current.log, std::slice::from_ref(&rolled_back))?;
        current.records.push(rolled_back);
        Ok(summary)
    }
}
