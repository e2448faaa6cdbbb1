//! The session file format (docs/sessions.md): one JSON object per line. Line 1 is the
//! header; every later line is an entry with an `id` and a `parentId`: the entry it
//! follows. Entries form a tree: a rewind appends a `branch` entry naming an earlier entry
//! as parent, and the conversation goes on from there; the abandoned branch stays.

use crate::llm::request::ThinkingLevel;
use crate::protocol::message::Message;
use serde::{Deserialize, Serialize};

pub const FORMAT_VERSION: u32 = 1;

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Header {
    #[serde(rename = "type")]
    pub kind: String,
    pub version: u32,
    pub id: String,
    pub cwd: String,
    pub timestamp: i64,
    /// A fork: the session it was forked from…
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub parent_session: Option<String>,
    /// …and the entry of that session it continues from (`null`: from the start).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub parent_entry_id: Option<String>,
    /// A sub-agent's session: the `task` call of the parent session (`parent_session`)
    /// that started it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub parent_tool_call_id: Option<String>,
}

impl Header {
    pub fn new(id: &str, cwd: &str, timestamp: i64) -> Self {
        Header {
            kind: "session".to_string(),
            version: FORMAT_VERSION,
            id: id.to_string(),
            cwd: cwd.to_string(),
            timestamp,
            parent_session: None,
            parent_entry_id: None,
            parent_tool_call_id: None,
        }
    }
}

/// An entry as read back from a file.
#[derive(Clone, Debug, PartialEq, Deserialize)]
#[serde(
    tag = "type",
    rename_all = "snake_case",
    rename_all_fields = "camelCase"
)]
pub enum Entry {
    Message {
        id: String,
        #[serde(default)]
        parent_id: Option<String>,
        #[serde(default)]
        timestamp: i64,
        message: Message,
    },
    ModelChange {
        id: String,
        #[serde(default)]
        parent_id: Option<String>,
        #[serde(default)]
        timestamp: i64,
        provider: String,
        model: String,
    },
    ThinkingChange {
        id: String,
        #[serde(default)]
        parent_id: Option<String>,
        #[serde(default)]
        timestamp: i64,
        thinking: ThinkingLevel,
    },
    /// The history up to `first_kept_entry_id` is summarised by `summary`; the entries
    /// before stay in the file but are no longer sent to the model.
    Compaction {
        id: String,
        #[serde(default)]
        parent_id: Option<String>,
        #[serde(default)]
        timestamp: i64,
        summary: String,
        first_kept_entry_id: Option<String>,
        tokens_before: u64,
        tokens_after: u64,
        /// The provider, model and reasoning level in use when it was written (absent in
        /// files from before they were recorded): a reader that starts at the last
        /// compaction needs nothing before it.
        #[serde(default)]
        provider: Option<String>,
        #[serde(default)]
        model: Option<String>,
        #[serde(default)]
        thinking: Option<ThinkingLevel>,
        /// The session's name then (`None`: it had none), when the settings are recorded.
        #[serde(default)]
        name: Option<String>,
        /// The session's goal then (`None`: none), when the settings are recorded.
        #[serde(default)]
        goal: Option<String>,
        /// What the compaction kept verbatim beside the summary (the user's request, the
        /// task list, the files and their state, …): one text block each, sent after it.
        #[serde(default)]
        preserved: Vec<String>,
    },
    /// The session was given a name (`set_session_name`): the last one on the branch holds.
    SessionInfo {
        id: String,
        #[serde(default)]
        parent_id: Option<String>,
        #[serde(default)]
        timestamp: i64,
        name: String,
    },
    /// The session's goal from now on (`set_goal`): `null` when it was cleared or done.
    /// The last one on the branch holds.
    Goal {
        id: String,
        #[serde(default)]
        parent_id: Option<String>,
        #[serde(default)]
        timestamp: i64,
        #[serde(default)]
        goal: Option<String>,
    },
    /// The head moved (a rewind, a switch to another branch): the conversation continues
    /// from `parent_id`; `from` was the head before.
    Branch {
        id: String,
        #[serde(default)]
        parent_id: Option<String>,
        #[serde(default)]
        timestamp: i64,
        #[serde(default)]
        from: Option<String>,
    },
}

impl Entry {
    pub fn id(&self) -> &str {
        match self {
            Entry::Message { id, .. }
            | Entry::ModelChange { id, .. }
            | Entry::ThinkingChange { id, .. }
            | Entry::Compaction { id, .. }
            | Entry::SessionInfo { id, .. }
            | Entry::Goal { id, .. }
            | Entry::Branch { id, .. } => id,
        }
    }

    pub fn parent_id(&self) -> Option<&str> {
        match self {
            Entry::Message { parent_id, .. }
            | Entry::ModelChange { parent_id, .. }
            | Entry::ThinkingChange { parent_id, .. }
            | Entry::Compaction { parent_id, .. }
            | Entry::SessionInfo { parent_id, .. }
            | Entry::Goal { parent_id, .. }
            | Entry::Branch { parent_id, .. } => parent_id.as_deref(),
        }
    }

    pub fn timestamp(&self) -> i64 {
        match self {
            Entry::Message { timestamp, .. }
            | Entry::ModelChange { timestamp, .. }
            | Entry::ThinkingChange { timestamp, .. }
            | Entry::Compaction { timestamp, .. }
            | Entry::SessionInfo { timestamp, .. }
            | Entry::Goal { timestamp, .. }
            | Entry::Branch { timestamp, .. } => *timestamp,
        }
    }
}

/// The payload of an entry to write; the writer adds `id`, `parentId` and `timestamp`.
/// Borrows the message so writing never clones it.
#[derive(Clone, Copy)]
pub enum NewEntry<'a> {
    Message(&'a Message),
    ModelChange {
        provider: &'a str,
        model: &'a str,
    },
    ThinkingChange(ThinkingLevel),
    Compaction {
        summary: &'a str,
        first_kept_entry_id: Option<&'a str>,
        tokens_before: u64,
        tokens_after: u64,
        /// The provider and model in use, the reasoning level, and the session's name.
        model: Option<(&'a str, &'a str)>,
        thinking: Option<ThinkingLevel>,
        name: Option<&'a str>,
        goal: Option<&'a str>,
        preserved: &'a [String],
    },
    /// The session's goal from now on (`None`: none).
    Goal {
        goal: Option<&'a str>,
    },
    /// The session's name from now on.
    SessionInfo {
        name: &'a str,
    },
    /// The head moves to the entry given as parent; `from` is the head it leaves.
    Branch {
        from: Option<&'a str>,
    },
}

/// The line as written: `type` first, then `id`, `parentId`, `timestamp`, then the payload,
/// so a reader can classify a line from its first bytes.
#[derive(Serialize)]
#[serde(
    tag = "type",
    rename_all = "snake_case",
    rename_all_fields = "camelCase"
)]
enum Line<'a> {
    Message {
        id: &'a str,
        parent_id: Option<&'a str>,
        timestamp: i64,
        message: &'a Message,
    },
    ModelChange {
        id: &'a str,
        parent_id: Option<&'a str>,
        timestamp: i64,
        provider: &'a str,
        model: &'a str,
    },
    ThinkingChange {
        id: &'a str,
        parent_id: Option<&'a str>,
        timestamp: i64,
        thinking: ThinkingLevel,
    },
    Compaction {
        id: &'a str,
        parent_id: Option<&'a str>,
        timestamp: i64,
        summary: &'a str,
        first_kept_entry_id: Option<&'a str>,
        tokens_before: u64,
        tokens_after: u64,
        #[serde(skip_serializing_if = "Option::is_none")]
        provider: Option<&'a str>,
        #[serde(skip_serializing_if = "Option::is_none")]
        model: Option<&'a str>,
        #[serde(skip_serializing_if = "Option::is_none")]
        thinking: Option<ThinkingLevel>,
        #[serde(skip_serializing_if = "Option::is_none")]
        name: Option<&'a str>,
        #[serde(skip_serializing_if = "Option::is_none")]
        goal: Option<&'a str>,
        #[serde(skip_serializing_if = "<[String]>::is_empty")]
        preserved: &'a [String],
    },
    Goal {
        id: &'a str,
        parent_id: Option<&'a str>,
        timestamp: i64,
        goal: Option<&'a str>,
    },
    SessionInfo {
        id: &'a str,
        parent_id: Option<&'a str>,
        timestamp: i64,
        name: &'a str,
    },
    Branch {
        id: &'a str,
        parent_id: Option<&'a str>,
        timestamp: i64,
        from: Option<&'a str>,
    },
}

/// The first bytes of every compaction line.
pub const COMPACTION_PREFIX: &[u8] = b"{\"type\":\"compaction\",";

/// One complete line (with its newline) for `entry`.
pub fn encode(
    entry: NewEntry<'_>,
    id: &str,
    parent_id: Option<&str>,
    timestamp: i64,
) -> serde_json::Result<Vec<u8>> {
    let line = match entry {
        NewEntry::Message(message) => Line::Message {
            id,
            parent_id,
            timestamp,
            message,
        },
        NewEntry::ModelChange { provider, model } => Line::ModelChange {
            id,
            parent_id,
            timestamp,
            provider,
            model,
        },
        NewEntry::ThinkingChange(thinking) => Line::ThinkingChange {
            id,
            parent_id,
            timestamp,
            thinking,
        },
        NewEntry::Compaction {
            summary,
            first_kept_entry_id,
            tokens_before,
            tokens_after,
            model,
            thinking,
            name,
            goal,
            preserved,
        } => Line::Compaction {
            id,
            parent_id,
            timestamp,
            summary,
            first_kept_entry_id,
            tokens_before,
            tokens_after,
            provider: model.map(|(provider, _)| provider),
            model: model.map(|(_, model)| model),
            thinking,
            name,
            goal,
            preserved,
        },
        NewEntry::Goal { goal } => Line::Goal {
            id,
            parent_id,
            timestamp,
            goal,
        },
        NewEntry::SessionInfo { name } => Line::SessionInfo {
            id,
            parent_id,
            timestamp,
            name,
        },
        NewEntry::Branch { from } => Line::Branch {
            id,
            parent_id,
            timestamp,
            from,
        },
    };
    let mut bytes = serde_json::to_vec(&line)?;
    bytes.push(b'\n');
    Ok(bytes)
}

/// A fresh entry id: 48 random bits in hex.
pub fn new_entry_id() -> String {
    format!("{:012x}", fastrand::u64(..1 << 48))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::protocol::message::UserMessage;

    #[test]
    fn entries_round_trip() {
        let message = Message::User(UserMessage::text("hi"));
        let line = encode(NewEntry::Message(&message), "a1", Some("a0"), 5).unwrap();
        let text = std::str::from_utf8(&line).unwrap();
        assert!(
            text.starts_with(
                "{\"type\":\"message\",\"id\":\"a1\",\"parentId\":\"a0\",\"timestamp\":5,"
            ),
            "{text}"
        );
        let entry: Entry = serde_json::from_slice(&line).unwrap();
        assert_eq!(
            entry,
            Entry::Message {
                id: "a1".into(),
                parent_id: Some("a0".into()),
                timestamp: 5,
                message
            }
        );
        let line = encode(
            NewEntry::Compaction {
                summary: "s",
                first_kept_entry_id: Some("a1"),
                tokens_before: 10,
                tokens_after: 2,
                model: Some(("openai", "gpt-4.1")),
                thinking: Some(ThinkingLevel::High),
                name: None,
                goal: Some("ship it"),
                preserved: &["kept".to_string()],
            },
            "c1",
            Some("a1"),
            6,
        )
        .unwrap();
        assert!(line.starts_with(COMPACTION_PREFIX));
        let entry: Entry = serde_json::from_slice(&line).unwrap();
        assert!(
            matches!(entry, Entry::Compaction { ref first_kept_entry_id, .. } if first_kept_entry_id.as_deref() == Some("a1"))
        );
        let Entry::Compaction {
            provider,
            model,
            thinking,
            ..
        } = entry
        else {
            panic!("not a compaction: {entry:?}");
        };
        assert_eq!(
            (provider.as_deref(), model.as_deref(), thinking),
            (Some("openai"), Some("gpt-4.1"), Some(ThinkingLevel::High))
        );
    }
}
