//! `/diff`: everything this session changed in the working tree, file by file, shown in the
//! diff view (`views::diff`, the transcript view's pager) (coloured unified diffs, a header per file with its
//! counts). The changes come from the checkpoints (the session's first one is the
//! baseline); only when checkpoints are off, from `git diff` against a snapshot of the
//! working tree taken when the TUI started (`git stash create`, which changes nothing).

use super::app::{App, TaskResult};
use super::transcript::{Entry, Log};
use crate::checkpoint::{ChangeKind, FileChange};
use crate::sandbox::own_git::{self, Repository};
use std::path::{Path, PathBuf};

/// The git state at start, when checkpoints are off: a commit, or why there is none.
pub type GitBaseline = Result<Baseline, String>;

/// A snapshot of the working tree's tracked files, and the repository it is in (found at
/// start: a repository a command plants later is never the one diffed).
#[derive(Clone, Debug)]
pub struct Baseline {
    pub commit: String,
    pub repository: Repository,
}

/// Snapshot the working tree with git now (checkpoints are off), for a later `/diff`.
/// Awaited before the first prompt can run, so no change of the session slips in first.
/// The agent's git never runs what a sandboxed command could have planted (`own_git`).
pub async fn git_baseline_now(cwd: &Path) -> GitBaseline {
    let repository = own_git::find(cwd)
        .await
        .map_err(|_| "this directory is not in a git repository".to_string())?;
    let stash = own_git::run(&repository, &["stash", "create"]).await?;
    let commit = if stash.is_empty() {
        own_git::run(&repository, &["rev-parse", "HEAD"]).await?
    } else {
        stash
    };
    Ok(Baseline { commit, repository })
}

/// `git diff <baseline>` split per file, with its counts.
pub async fn git_changes(baseline: &Baseline) -> Result<Vec<FileChange>, String> {
    let diff = own_git::run(
        &baseline.repository,
        &[
            "-c",
            "core.quotePath=false",
            "diff",
            "--no-color",
            "--no-ext-diff",
            "--no-textconv",
            "--ignore-submodules=all",
            &baseline.commit,
        ],
    )
    .await?;
    Ok(split_git_diff(&diff))
}

/// One `FileChange` per `diff --git` section of `diff`.
fn split_git_diff(diff: &str) -> Vec<FileChange> {
    let mut sections: Vec<Vec<&str>> = Vec::new();
    for line in diff.lines() {
        if line.starts_with("diff --git ") || sections.is_empty() {
            sections.push(Vec::new());
        }
        if let Some(section) = sections.last_mut() {
            section.push(line);
        }
    }
    sections
        .into_iter()
        .filter_map(|lines| {
            let header = lines.first()?.strip_prefix("diff --git a/")?;
            let path = header.split(" b/").next().unwrap_or(header);
            let kind = if lines.iter().any(|l| l.starts_with("new file mode")) {
                ChangeKind::Added
            } else if lines.iter().any(|l| l.starts_with("deleted file mode")) {
                ChangeKind::Removed
            } else {
                ChangeKind::Modified
            };
            let body: Vec<&str> = lines
                .iter()
                .skip_while(|l| !l.starts_with("@@"))
                .copied()
                .collect();
            let added = body.iter().filter(|l| l.starts_with('+')).count();
            let removed = body.iter().filter(|l| l.starts_with('-')).count();
            let binary = lines.iter().any(|l| l.starts_with("Binary files"));
            Some(FileChange {
                path: PathBuf::from(path),
                kind,
                diff: (!body.is_empty()).then(|| body.join("\n")),
                note: binary.then(|| "binary file".to_string()),
                added,
                removed,
            })
        })
        .collect()
}

impl App {
    pub fn diff_command(&mut self) {
        let agent = self.agent.clone();
        let baseline = self.views.git_baseline.clone();
        let tasks = self.tasks.clone();
        crate::tasks::spawn(async move {
            let result = match agent.session_changes().await {
                Ok(Some(changes)) => Ok(changes),
                Ok(None) => from_git(baseline).await,
                Err(error) => Err(format!("The changes could not be read: {error}")),
            };
            let _ = tasks.send(TaskResult::Diff(result));
        });
    }

    /// The changes are read: show them in the view, or say there are none.
    pub fn show_diff(&mut self, result: Result<Vec<FileChange>, String>) {
        let changes = match result {
            Ok(changes) => changes,
            Err(error) => return self.warning(&error),
        };
        if changes.is_empty() {
            return self.notice("No changes: this session has not changed the working tree.");
        }
        let mut log = Log::default();
        let (added, removed) = changes
            .iter()
            .fold((0, 0), |(a, r), c| (a + c.added, r + c.removed));
        log.push(Entry::Notice(format!(
            "{} changed this session, +{added} -{removed}",
            super::cells::counted(changes.len(), "file")
        )));
        for change in changes {
            log.push(Entry::FileChange(change));
        }
        self.views.close_full_screen();
        self.views
            .push(Box::new(super::views::diff::DiffView::new(log)));
        self.dirty = true;
    }
}

async fn from_git(baseline: Option<GitBaseline>) -> Result<Vec<FileChange>, String> {
    let off = "Checkpoints are off ([checkpoints] enabled = false)";
    match baseline {
        Some(Ok(baseline)) => git_changes(&baseline)
            .await
            .map_err(|e| format!("{off}; git diff failed: {e}")),
        Some(Err(why)) => Err(format!("{off}, and {why}: nothing to compare with.")),
        None => Err(format!(
            "{off}, and there is no record of the files at the start."
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn git_diff_is_split_per_file_with_counts() {
        let diff = "diff --git a/src/a.rs b/src/a.rs\nindex 1..2 100644\n--- a/src/a.rs\n+++ b/src/a.rs\n@@ -1,2 +1,2 @@\n-old\n+new\n+more\n ctx\ndiff --git a/gone.txt b/gone.txt\ndeleted file mode 100644\n--- a/gone.txt\n+++ /dev/null\n@@ -1 +0,0 @@\n-bye\ndiff --git a/img.png b/img.png\nnew file mode 100644\nBinary files /dev/null and b/img.png differ";
        let changes = split_git_diff(diff);
        assert_eq!(changes.len(), 3);
        assert_eq!(changes[0].path, PathBuf::from("src/a.rs"));
        assert_eq!((changes[0].added, changes[0].removed), (2, 1));
        assert_eq!(changes[0].kind, ChangeKind::Modified);
        assert_eq!(changes[1].kind, ChangeKind::Removed);
        assert_eq!((changes[1].added, changes[1].removed), (0, 1));
        assert_eq!(changes[2].kind, ChangeKind::Added);
        assert_eq!(changes[2].note.as_deref(), Some("binary file"));
        assert!(changes[2].diff.is_none());
    }
}
