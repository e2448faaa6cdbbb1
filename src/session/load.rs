//! Reading a session back. Tolerant: a torn last line (the process died mid-write) is
//! dropped with a warning, invalid lines elsewhere are reported and skipped — never fatal.
//! The file is streamed in blocks, never held whole: a first pass finds the last
//! compaction and settings by their first bytes, and only the entries from the
//! compaction's cut on are parsed, so a long session opens in time and memory proportional
//! to what the model still sees. Tool calls that never got a result (the process died
//! mid-tool) are answered with an error result saying so.

use super::error::SessionError;
use super::format::{COMPACTION_PREFIX, Entry, Header};
use crate::llm::request::ThinkingLevel;
use crate::protocol::message::{Message, ToolResultMessage, UserMessage};
use std::collections::HashMap;
use std::fs::File;
use std::io::{BufRead, BufReader, Seek, SeekFrom};
use std::path::{Path, PathBuf};
use std::sync::Arc;

pub const INTERRUPTED_TEXT: &str =
    "The session was interrupted before this tool call finished; it may or may not have run.";

/// The message that stands for everything a compaction summarised.
pub fn summary_message(summary: &str, timestamp: i64) -> Message {
    let mut message = UserMessage::text(format!(
        "The conversation so far was summarized to save context. Summary:\n\n{summary}"
    ));
    message.timestamp = timestamp;
    Message::User(message)
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
    pub last_entry_id: Option<String>,
    /// Bytes of the file that end with a complete, valid line; a writer continues here.
    pub valid_len: u64,
    pub warnings: Vec<String>,
}

/// One line of the file: where it starts, its number (1-based), its bytes without the
/// newline, and whether it ended with one.
struct Line<'a> {
    offset: u64,
    number: usize,
    bytes: &'a [u8],
    terminated: bool,
}

/// Call `each` for every line from byte `offset` (line `number`) to the end, reading in
/// blocks: memory stays at one line however long the file. `each` returns `false` to stop.
fn for_each_line(
    file: &File,
    offset: u64,
    number: usize,
    mut each: impl FnMut(Line<'_>) -> bool,
) -> std::io::Result<()> {
    let mut reader = BufReader::with_capacity(256 * 1024, file);
    reader.seek(SeekFrom::Start(offset))?;
    let mut line = Vec::new();
    let (mut offset, mut number) = (offset, number);
    loop {
        line.clear();
        let read = reader.read_until(b'\n', &mut line)?;
        if read == 0 {
            return Ok(());
        }
        let terminated = line.last() == Some(&b'\n');
        let bytes = if terminated {
            &line[..line.len() - 1]
        } else {
            &line[..]
        };
        if !each(Line {
            offset,
            number,
            bytes,
            terminated,
        }) {
            return Ok(());
        }
        offset += read as u64;
        number += 1;
    }
}

const MODEL_CHANGE_PREFIX: &[u8] = b"{\"type\":\"model_change\",";
const THINKING_CHANGE_PREFIX: &[u8] = b"{\"type\":\"thinking_change\",";

/// What a first pass over the file finds without parsing every line.
#[derive(Default)]
struct Survey {
    /// The last compaction: its line's offset and number, and the id of the first entry it
    /// kept.
    compaction: Option<(u64, usize, Option<String>)>,
    model: Option<(String, String)>,
    thinking: Option<ThinkingLevel>,
    /// The last line: its offset and whether it ended with a newline.
    last: Option<(u64, bool)>,
    size: u64,
}

pub fn load(path: &Path) -> Result<LoadedSession, SessionError> {
    let io = |e| SessionError::io(path, e);
    let not_a_session = |reason: &str| SessionError::NotASession {
        path: path.to_path_buf(),
        reason: reason.to_string(),
    };
    let file = File::open(path).map_err(io)?;
    let mut first = Vec::new();
    let header_length = BufReader::new(&file)
        .read_until(b'\n', &mut first)
        .map_err(io)?;
    if header_length == 0 {
        return Err(not_a_session("the file is empty"));
    }
    let header: Header = serde_json::from_slice(first.strip_suffix(b"\n").unwrap_or(&first))
        .map_err(|_| not_a_session("the first line is not a session header"))?;
    if header.kind != "session" {
        return Err(not_a_session("the first line is not a session header"));
    }

    // Pass 1: the last compaction, the last model and thinking changes, the last line —
    // found by their first bytes; only those lines are parsed.
    let mut survey = Survey::default();
    for_each_line(&file, header_length as u64, 2, |line| {
        survey.size = line.offset + line.bytes.len() as u64 + u64::from(line.terminated);
        let bytes = line.bytes;
        if bytes.starts_with(COMPACTION_PREFIX) {
            if let Ok(Entry::Compaction {
                first_kept_entry_id,
                ..
            }) = serde_json::from_slice(bytes)
            {
                survey.compaction = Some((line.offset, line.number, first_kept_entry_id));
            }
        } else if bytes.starts_with(MODEL_CHANGE_PREFIX) {
            if let Ok(Entry::ModelChange {
                provider, model, ..
            }) = serde_json::from_slice(bytes)
            {
                survey.model = Some((provider, model));
            }
        } else if bytes.starts_with(THINKING_CHANGE_PREFIX)
            && let Ok(Entry::ThinkingChange { thinking, .. }) = serde_json::from_slice(bytes)
        {
            survey.thinking = Some(thinking);
        }
        survey.last = Some((line.offset, line.terminated));
        true
    })
    .map_err(io)?;

    let mut warnings = Vec::new();
    let mut valid_len = survey.size.max(header_length as u64);
    // Whether the last line was bad (and already reported above).
    let mut last_line_bad = false;
    if let Some((offset, terminated)) = survey.last {
        // The last line decides where a writer continues: a torn one is dropped.
        for_each_line(&file, offset, 0, |line| {
            let blank = line.bytes.iter().all(u8::is_ascii_whitespace);
            if !blank && serde_json::from_slice::<Entry>(line.bytes).is_err() {
                if terminated {
                    warnings.push("the last line is not a valid entry and was skipped".to_string());
                } else {
                    warnings.push(
                        "the last line was cut off (the agent stopped while writing it) and was dropped"
                            .to_string(),
                    );
                    valid_len = offset;
                }
                last_line_bad = true;
            }
            false
        })
        .map_err(io)?;
    }

    // Pass 2: where the context starts — the first entry the last compaction kept.
    let (mut start, mut start_number) = (header_length as u64, 2);
    let mut chosen = None;
    if let Some((offset, number, kept)) = &survey.compaction {
        (start, start_number) = (*offset, *number);
        chosen = Some(*offset);
        if let Some(kept) = kept {
            let needle = format!("\"id\":\"{kept}\"");
            for_each_line(&file, header_length as u64, 2, |line| {
                if line.offset >= *offset {
                    return false;
                }
                if contains(line.bytes, needle.as_bytes())
                    && serde_json::from_slice::<Entry>(line.bytes).is_ok_and(|e| e.id() == kept)
                {
                    (start, start_number) = (line.offset, line.number);
                    return false;
                }
                true
            })
            .map_err(io)?;
        }
    }

    // Pass 3: parse the context.
    let mut loaded = LoadedSession {
        path: path.to_path_buf(),
        header,
        context: Vec::new(),
        repairs: Vec::new(),
        model: survey.model,
        thinking: survey.thinking,
        last_entry_id: None,
        valid_len,
        warnings: Vec::new(),
    };
    let mut messages = Vec::new();
    let mut last_entry_id = None;
    let mut invalid = Vec::new();
    let last_offset = survey.last.map(|(offset, _)| offset);
    for_each_line(&file, start, start_number, |line| {
        if line.bytes.iter().all(u8::is_ascii_whitespace) {
            return true;
        }
        let entry = match serde_json::from_slice::<Entry>(line.bytes) {
            Ok(entry) => entry,
            Err(e) => {
                if !(last_line_bad && Some(line.offset) == last_offset) {
                    invalid.push(format!(
                        "line {} is not a valid entry and was skipped ({e})",
                        line.number
                    ));
                }
                return true;
            }
        };
        last_entry_id = Some(entry.id().to_string());
        match entry {
            Entry::Message { id, message, .. } => messages.push((id, Arc::new(message))),
            // Known from the first pass.
            Entry::ModelChange { .. } | Entry::ThinkingChange { .. } => {}
            Entry::Compaction {
                id,
                summary,
                timestamp,
                ..
            } => {
                // The last compaction's summary goes before what it kept. An earlier one
                // found here (a later compaction cut inside what it kept) is superseded:
                // the later summary covers it.
                if Some(line.offset) == chosen {
                    messages.insert(0, (id, Arc::new(summary_message(&summary, timestamp))));
                }
            }
        }
        true
    })
    .map_err(io)?;
    if last_entry_id.is_none() {
        last_entry_id = last_id_before(&file, header_length as u64, start).map_err(io)?;
    }
    loaded.last_entry_id = last_entry_id;
    warnings.splice(0..0, invalid);
    loaded.warnings = warnings;
    let (context, repairs) = repair(messages, &mut loaded.warnings);
    loaded.context = context;
    loaded.repairs = repairs;
    Ok(loaded)
}

/// The id of the last valid entry before byte `end` (when nothing after it parsed).
fn last_id_before(file: &File, from: u64, end: u64) -> std::io::Result<Option<String>> {
    let mut last = None;
    for_each_line(file, from, 2, |line| {
        if line.offset >= end {
            return false;
        }
        if let Ok(entry) = serde_json::from_slice::<Entry>(line.bytes) {
            last = Some(entry.id().to_string());
        }
        true
    })?;
    Ok(last)
}

fn contains(haystack: &[u8], needle: &[u8]) -> bool {
    haystack.windows(needle.len()).any(|w| w == needle)
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
