//! What one server knows of our files: the documents open at it (their text and version, as
//! last sent) and the diagnostics it last published for each file, numbered in the order
//! they came so that a wait can tell diagnostics of the current text from older ones.

use lsp_types::{Diagnostic, DiagnosticSeverity};
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::SystemTime;

/// At most this many documents are open at one server; the least recently used is closed.
pub const MAX_OPEN: usize = 64;

/// Diagnostics a server published for one file.
#[derive(Clone, Debug)]
pub struct Published {
    /// The document version they are for, when the server says.
    pub version: Option<i32>,
    pub items: Arc<Vec<Diagnostic>>,
    pub errors: usize,
    pub warnings: usize,
    /// When they came, in the order of everything this server published.
    pub seq: u64,
}

impl Published {
    pub fn new(version: Option<i32>, items: Vec<Diagnostic>, seq: u64) -> Published {
        let count = |wanted: DiagnosticSeverity| {
            items
                .iter()
                .filter(|d| d.severity.unwrap_or(DiagnosticSeverity::ERROR) == wanted)
                .count()
        };
        Published {
            version,
            errors: count(DiagnosticSeverity::ERROR),
            warnings: count(DiagnosticSeverity::WARNING),
            items: Arc::new(items),
            seq,
        }
    }
}

/// An open document: what the server was last told.
#[derive(Clone, Debug)]
pub struct Doc {
    pub version: i32,
    pub text: Arc<str>,
    /// The file's modification time and length when read, to notice changes cheaply.
    pub stamp: Option<(SystemTime, u64)>,
    /// The publication count when the server was last told of this text: unversioned
    /// diagnostics after it are of this text.
    pub synced_seq: u64,
    used: u64,
}

#[derive(Default)]
pub struct Documents {
    open: HashMap<PathBuf, Doc>,
    diagnostics: HashMap<PathBuf, Published>,
    seq: u64,
    clock: u64,
}

/// What telling the server about a file's text came to.
#[derive(Clone, Debug)]
pub enum Sync {
    /// Not open before: open it with this version.
    Open(i32),
    /// Open with other text: change to this version.
    Change(i32),
    /// Open with this very text.
    Same(i32),
}

impl Documents {
    pub fn get(&self, path: &Path) -> Option<&Doc> {
        self.open.get(path)
    }

    pub fn is_open(&self, path: &Path) -> bool {
        self.open.contains_key(path)
    }

    /// The open documents and their stamps.
    pub fn open_files(&self) -> Vec<(PathBuf, Option<(SystemTime, u64)>)> {
        self.open
            .iter()
            .map(|(path, doc)| (path.clone(), doc.stamp))
            .collect()
    }

    /// Record `text` as the server's view of `path`; what to tell it, and the document to
    /// close to stay within `MAX_OPEN`.
    pub fn record(
        &mut self,
        path: &Path,
        text: Arc<str>,
        stamp: Option<(SystemTime, u64)>,
    ) -> (Sync, Option<PathBuf>) {
        self.clock += 1;
        let (clock, seq) = (self.clock, self.seq);
        if let Some(doc) = self.open.get_mut(path) {
            doc.used = clock;
            doc.stamp = stamp;
            if *doc.text == *text {
                return (Sync::Same(doc.version), None);
            }
            doc.version = doc.version.saturating_add(1);
            doc.text = text;
            doc.synced_seq = seq;
            return (Sync::Change(doc.version), None);
        }
        let evicted = if self.open.len() >= MAX_OPEN {
            let oldest = self
                .open
                .iter()
                .min_by_key(|(_, doc)| doc.used)
                .map(|(path, _)| path.clone());
            if let Some(oldest) = &oldest {
                self.open.remove(oldest);
            }
            oldest
        } else {
            None
        };
        self.open.insert(
            path.to_path_buf(),
            Doc {
                version: 1,
                text,
                stamp,
                synced_seq: seq,
                used: clock,
            },
        );
        (Sync::Open(1), evicted)
    }

    /// The server published `items` for `path`.
    pub fn publish(&mut self, path: PathBuf, version: Option<i32>, items: Vec<Diagnostic>) {
        self.seq += 1;
        let published = Published::new(version, items, self.seq);
        if published.items.is_empty() && !self.open.contains_key(&path) {
            self.diagnostics.remove(&path);
        } else {
            self.diagnostics.insert(path, published);
        }
    }

    pub fn diagnostics(&self, path: &Path) -> Option<&Published> {
        self.diagnostics.get(path)
    }

    /// The diagnostics of `path` if they are of the text the server has now.
    pub fn current(&self, path: &Path) -> Option<&Published> {
        let doc = self.open.get(path)?;
        let published = self.diagnostics.get(path)?;
        let fits = match published.version {
            Some(version) => version == doc.version,
            None => published.seq > doc.synced_seq,
        };
        fits.then_some(published)
    }

    /// Errors and warnings over every file.
    pub fn totals(&self) -> (usize, usize) {
        self.diagnostics
            .values()
            .fold((0, 0), |(e, w), p| (e + p.errors, w + p.warnings))
    }

    /// Forget one file (it is gone); whether it was open.
    pub fn forget(&mut self, path: &Path) -> bool {
        self.diagnostics.remove(path);
        self.open.remove(path).is_some()
    }

    /// Forget everything (the server is gone).
    pub fn clear(&mut self) {
        self.open.clear();
        self.diagnostics.clear();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn diagnostic(severity: DiagnosticSeverity) -> Diagnostic {
        Diagnostic {
            severity: Some(severity),
            message: "m".into(),
            ..Diagnostic::default()
        }
    }

    #[test]
    fn versions_follow_the_text_and_diagnostics_their_version() {
        let mut docs = Documents::default();
        let path = Path::new("/a.py");
        assert!(matches!(
            docs.record(path, "a".into(), None).0,
            Sync::Open(1)
        ));
        assert!(matches!(
            docs.record(path, "a".into(), None).0,
            Sync::Same(1)
        ));
        docs.publish(
            path.into(),
            Some(1),
            vec![diagnostic(DiagnosticSeverity::ERROR)],
        );
        assert_eq!(docs.current(path).unwrap().errors, 1);
        assert!(matches!(
            docs.record(path, "b".into(), None).0,
            Sync::Change(2)
        ));
        assert!(
            docs.current(path).is_none(),
            "version 1's diagnostics are old"
        );
        docs.publish(
            path.into(),
            Some(2),
            vec![diagnostic(DiagnosticSeverity::WARNING)],
        );
        assert_eq!(docs.current(path).unwrap().warnings, 1);
        assert_eq!(docs.totals(), (0, 1));
        // Unversioned diagnostics count when they came after the text was sent.
        assert!(matches!(
            docs.record(path, "c".into(), None).0,
            Sync::Change(3)
        ));
        assert!(docs.current(path).is_none());
        docs.publish(path.into(), None, vec![]);
        assert_eq!(docs.current(path).unwrap().errors, 0);
    }

    #[test]
    fn the_least_recently_used_document_is_closed() {
        let mut docs = Documents::default();
        for i in 0..MAX_OPEN {
            docs.record(&PathBuf::from(format!("/{i}")), "x".into(), None);
        }
        docs.record(Path::new("/0"), "x".into(), None);
        let (_, evicted) = docs.record(Path::new("/new"), "x".into(), None);
        assert_eq!(evicted, Some(PathBuf::from("/1")));
        assert!(docs.is_open(Path::new("/0")));
    }
}
