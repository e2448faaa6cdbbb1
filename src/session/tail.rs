//! Opening a session at its head by reading it from the end: lines are taken backwards
//! (memchr's reverse search for newlines, in blocks) and the branch that leads to the head
//! is followed back by each line's first bytes until the last compaction on it, the first
//! entry that compaction kept, and the model and reasoning level in use are known. Only
//! that tail of the file is read, so resuming a long compacted session costs what the
//! model still sees, however large the file.
//!
//! This is a fast path, not a second reader: anything unusual — a line that is not an
//! entry written by this program, a parent that cannot be found, an invalid last entry,
//! an entry of the context that does not parse — makes it give up (`None`), and the full
//! reader (`load`), which reports such lines by number, reads the whole file instead.

use super::format::Entry;
use super::index::{Kind, ids_of};
use crate::llm::request::ThinkingLevel;
use std::fs::File;
use std::io::{Read, Seek, SeekFrom};

/// What the first block read from the end is; later blocks double while a line is longer.
const BLOCK: usize = 256 * 1024;

#[cfg(test)]
thread_local! {
    /// The bytes this thread's backward reads took from session files (tests only).
    pub(super) static BYTES_READ: std::cell::Cell<u64> = const { std::cell::Cell::new(0) };
}

/// The context of the head as found from the end.
pub(super) struct Tail {
    /// Offsets of the entries to parse, in file order: from the first kept entry (or the
    /// start of the branch) to the head.
    pub wanted: Vec<u64>,
    /// The compaction whose summary goes first, if any.
    pub compaction: Option<u64>,
    pub model: Option<(String, String)>,
    pub thinking: Option<ThinkingLevel>,
    pub name: Option<String>,
    pub goal: Option<String>,
    pub head_id: Option<String>,
    /// Bytes of the file that end with a complete line.
    pub valid_len: u64,
    /// The last line was cut off (the process died mid-write).
    pub torn: bool,
    /// What a bounded walk left unread: the older part of the branch.
    pub rest: Option<Rest>,
    /// With `rest` only: each line of `wanted` as the walk saw it, so the older part of
    /// what was walked can be left unparsed too (`load`).
    pub shapes: Vec<BranchLine>,
}

/// One line of a branch as a walk saw it: enough to leave it unparsed and read it back.
#[derive(Clone, Debug)]
pub struct BranchLine {
    pub offset: u64,
    pub id: String,
    pub bytes: u64,
    pub holds: Holds,
}

/// What a branch line holds, as far as leaving it unparsed is concerned.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Holds {
    UserMessage,
    /// An assistant message or a tool result.
    OtherMessage,
    /// No message: a setting, a label, a compaction (the walk read what it says).
    Nothing,
}

/// Lines of a file from its end back to `start`, each without its newline.
struct Backwards<'a> {
    file: &'a File,
    start: u64,
    /// `buf` holds the bytes from `pos` on that were not yet returned; it ends with the
    /// newline of the next line to return.
    pos: u64,
    buf: Vec<u8>,
}

impl Backwards<'_> {
    fn next_line(&mut self) -> std::io::Result<Option<(u64, Vec<u8>)>> {
        loop {
            if self.buf.is_empty() && self.pos <= self.start {
                return Ok(None);
            }
            let body_len = self.buf.len().saturating_sub(1);
            if let Some(newline) = memchr::memrchr(b'\n', &self.buf[..body_len]) {
                let mut line = self.buf.split_off(newline + 1);
                line.pop();
                let offset = self.pos + (newline as u64) + 1;
                return Ok(Some((offset, line)));
            }
            if self.pos <= self.start {
                let mut line = std::mem::take(&mut self.buf);
                line.pop();
                return Ok(Some((self.pos, line)));
            }
            // The line starts before what was read: read a block before it, at least as
            // long as what is held, so a huge line costs linear time.
            let want = u64::try_from(BLOCK.max(self.buf.len())).unwrap_or(u64::MAX);
            let length = want.min(self.pos - self.start);
            let from = self.pos - length;
            let mut block = vec![0; usize::try_from(length).unwrap_or(0)];
            let mut file = self.file;
            file.seek(SeekFrom::Start(from))?;
            file.read_exact(&mut block)?;
            #[cfg(test)]
            BYTES_READ.with(|read| read.set(read.get() + length));
            block.extend_from_slice(&self.buf);
            self.buf = block;
            self.pos = from;
        }
    }
}

/// The settings in use that the walk has found so far, newest first.
#[derive(Clone, Debug, Default)]
struct Settings {
    model: Option<(String, String)>,
    thinking: Option<ThinkingLevel>,
    /// The session's name, once the newest `session_info` (or a compaction that records
    /// the name in force) was found: `Some(None)` for no name.
    name: Option<Option<String>>,
    /// The session's goal, once the newest `goal` entry (or a compaction that records the
    /// goal in force) was found: `Some(None)` for none.
    goal: Option<Option<String>>,
    /// A compaction recorded them all: nothing older can change them.
    complete: bool,
}

impl Settings {
    fn known(&self) -> bool {
        self.complete
            || (self.model.is_some()
                && self.thinking.is_some()
                && self.name.is_some()
                && self.goal.is_some())
    }
}

/// Follow the head's branch back from the end of `file` (`size` bytes, the header's line
/// `header_length` long). `None`: give up and read the whole file.
///
/// `limit`: once the branch lines taken reach this many bytes with no compaction among
/// them, stop at the next user message and leave what is older for later (`Tail::rest`):
/// opening a long never-compacted session then reads a bounded part of its file.
pub(super) fn find(file: &File, header_length: u64, size: u64, limit: Option<u64>) -> Option<Tail> {
    let (valid_len, torn) = last_complete_line(file, header_length, size)?;
    let lines = Backwards {
        file,
        start: header_length,
        pos: valid_len,
        buf: Vec::new(),
    };
    let walked = walk(lines, None, Settings::default(), limit)?;
    let Walked {
        chain,
        compaction,
        cut,
        settings,
        head_id,
        rest,
    } = walked;
    // A kept entry that is not on the branch: the context starts at the compaction.
    let start = cut
        .or(compaction.as_ref().map(|(at, _)| *at))
        .unwrap_or(chain.len().saturating_sub(1));
    let compaction_offset = compaction.map(|(at, _)| chain[at].offset);
    let wanted = chain
        .get(..=start)
        .unwrap_or_default()
        .iter()
        .rev()
        .map(|line| line.offset)
        .collect();
    let shapes = match rest {
        Some(_) => chain.into_iter().take(start + 1).rev().collect(),
        None => Vec::new(),
    };
    let rest = rest.map(|(before, parent)| Rest {
        header_length,
        before,
        parent,
        found: settings.clone(),
    });
    Some(Tail {
        wanted,
        compaction: compaction_offset,
        model: settings.model,
        thinking: settings.thinking,
        name: settings.name.flatten(),
        goal: settings.goal.flatten(),
        head_id,
        valid_len,
        torn,
        rest,
        shapes,
    })
}

/// The older part of a branch that a bounded `find` left unread: the entries before byte
/// `before` that lead to `parent`, and the settings the newer part already said.
#[derive(Clone, Debug)]
pub struct Rest {
    header_length: u64,
    pub before: u64,
    pub parent: String,
    found: Settings,
}

impl Rest {
    /// Bytes of the file before the part read: more than the older part's lines take.
    pub fn bound(&self) -> u64 {
        self.before.saturating_sub(self.header_length)
    }
}

/// The older part of a branch, found by `Rest::read`.
pub struct Older {
    /// Its entries in file order.
    pub lines: Vec<BranchLine>,
    /// The compaction whose summary comes first (its offset), when the older part holds
    /// one: `lines` then start at the first entry it kept.
    pub compaction: Option<(u64, String)>,
    /// The settings in force at the head: the newer part's, else the older part's.
    pub model: Option<(String, String)>,
    pub thinking: Option<ThinkingLevel>,
    pub name: Option<String>,
    pub goal: Option<String>,
}

impl Rest {
    /// Follow the branch on back from where the bounded walk stopped, to its root (or the
    /// last compaction's cut). `None`: the file is not as this program writes it there.
    pub fn read(&self, file: &File) -> Option<Older> {
        let lines = Backwards {
            file,
            start: self.header_length,
            pos: self.before,
            buf: Vec::new(),
        };
        let walked = walk(lines, Some(self.parent.clone()), self.found.clone(), None)?;
        let start = walked
            .cut
            .or(walked.compaction.as_ref().map(|(at, _)| *at))
            .unwrap_or(walked.chain.len().saturating_sub(1));
        let compaction = walked
            .compaction
            .map(|(at, _)| (walked.chain[at].offset, walked.chain[at].id.clone()));
        let lines = walked.chain.into_iter().take(start + 1).rev().collect();
        Some(Older {
            lines,
            compaction,
            model: walked.settings.model,
            thinking: walked.settings.thinking,
            name: walked.settings.name.flatten(),
            goal: walked.settings.goal.flatten(),
        })
    }
}

/// What `walk` found, newest first.
struct Walked {
    /// The branch from the newest line taken back.
    chain: Vec<BranchLine>,
    /// The last compaction: its place in `chain` and the entry it kept.
    compaction: Option<(usize, Option<String>)>,
    /// The place in `chain` of the first entry the compaction kept.
    cut: Option<usize>,
    settings: Settings,
    /// The first line taken (the head, when the walk starts at the end).
    head_id: Option<String>,
    /// Where a bounded walk stopped: the offset of the oldest line taken and its parent.
    rest: Option<(u64, String)>,
}

/// Take `lines` backwards, following the branch from `wanted_id` (`None`: from the first
/// line, which must be a whole entry), until the root, or the last compaction's cut with
/// every setting known, or — with `limit` — a user message once `limit` bytes of the
/// branch were taken with no compaction among them. `None`: a line that is not an entry,
/// or a parent that is not in the file.
fn walk(
    mut lines: Backwards<'_>,
    mut wanted_id: Option<String>,
    mut settings: Settings,
    limit: Option<u64>,
) -> Option<Walked> {
    let mut head_id: Option<String> = None;
    let mut chain: Vec<BranchLine> = Vec::new();
    let mut compaction: Option<(usize, Option<String>)> = None;
    let mut cut: Option<usize> = None;
    let mut taken = 0u64;
    let mut rest = None;
    let following = wanted_id.is_some();
    while let Some((offset, line)) = lines.next_line().ok()? {
        if line.iter().all(u8::is_ascii_whitespace) {
            continue;
        }
        let (kind, id, parent) = ids_of(&line)?;
        if head_id.is_none() && !following {
            // The head must be a whole entry; the full reader explains one that is not.
            super::entry_line::parse_entry(&line).ok()?;
            head_id = Some(id.clone());
            wanted_id = Some(id.clone());
        }
        if wanted_id.as_deref() != Some(id.as_str()) {
            continue; // an abandoned branch
        }
        head_id.get_or_insert_with(|| id.clone());
        wanted_id = parent;
        let holds = match kind {
            Kind::Message if super::cold::is_user_line(&line) => Holds::UserMessage,
            Kind::Message => Holds::OtherMessage,
            _ => Holds::Nothing,
        };
        taken += line.len() as u64;
        chain.push(BranchLine {
            offset,
            id,
            bytes: line.len() as u64,
            holds,
        });
        let position = chain.len() - 1;
        match kind {
            Kind::ModelChange
            | Kind::ThinkingChange
            | Kind::SessionInfo
            | Kind::Goal
            | Kind::Compaction => {
                read_settings(&line, position, &mut settings, &mut compaction)?;
            }
            _ => {}
        }
        if let Some((at, kept)) = &compaction
            && cut.is_none()
        {
            match kept {
                None => cut = Some(*at),
                Some(kept) if chain[position].id == *kept => cut = Some(position),
                Some(_) => {}
            }
        }
        if cut.is_some() && settings.known() {
            break;
        }
        let Some(parent) = &wanted_id else {
            break; // the root of the branch
        };
        if let Some(limit) = limit
            && compaction.is_none()
            && taken >= limit
            && holds == Holds::UserMessage
        {
            rest = Some((offset, parent.clone()));
            wanted_id = None;
            break;
        }
    }
    if wanted_id.is_some() && !(cut.is_some() && settings.known()) {
        return None; // a parent that is not in the file: the full reader decides
    }
    Some(Walked {
        chain,
        compaction,
        cut,
        settings,
        head_id,
        rest,
    })
}

/// Where the last complete line ends, and whether a cut-off line follows it. `None`: a
/// trailing piece that is only whitespace (the full reader keeps the file as it is).
fn last_complete_line(file: &File, header_length: u64, size: u64) -> Option<(u64, bool)> {
    if size <= header_length {
        return Some((header_length, false));
    }
    let mut lines = Backwards {
        file,
        start: header_length,
        pos: size,
        buf: Vec::new(),
    };
    // Read the last block; a file that ends with a newline has no cut-off line.
    let mut last = [0u8; 1];
    let mut reader = file;
    reader.seek(SeekFrom::Start(size - 1)).ok()?;
    reader.read_exact(&mut last).ok()?;
    if last[0] == b'\n' {
        return Some((size, false));
    }
    // Pretend the piece ends with a newline to find where it starts.
    lines.buf.push(b'\n');
    let (offset, piece) = lines.next_line().ok()??;
    if piece.iter().all(u8::is_ascii_whitespace) {
        return None;
    }
    Some((offset, true))
}

/// Note what a settings or compaction line on the branch says, unless a newer one did.
fn read_settings(
    line: &[u8],
    position: usize,
    settings: &mut Settings,
    compaction: &mut Option<(usize, Option<String>)>,
) -> Option<()> {
    if settings.complete && compaction.is_some() {
        return Some(());
    }
    match super::entry_line::parse_entry(line).ok()? {
        Entry::ModelChange {
            provider, model, ..
        } if !settings.complete => {
            settings.model.get_or_insert((provider, model));
        }
        Entry::ThinkingChange { thinking, .. } if !settings.complete => {
            settings.thinking.get_or_insert(thinking);
        }
        Entry::SessionInfo { name, .. } if !settings.complete => {
            settings.name.get_or_insert(Some(name));
        }
        Entry::Goal { goal, .. } if !settings.complete => {
            settings.goal.get_or_insert(goal);
        }
        Entry::Compaction {
            first_kept_entry_id,
            provider,
            model,
            thinking,
            name,
            goal,
            ..
        } => {
            if compaction.is_none() {
                *compaction = Some((position, first_kept_entry_id));
            }
            if !settings.complete
                && let (Some(provider), Some(model), Some(thinking)) = (provider, model, thinking)
            {
                settings.model.get_or_insert((provider, model));
                settings.thinking.get_or_insert(thinking);
                settings.name.get_or_insert(name);
                settings.goal.get_or_insert(goal);
                settings.complete = true;
            }
        }
        _ => {}
    }
    Some(())
}

#[cfg(test)]
#[path = "tail_tests.rs"]
mod tests;
