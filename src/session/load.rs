//! Reading a session back. Tolerant: a torn last line (the process died mid-write) is
//! dropped with a warning, invalid lines elsewhere are reported and skipped — never fatal.
//! The file is streamed in blocks, never held whole: a first pass (`index`) finds every
//! entry's id and parent by its first bytes; the branch leading to the head (or to a
//! chosen entry) is followed back, and of it only the settings, the last compaction and
//! the entries from the compaction's cut on are parsed, so a long session opens in time
//! and memory proportional to what the model still sees. Entries of abandoned branches
//! (after a rewind) stay in the file but are not part of the context. Tool calls that
//! never got a result (the process died mid-tool) are answered with an error result
//! saying so. Opening at the head first tries reading from the end (`tail`): a compacted
//! session then costs only the part after the last compaction's cut.

use super::cold::{self, ColdEntry, ColdPart};
use super::error::SessionError;
use super::format::{Entry, Header};
use super::index::{FileIndex, Kind, for_each_line, read_header};
use super::tail;
use crate::llm::request::ThinkingLevel;
use crate::protocol::message::{Content, Message, ToolResultMessage, UserMessage};
use std::collections::{HashMap, HashSet};
use std::fs::File;
use std::path::{Path, PathBuf};
use std::sync::Arc;

pub const INTERRUPTED_TEXT: &str =
    "The session was interrupted before this tool call finished; it may or may not have run.";

/// How the message that stands for a compaction starts.
pub const SUMMARY_INTRO: &str = "The conversation so far was summarized to save context.";

/// The message that stands for everything a compaction summarised: the summary, then what
/// the compaction kept verbatim (`preserved`), one text block each.
pub fn summary_message(summary: &str, preserved: &[String], timestamp: i64) -> Message {
    let mut message = UserMessage::text(format!("{SUMMARY_INTRO} Summary:\n\n{summary}"));
    message
        .content
        .extend(preserved.iter().map(|block| Content::text(block.clone())));
    message.timestamp = timestamp;
    Message::User(message)
}

/// Whether `message` is the one that stands for a compaction.
pub fn is_summary(message: &Message) -> bool {
    matches!(message, Message::User(user) if user.typed_text().starts_with(SUMMARY_INTRO))
}

pub struct LoadedSession {
    pub path: PathBuf,
    pub header: Header,
    /// What the model sees, in order, with each message's entry id. Repairs have an empty
    /// id until they are written.
    pub context: Vec<(String, Arc<Message>)>,
    /// Results made up for interrupted tool calls; also in `context`.
    pub repairs: Vec<Arc<Message>>,
    pub model: Option<(String, String)>,
    pub thinking: Option<ThinkingLevel>,
    /// The session's name (`set_session_name`), the last one on the branch.
    pub name: Option<String>,
    /// The session's goal (`set_goal`), the last one on the branch.
    pub goal: Option<String>,
    /// The entry the context ends at (the head); a writer continuing the session names it
    /// as the parent of what it writes next.
    pub last_entry_id: Option<String>,
    /// Bytes of the file that end with a complete, valid line; a writer continues here.
    pub valid_len: u64,
    pub warnings: Vec<String>,
    /// The messages before `context`, not read (`load_lazy` only): see `cold`.
    pub cold: Option<ColdPart>,
}

pub fn load(path: &Path) -> Result<LoadedSession, SessionError> {
    load_at(path, None)
}

/// `load`, but a context far larger than any model's window (never compacted) is read
/// only from its newest part: the file is read from its end until `cold::HOT_BYTES` of the
/// branch were taken, and the older messages are left in the file to be found when
/// something needs them (`LoadedSession::cold`, see `cold`).
pub fn load_lazy(path: &Path) -> Result<LoadedSession, SessionError> {
    load_lazy_sized(path, cold::HOT_BYTES, cold::PARSED_MESSAGES)
}

/// `load_lazy` with the older part of a context left unread once `hot` bytes of it were
/// taken, and all of those parsed.
#[cfg(test)]
pub(crate) fn load_lazy_with(path: &Path, hot: u64) -> Result<LoadedSession, SessionError> {
    load_lazy_sized(path, hot, usize::MAX)
}

/// `load_lazy` with the older part of a context left unread once `hot` bytes of it were
/// taken, and of those only the newest `parsed` messages or more (from a user message)
/// parsed: the others are held as places in the file, with the older part.
pub(crate) fn load_lazy_sized(
    path: &Path,
    hot: u64,
    parsed: usize,
) -> Result<LoadedSession, SessionError> {
    match load_from_end_with(path, Some((hot, parsed)))? {
        Some(loaded) => Ok(loaded),
        None => load_whole(path, None),
    }
}

/// Read the session at `path` as it was at entry `head` (the branch that leads to it);
/// `None`: at the last entry written.
pub fn load_at(path: &Path, head: Option<&str>) -> Result<LoadedSession, SessionError> {
    if head.is_none()
        && let Some(loaded) = load_from_end(path)?
    {
        return Ok(loaded);
    }
    load_whole(path, head)
}

/// The head's context read from the end of the file (`tail`); `None` when the file needs
/// the whole reader (something in it is not as this program writes it).
pub(super) fn load_from_end(path: &Path) -> Result<Option<LoadedSession>, SessionError> {
    load_from_end_with(path, None)
}

/// `lazy`: the bytes of the branch read before the rest is left for later, and how many
/// of the newest messages of those are parsed at least.
fn load_from_end_with(
    path: &Path,
    lazy: Option<(u64, usize)>,
) -> Result<Option<LoadedSession>, SessionError> {
    let io = |e| SessionError::io(path, e);
    let file = File::open(path).map_err(io)?;
    let (header, header_length) = read_header(path, &file)?;
    let size = file.metadata().map_err(io)?.len();
    let Some(mut tail) = tail::find(&file, header_length, size, lazy.map(|(hot, _)| hot)) else {
        return Ok(None);
    };
    let cold = match tail.rest.take() {
        Some(rest) => {
            let parsed = lazy.map_or(usize::MAX, |(_, parsed)| parsed);
            let newer = leave_unparsed(&mut tail, parsed);
            Some(ColdPart::later(path, rest, newer))
        }
        None => None,
    };
    let wanted: HashSet<u64> = tail.wanted.iter().copied().collect();
    let first = tail.wanted.first().map(|&offset| (offset, 0));
    let (messages, invalid) = parse_context(&file, &wanted, first, tail.compaction).map_err(io)?;
    if !invalid.is_empty() {
        return Ok(None); // the whole reader says which lines, by number
    }
    let mut warnings = Vec::new();
    if tail.torn {
        warnings.push(CUT_OFF.to_string());
    }
    let (context, repairs) = repair(messages, &mut warnings);
    Ok(Some(LoadedSession {
        path: path.to_path_buf(),
        header,
        context,
        repairs,
        model: tail.model,
        thinking: tail.thinking,
        name: tail.name,
        goal: tail.goal,
        last_entry_id: tail.head_id,
        valid_len: tail.valid_len,
        warnings,
        cold,
    }))
}

/// Of the lines a bounded walk took (`tail.wanted`, a context with no compaction), keep
/// the newest ones that hold `parsed` messages or more, from a user message on (no tool
/// call is separated from its result), and return the messages before them as places in
/// the file, in order: they are read back with the older part, when something needs them.
fn leave_unparsed(tail: &mut tail::Tail, parsed: usize) -> Vec<ColdEntry> {
    let mut messages = 0usize;
    let mut cut = 0;
    for (at, line) in tail.shapes.iter().enumerate().rev() {
        if line.holds != tail::Holds::Nothing {
            messages += 1;
        }
        if messages >= parsed && line.holds == tail::Holds::UserMessage {
            cut = at;
            break;
        }
    }
    tail.wanted.drain(..cut);
    tail.shapes
        .drain(..cut)
        .filter_map(ColdEntry::of_line)
        .collect()
}

const CUT_OFF: &str =
    "the last line was cut off (the agent stopped while writing it) and was dropped";

pub(super) fn load_whole(path: &Path, head: Option<&str>) -> Result<LoadedSession, SessionError> {
    let io = |e| SessionError::io(path, e);
    let (file, index) = FileIndex::read(path)?;
    let mut warnings = Vec::new();
    let mut valid_len = index.size;
    if let Some((offset, terminated, false)) = index.last_line {
        let blank = line_is_blank(&file, offset).map_err(io)?;
        if !blank {
            if terminated {
                warnings.push("the last line is not a valid entry and was skipped".to_string());
            } else {
                warnings.push(CUT_OFF.to_string());
                valid_len = offset;
            }
        }
    }
    let head = match head {
        Some(id) => Some(
            index
                .find(id)
                .ok_or_else(|| SessionError::NoSuchEntry(id.to_string()))?,
        ),
        None => index.head(),
    };
    let chain = head.map(|h| index.chain(h)).unwrap_or_default();

    // The settings and the last compaction on the branch: only those lines are parsed.
    let mut model = None;
    let mut thinking = None;
    let mut name = None;
    let mut goal = None;
    let mut compaction: Option<(usize, Option<String>)> = None;
    for (position, &node) in chain.iter().enumerate() {
        let kind = index.nodes[node].kind;
        if !matches!(
            kind,
            Kind::ModelChange
                | Kind::ThinkingChange
                | Kind::SessionInfo
                | Kind::Goal
                | Kind::Compaction
        ) {
            continue;
        }
        match parse_at(&file, index.nodes[node].offset).map_err(io)? {
            Some(Entry::ModelChange {
                provider, model: m, ..
            }) => model = Some((provider, m)),
            Some(Entry::ThinkingChange { thinking: t, .. }) => thinking = Some(t),
            Some(Entry::SessionInfo { name: n, .. }) => name = Some(n),
            Some(Entry::Goal { goal: g, .. }) => goal = g,
            Some(Entry::Compaction {
                first_kept_entry_id,
                provider,
                model: m,
                thinking: t,
                name: n,
                goal: g,
                ..
            }) => {
                compaction = Some((position, first_kept_entry_id));
                // The settings it recorded (newer files) hold until the next change.
                if let (Some(provider), Some(m), Some(t)) = (provider, m, t) {
                    model = Some((provider, m));
                    thinking = Some(t);
                    name = n;
                    goal = g;
                }
            }
            _ => {}
        }
    }
    // Where the context starts: the first entry the last compaction kept (on the branch).
    let mut start = 0;
    let mut chosen = None;
    if let Some((position, kept)) = &compaction {
        start = *position;
        chosen = Some(chain[*position]);
        if let Some(kept) = kept
            && let Some(found) = chain[..*position]
                .iter()
                .position(|&n| index.nodes[n].id == *kept)
        {
            start = found;
        }
    }
    let wanted: HashSet<u64> = chain[start..]
        .iter()
        .map(|&n| index.nodes[n].offset)
        .collect();
    let chosen_offset = chosen.map(|n| index.nodes[n].offset);
    let first_offset = chain.get(start).map(|&n| index.nodes[n].offset);

    let first = first_offset.map(|offset| {
        let number = chain.get(start).map_or(2, |&n| index.nodes[n].number);
        (offset, number)
    });
    let (messages, mut invalid) =
        parse_context(&file, &wanted, first, chosen_offset).map_err(io)?;
    // Lines that are no entry at all are reported too (the last one was above).
    invalid.extend(
        index
            .invalid
            .iter()
            .map(|number| format!("line {number} is not a valid entry and was skipped")),
    );
    invalid.sort_by_key(|w| {
        w.split_whitespace()
            .nth(1)
            .and_then(|n| n.parse::<usize>().ok())
    });
    warnings.splice(0..0, invalid);
    let (context, repairs) = repair(messages, &mut warnings);
    Ok(LoadedSession {
        path: path.to_path_buf(),
        header: index.header,
        context,
        repairs,
        model,
        thinking,
        name,
        goal,
        last_entry_id: head.map(|h| index.nodes[h].id.clone()),
        valid_len,
        warnings,
        cold: None,
    })
}

/// Parse the entries at the `wanted` offsets, reading from `first` (offset, line number) on:
/// the messages with their ids — the compaction at `chosen` becomes the summary message
/// first — and a warning for each wanted line that is not a valid entry.
fn parse_context(
    file: &File,
    wanted: &HashSet<u64>,
    first: Option<(u64, usize)>,
    chosen: Option<u64>,
) -> std::io::Result<(Context, Vec<String>)> {
    let mut messages = Vec::new();
    let mut invalid = Vec::new();
    let Some((first_offset, first_number)) = first else {
        return Ok((messages, invalid));
    };
    for_each_line(
        file,
        first_offset,
        first_number,
        |offset, number, bytes, _| {
            if !wanted.contains(&offset) {
                return true;
            }
            let entry = match super::entry_line::parse_entry(bytes) {
                Ok(entry) => entry,
                Err(e) => {
                    invalid.push(format!(
                        "line {number} is not a valid entry and was skipped ({e})"
                    ));
                    return true;
                }
            };
            match entry {
                Entry::Message { id, message, .. } => messages.push((id, Arc::new(message))),
                Entry::Compaction {
                    id,
                    summary,
                    preserved,
                    timestamp,
                    ..
                } => {
                    // The last compaction's summary goes before what it kept. An earlier
                    // one found here (a later compaction cut inside what it kept) is
                    // superseded: the later summary covers it.
                    if Some(offset) == chosen {
                        let message = summary_message(&summary, &preserved, timestamp);
                        messages.insert(0, (id, Arc::new(message)));
                    }
                }
                Entry::ModelChange { .. }
                | Entry::ThinkingChange { .. }
                | Entry::SessionInfo { .. }
                | Entry::Goal { .. }
                | Entry::Branch { .. } => {}
            }
            true
        },
    )?;
    Ok((messages, invalid))
}

/// The entry on the line at `offset`, if it is one.
pub(super) fn parse_at(file: &File, offset: u64) -> std::io::Result<Option<Entry>> {
    let mut entry = None;
    for_each_line(file, offset, 0, |_, _, bytes, _| {
        entry = super::entry_line::parse_entry(bytes).ok();
        false
    })?;
    Ok(entry)
}

fn line_is_blank(file: &File, offset: u64) -> std::io::Result<bool> {
    let mut blank = false;
    for_each_line(file, offset, 0, |_, _, bytes, _| {
        blank = bytes.iter().all(u8::is_ascii_whitespace);
        false
    })?;
    Ok(blank)
}

type Context = Vec<(String, Arc<Message>)>;

/// Place every tool result right after the message that called it, answer calls that have
/// no result, and drop results whose call is not in the context.
pub fn repair(messages: Context, warnings: &mut Vec<String>) -> (Context, Vec<Arc<Message>>) {
    let mut results: HashMap<String, (String, Arc<Message>)> = HashMap::new();
    for (id, message) in &messages {
        if let Message::ToolResult(result) = message.as_ref() {
            results.insert(result.tool_call_id.clone(), (id.clone(), message.clone()));
        }
    }
    let mut context = Vec::with_capacity(messages.len());
    let mut repairs = Vec::new();
    for (id, message) in messages {
        match message.as_ref() {
            Message::ToolResult(_) => continue,
            Message::Assistant(assistant) => {
                let calls: Vec<_> = assistant.tool_calls().cloned().collect();
                context.push((id, message.clone()));
                for call in calls {
                    match results.remove(&call.id) {
                        Some(result) => context.push(result),
                        None => {
                            let mut result = ToolResultMessage::error(&call, INTERRUPTED_TEXT);
                            result.timestamp = assistant.timestamp;
                            let result = Arc::new(Message::ToolResult(result));
                            repairs.push(result.clone());
                            context.push((String::new(), result));
                        }
                    }
                }
            }
            Message::User(_) => context.push((id, message)),
        }
    }
    if !results.is_empty() {
        warnings.push(format!(
            "{} tool result(s) without a matching call were dropped",
            results.len()
        ));
    }
    (context, repairs)
}
