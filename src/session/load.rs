//! Reading a session back. Tolerant: a torn last line (the process died mid-write) is
//! dropped with a warning, invalid lines elsewhere are reported and skipped — never fatal.
//! Only the entries after the last compaction's cut are parsed, so a long session opens in
//! time proportional to what the model still sees. Tool calls that never got a result (the
//! process died mid-tool) are answered with an error result saying so.

use super::error::SessionError;
use super::format::{COMPACTION_PREFIX, Entry, Header};
use crate::agent::message::{Message, ToolResultMessage, UserMessage};
use crate::llm::request::ThinkingLevel;
use std::collections::HashMap;
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

struct Line<'a> {
    number: usize,
    start: usize,
    bytes: &'a [u8],
    terminated: bool,
}

fn split_lines(bytes: &[u8]) -> Vec<Line<'_>> {
    let mut lines = Vec::new();
    let mut start = 0;
    while start < bytes.len() {
        let (end, terminated) = match bytes[start..].iter().position(|b| *b == b'\n') {
            Some(offset) => (start + offset, true),
            None => (bytes.len(), false),
        };
        lines.push(Line {
            number: lines.len() + 1,
            start,
            bytes: &bytes[start..end],
            terminated,
        });
        start = end + 1;
    }
    lines
}

pub fn load(path: &Path) -> Result<LoadedSession, SessionError> {
    let bytes = std::fs::read(path).map_err(|e| SessionError::io(path, e))?;
    let lines = split_lines(&bytes);
    let not_a_session = |reason: &str| SessionError::NotASession {
        path: path.to_path_buf(),
        reason: reason.to_string(),
    };
    let first = lines
        .first()
        .ok_or_else(|| not_a_session("the file is empty"))?;
    let header: Header = serde_json::from_slice(first.bytes)
        .map_err(|_| not_a_session("the first line is not a session header"))?;
    if header.kind != "session" {
        return Err(not_a_session("the first line is not a session header"));
    }

    let mut warnings = Vec::new();
    let mut valid_len = bytes.len() as u64;
    // The last line decides where a writer continues: torn lines are dropped.
    if let Some(last) = lines.last().filter(|l| l.number > 1)
        && serde_json::from_slice::<Entry>(last.bytes).is_err()
        && !last.bytes.iter().all(u8::is_ascii_whitespace)
    {
        if last.terminated {
            warnings.push(format!(
                "line {} is not a valid entry and was skipped",
                last.number
            ));
        } else {
            warnings.push(
                "the last line was cut off (the agent stopped while writing it) and was dropped"
                    .to_string(),
            );
            valid_len = last.start as u64;
        }
    }

    let (start, last_compaction) = context_start(&lines);
    let mut loaded = LoadedSession {
        path: path.to_path_buf(),
        header,
        context: Vec::new(),
        repairs: Vec::new(),
        model: None,
        thinking: None,
        last_entry_id: None,
        valid_len,
        warnings,
    };
    scan_settings(&lines[1..start.max(1)], &mut loaded);
    let mut messages = Vec::new();
    let last_number = lines.len();
    for line in &lines[start.max(1)..] {
        if line.bytes.iter().all(u8::is_ascii_whitespace) {
            continue;
        }
        let entry = match serde_json::from_slice::<Entry>(line.bytes) {
            Ok(entry) => entry,
            Err(e) => {
                if line.number != last_number {
                    loaded.warnings.push(format!(
                        "line {} is not a valid entry and was skipped ({e})",
                        line.number
                    ));
                }
                continue;
            }
        };
        loaded.last_entry_id = Some(entry.id().to_string());
        match entry {
            Entry::Message { id, message, .. } => messages.push((id, Arc::new(message))),
            Entry::ModelChange {
                provider, model, ..
            } => loaded.model = Some((provider, model)),
            Entry::ThinkingChange { thinking, .. } => loaded.thinking = Some(thinking),
            Entry::Compaction {
                id,
                summary,
                timestamp,
                ..
            } => {
                // The last compaction's summary goes before what it kept. An earlier one
                // found here (a later compaction cut inside what it kept) is superseded:
                // the later summary covers it.
                if Some(line.number - 1) == last_compaction {
                    messages.insert(0, (id, Arc::new(summary_message(&summary, timestamp))));
                }
            }
        }
    }
    let (context, repairs) = repair(messages, &mut loaded.warnings);
    loaded.context = context;
    loaded.repairs = repairs;
    Ok(loaded)
}

/// The index of the first line the context needs — the first entry kept by the last
/// compaction (found by its prefix, without parsing the lines before it), or line 2 — and
/// the index of that compaction's line.
fn context_start(lines: &[Line<'_>]) -> (usize, Option<usize>) {
    let Some((at, compaction)) = lines
        .iter()
        .enumerate()
        .skip(1)
        .rev()
        .find_map(|(i, line)| {
            if !line.bytes.starts_with(COMPACTION_PREFIX) {
                return None;
            }
            match serde_json::from_slice::<Entry>(line.bytes) {
                Ok(entry @ Entry::Compaction { .. }) => Some((i, entry)),
                _ => None,
            }
        })
    else {
        return (1, None);
    };
    let Entry::Compaction {
        first_kept_entry_id: Some(kept),
        ..
    } = compaction
    else {
        return (at, Some(at));
    };
    let needle = format!("\"id\":\"{kept}\"");
    lines[1..at]
        .iter()
        .enumerate()
        .rev()
        .find(|(_, line)| {
            contains(line.bytes, needle.as_bytes())
                && serde_json::from_slice::<Entry>(line.bytes).is_ok_and(|e| e.id() == kept)
        })
        .map(|(i, _)| i + 1)
        .map_or((at, Some(at)), |start| (start, Some(at)))
}

fn contains(haystack: &[u8], needle: &[u8]) -> bool {
    haystack.windows(needle.len()).any(|w| w == needle)
}

/// Model and thinking changes from before the cut still apply.
fn scan_settings(lines: &[Line<'_>], loaded: &mut LoadedSession) {
    let find_last = |prefix: &[u8]| {
        lines
            .iter()
            .rev()
            .filter(|line| line.bytes.starts_with(prefix))
            .find_map(|line| serde_json::from_slice::<Entry>(line.bytes).ok())
    };
    if let Some(Entry::ModelChange {
        provider, model, ..
    }) = find_last(b"{\"type\":\"model_change\",")
    {
        loaded.model = Some((provider, model));
    }
    if let Some(Entry::ThinkingChange { thinking, .. }) =
        find_last(b"{\"type\":\"thinking_change\",")
    {
        loaded.thinking = Some(thinking);
    }
    if let Some(last) = lines
        .iter()
        .rev()
        .find_map(|l| serde_json::from_slice::<Entry>(l.bytes).ok())
    {
        loaded.last_entry_id = Some(last.id().to_string());
    }
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
