//! A long never-compacted context opened lazily is the same context: the cold part read
//! back, followed by what was parsed, is exactly what the whole reader gives; the parsed
//! part starts at a user message; settings lines among the older ones are not messages.

use super::*;
use crate::protocol::message::{
    AssistantContent, AssistantMessage, Message, ToolCall, ToolResultMessage, UserMessage,
};
use crate::session::format::{NewEntry, encode};
use crate::session::load::{load, load_lazy_with};
use std::io::Write;
use std::path::PathBuf;

/// A session of `turns` turns (question, a tool call, its result, an answer), with a model
/// change first; its path.
fn session(dir: &Path, turns: usize) -> PathBuf {
    let path = dir.join("s.jsonl");
    let mut out = std::fs::File::create(&path).unwrap();
    out.write_all(
        b"{\"type\":\"session\",\"version\":1,\"id\":\"s1\",\"cwd\":\"/w\",\"timestamp\":1}\n",
    )
    .unwrap();
    let mut parent: Option<String> = None;
    let mut n = 0;
    let mut add = |entry: NewEntry<'_>, out: &mut std::fs::File| {
        n += 1;
        let id = format!("e{n:05}");
        out.write_all(&encode(entry, &id, parent.as_deref(), n).unwrap())
            .unwrap();
        parent = Some(id);
    };
    add(
        NewEntry::ModelChange {
            provider: "p",
            model: "m",
        },
        &mut out,
    );
    for turn in 0..turns {
        let mut user = UserMessage::text(format!("question {turn}"));
        user.timestamp = 2;
        let user = Message::User(user);
        add(NewEntry::Message(&user), &mut out);
        let mut call = AssistantMessage::empty("p", "m");
        let tool_call = ToolCall {
            id: format!("call{turn}"),
            name: "read".into(),
            arguments: serde_json::json!({"path": format!("f{turn}")}),
            invalid_arguments: None,
        };
        call.content
            .push(AssistantContent::ToolCall(tool_call.clone()));
        call.usage.output = 7;
        add(NewEntry::Message(&Message::Assistant(call)), &mut out);
        let mut result = ToolResultMessage::error(&tool_call, format!("content {turn}"));
        result.is_error = false;
        result.timestamp = 3;
        add(NewEntry::Message(&Message::ToolResult(result)), &mut out);
        let mut answer = AssistantMessage::empty("p", "m");
        answer.content.push(AssistantContent::Text {
            text: format!("answer {turn}"),
        });
        add(NewEntry::Message(&Message::Assistant(answer)), &mut out);
        if turn == turns / 2 {
            add(
                NewEntry::ThinkingChange(crate::llm::request::ThinkingLevel::High),
                &mut out,
            );
        }
    }
    path
}

#[test]
fn a_long_context_opened_lazily_is_the_same_context() {
    let dir = tempfile::tempdir().unwrap();
    let path = session(dir.path(), 200);
    let whole = load(&path).unwrap();
    assert!(whole.cold.is_none());
    let lazy = load_lazy_with(&path, 4_000).unwrap();
    let cold = lazy.cold.clone().expect("a cold part");
    // Opening did not find the older part; its settings come with it.
    assert!(!cold.is_found());
    assert_eq!(lazy.model, None, "the model change is at the start");
    assert_eq!(lazy.thinking, None, "the level changed in the middle");
    let older = cold.settings().unwrap();
    assert_eq!(older.model, whole.model);
    assert_eq!(older.thinking, whole.thinking);
    assert!(cold.is_found());
    assert!(cold.len() > 400, "{} messages cold", cold.len());
    assert!(lazy.context.len() < 200, "{} parsed", lazy.context.len());
    // The parsed part starts a turn: no call is separated from its result.
    assert!(matches!(lazy.context[0].1.as_ref(), Message::User(_)));
    let mut read = cold.load_all().unwrap();
    read.extend(lazy.context.iter().cloned());
    assert_eq!(read, whole.context);
    assert_eq!(lazy.last_entry_id, whole.last_entry_id);
    assert_eq!(lazy.valid_len, whole.valid_len);
    // A user message's place says so; a range reads just those.
    let users = cold.entries().iter().filter(|e| e.user).count();
    assert_eq!(users * 4, cold.len());
    let some = cold.load(4..6).unwrap();
    assert_eq!(some, whole.context[4..6].to_vec());
    // A context shorter than what is read at start has no cold part.
    let small = load_lazy_with(&path, u64::MAX).unwrap();
    assert!(small.cold.is_none());
    assert_eq!(small.context, whole.context);
}

#[test]
fn a_cold_line_that_changed_is_an_error_not_a_gap() {
    let dir = tempfile::tempdir().unwrap();
    let path = session(dir.path(), 50);
    let lazy = load_lazy_with(&path, 1_000).unwrap();
    let cold = lazy.cold.expect("a cold part");
    let offset = cold.entries()[1].offset;
    let mut bytes = std::fs::read(&path).unwrap();
    bytes[usize::try_from(offset).unwrap()] = b'x';
    std::fs::write(&path, &bytes).unwrap();
    assert!(cold.load(0..1).is_ok());
    let error = cold.load_all().unwrap_err();
    assert!(
        error.to_string().contains("can no longer be read"),
        "{error}"
    );
}

#[test]
fn opening_a_long_context_reads_a_bounded_part_of_its_file() {
    let dir = tempfile::tempdir().unwrap();
    let path = session(dir.path(), 3_000);
    let size = std::fs::metadata(&path).unwrap().len();
    assert!(size > 1_000_000, "{size} bytes");
    let read = || crate::session::tail::BYTES_READ.with(std::cell::Cell::get);
    let before = read();
    let lazy = load_lazy_with(&path, 8_000).unwrap();
    let at_open = read() - before;
    // What the walk takes from the end: the newest 8 kB of the branch and the block
    // they are in (256 kB), not the file.
    assert!(
        at_open <= 512 * 1024,
        "{at_open} of {size} bytes read to open"
    );
    let cold = lazy.cold.expect("a cold part");
    assert!(!cold.is_found());
    // Finding the older part reads the rest, once, for every clone.
    let clone = cold.clone();
    let before = read();
    assert!(clone.len() > 10_000);
    assert!(read() - before >= size - at_open - 1_024);
    assert!(cold.is_found());
    let before = read();
    assert_eq!(cold.len(), clone.len());
    assert_eq!(read(), before);
    let whole = load(&path).unwrap();
    let mut all = cold.load_all().unwrap();
    all.extend(lazy.context);
    assert_eq!(all, whole.context);
}

#[test]
fn a_compaction_in_the_older_part_comes_first_as_its_summary() {
    let dir = tempfile::tempdir().unwrap();
    let path = session(dir.path(), 40);
    // A compaction after turn 40 that kept the last turn, then 60 more turns.
    let whole = load(&path).unwrap();
    let kept = whole.context[whole.context.len() - 4].0.clone();
    let head = whole.last_entry_id.clone().unwrap();
    let mut out = std::fs::OpenOptions::new()
        .append(true)
        .open(&path)
        .unwrap();
    let compaction = NewEntry::Compaction {
        summary: "the first forty turns",
        first_kept_entry_id: Some(&kept),
        tokens_before: 1,
        tokens_after: 1,
        model: None,
        thinking: None,
        name: None,
        goal: None,
        preserved: &[],
    };
    out.write_all(&encode(compaction, "c1", Some(&head), 7).unwrap())
        .unwrap();
    let mut parent = "c1".to_string();
    for turn in 0..60 {
        let mut user = UserMessage::text(format!("later question {turn}"));
        user.timestamp = 8;
        let id = format!("l{turn:03}");
        out.write_all(
            &encode(
                NewEntry::Message(&Message::User(user)),
                &id,
                Some(&parent),
                8,
            )
            .unwrap(),
        )
        .unwrap();
        parent = id;
    }
    drop(out);
    let whole = load(&path).unwrap();
    assert!(crate::session::load::is_summary(&whole.context[0].1));
    let lazy = load_lazy_with(&path, 400).unwrap();
    let cold = lazy.cold.clone().expect("a cold part");
    let mut all = cold.load_all().unwrap();
    assert_eq!(all[0].0, "c1");
    all.extend(lazy.context.iter().cloned());
    assert_eq!(all, whole.context);
}

#[test]
fn a_damaged_older_part_is_an_error_when_needed_not_at_start() {
    let dir = tempfile::tempdir().unwrap();
    let path = session(dir.path(), 200);
    // The third line (an older message) is no entry any more.
    let mut bytes = std::fs::read(&path).unwrap();
    let third = bytes
        .iter()
        .enumerate()
        .filter(|(_, b)| **b == b'\n')
        .nth(1)
        .unwrap()
        .0;
    bytes[third + 1] = b'x';
    std::fs::write(&path, &bytes).unwrap();
    // The whole reader reports it; opening lazily does not read it.
    assert!(!load(&path).unwrap().warnings.is_empty());
    let lazy = load_lazy_with(&path, 4_000).unwrap();
    assert!(lazy.warnings.is_empty(), "{:?}", lazy.warnings);
    let cold = lazy.cold.expect("a cold part");
    let error = cold.load_all().unwrap_err();
    assert!(
        error.to_string().contains("could not be read back"),
        "{error}"
    );
    assert!(cold.find().is_err());
}

#[test]
fn of_the_part_walked_only_the_newest_messages_are_parsed() {
    let dir = tempfile::tempdir().unwrap();
    let path = session(dir.path(), 200);
    let whole = load(&path).unwrap();
    // 4,000 bytes of the branch walked (some 20 lines), 6 messages or more parsed.
    let walked = load_lazy_with(&path, 4_000).unwrap();
    let lazy = crate::session::load::load_lazy_sized(&path, 4_000, 6).unwrap();
    assert!(walked.context.len() > 12, "{} walked", walked.context.len());
    // Two turns of four: from a user message on, so no call is parted from its result.
    assert_eq!(lazy.context.len(), 8);
    assert!(matches!(lazy.context[0].1.as_ref(), Message::User(_)));
    assert_eq!(lazy.context[..], whole.context[whole.context.len() - 8..]);
    assert_eq!(lazy.last_entry_id, whole.last_entry_id);
    assert_eq!(lazy.valid_len, whole.valid_len);
    let cold = lazy.cold.clone().expect("a cold part");
    assert!(!cold.is_found());
    // Its estimate before it is found covers what was walked past too: it counts high.
    let walked_cold = walked.cold.clone().unwrap();
    assert!(cold.tokens() > walked_cold.tokens());
    // Found, it holds every older message, the ones walked past last, in order.
    let mut read = cold.load_all().unwrap();
    assert_eq!(read.len(), whole.context.len() - 8);
    read.extend(lazy.context.iter().cloned());
    assert_eq!(read, whole.context);
    assert_eq!(cold.settings(), walked_cold.settings());
    // A rewind into the part walked past, and the newest of it read back.
    let mut newest = cold.clone();
    let taken = newest.split_off_last(3);
    assert_eq!(
        taken.load_all().unwrap(),
        whole.context[whole.context.len() - 11..whole.context.len() - 8].to_vec()
    );
    assert_eq!(newest.len(), whole.context.len() - 11);
}

#[test]
fn a_long_session_opened_at_start_parses_a_screen_of_messages_not_megabytes() {
    let dir = tempfile::tempdir().unwrap();
    // Over `HOT_BYTES` of turns, never compacted.
    let mut turns = 400;
    let path = loop {
        let path = session(dir.path(), turns);
        if std::fs::metadata(&path).unwrap().len() > 2 * HOT_BYTES {
            break path;
        }
        turns *= 2;
    };
    let lazy = crate::session::load::load_lazy(&path).unwrap();
    let cold = lazy.cold.clone().expect("a cold part");
    assert!(
        (PARSED_MESSAGES..PARSED_MESSAGES + 4).contains(&lazy.context.len()),
        "{} messages parsed at start",
        lazy.context.len()
    );
    let whole = load(&path).unwrap();
    assert_eq!(cold.len() + lazy.context.len(), whole.context.len());
    let mut read = cold.load(cold.len() - 10..cold.len()).unwrap();
    read.extend(lazy.context.iter().cloned());
    assert_eq!(read[..], whole.context[whole.context.len() - read.len()..]);
}
