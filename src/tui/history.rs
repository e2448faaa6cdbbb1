//! Prompt history: what the user sent in this directory, kept across restarts in
//! `$AGENT_HOME/history/<directory slug>.jsonl` — one JSON string per line, readable by the
//! user only (prompts may hold secrets) — read at start, appended as prompts are sent, and
//! cut back to the newest entries when it grows too long. `search` serves ctrl+r.

use std::io::Write;
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};

/// Entries kept (in memory and, after a trim, on disk).
const KEEP: usize = 1_000;
/// The file is cut back to `KEEP` entries once it holds this many lines.
const TRIM_AT: usize = 2 * KEEP;

#[derive(Default)]
pub struct History {
    /// `None`: kept in memory only (no home directory to write to).
    path: Option<PathBuf>,
    entries: Vec<String>,
}

impl History {
    /// This directory's history under `home`; a file that cannot be read starts it empty
    /// (with the reason, to tell the user).
    pub fn load(home: &Path, cwd: &Path) -> (History, Option<String>) {
        let root = home.join("history");
        let slug = crate::session::store::dir_for(&root, cwd);
        let name = slug
            .file_name()
            .map(|n| format!("{}.jsonl", n.to_string_lossy()))
            .unwrap_or_else(|| "history.jsonl".to_string());
        let path = root.join(name);
        let mut history = History {
            path: Some(path.clone()),
            entries: Vec::new(),
        };
        let text = match std::fs::read_to_string(&path) {
            Ok(text) => text,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return (history, None),
            Err(e) => {
                return (
                    history,
                    Some(format!(
                        "Prompt history {} could not be read: {e}",
                        path.display()
                    )),
                );
            }
        };
        // A torn last line (a crash mid-write) is skipped like any line that does not parse.
        let lines: Vec<String> = text
            .lines()
            .filter_map(|line| serde_json::from_str::<String>(line).ok())
            .collect();
        let total = text.lines().count();
        history.entries = lines[lines.len().saturating_sub(KEEP)..].to_vec();
        if total >= TRIM_AT {
            history.rewrite();
        }
        (history, None)
    }

    /// A history that is never written (tests, no home).
    pub fn in_memory(entries: Vec<String>) -> History {
        History {
            path: None,
            entries,
        }
    }

    pub fn entries(&self) -> &[String] {
        &self.entries
    }

    pub fn len(&self) -> usize {
        self.entries.len()
    }

    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// Remember a sent prompt (not an empty one, nor the same one twice in a row); `Err`
    /// when it could not be saved (it is still remembered for this run).
    pub fn add(&mut self, text: &str) -> Result<(), String> {
        if text.trim().is_empty() || self.entries.last().is_some_and(|last| last == text) {
            return Ok(());
        }
        self.entries.push(text.to_string());
        if self.entries.len() > KEEP {
            self.entries.remove(0);
        }
        let Some(path) = &self.path else {
            return Ok(());
        };
        let append = || -> std::io::Result<()> {
            if let Some(dir) = path.parent() {
                std::fs::create_dir_all(dir)?;
            }
            let mut file = std::fs::OpenOptions::new()
                .create(true)
                .append(true)
                .mode(0o600)
                .open(path)?;
            let mut line = serde_json::to_string(text).unwrap_or_default();
            line.push('\n');
            // One write: concurrent agents in the same directory never interleave a line.
            file.write_all(line.as_bytes())
        };
        append().map_err(|e| format!("The prompt could not be saved to {}: {e}", path.display()))
    }

    /// The newest entry before `before` that contains `query` (case-insensitive).
    pub fn search(&self, query: &str, before: usize) -> Option<usize> {
        let query = query.to_lowercase();
        self.entries[..before.min(self.entries.len())]
            .iter()
            .rposition(|entry| entry.to_lowercase().contains(&query))
    }

    /// Write the kept entries back (atomically), dropping the older ones.
    fn rewrite(&self) {
        let Some(path) = &self.path else {
            return;
        };
        let Some(dir) = path.parent() else {
            return;
        };
        let result = (|| -> std::io::Result<()> {
            let mut file = tempfile::NamedTempFile::new_in(dir)?;
            for entry in &self.entries {
                let mut line = serde_json::to_string(entry).unwrap_or_default();
                line.push('\n');
                file.write_all(line.as_bytes())?;
            }
            file.persist(path).map_err(|e| e.error)?;
            Ok(())
        })();
        if let Err(e) = result {
            tracing::warn!(error = %e, path = %path.display(), "could not trim the prompt history");
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    #[test]
    fn survives_a_restart_per_directory_and_privately() {
        let home = tempfile::tempdir().unwrap();
        let (mut h, warning) = History::load(home.path(), Path::new("/work/a"));
        assert!(warning.is_none() && h.is_empty());
        h.add("first").unwrap();
        h.add("first").unwrap();
        h.add("multi\nline").unwrap();
        let (h, _) = History::load(home.path(), Path::new("/work/a"));
        assert_eq!(h.entries(), ["first", "multi\nline"]);
        let (other, _) = History::load(home.path(), Path::new("/work/b"));
        assert!(other.is_empty(), "another directory has its own");
        let file = std::fs::read_dir(home.path().join("history"))
            .unwrap()
            .next()
            .unwrap()
            .unwrap()
            .path();
        let mode = std::fs::metadata(&file).unwrap().permissions().mode();
        assert_eq!(mode & 0o777, 0o600);
        // A torn last line is skipped.
        let mut f = std::fs::OpenOptions::new()
            .append(true)
            .open(&file)
            .unwrap();
        f.write_all(b"\"torn").unwrap();
        let (h, _) = History::load(home.path(), Path::new("/work/a"));
        assert_eq!(h.len(), 2);
    }

    #[test]
    fn grows_only_so_far() {
        let home = tempfile::tempdir().unwrap();
        let (mut h, _) = History::load(home.path(), Path::new("/w"));
        for i in 0..TRIM_AT + 5 {
            h.add(&format!("prompt {i}")).unwrap();
        }
        assert_eq!(h.len(), KEEP);
        let (h, _) = History::load(home.path(), Path::new("/w"));
        assert_eq!(h.len(), KEEP);
        assert_eq!(
            h.entries().last().unwrap(),
            &format!("prompt {}", TRIM_AT + 4)
        );
        let file = std::fs::read_dir(home.path().join("history"))
            .unwrap()
            .next()
            .unwrap()
            .unwrap()
            .path();
        assert_eq!(std::fs::read_to_string(file).unwrap().lines().count(), KEEP);
    }

    #[test]
    fn search_finds_the_newest_match_first() {
        let h = History::in_memory(vec![
            "cargo test".into(),
            "git push".into(),
            "cargo build".into(),
        ]);
        assert_eq!(h.search("CARGO", 3), Some(2));
        assert_eq!(h.search("cargo", 2), Some(0));
        assert_eq!(h.search("cargo", 0), None);
        assert_eq!(h.search("nothing", 3), None);
    }
}
