//! A first pass over a session file: every entry's id and parent, found from the first
//! bytes of each line (entries are written `{"type":…,"id":…,"parentId":…,`), without
//! parsing the rest. From it follow the head (the last entry written), the branch that
//! leads to it (`chain`), and any entry's place in the tree. Reading a session, forking it
//! and showing its tree all start here.
//!
//! Tolerant like the reader: a line that is not an entry is left out; a parent that
//! cannot be found (its line was damaged) is taken to be the entry before, as in a file
//! written before branches existed; a parent must come earlier in the file, so a damaged
//! file can never make the chain loop.

use super::error::SessionError;
use super::format::Header;
use std::collections::HashMap;
use std::fs::File;
use std::io::{BufRead, BufReader, Seek, SeekFrom};
use std::path::Path;

/// What kind of entry a line holds.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    Message,
    ModelChange,
    ThinkingChange,
    Compaction,
    /// The session was named.
    SessionInfo,
    /// The session's goal was set or cleared.
    Goal,
    /// The head moved (a rewind, a switch of branch): an empty node of the tree.
    Branch,
    Other,
}

impl Kind {
    fn of(name: &[u8]) -> Kind {
        match name {
            b"message" => Kind::Message,
            b"model_change" => Kind::ModelChange,
            b"thinking_change" => Kind::ThinkingChange,
            b"compaction" => Kind::Compaction,
            b"session_info" => Kind::SessionInfo,
            b"goal" => Kind::Goal,
            b"branch" => Kind::Branch,
            _ => Kind::Other,
        }
    }
}

#[derive(Clone, Debug)]
pub struct Node {
    /// Where the line starts, and its number (1-based).
    pub offset: u64,
    pub number: usize,
    pub kind: Kind,
    pub id: String,
    /// The index (in `nodes`) of the parent entry.
    pub parent: Option<usize>,
}

pub struct FileIndex {
    pub header: Header,
    pub header_length: u64,
    pub nodes: Vec<Node>,
    by_id: HashMap<String, usize>,
    /// The last line: its offset, whether it ended with a newline, and whether it is an
    /// entry at all.
    pub last_line: Option<(u64, bool, bool)>,
    /// The file's length.
    pub size: u64,
    /// Numbers of the lines (before the last) that are no entry and not blank.
    pub invalid: Vec<usize>,
}

/// Call `each` for every line from byte `offset` (line `number`) to the end, reading in
/// blocks: memory stays at one line however long the file. `each` gets the line's offset,
/// number, bytes (without the newline) and whether it ended with one, and returns `false`
/// to stop.
pub fn for_each_line(
    file: &File,
    offset: u64,
    number: usize,
    mut each: impl FnMut(u64, usize, &[u8], bool) -> bool,
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
        if !each(offset, number, bytes, terminated) {
            return Ok(());
        }
        offset += read as u64;
        number += 1;
    }
}

impl FileIndex {
    pub fn read(path: &Path) -> Result<(File, FileIndex), SessionError> {
        let io = |e| SessionError::io(path, e);
        let file = File::open(path).map_err(io)?;
        let (header, header_length) = read_header(path, &file)?;
        let mut index = FileIndex {
            header,
            header_length,
            nodes: Vec::new(),
            by_id: HashMap::new(),
            last_line: None,
            size: header_length,
            invalid: Vec::new(),
        };
        // (id, parent id) of each node, parents resolved once every id is known.
        let mut parents: Vec<Option<String>> = Vec::new();
        let mut previous_blank = false;
        for_each_line(
            &file,
            header_length,
            2,
            |offset, number, bytes, terminated| {
                index.size = offset + bytes.len() as u64 + u64::from(terminated);
                let ids = ids_of(bytes);
                if let Some((_, previous_number, false)) =
                    index.last_line.map(|(o, _, e)| (o, number - 1, e))
                    && !previous_blank
                {
                    index.invalid.push(previous_number);
                }
                previous_blank = bytes.iter().all(u8::is_ascii_whitespace);
                index.last_line = Some((offset, terminated, ids.is_some()));
                if let Some((kind, id, parent)) = ids {
                    index.by_id.insert(id.clone(), index.nodes.len());
                    index.nodes.push(Node {
                        offset,
                        number,
                        kind,
                        id,
                        parent: None,
                    });
                    parents.push(parent);
                }
                true
            },
        )
        .map_err(io)?;
        // The last line decides where a writer continues: one that is cut off or not an
        // entry is no node (its first bytes may look like one).
        if let Some((offset, terminated, true)) = index.last_line
            && (!terminated || !is_entry(&file, offset)?)
        {
            index.last_line = Some((offset, terminated, false));
            if let Some(node) = index.nodes.pop() {
                index.by_id.remove(&node.id);
                parents.pop();
            }
        }
        for (i, parent) in parents.into_iter().enumerate() {
            index.nodes[i].parent = match parent {
                None => None,
                Some(id) => match index.by_id.get(&id) {
                    Some(&p) if p < i => Some(p),
                    // Missing (a damaged line) or not earlier: the entry before.
                    _ => i.checked_sub(1),
                },
            };
        }
        Ok((file, index))
    }

    pub fn find(&self, id: &str) -> Option<usize> {
        self.by_id.get(id).copied()
    }

    /// The head: the last entry written.
    pub fn head(&self) -> Option<usize> {
        self.nodes.len().checked_sub(1)
    }

    /// The entries from the root to `node`, in file order.
    pub fn chain(&self, node: usize) -> Vec<usize> {
        let mut chain = vec![node];
        let mut current = node;
        while let Some(parent) = self.nodes.get(current).and_then(|n| n.parent) {
            chain.push(parent);
            current = parent;
        }
        chain.reverse();
        chain
    }
}

/// The header (line 1) of the session file `file` at `path`, and its length with the newline.
pub fn read_header(path: &Path, file: &File) -> Result<(Header, u64), SessionError> {
    let not_a_session = |reason: &str| SessionError::NotASession {
        path: path.to_path_buf(),
        reason: reason.to_string(),
    };
    let mut first = Vec::new();
    let mut reader = BufReader::new(file);
    reader
        .seek(SeekFrom::Start(0))
        .map_err(|e| SessionError::io(path, e))?;
    let header_length = reader
        .read_until(b'\n', &mut first)
        .map_err(|e| SessionError::io(path, e))?;
    if header_length == 0 {
        return Err(not_a_session("the file is empty"));
    }
    let header: Header = serde_json::from_slice(first.strip_suffix(b"\n").unwrap_or(&first))
        .map_err(|_| not_a_session("the first line is not a session header"))?;
    if header.kind != "session" {
        return Err(not_a_session("the first line is not a session header"));
    }
    Ok((header, header_length as u64))
}

fn is_entry(file: &File, offset: u64) -> Result<bool, SessionError> {
    let mut valid = false;
    let _ = for_each_line(file, offset, 0, |_, _, bytes, _| {
        valid = super::entry_line::parse_entry(bytes).is_ok();
        false
    });
    Ok(valid)
}

/// The kind, id and parent id of an entry line, from its first bytes when it was written
/// by this program, by parsing it otherwise. `None`: not an entry.
pub(super) fn ids_of(line: &[u8]) -> Option<(Kind, String, Option<String>)> {
    if let Some(found) = quick_ids(line) {
        return Some(found);
    }
    #[derive(serde::Deserialize)]
    #[serde(rename_all = "camelCase")]
    struct Ids {
        #[serde(rename = "type")]
        kind: String,
        id: String,
        #[serde(default)]
        parent_id: Option<String>,
    }
    let ids: Ids = serde_json::from_slice(line).ok()?;
    Some((Kind::of(ids.kind.as_bytes()), ids.id, ids.parent_id))
}

fn quick_ids(line: &[u8]) -> Option<(Kind, String, Option<String>)> {
    let rest = line.strip_prefix(b"{\"type\":\"")?;
    let (kind, rest) = split_quoted(rest)?;
    let rest = rest.strip_prefix(b",\"id\":\"")?;
    let (id, rest) = split_quoted(rest)?;
    let rest = rest.strip_prefix(b",\"parentId\":")?;
    let parent = if rest.starts_with(b"null") {
        None
    } else {
        let (parent, _) = split_quoted(rest.strip_prefix(b"\"")?)?;
        Some(String::from_utf8(parent.to_vec()).ok()?)
    };
    Some((Kind::of(kind), String::from_utf8(id.to_vec()).ok()?, parent))
}

/// The text up to the next `"` (which must not be escaped: ids and types never are), and
/// what follows it.
fn split_quoted(bytes: &[u8]) -> Option<(&[u8], &[u8])> {
    let end = bytes.iter().position(|&b| b == b'"')?;
    let text = &bytes[..end];
    if text.contains(&b'\\') {
        return None;
    }
    Some((text, &bytes[end + 1..]))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_come_from_the_first_bytes_or_a_parse() {
        assert_eq!(
            quick_ids(br#"{"type":"message","id":"a1","parentId":"a0","timestamp":1}"#),
            Some((Kind::Message, "a1".into(), Some("a0".into())))
        );
        assert_eq!(
            ids_of(br#"{"id":"b","type":"branch","parentId":null}"#),
            Some((Kind::Branch, "b".into(), None))
        );
        assert_eq!(ids_of(b"{\"type\":\"mess"), None);
    }
}
