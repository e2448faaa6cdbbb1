//! Operations on a session's tree of entries: the parent of an entry, the tree as a front
//! end shows it (`/tree`, RPC `get_tree`), and forking — a new session file that starts
//! with the branch leading to a chosen entry and names the session and entry it came from.

use super::error::SessionError;
use super::format::{Entry, Header};
use super::index::{FileIndex, Kind, for_each_line};
use crate::protocol::message::{Message, now_millis};
use serde::Serialize;
use std::collections::HashSet;
use std::io::Write;
use std::path::Path;

/// The entry `id` follows (`None`: it is the first).
pub fn parent_of(path: &Path, id: &str) -> Result<Option<String>, SessionError> {
    let (_, index) = FileIndex::read(path)?;
    let node = index
        .find(id)
        .ok_or_else(|| SessionError::NoSuchEntry(id.to_string()))?;
    Ok(index.nodes[node]
        .parent
        .map(|parent| index.nodes[parent].id.clone()))
}

/// The ids of the entries on the branch that leads to entry `id`, from the first to it.
pub fn branch_of(path: &Path, id: &str) -> Result<Vec<String>, SessionError> {
    let (_, index) = FileIndex::read(path)?;
    let node = index
        .find(id)
        .ok_or_else(|| SessionError::NoSuchEntry(id.to_string()))?;
    Ok(index
        .chain(node)
        .into_iter()
        .map(|n| index.nodes[n].id.clone())
        .collect())
}

/// One message (or compaction) of a session's tree.
#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct TreeNode {
    pub id: String,
    /// The nearest earlier message or compaction on its branch (settings and head moves
    /// in between are left out).
    pub parent_id: Option<String>,
    /// `user`, `assistant`, `toolResult`, or `compaction`.
    pub role: String,
    /// The start of its text, on one line.
    pub text: String,
    pub timestamp: i64,
    /// On the branch that leads to the head.
    pub current: bool,
}

#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct SessionTree {
    /// The last message on the current branch.
    pub head: Option<String>,
    pub nodes: Vec<TreeNode>,
}

const PREVIEW_CHARS: usize = 120;

pub fn tree(path: &Path) -> Result<SessionTree, SessionError> {
    let (file, index) = FileIndex::read(path)?;
    let current: HashSet<usize> = index
        .head()
        .map(|h| index.chain(h).into_iter().collect())
        .unwrap_or_default();
    let visible = |n: usize| matches!(index.nodes[n].kind, Kind::Message | Kind::Compaction);
    // Each node's nearest visible ancestor.
    let mut shown_parent: Vec<Option<usize>> = Vec::with_capacity(index.nodes.len());
    for node in &index.nodes {
        shown_parent.push(node.parent.and_then(|p| {
            if visible(p) {
                Some(p)
            } else {
                shown_parent.get(p).copied().flatten()
            }
        }));
    }
    let by_offset: std::collections::HashMap<u64, usize> = index
        .nodes
        .iter()
        .enumerate()
        .filter(|(i, _)| visible(*i))
        .map(|(i, n)| (n.offset, i))
        .collect();
    let mut nodes = Vec::new();
    let mut head = None;
    for_each_line(&file, index.header_length, 2, |offset, _, bytes, _| {
        let Some(&i) = by_offset.get(&offset) else {
            return true;
        };
        let (role, text, timestamp) = match super::entry_line::parse_entry(bytes) {
            Ok(Entry::Message {
                message, timestamp, ..
            }) => {
                let role = match &message {
                    Message::User(_) => "user",
                    Message::Assistant(_) => "assistant",
                    Message::ToolResult(_) => "toolResult",
                };
                (role, preview(&message), timestamp)
            }
            Ok(Entry::Compaction {
                summary,
                timestamp,
                tokens_before,
                tokens_after,
                ..
            }) => (
                "compaction",
                one_line(&format!(
                    "{tokens_before} → {tokens_after} tokens: {summary}"
                )),
                timestamp,
            ),
            _ => return true,
        };
        if current.contains(&i) {
            head = Some(index.nodes[i].id.clone());
        }
        nodes.push(TreeNode {
            id: index.nodes[i].id.clone(),
            parent_id: shown_parent[i].map(|p| index.nodes[p].id.clone()),
            role: role.to_string(),
            text,
            timestamp,
            current: current.contains(&i),
        });
        true
    })
    .map_err(|e| SessionError::io(path, e))?;
    Ok(SessionTree { head, nodes })
}

/// Every user message of the session file, on every branch, in the order written: its
/// entry id and its text (a fork can start at any of them).
pub fn user_messages(path: &Path) -> Result<Vec<(String, String)>, SessionError> {
    let (file, index) = FileIndex::read(path)?;
    let mut found = Vec::new();
    for_each_line(&file, index.header_length, 2, |_, _, bytes, _| {
        if let Ok(Entry::Message {
            id,
            message: Message::User(user),
            ..
        }) = super::entry_line::parse_entry(bytes)
        {
            found.push((id, user.typed_text().to_string()));
        }
        true
    })
    .map_err(|e| SessionError::io(path, e))?;
    Ok(found)
}

/// The start of a message's text, on one line.
pub fn preview(message: &Message) -> String {
    let text = match message {
        Message::User(user) => user.typed_text().to_string(),
        Message::Assistant(assistant) => {
            let text = assistant.text();
            if text.trim().is_empty() {
                assistant
                    .tool_calls()
                    .map(|c| c.name.clone())
                    .collect::<Vec<_>>()
                    .join(", ")
            } else {
                text
            }
        }
        Message::ToolResult(result) => crate::protocol::message::join_text(&result.content),
    };
    one_line(&text)
}

fn one_line(text: &str) -> String {
    let joined = text.split_whitespace().collect::<Vec<_>>().join(" ");
    match joined.char_indices().nth(PREVIEW_CHARS) {
        Some((cut, _)) => format!("{}…", &joined[..cut]),
        None => joined,
    }
}

/// Write a new session file at `dest` (id `new_id`, working directory `cwd`) holding the
/// branch of `source` that leads to entry `at` (nothing when `None`), its header naming
/// `source`'s session and `at`. The entries keep their ids. The file is created
/// exclusively; it is complete (and synced) when this returns.
pub fn fork(
    source: &Path,
    at: Option<&str>,
    dest: &Path,
    new_id: &str,
    cwd: &str,
) -> Result<(), SessionError> {
    let io = |e| SessionError::io(source, e);
    let (file, index) = FileIndex::read(source)?;
    let chain: HashSet<u64> = match at {
        Some(id) => {
            let node = index
                .find(id)
                .ok_or_else(|| SessionError::NoSuchEntry(id.to_string()))?;
            index
                .chain(node)
                .into_iter()
                .map(|n| index.nodes[n].offset)
                .collect()
        }
        None => HashSet::new(),
    };
    let mut header = Header::new(new_id, cwd, now_millis());
    header.parent_session = Some(index.header.id.clone());
    header.parent_entry_id = at.map(String::from);
    let mut bytes = serde_json::to_vec(&header).map_err(|e| io(e.into()))?;
    bytes.push(b'\n');
    for_each_line(&file, index.header_length, 2, |offset, _, line, _| {
        if chain.contains(&offset) {
            bytes.extend_from_slice(line);
            bytes.push(b'\n');
        }
        true
    })
    .map_err(io)?;
    let mut out = super::appender::create_file(dest).map_err(|e| SessionError::io(dest, e))?;
    out.write_all(&bytes)
        .and_then(|()| out.sync_data())
        .map_err(|e| SessionError::io(dest, e))
}
