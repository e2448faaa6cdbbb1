//! Reading an entry line without serde's buffering (issue 32). `Entry` and `Message` are
//! internally tagged enums, which serde's derived reader reads by first buffering the
//! whole object as its generic `Content` tree and only then choosing the variant — for a
//! message line the line is buffered, then its message again. Lines as `format::encode`
//! writes them say the tag first (`"type":"message"`, then `"role"` first in the message),
//! so knowing the tag up front, a message line is read straight into its message type.
//! Written by hand because serde has no attribute for "the tag comes first"; any other
//! line (another kind of entry, a tag not first, a damaged line) is read by the derived
//! reader, so results and errors are the same as before.

use super::format::Entry;
use crate::protocol::message::{AssistantMessage, Message, ToolResultMessage, UserMessage};
use serde::de::{self, Deserializer, MapAccess, Visitor};
use serde::{Deserialize, de::value::MapAccessDeserializer};

/// How a message line as written starts.
const MESSAGE_LINE: &[u8] = b"{\"type\":\"message\",";

/// The entry on `line` (without its newline).
pub fn parse_entry(line: &[u8]) -> serde_json::Result<Entry> {
    if line.starts_with(MESSAGE_LINE)
        && let Ok(MessageLine {
            id,
            parent_id,
            timestamp,
            message: RoleFirst(message),
        }) = serde_json::from_slice::<MessageLine>(line)
    {
        return Ok(Entry::Message {
            id,
            parent_id,
            timestamp,
            message,
        });
    }
    serde_json::from_slice(line)
}

/// A message line's fields (its `type` was seen first, so the key is passed over).
#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct MessageLine {
    id: String,
    #[serde(default)]
    parent_id: Option<String>,
    #[serde(default)]
    timestamp: i64,
    message: RoleFirst,
}

/// A message whose `role` is its first key.
struct RoleFirst(Message);

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
enum Role {
    User,
    Assistant,
    ToolResult,
}

impl<'de> Deserialize<'de> for RoleFirst {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_map(RoleFirstVisitor)
    }
}

struct RoleFirstVisitor;

impl<'de> Visitor<'de> for RoleFirstVisitor {
    type Value = RoleFirst;

    fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        f.write_str("a message whose role comes first")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<RoleFirst, A::Error> {
        // A key with escapes is no borrowed string: not as written, the derived reader reads it.
        if map.next_key::<&'de str>()? != Some("role") {
            return Err(de::Error::custom("the role is not the first key"));
        }
        let role: Role = map.next_value()?;
        let rest = MapAccessDeserializer::new(map);
        Ok(RoleFirst(match role {
            Role::User => Message::User(UserMessage::deserialize(rest)?),
            Role::Assistant => Message::Assistant(AssistantMessage::deserialize(rest)?),
            Role::ToolResult => Message::ToolResult(ToolResultMessage::deserialize(rest)?),
        }))
    }
}

#[cfg(test)]
#[path = "entry_line_tests.rs"]
mod tests;
