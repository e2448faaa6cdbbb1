//! The older part of a very long context, held as places in the session file instead of
//! as messages (issue 32). A session that was never compacted can hold far more than any
//! model's window: it is compacted (or cut) before its next request, and until then
//! nothing needs its older messages as values. Opening it therefore parses only its
//! newest part (`HOT_BYTES`, from a user message on) and keeps, for every older message
//! of the branch, its entry id, where its line starts and how long it is; the messages
//! are read back from the file when something needs them (a compaction, a request that
//! sends them, `get_messages`, the transcript view), in file order, one line at a time.
//!
//! The session file is append-only and locked by this process while it is open, so the
//! lines stay where they were found. A line that no longer parses is an error, never a
//! silent gap.

use super::format::Entry;
use super::index::for_each_line;
use crate::protocol::message::Message;
use std::fs::File;
use std::ops::Range;
use std::path::Path;
use std::sync::Arc;

/// A context whose lines take more than this is opened with a cold part…
pub const COLD_ABOVE_BYTES: u64 = 16 * 1024 * 1024;
/// …and only about this many bytes of its newest lines parsed (moved back to a user
/// message, so no tool call is separated from its result).
pub const HOT_BYTES: u64 = 4 * 1024 * 1024;

/// One message of the cold part.
#[derive(Clone, Debug)]
pub struct ColdEntry {
    pub id: String,
    /// Where its line starts in the session file, and its length in bytes.
    pub offset: u64,
    pub bytes: u64,
    /// A user message (known from the line's first bytes).
    pub user: bool,
}

/// The messages before the parsed part of a context, as places in the session file.
/// Cheap to clone: clones share the places (an engine's context, the transcript view's
/// earlier part and the usage count each hold one).
#[derive(Clone, Debug)]
pub struct ColdPart {
    path: Arc<Path>,
    all: Arc<[ColdEntry]>,
    /// The part of `all` this one covers (a rewind or a read-back shortens it).
    range: Range<usize>,
    bytes: u64,
}

impl ColdPart {
    /// `entries` must be in file order (as the branch is).
    pub fn new(path: &Path, entries: Vec<ColdEntry>) -> ColdPart {
        let bytes = entries.iter().map(|e| e.bytes).sum();
        ColdPart {
            path: Arc::from(path),
            range: 0..entries.len(),
            all: Arc::from(entries),
            bytes,
        }
    }

    fn view(&self, range: Range<usize>) -> ColdPart {
        let bytes = self.all[range.clone()].iter().map(|e| e.bytes).sum();
        ColdPart {
            path: self.path.clone(),
            all: self.all.clone(),
            range,
            bytes,
        }
    }

    pub fn len(&self) -> usize {
        self.range.len()
    }

    /// The session file the places are in.
    pub fn path(&self) -> &Path {
        &self.path
    }

    pub fn is_empty(&self) -> bool {
        self.range.is_empty()
    }

    pub fn entries(&self) -> &[ColdEntry] {
        &self.all[self.range.clone()]
    }

    /// An estimate of the part's size in tokens without reading it: its lines' bytes / 4.
    /// A line holds its message's text and more (keys, escapes, ids, usage), so this
    /// counts high, never low: a context with a cold part is never taken to fit when it
    /// does not.
    pub fn tokens(&self) -> u64 {
        self.bytes.div_ceil(4)
    }

    pub fn position(&self, id: &str) -> Option<usize> {
        self.entries().iter().position(|e| e.id == id)
    }

    /// Keep only the first `len` messages (a rewind into the cold part).
    pub fn truncate(&mut self, len: usize) {
        let end = self.range.start + len.min(self.len());
        *self = self.view(self.range.start..end);
    }

    /// Take the last `count` messages off this part, as a part of their own.
    pub fn split_off_last(&mut self, count: usize) -> ColdPart {
        let at = self.range.end - count.min(self.len());
        let tail = self.view(at..self.range.end);
        *self = self.view(self.range.start..at);
        tail
    }

    /// Put back the messages `split_off_last` took (`tail` must be what it returned).
    pub fn rejoin(&mut self, tail: &ColdPart) {
        if Arc::ptr_eq(&self.all, &tail.all) && tail.range.start == self.range.end {
            *self = self.view(self.range.start..tail.range.end);
        }
    }

    /// The newest user message's entry id.
    pub fn last_user_id(&self) -> Option<&str> {
        self.entries()
            .iter()
            .rev()
            .find(|e| e.user)
            .map(|e| e.id.as_str())
    }

    /// The messages of `range`, read back from the file.
    pub fn load(&self, range: Range<usize>) -> std::io::Result<Vec<(String, Arc<Message>)>> {
        let mut out = Vec::with_capacity(range.len());
        self.for_each(range, |id, message| {
            out.push((id.to_string(), Arc::new(message)))
        })?;
        Ok(out)
    }

    /// Every message of the part.
    pub fn load_all(&self) -> std::io::Result<Vec<(String, Arc<Message>)>> {
        self.load(0..self.len())
    }

    /// Read back the messages of `range` one at a time, in order, each dropped after
    /// `each` has seen it: memory stays at one message.
    pub fn for_each(
        &self,
        range: Range<usize>,
        mut each: impl FnMut(&str, Message),
    ) -> std::io::Result<()> {
        let Some(wanted) = self.entries().get(range) else {
            return Ok(());
        };
        let Some(first) = wanted.first() else {
            return Ok(());
        };
        let damaged = |what: String| std::io::Error::new(std::io::ErrorKind::InvalidData, what);
        let file = File::open(&self.path)?;
        let mut next = 0;
        let mut failure = None;
        // Lines between the wanted ones (other branches) are passed over unparsed.
        for_each_line(&file, first.offset, 0, |offset, _, bytes, _| {
            let Some(entry) = wanted.get(next) else {
                return false;
            };
            if offset != entry.offset {
                return offset < entry.offset;
            }
            next += 1;
            match serde_json::from_slice::<Entry>(bytes) {
                Ok(Entry::Message { message, .. }) => each(&entry.id, message),
                Ok(_) | Err(_) => {
                    failure = Some(format!(
                        "{}: the message at byte {offset} can no longer be read",
                        self.path.display()
                    ));
                    return false;
                }
            }
            next < wanted.len()
        })?;
        if let Some(failure) = failure {
            return Err(damaged(failure));
        }
        if next < wanted.len() {
            return Err(damaged(format!(
                "{}: the file ends before the message at byte {}",
                self.path.display(),
                wanted[next].offset
            )));
        }
        Ok(())
    }
}

/// Whether an entry line (as this program writes it) holds a user message.
pub fn is_user_line(line: &[u8]) -> bool {
    const ROLE: &[u8] = b"\"message\":{\"role\":\"user\"";
    let head = &line[..line.len().min(256)];
    memchr::memmem::find(head, ROLE).is_some()
}

#[cfg(test)]
#[path = "cold_tests.rs"]
mod tests;
