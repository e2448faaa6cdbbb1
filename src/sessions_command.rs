//! `agent sessions [list] | rename ID TITLE | rm ID… | gc | export ID`: the saved sessions
//! managed from the shell. Listing is the live sessions' business (`live::commands`, which
//! also lists the saved ones); renaming goes through `session::manage` and removing through
//! `housekeeping` (both refused while a running agent holds the session; the session
//! picker uses the same), which also drops the removed sessions' checkpoint records and
//! every object no other session uses, and collects orphans (`gc`). Ids may be prefixes
//! (`session::store::find_by_id`).

use crate::cli::{ExportFormat, SessionsAction, SessionsArgs};
use crate::config::Paths;
use crate::housekeeping::{self, Freed};
use crate::session::SessionError;
use crate::session::manage::{self, Removal};
use crate::session::{export, store, title};
use std::io::{BufRead, IsTerminal, Write};
use std::path::{Path, PathBuf};

/// Run the subcommand; the exit code (0 done, 1 failed, 2 usage).
pub async fn run(paths: &Paths, cwd: &Path, args: &SessionsArgs) -> u8 {
    let list = |list: &crate::cli::SessionsListArgs| {
        crate::live::commands::sessions(paths, cwd, list.live, list.json, list.all)
    };
    let result = match &args.action {
        None => return list(&args.list).await,
        Some(SessionsAction::List(args)) => return list(args).await,
        Some(SessionsAction::Rename { id, title }) => rename(paths, id, &title.join(" ")).await,
        Some(SessionsAction::Rm {
            ids,
            force,
            dry_run,
        }) => remove(paths, ids, *force, *dry_run),
        Some(SessionsAction::Gc { dry_run }) => collect(paths, *dry_run),
        Some(SessionsAction::Export { id, format, output }) => {
            export_session(paths, id, *format, output.as_deref())
        }
    };
    match result {
        Ok(()) => 0,
        Err(Failure { message, code }) => {
            eprintln!("agent: {message}");
            code
        }
    }
}

struct Failure {
    message: String,
    code: u8,
}

impl Failure {
    fn new(message: impl Into<String>) -> Failure {
        Failure {
            message: message.into(),
            code: 1,
        }
    }

    fn usage(message: impl Into<String>) -> Failure {
        Failure {
            message: message.into(),
            code: 2,
        }
    }
}

/// The file of the session `id` names (a prefix is enough).
fn find(paths: &Paths, id: &str) -> Result<PathBuf, Failure> {
    store::find_by_id(&paths.sessions_dir, id).map_err(|e| Failure::new(e.to_string()))
}

fn short_id(path: &Path) -> String {
    store::id_of(path).unwrap_or("?").to_string()
}

async fn rename(paths: &Paths, id: &str, title: &str) -> Result<(), Failure> {
    let path = find(paths, id)?;
    match manage::rename(&path, title).await {
        Ok(title) => {
            println!("Renamed session {} to \"{title}\".", short_id(&path));
            Ok(())
        }
        Err(SessionError::Locked(_)) => Err(Failure::new(format!(
            "session {} is open in a running agent; rename it there with /rename",
            short_id(&path)
        ))),
        Err(SessionError::EmptyTitle) => Err(Failure::usage("a session's title cannot be empty")),
        Err(e) => Err(Failure::new(e.to_string())),
    }
}

fn remove(paths: &Paths, ids: &[String], force: bool, dry_run: bool) -> Result<(), Failure> {
    // Every session is found and locked before anything goes: one that cannot be removed
    // keeps all of them.
    let mut removals: Vec<Removal> = Vec::new();
    for id in ids {
        let path = find(paths, id)?;
        if removals.iter().any(|r| r.file == path) {
            continue;
        }
        let removal = manage::plan_removal(&path).map_err(|e| match e {
            SessionError::Locked(locked) if locked == path => Failure::new(format!(
                "session {} is open in a running agent; quit it first (nothing was deleted)",
                short_id(&path)
            )),
            SessionError::Locked(locked) => Failure::new(format!(
                "session {} has a sub-agent session open in a running agent ({}); quit it first (nothing was deleted)",
                short_id(&path),
                locked.display()
            )),
            e => Failure::new(format!("{e} (nothing was deleted)")),
        })?;
        removals.push(removal);
    }
    let checkpoint_logs = |removal: &Removal| -> Vec<PathBuf> {
        removal
            .ids()
            .map(|id| crate::checkpoint::log::path_for(&paths.checkpoints_dir, id))
            .filter(|log| log.exists())
            .collect()
    };
    let mut out = std::io::stdout().lock();
    for removal in &removals {
        let title = title::describe(&removal.file)
            .ok()
            .and_then(|d| d.title)
            .unwrap_or_else(|| "(no prompt yet)".to_string());
        let verb = if dry_run { "Would delete" } else { "Deleting" };
        let _ = writeln!(out, "{verb} session {}: {title}", removal.id);
        if dry_run {
            for file in removal.files.iter().chain(&checkpoint_logs(removal)) {
                let _ = writeln!(out, "  {}", file.display());
            }
        }
    }
    if dry_run {
        let _ = writeln!(
            out,
            "and the checkpoint objects no other session uses (nothing was deleted: --dry-run)"
        );
        return Ok(());
    }
    drop(out);
    if !force {
        if !std::io::stdin().is_terminal() {
            return Err(Failure::usage(
                "not asking without a terminal: give --force to delete (nothing was deleted)",
            ));
        }
        if !confirm(removals.len())? {
            return Err(Failure::new("nothing was deleted"));
        }
    }
    let mut records = 0;
    let mut failed = None;
    for removal in removals {
        let id = removal.id.clone();
        let files = removal.files.len();
        match housekeeping::delete(removal, &paths.checkpoints_dir) {
            Ok(dropped) => {
                records += dropped;
                println!("Deleted session {id} ({files} file(s)).");
            }
            Err(e) => {
                failed.get_or_insert(Failure::new(format!("session {id}: {e}")));
            }
        }
    }
    let freed = housekeeping::sweep(&paths.checkpoints_dir, records);
    match (&freed, freed.describe()) {
        (Freed::Failed(_), Some(line)) => {
            failed.get_or_insert(Failure::new(line));
        }
        (_, Some(line)) => println!("{line}"),
        (_, None) => {}
    }
    failed.map_or(Ok(()), Err)
}

/// `agent sessions gc [--dry-run]`: collect what deleted sessions left behind.
fn collect(paths: &Paths, dry_run: bool) -> Result<(), Failure> {
    let collected = housekeeping::gc(
        &paths.sessions_dir,
        &paths.checkpoints_dir,
        housekeeping::ORPHAN_QUIET,
        dry_run,
    );
    let verb = if dry_run { "Would remove" } else { "Removed" };
    let mut out = std::io::stdout().lock();
    for id in &collected.finished {
        let _ = writeln!(out, "{verb} the rest of deleted session {id}");
    }
    for dir in &collected.dirs {
        let _ = writeln!(out, "{verb} {} (beside no session file)", dir.display());
    }
    if dry_run {
        for file in collected.files.iter().chain(&collected.logs) {
            let _ = writeln!(out, "  {}", file.display());
        }
    } else if !collected.logs.is_empty() {
        let _ = writeln!(
            out,
            "Removed {} checkpoint log(s) of no session",
            collected.logs.len()
        );
    }
    if collected.is_empty() {
        let _ = writeln!(out, "Nothing left behind by deleted sessions.");
    }
    if dry_run {
        let _ = writeln!(
            out,
            "Checkpoint objects no session uses would be removed too. Nothing was removed \
             (--dry-run)."
        );
        return Ok(());
    }
    match collected.freed.as_ref().and_then(Freed::describe) {
        Some(line) if matches!(collected.freed, Some(Freed::Failed(_))) => {
            return Err(Failure::new(line));
        }
        Some(line) => {
            let _ = writeln!(out, "{line}");
        }
        None => {}
    }
    match collected.failures.first() {
        Some(first) => Err(Failure::new(first.clone())),
        None => Ok(()),
    }
}

/// Ask on the terminal; `true` for yes.
fn confirm(count: usize) -> Result<bool, Failure> {
    let what = if count == 1 {
        "this session".to_string()
    } else {
        format!("these {count} sessions")
    };
    eprint!("Delete {what} for good? [y/N] ");
    let _ = std::io::stderr().flush();
    let mut answer = String::new();
    std::io::stdin()
        .lock()
        .read_line(&mut answer)
        .map_err(|e| Failure::new(format!("cannot read the answer: {e}")))?;
    Ok(matches!(answer.trim(), "y" | "Y" | "yes" | "Yes" | "YES"))
}

fn export_session(
    paths: &Paths,
    id: &str,
    format: Option<ExportFormat>,
    output: Option<&Path>,
) -> Result<(), Failure> {
    let path = find(paths, id)?;
    let format = format
        .or_else(
            || match output?.extension()?.to_str()?.to_ascii_lowercase().as_str() {
                "html" | "htm" => Some(ExportFormat::Html),
                "md" | "markdown" => Some(ExportFormat::Md),
                "jsonl" => Some(ExportFormat::Jsonl),
                _ => None,
            },
        )
        .unwrap_or(ExportFormat::Html);
    let failed = |e: SessionError| Failure::new(e.to_string());
    let bytes = match format {
        ExportFormat::Jsonl => {
            std::fs::read(&path).map_err(|e| Failure::new(format!("{}: {e}", path.display())))?
        }
        ExportFormat::Html | ExportFormat::Md => {
            let header = store::read_header(&path)
                .ok_or_else(|| Failure::new(format!("{}: not a session file", path.display())))?;
            let cwd = PathBuf::from(&header.cwd);
            let source = export::Source {
                id: &header.id,
                cwd: &cwd,
                file: Some(&path),
                context: &[],
            };
            if format == ExportFormat::Html {
                export::html_page(&source).map_err(failed)?.into_bytes()
            } else {
                let title = title::describe(&path).ok().and_then(|d| d.title);
                let heading = export::MarkdownHeading {
                    id: &header.id,
                    title: title.as_deref(),
                    cwd: &header.cwd,
                    created: Some(header.timestamp),
                };
                export::markdown(&source, &heading)
                    .map_err(failed)?
                    .into_bytes()
            }
        }
    };
    match output {
        Some(output) => {
            export::write_replacing(output, &bytes).map_err(failed)?;
            eprintln!("Wrote {}", output.display());
        }
        None => {
            let mut stdout = std::io::stdout().lock();
            stdout
                .write_all(&bytes)
                .and_then(|()| stdout.flush())
                .map_err(|e| Failure::new(format!("cannot write to stdout: {e}")))?;
        }
    }
    Ok(())
}
