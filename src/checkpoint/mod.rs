//! Checkpoints: the state of the working tree recorded before (and after) every mutating
//! tool call, so a rewind can bring the files back whatever changed them — a write, an
//! edit, a shell command. Contents live in a content-addressed store under
//! `$AGENT_HOME/checkpoints/` (`store`, `tree`), never in the workspace's own `.git`; each
//! session has a log of its recorded states (`log`). `scan` records a tree by walking it,
//! reading only files whose size, time or inode changed; while the kernel reports changes
//! (`watch`), `relist` records it from the changed directories alone. `restore` plans and
//! applies a restore, `gc` drops what is older than `keep_days`.
//! Everything here blocks: the engine calls it on a blocking thread.

pub mod changes;
mod error;
pub mod gc;
pub mod index;
mod interrupted;
pub mod log;
mod relist;
pub mod restore;
pub mod scan;
pub mod store;
pub mod tree;
pub mod watch;

pub use changes::{ChangeKind, FileChange};
pub use error::CheckpointError;
pub use log::{Moment, Record, RewindNote};
pub use restore::Summary;
pub use scan::Skipped;

use crate::protocol::message::now_millis;
use index::Index;
use relist::Relisted;
use scan::{Caps, Scan};
use std::fs::File;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Condvar, Mutex, MutexGuard, PoisonError};
use store::Store;
use watch::{Plan, Tracker};

/// `[checkpoints]` in config.toml.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Settings {
    pub enabled: bool,
    pub max_file_bytes: u64,
    pub max_files: usize,
    /// Records (and the objects only they use) older than this are removed.
    pub keep_days: u32,
    /// Walking time after which the working tree is watched instead of walked
    /// (`watch::WATCH_AFTER_WALKING`; not a config key: tests set zero).
    pub watch_after_walking: std::time::Duration,
}

impl Default for Settings {
    fn default() -> Self {
        Settings {
            enabled: true,
            max_file_bytes: 10 * 1024 * 1024,
            max_files: 50_000,
            keep_days: 30,
            watch_after_walking: watch::WATCH_AFTER_WALKING,
        }
    }
}

/// The checkpoints of one working directory, for the current session.
pub struct Checkpoints {
    store: Store,
    cwd: PathBuf,
    caps: Caps,
    exclude: Vec<PathBuf>,
    current: Mutex<Current>,
    /// Records begun (`begin`) and not yet stored.
    gate: Arc<Gate>,
}

/// The records begun and not yet stored: every other use of the checkpoints waits for
/// them, so nothing sees (or adds to) the log without a record the engine has moved past.
#[derive(Default)]
struct Gate {
    begun: Mutex<usize>,
    settled: Condvar,
}

/// A record promised by `Checkpoints::begin`, to be taken by `take_begun` (on another
/// thread). Until it is taken or dropped, every other use of the checkpoints waits.
pub struct Begun {
    gate: Arc<Gate>,
}

impl Drop for Begun {
    fn drop(&mut self) {
        let mut begun = self
            .gate
            .begun
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        *begun = begun.saturating_sub(1);
        if *begun == 0 {
            self.gate.settled.notify_all();
        }
    }
}

struct Current {
    session_id: String,
    log: PathBuf,
    records: Vec<Record>,
    /// The directories of the last recorded state, to skip reading what did not change
    /// and writing the listings of unchanged directories; `None` until it is needed
    /// (built from the last record on disk), and while a scan holds it.
    index: Option<Index>,
    /// The store's clean-up generation the index was built in: a clean-up may remove
    /// objects an old index still names.
    generation: String,
    /// The store's `objects` directory (its inode) when the index was built: the store
    /// removed while the agent runs (`rm -rf ~/.agent/checkpoints`) must not leave the
    /// index naming objects that are gone.
    objects_dir: Option<u64>,
    /// Which directories changed since the last scan, as the kernel reports it.
    tracker: Tracker,
    last_scan: ScanStats,
}

/// How the last checkpoint looked at the working tree.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ScanStats {
    /// The whole tree was walked (not only the directories that changed).
    pub walked: bool,
    /// Directories read.
    pub dirs_listed: usize,
    /// Bytes of files read (new or changed content).
    pub bytes_read: u64,
}

/// Everything `restore` needs to know about what it is asked to do.
pub struct RestoreRequest<'a> {
    /// The record whose state comes back.
    pub target: &'a str,
    /// Restore even over changes made outside the agent.
    pub force: bool,
    /// The session entry the undo record belongs to.
    pub entry_id: Option<String>,
    pub note: RewindNote,
}

impl Checkpoints {
    /// The checkpoints of `cwd` kept under `root` (`$AGENT_HOME/checkpoints`), for session
    /// `session_id`. `exclude`: directories never recorded (the agent's own files).
    /// Nothing is created until the first checkpoint is taken (an error then is the
    /// checkpoint's); a log that cannot be read counts as empty.
    pub fn open(
        root: &Path,
        cwd: &Path,
        settings: &Settings,
        exclude: Vec<PathBuf>,
        session_id: &str,
    ) -> Checkpoints {
        let store = Store::open(root);
        let log = log::path_for(root, session_id);
        let records = read_log(&log);
        let mut exclude = exclude;
        exclude.push(root.to_path_buf());
        Checkpoints {
            store,
            cwd: cwd.to_path_buf(),
            caps: Caps {
                max_file_bytes: settings.max_file_bytes,
                max_files: settings.max_files,
            },
            exclude,
            current: Mutex::new(Current {
                session_id: session_id.to_string(),
                log,
                records,
                index: None,
                generation: String::new(),
                objects_dir: None,
                tracker: Tracker::new(cwd, settings.watch_after_walking),
                last_scan: ScanStats::default(),
            }),
            gate: Arc::default(),
        }
    }

    /// The session's state, once the records begun are stored.
    fn current(&self) -> MutexGuard<'_, Current> {
        self.settle();
        self.current_now()
    }

    fn current_now(&self) -> MutexGuard<'_, Current> {
        self.current.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Promise a record, taken later by `take_begun` (on a blocking thread, while the
    /// engine goes on): from now until it is stored, every other use of these checkpoints
    /// — the next record, a rewind, the list of records — waits for it.
    pub fn begin(&self) -> Begun {
        *self
            .gate
            .begun
            .lock()
            .unwrap_or_else(PoisonError::into_inner) += 1;
        Begun {
            gate: self.gate.clone(),
        }
    }

    /// Whether every record begun is stored (or given up): `settle` would not wait.
    pub fn settled(&self) -> bool {
        *self
            .gate
            .begun
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            == 0
    }

    /// Wait until the records begun are stored (or given up).
    pub fn settle(&self) {
        let mut begun = self
            .gate
            .begun
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        while *begun > 0 {
            begun = self
                .gate
                .settled
                .wait(begun)
                .unwrap_or_else(PoisonError::into_inner);
        }
    }

    pub fn cwd(&self) -> &Path {
        &self.cwd
    }

    pub fn session_id(&self) -> String {
        self.current().session_id.clone()
    }

    /// Follow another session from now on (its records are read from disk).
    pub fn switch_session(&self, session_id: &str) {
        let log = log::path_for(self.store.root(), session_id);
        let records = read_log(&log);
        let mut current = self.current();
        current.session_id = session_id.to_string();
        current.log = log;
        current.records = records;
    }

    /// The session's records, oldest first.
    pub fn records(&self) -> Vec<Record> {
        self.current().records.clone()
    }

    /// Record the working tree now.
    pub fn take(
        &self,
        moment: Moment,
        entry_id: Option<&str>,
        tool_call_id: Option<&str>,
    ) -> Result<Record, CheckpointError> {
        self.settle();
        self.take_now(moment, entry_id, tool_call_id)
    }

    /// Take the record `begun` promised. Records begun later wait for it, not it for them.
    /// The caller drops `begun` once it has done what the outcome asks (a warning when it
    /// failed), so that whatever settles after it (the end of a run) comes after that too.
    pub fn take_begun(
        &self,
        _begun: &Begun,
        moment: Moment,
        entry_id: Option<&str>,
        tool_call_id: Option<&str>,
    ) -> Result<Record, CheckpointError> {
        self.take_now(moment, entry_id, tool_call_id)
    }

    fn take_now(
        &self,
        moment: Moment,
        entry_id: Option<&str>,
        tool_call_id: Option<&str>,
    ) -> Result<Record, CheckpointError> {
        let _lock = self.shared_lock()?;
        let mut current = self.current_now();
        self.finish_interrupted(&mut current);
        let record = self.scan(&mut current, moment, entry_id, tool_call_id)?;
        log::append(&current.log, std::slice::from_ref(&record))?;
        current.records.push(record.clone());
        Ok(record)
    }

    fn scan(
        &self,
        current: &mut Current,
        moment: Moment,
        entry_id: Option<&str>,
        tool_call_id: Option<&str>,
    ) -> Result<Record, CheckpointError> {
        let generation = gc::generation(self.store.root());
        let objects_dir = self.objects_dir();
        if current.generation != generation || current.objects_dir != objects_dir {
            current.index = None;
            current.generation = generation;
            self.store.forget_known();
        }
        if current.index.is_none() {
            current.index = Some(self.index_of_last(&current.records));
            // What changed since that record is unknown.
            current
                .tracker
                .walk_next("the last record was read from disk");
        }
        let previous = current.index.take().unwrap_or_default();
        let (scan, walked) = match current.tracker.plan() {
            Plan::Relist(changed) => {
                let tracker = &mut current.tracker;
                let relisted = relist::relist(
                    &self.store,
                    &self.cwd,
                    &self.exclude,
                    self.caps,
                    previous,
                    &changed,
                    &mut |dir| tracker.watch_new(dir),
                )?;
                match relisted {
                    Relisted::Done(scan) => (scan, false),
                    Relisted::Walk(index, reason) => {
                        tracing::debug!(reason, "checkpoint walks the tree");
                        (self.walk(current, index)?, true)
                    }
                }
            }
            Plan::Walk(reason) => {
                tracing::debug!(reason, "checkpoint walks the tree");
                (self.walk(current, previous)?, true)
            }
        };
        current.objects_dir = self.objects_dir();
        current.last_scan = ScanStats {
            walked,
            dirs_listed: scan.dirs_listed,
            bytes_read: scan.new_bytes,
        };
        current.index = Some(scan.index);
        Ok(Record {
            id: crate::session::new_id(),
            moment,
            entry_id: entry_id.map(String::from),
            tool_call_id: tool_call_id.map(String::from),
            timestamp: now_millis(),
            root: scan.root,
            files: scan.files,
            bytes: scan.bytes,
            new_bytes: scan.new_bytes,
            complete: scan.complete,
            skipped: scan.skipped,
            rewind: None,
        })
    }

    /// The whole tree, walked; what is watched follows what it found.
    fn walk(&self, current: &mut Current, previous: Index) -> Result<Scan, CheckpointError> {
        let started = std::time::Instant::now();
        let scan = scan::scan(&self.store, &self.cwd, &self.exclude, self.caps, previous)?;
        current
            .tracker
            .walked(scan.index.dir_paths(), scan.complete, started.elapsed());
        Ok(scan)
    }

    /// The inode of the store's `objects` directory, if it is there.
    fn objects_dir(&self) -> Option<u64> {
        use std::os::unix::fs::MetadataExt;
        std::fs::metadata(self.store.root().join("objects"))
            .ok()
            .map(|m| m.ino())
    }

    /// How the last checkpoint looked at the working tree.
    pub fn last_scan(&self) -> ScanStats {
        self.current().last_scan
    }

    /// The directories of the session's last record (nothing to reuse when it cannot be
    /// read).
    fn index_of_last(&self, records: &[Record]) -> Index {
        let Some(last) = records.last() else {
            return Index::default();
        };
        Index::read(&self.store, &last.root).unwrap_or_default()
    }

    /// Bring the working tree back to the state of record `request.target`. First the
    /// current state is recorded (an `undo` record: what "undo last rewind" restores);
    /// when a file the restore would change was changed outside the agent since the
    /// target was recorded, nothing is changed and `ChangedOutside` names the files,
    /// unless `force`.
    pub fn restore(&self, request: RestoreRequest<'_>) -> Result<Summary, CheckpointError> {
        // Wait for a record being stored before taking the file lock it needs too.
        self.settle();
        let _lock = self.shared_lock()?;
        let mut current = self.current();
        self.finish_interrupted(&mut current);
        let position = current
            .records
            .iter()
            .position(|r| r.id == request.target)
            .ok_or_else(|| CheckpointError::NotFound(request.target.to_string()))?;
        let target = current.records[position].clone();
        let mut undo = self.scan(
            &mut current,
            Moment::Undo,
            request.entry_id.as_deref(),
            None,
        )?;
        undo.rewind = Some(request.note);
        let wanted = tree::flatten(&self.store, &target.root)?;
        let now = tree::flatten(&self.store, &undo.root)?;
        let plan = restore::plan(&self.cwd, &wanted, target.complete, &now);
        if !request.force {
            let touched: std::collections::HashSet<&Path> =
                plan.actions.iter().map(|a| a.path()).collect();
            let mut since: Vec<&Record> = current.records[position..].iter().collect();
            since.push(&undo);
            let mut conflicts = std::collections::BTreeSet::new();
            for pair in since.windows(2) {
                let (a, b) = (pair[0], pair[1]);
                if made_by_agent(a, b) || a.root == b.root {
                    continue;
                }
                for path in tree::changed_paths(&self.store, &a.root, &b.root)? {
                    if touched.contains(path.as_path()) {
                        conflicts.insert(path.to_string_lossy().into_owned());
                    }
                }
            }
            if !conflicts.is_empty() {
                return Err(CheckpointError::ChangedOutside(
                    conflicts.into_iter().collect(),
                ));
            }
        }
        log::append(&current.log, std::slice::from_ref(&undo))?;
        current.records.push(undo);
        let summary = match restore::apply(&self.store, &self.cwd, plan) {
            Ok(summary) => summary,
            Err(error) => {
                // Stopped part way: put back what it changed, as after a crash.
                self.finish_interrupted(&mut current);
                return Err(error);
            }
        };
        let restored = self.scan(
            &mut current,
            Moment::Restored,
            request.entry_id.as_deref(),
            None,
        )?;
        log::append(&current.log, std::slice::from_ref(&restored))?;
        current.records.push(restored);
        Ok(summary)
    }

    /// Note a rewind that changed no files (the conversation only), so it can be undone.
    pub fn note_rewind(
        &self,
        entry_id: Option<&str>,
        note: RewindNote,
    ) -> Result<(), CheckpointError> {
        self.settle();
        let _lock = self.shared_lock()?;
        let mut current = self.current();
        self.finish_interrupted(&mut current);
        let mut record = self.scan(&mut current, Moment::Undo, entry_id, None)?;
        record.rewind = Some(note);
        log::append(&current.log, std::slice::from_ref(&record))?;
        current.records.push(record);
        Ok(())
    }

    /// What changed in the working tree since the session's first checkpoint (`/diff`),
    /// file by file; nothing when the session has none (no tool changed anything). The
    /// working tree is scanned now but not recorded.
    pub fn changes_since_start(&self) -> Result<Vec<FileChange>, CheckpointError> {
        self.settle();
        let _lock = self.shared_lock()?;
        let mut current = self.current();
        self.finish_interrupted(&mut current);
        let Some(first) = current.records.first().cloned() else {
            return Ok(Vec::new());
        };
        let now = self.scan(&mut current, Moment::After, None, None)?;
        changes::between(&self.store, &first.root, &now.root)
    }

    /// The record "undo last rewind" goes back to, if there is one (a restore that was
    /// interrupted never happened, so it is not one).
    pub fn last_undo(&self) -> Option<Record> {
        let current = self.current();
        let records = &current.records;
        let pending = interrupted::pending(records).map(|r| r.id.as_str());
        records
            .iter()
            .enumerate()
            .rev()
            .find(|(i, r)| {
                r.moment == Moment::Undo
                    && Some(r.id.as_str()) != pending
                    && records
                        .get(i + 1)
                        .is_none_or(|next| next.moment != Moment::RolledBack)
            })
            .map(|(_, r)| r.clone())
    }

    /// Start session `session_id`'s log with this session's records that `keep` picks
    /// (a fork keeps the checkpoints of the history it copies).
    pub fn copy_records(
        &self,
        session_id: &str,
        keep: impl Fn(&Record) -> bool,
    ) -> Result<(), CheckpointError> {
        let records: Vec<Record> = self
            .current()
            .records
            .iter()
            .filter(|r| keep(r))
            .cloned()
            .collect();
        if records.is_empty() {
            return Ok(());
        }
        log::append(&log::path_for(self.store.root(), session_id), &records)
    }

    /// Shared while recording or restoring; a clean-up takes it exclusively, so it never
    /// removes an object a checkpoint being written is about to name.
    fn shared_lock(&self) -> Result<File, CheckpointError> {
        store::private_dir(self.store.root())
            .map_err(|e| CheckpointError::store(self.store.root(), e))?;
        let path = gc::lock_path(self.store.root());
        let file = File::options()
            .create(true)
            .truncate(false)
            .write(true)
            .open(&path)
            .map_err(|e| CheckpointError::store(&path, e))?;
        file.lock_shared()
            .map_err(|e| CheckpointError::store(&path, e))?;
        Ok(file)
    }
}

fn read_log(path: &Path) -> Vec<Record> {
    log::read(path).unwrap_or_else(|error| {
        tracing::warn!(%error, "checkpoint log not readable; starting it over");
        Vec::new()
    })
}

/// Whether the agent itself went from state `a` to state `b` (a tool call, a restore).
fn made_by_agent(a: &Record, b: &Record) -> bool {
    match (a.moment, b.moment) {
        (Moment::Before, Moment::After) => a.tool_call_id == b.tool_call_id,
        (Moment::Undo, Moment::Restored | Moment::RolledBack) => true,
        _ => false,
    }
}
