//! The older part of a very long context, held as places in the session file instead of
//! as messages (issue 32). A session that was never compacted can hold far more than any
//! model's window: it is compacted (or cut) before its next request, and until then
//! nothing needs its older messages as values. Opening it therefore reads the file from
//! its end only until its newest part (`HOT_BYTES`, from a user message on) is found, and
//! parses only the newest messages of that (`PARSED_MESSAGES`; the ones walked past are
//! held as places already); the rest of the branch is found later, on a thread of the engine's
//! after start (the usage count) or by the first thing that needs it, whichever comes
//! first: for every older message of the branch, its entry id, where its line starts and
//! how long it is, and the settings the newer part did not say (model, reasoning level,
//! name, goal). The messages are read back from the file when something needs them (a
//! compaction, a request that sends them, `get_messages`, the transcript view), in file
//! order, one line at a time.
//!
//! The session file is append-only and locked by this process while it is open, so the
//! lines stay where they were found. A line that no longer parses is an error, never a
//! silent gap.

use super::format::Entry;
use super::index::for_each_line;
use super::tail::{BranchLine, Holds, Older, Rest};
use crate::llm::request::ThinkingLevel;
use crate::protocol::message::Message;
use std::fs::File;
use std::ops::Range;
use std::path::Path;
use std::sync::{Arc, OnceLock};

/// About this many bytes of the newest lines of a never-compacted context are parsed at
/// start (moved back to a user message, so no tool call is separated from its result);
/// the rest of the branch is left in the file. More than any model's window: such a
/// context is compacted before its next request.
pub const HOT_BYTES: u64 = 4 * 1024 * 1024;

/// Of those, only the newest messages — this many or a few more, from a user message on —
/// are parsed at start: what a screen replays of a resumed session (the interface's
/// `REPLAY`) and a live session's attach reads. The others join the older part as places
/// (read back with it): parsing 4 MB was most of a long session's first frame (issue 32).
pub const PARSED_MESSAGES: usize = 200;

/// One message of the cold part.
#[derive(Clone, Debug)]
pub struct ColdEntry {
    pub id: String,
    /// Where its line starts in the session file, and its length in bytes.
    pub offset: u64,
    pub bytes: u64,
    /// A user message (known from the line's first bytes).
    pub user: bool,
    /// A compaction found in the older part: it stands for its summary message, first.
    pub summary: bool,
}

impl ColdEntry {
    /// The place of a branch line that holds a message; `None` for the others (settings,
    /// labels: the walk read what they say).
    pub fn of_line(line: BranchLine) -> Option<ColdEntry> {
        let user = match line.holds {
            Holds::UserMessage => true,
            Holds::OtherMessage => false,
            Holds::Nothing => return None,
        };
        Some(ColdEntry {
            id: line.id,
            offset: line.offset,
            bytes: line.bytes,
            user,
            summary: false,
        })
    }
}

/// The settings in force at the head, once the older part was read: the newer part's,
/// else the older part's.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct OlderSettings {
    pub model: Option<(String, String)>,
    pub thinking: Option<ThinkingLevel>,
    pub name: Option<String>,
    pub goal: Option<String>,
}

/// The older part once found.
#[derive(Debug)]
struct Found {
    entries: Vec<ColdEntry>,
    bytes: u64,
    settings: OlderSettings,
}

/// Where the places come from: known when the part was made, or found on first need.
#[derive(Debug)]
struct Source {
    rest: Option<Rest>,
    /// The newest messages of the part, known when it was made (walked at opening but
    /// not parsed): they follow what `rest` finds.
    newer: Vec<ColdEntry>,
    found: OnceLock<Result<Found, String>>,
    /// The older part's settings, still to be taken on by the engine (`adoption`):
    /// `Some` until they were, with whether the model and the reasoning level are too.
    adopt: tokio::sync::Mutex<Option<(bool, bool)>>,
}

/// The messages before the parsed part of a context, as places in the session file.
/// Cheap to clone: clones share the places (an engine's context, the transcript view's
/// earlier part and the usage count each hold one), and finding them once finds them for
/// every clone.
#[derive(Clone, Debug)]
pub struct ColdPart {
    path: Arc<Path>,
    source: Arc<Source>,
    /// The part of the places this one covers (a rewind or a read-back shortens it);
    /// `None`: all of them.
    range: Option<Range<usize>>,
    /// The bytes of `range`'s lines.
    bytes: u64,
}

impl ColdPart {
    /// `entries` must be in file order (as the branch is).
    pub fn new(path: &Path, entries: Vec<ColdEntry>) -> ColdPart {
        let bytes = entries.iter().map(|e| e.bytes).sum();
        let found = OnceLock::new();
        let _ = found.set(Ok(Found {
            entries,
            bytes,
            settings: OlderSettings::default(),
        }));
        ColdPart {
            path: Arc::from(path),
            source: Arc::new(Source {
                rest: None,
                newer: Vec::new(),
                found,
                adopt: tokio::sync::Mutex::new(None),
            }),
            range: None,
            bytes,
        }
    }

    /// The older part of a branch that opening left unread (`tail::Rest`), found when
    /// first needed, followed by `newer`: messages opening walked past but did not parse
    /// (in file order).
    pub(super) fn later(path: &Path, rest: Rest, newer: Vec<ColdEntry>) -> ColdPart {
        ColdPart {
            path: Arc::from(path),
            source: Arc::new(Source {
                rest: Some(rest),
                newer,
                found: OnceLock::new(),
                adopt: tokio::sync::Mutex::new(Some((false, false))),
            }),
            range: None,
            bytes: 0,
        }
    }

    /// Find the older part now if it was not yet (reading the file back from where
    /// opening stopped); the same for every clone.
    fn found(&self) -> Result<&Found, &str> {
        self.source
            .found
            .get_or_init(|| match &self.source.rest {
                Some(rest) => find_older(&self.path, rest, &self.source.newer),
                None => Err("the earlier messages are not known".to_string()),
            })
            .as_ref()
            .map_err(String::as_str)
    }

    /// Whether the older part was found already (nothing is read to tell).
    pub fn is_found(&self) -> bool {
        self.source.found.get().is_some()
    }

    /// Find the older part now (`found`); the error says why it could not be.
    pub fn find(&self) -> std::io::Result<()> {
        self.found().map(|_| ()).map_err(damaged)
    }

    /// Take the model and the reasoning level in force from the older part once it is
    /// found (besides its name and goal): opening did not find them in the part it read,
    /// and the command line did not choose them (start-up says so; the engine adopts).
    pub fn adopt(&self, model: bool, thinking: bool) {
        if let Ok(mut adopt) = self.source.adopt.try_lock()
            && adopt.is_some()
        {
            *adopt = Some((model, thinking));
        }
    }

    /// The older part's settings still to be taken on: `Some((model?, thinking?))` until
    /// the engine did (it sets `None`); held while it does, so it happens once.
    pub async fn adoption(&self) -> tokio::sync::MutexGuard<'_, Option<(bool, bool)>> {
        self.source.adopt.lock().await
    }

    /// The settings in force at the head, the older part's included (found first).
    pub fn settings(&self) -> Option<OlderSettings> {
        self.found().ok().map(|found| found.settings.clone())
    }

    fn all(&self) -> &[ColdEntry] {
        self.found().map_or(&[], |found| &found.entries)
    }

    fn view(&self, range: Range<usize>) -> ColdPart {
        let bytes = self.all()[range.clone()].iter().map(|e| e.bytes).sum();
        ColdPart {
            path: self.path.clone(),
            source: self.source.clone(),
            range: Some(range),
            bytes,
        }
    }

    fn range(&self) -> Range<usize> {
        self.range.clone().unwrap_or(0..self.all().len())
    }

    /// Its messages (found first).
    pub fn len(&self) -> usize {
        self.range().len()
    }

    /// The session file the places are in.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Whether it holds no message (found first, unless shortened already).
    pub fn is_empty(&self) -> bool {
        self.range().is_empty()
    }

    pub fn entries(&self) -> &[ColdEntry] {
        let range = self.range();
        &self.all()[range]
    }

    /// An estimate of the part's size in tokens without reading its lines: their bytes /
    /// 4 — before the part is found, the bytes of the file before the part that was read
    /// (other branches included). A line holds its message's text and more (keys,
    /// escapes, ids, usage), so this counts high, never low: a context with a cold part is
    /// never taken to fit when it does not.
    pub fn tokens(&self) -> u64 {
        let bytes = match (&self.range, self.source.found.get(), &self.source.rest) {
            (Some(_), _, _) => self.bytes,
            (None, Some(Ok(found)), _) => found.bytes,
            (None, _, Some(rest)) if !self.is_found() => self
                .source
                .newer
                .iter()
                .map(|e| e.bytes)
                .sum::<u64>()
                .saturating_add(rest.bound()),
            (None, _, _) => 0,
        };
        bytes.div_ceil(4)
    }

    pub fn position(&self, id: &str) -> Option<usize> {
        self.entries().iter().position(|e| e.id == id)
    }

    /// Keep only the first `len` messages (a rewind into the cold part).
    pub fn truncate(&mut self, len: usize) {
        let range = self.range();
        let end = range.start + len.min(range.len());
        *self = self.view(range.start..end);
    }

    /// Take the last `count` messages off this part, as a part of their own.
    pub fn split_off_last(&mut self, count: usize) -> ColdPart {
        let range = self.range();
        let at = range.end - count.min(range.len());
        let tail = self.view(at..range.end);
        *self = self.view(range.start..at);
        tail
    }

    /// Put back the messages `split_off_last` took (`tail` must be what it returned).
    pub fn rejoin(&mut self, tail: &ColdPart) {
        let (mine, theirs) = (self.range(), tail.range());
        if Arc::ptr_eq(&self.source, &tail.source) && theirs.start == mine.end {
            *self = self.view(mine.start..theirs.end);
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
        self.find()?;
        let Some(mut wanted) = self.entries().get(range) else {
            return Ok(());
        };
        let file = File::open(&self.path)?;
        // A compaction of the older part comes first, as its summary (its line is after
        // the entries it kept).
        if let Some((summary, newer)) = wanted.split_first()
            && summary.summary
        {
            match super::load::parse_at(&file, summary.offset)? {
                Some(Entry::Compaction {
                    summary: text,
                    preserved,
                    timestamp,
                    ..
                }) => each(
                    &summary.id,
                    super::load::summary_message(&text, &preserved, timestamp),
                ),
                _ => {
                    return Err(damaged(format!(
                        "{}: the compaction at byte {} can no longer be read",
                        self.path.display(),
                        summary.offset
                    )));
                }
            }
            wanted = newer;
        }
        let Some(first) = wanted.first() else {
            return Ok(());
        };
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
            match super::entry_line::parse_entry(bytes) {
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

fn damaged(what: impl Into<String>) -> std::io::Error {
    std::io::Error::new(std::io::ErrorKind::InvalidData, what.into())
}

/// Read the older part of a branch back from where opening stopped; `newer` follows it.
fn find_older(path: &Path, rest: &Rest, newer: &[ColdEntry]) -> Result<Found, String> {
    let unreadable = |why: String| {
        format!(
            "the earlier messages could not be read back from the session: {}: {why}",
            path.display()
        )
    };
    let file = File::open(path).map_err(|e| unreadable(e.to_string()))?;
    let Older {
        lines,
        compaction,
        model,
        thinking,
        name,
        goal,
    } = rest.read(&file).ok_or_else(|| {
        unreadable(format!(
            "a line before byte {} is not an entry, or the entry {} is not in the file",
            rest.before, rest.parent
        ))
    })?;
    let summary = compaction.map(|(offset, id)| ColdEntry {
        id,
        offset,
        bytes: 0,
        user: true,
        summary: true,
    });
    let entries: Vec<ColdEntry> = summary
        .into_iter()
        .chain(lines.into_iter().filter_map(ColdEntry::of_line))
        .chain(newer.iter().cloned())
        .collect();
    let bytes = entries.iter().map(|e| e.bytes).sum();
    Ok(Found {
        entries,
        bytes,
        settings: OlderSettings {
            model,
            thinking,
            name,
            goal,
        },
    })
}

/// Whether an entry line (as this program writes it) holds a user message.
pub fn is_user_line(line: &[u8]) -> bool {
    // Built once: building a finder costs more than searching 256 bytes.
    static ROLE: std::sync::LazyLock<memchr::memmem::Finder<'static>> =
        std::sync::LazyLock::new(|| memchr::memmem::Finder::new(b"\"message\":{\"role\":\"user\""));
    let head = &line[..line.len().min(256)];
    ROLE.find(head).is_some()
}

#[cfg(test)]
#[path = "cold_tests.rs"]
mod tests;
