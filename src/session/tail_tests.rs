//! Reading from the end (`tail`) gives exactly what reading the whole file gives, on
//! files with branches, compactions old and new, settings changes, a torn last line and an
//! interrupted tool call — and it does not read what lies before the last compaction's cut.

use crate::llm::request::ThinkingLevel;
use crate::protocol::message::{
    AssistantContent, AssistantMessage, Message, StopReason, ToolCall, UserMessage,
};
use crate::session::format::{NewEntry, encode};
use crate::session::load::{LoadedSession, load, load_from_end, load_whole};
use std::io::Write;

/// A session file written line by line, each entry's parent the one before unless told.
struct File {
    dir: tempfile::TempDir,
    lines: Vec<u8>,
    last: Option<String>,
    next: usize,
}

impl File {
    fn new() -> File {
        let mut file = File {
            dir: tempfile::tempdir().unwrap(),
            lines: Vec::new(),
            last: None,
            next: 0,
        };
        file.lines.extend_from_slice(
            br#"{"type":"session","version":1,"id":"s1","cwd":"/w","timestamp":1}"#,
        );
        file.lines.push(b'\n');
        file
    }

    /// Append `entry` after `parent` (default: the last entry); its id.
    fn add_after(&mut self, entry: NewEntry<'_>, parent: Option<&str>) -> String {
        self.next += 1;
        let id = format!("e{:03}", self.next);
        let parent = parent.map(str::to_string).or(self.last.clone());
        let line = encode(entry, &id, parent.as_deref(), 10 + self.next as i64).unwrap();
        self.lines.extend_from_slice(&line);
        self.last = Some(id.clone());
        id
    }

    fn add(&mut self, entry: NewEntry<'_>) -> String {
        self.add_after(entry, None)
    }

    fn user(&mut self, text: &str) -> String {
        let mut message = UserMessage::text(text);
        message.timestamp = 5;
        self.add(NewEntry::Message(&Message::User(message)))
    }

    fn answer(&mut self, text: &str) -> String {
        let mut message = AssistantMessage::empty("p", "m");
        message
            .content
            .push(AssistantContent::Text { text: text.into() });
        message.timestamp = 6;
        self.add(NewEntry::Message(&Message::Assistant(message)))
    }

    fn compaction(&mut self, kept: Option<&str>, settings: bool) -> String {
        self.add(NewEntry::Compaction {
            summary: "the summary",
            first_kept_entry_id: kept,
            tokens_before: 100,
            tokens_after: 10,
            model: settings.then_some(("prov", "model-c")),
            thinking: settings.then_some(ThinkingLevel::Low),
            name: None,
            goal: None,
            preserved: &[],
        })
    }

    fn write(&self) -> std::path::PathBuf {
        let path = self.dir.path().join("s.jsonl");
        std::fs::File::create(&path)
            .unwrap()
            .write_all(&self.lines)
            .unwrap();
        path
    }
}

fn summary(loaded: &LoadedSession) -> String {
    format!(
        "context {:?}\nrepairs {:?}\nmodel {:?} thinking {:?} name {:?}\nhead {:?} \
         valid_len {} warnings {:?} header {:?}",
        loaded.context,
        loaded.repairs,
        loaded.model,
        loaded.thinking,
        loaded.name,
        loaded.last_entry_id,
        loaded.valid_len,
        loaded.warnings,
        loaded.header
    )
}

/// The same outcome both ways; whether the end sufficed.
fn same_both_ways(file: &File) -> bool {
    let path = file.write();
    let fast = load(&path).unwrap();
    let whole = load_whole(&path, None).unwrap();
    assert_eq!(summary(&fast), summary(&whole));
    load_from_end(&path).unwrap().is_some()
}

#[test]
fn a_session_without_compaction_reads_the_same() {
    let mut file = File::new();
    file.add(NewEntry::ModelChange {
        provider: "prov",
        model: "model-a",
    });
    file.add(NewEntry::ThinkingChange(ThinkingLevel::High));
    file.user("one");
    file.answer("two");
    assert!(same_both_ways(&file));
    // A torn last line is dropped the same way.
    file.lines
        .extend_from_slice(br#"{"type":"message","id":"e9","par"#);
    assert!(same_both_ways(&file));
    let loaded = load(&file.write()).unwrap();
    assert_eq!(loaded.context.len(), 2);
    assert_eq!(loaded.warnings.len(), 1, "{:?}", loaded.warnings);
}

#[test]
fn compactions_with_and_without_recorded_settings_read_the_same() {
    let mut file = File::new();
    file.add(NewEntry::ModelChange {
        provider: "prov",
        model: "model-a",
    });
    file.user("one");
    file.answer("two");
    let kept = file.user("three");
    file.answer("four");
    // An older compaction without settings: the reader looks further back for them.
    file.compaction(Some(&kept), false);
    file.user("five");
    assert!(same_both_ways(&file));
    let loaded = load(&file.write()).unwrap();
    assert_eq!(loaded.model, Some(("prov".into(), "model-a".into())));
    assert_eq!(loaded.context.len(), 4, "summary, three, four, five");
    // A newer one records them; a later change still wins.
    let kept = file.user("six");
    file.compaction(Some(&kept), true);
    file.add(NewEntry::ModelChange {
        provider: "prov",
        model: "model-d",
    });
    file.answer("seven");
    assert!(same_both_ways(&file));
    let loaded = load(&file.write()).unwrap();
    assert_eq!(loaded.model, Some(("prov".into(), "model-d".into())));
    assert_eq!(loaded.thinking, Some(ThinkingLevel::Low));
    assert_eq!(loaded.context.len(), 3, "summary, six, seven");
    // A compaction that kept nothing.
    file.compaction(None, true);
    file.user("eight");
    assert!(same_both_ways(&file));
    assert_eq!(load(&file.write()).unwrap().context.len(), 2);
}

#[test]
fn the_head_branch_is_followed_past_abandoned_ones() {
    let mut file = File::new();
    let first = file.user("one");
    file.answer("two");
    let kept = file.user("three");
    // A branch that was left, with a compaction of its own.
    file.compaction(Some(&kept), true);
    file.user("abandoned");
    file.add_after(NewEntry::Branch { from: None }, Some(&first));
    file.answer("other two");
    assert!(same_both_ways(&file));
    let loaded = load(&file.write()).unwrap();
    let texts: Vec<String> = loaded
        .context
        .iter()
        .map(|(_, m)| format!("{m:?}"))
        .collect();
    assert_eq!(texts.len(), 2, "{texts:?}");
    assert!(texts[1].contains("other two"), "{texts:?}");
}

#[test]
fn an_interrupted_tool_call_is_answered_the_same() {
    let mut file = File::new();
    file.user("go");
    let mut call = AssistantMessage::empty("p", "m");
    call.content.push(AssistantContent::ToolCall(ToolCall {
        id: "c1".into(),
        name: "bash".into(),
        arguments: serde_json::json!({"command": "true"}),
        invalid_arguments: None,
    }));
    call.stop_reason = StopReason::ToolUse;
    file.add(NewEntry::Message(&Message::Assistant(call)));
    assert!(same_both_ways(&file));
    assert_eq!(load(&file.write()).unwrap().repairs.len(), 1);
}

#[test]
fn what_lies_before_the_last_cut_is_not_read() {
    let mut file = File::new();
    file.user("one");
    // Damage far before the cut: the whole reader reports it, reading from the end never
    // gets there.
    file.lines.extend_from_slice(b"\x00\x01 not an entry\n");
    file.answer("two");
    let kept = file.user("three");
    file.compaction(Some(&kept), true);
    file.answer("four");
    let path = file.write();
    let whole = load_whole(&path, None).unwrap();
    assert_eq!(whole.warnings.len(), 1, "{:?}", whole.warnings);
    let fast = load(&path).unwrap();
    assert!(fast.warnings.is_empty(), "{:?}", fast.warnings);
    assert_eq!(summary(&fast).replace("\n", ""), {
        let mut whole = whole;
        whole.warnings.clear();
        summary(&whole).replace("\n", "")
    });
    // Damage after the cut is the whole reader's to report, by line number.
    file.lines.extend_from_slice(b"not an entry either\n");
    file.user("five");
    let loaded = load(&file.write()).unwrap();
    assert_eq!(loaded.warnings.len(), 2, "{:?}", loaded.warnings);
}

#[test]
fn a_session_name_is_found_both_ways_also_behind_a_compaction() {
    let mut file = File::new();
    file.user("one");
    file.add(NewEntry::SessionInfo { name: "first name" });
    file.answer("two");
    file.add(NewEntry::SessionInfo {
        name: "second name",
    });
    assert!(same_both_ways(&file));
    assert_eq!(
        load(&file.write()).unwrap().name.as_deref(),
        Some("second name")
    );
    // A compaction records the name in force, so reading from the end stops there.
    let kept = file.user("three");
    file.add(NewEntry::Compaction {
        summary: "the summary",
        first_kept_entry_id: Some(&kept),
        tokens_before: 100,
        tokens_after: 10,
        model: Some(("prov", "model-c")),
        thinking: Some(ThinkingLevel::Low),
        name: Some("second name"),
        goal: None,
        preserved: &[],
    });
    file.answer("four");
    assert!(same_both_ways(&file));
    assert_eq!(
        load(&file.write()).unwrap().name.as_deref(),
        Some("second name")
    );
    // A session never named has none.
    let mut unnamed = File::new();
    unnamed.user("one");
    unnamed.compaction(None, true);
    assert!(same_both_ways(&unnamed));
    assert_eq!(load(&unnamed.write()).unwrap().name, None);
}
