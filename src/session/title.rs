//! A session's title and size, derived when it is read (nothing is written for them, so
//! sessions from before titles existed get one too): the last name given on the current
//! branch (`session_info`, `/rename`, `agent sessions rename`), else the first line of the
//! first prompt on it, cut to `TITLE_CHARS`. Only those lines are parsed; every other
//! line is classified by its first bytes (`index`).

use super::error::SessionError;
use super::format::Entry;
use super::index::{FileIndex, Kind};
use super::load::parse_at;
use crate::protocol::message::Message;
use std::path::Path;

/// The longest title derived from a prompt, in characters.
pub const TITLE_CHARS: usize = 80;

#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Described {
    /// `None`: no name and no prompt yet.
    pub title: Option<String>,
    /// Whether the title is a name someone gave (not the first prompt).
    pub named: bool,
    /// Messages on the current branch (user, assistant and tool results).
    pub messages: usize,
}

/// The title and size of the session file at `path`.
pub fn describe(path: &Path) -> Result<Described, SessionError> {
    let (file, index) = FileIndex::read(path)?;
    let chain = index.head().map(|h| index.chain(h)).unwrap_or_default();
    let io = |e| SessionError::io(path, e);
    let mut described = Described::default();
    let mut name: Option<String> = None;
    let mut first_prompt: Option<String> = None;
    for &node in &chain {
        let node = &index.nodes[node];
        match node.kind {
            Kind::Message => {
                described.messages += 1;
                if first_prompt.is_none()
                    && let Some(Entry::Message {
                        message: Message::User(user),
                        ..
                    }) = parse_at(&file, node.offset).map_err(io)?
                {
                    first_prompt = Some(user.typed_text().to_string());
                }
            }
            Kind::SessionInfo => {
                if let Some(Entry::SessionInfo { name: given, .. }) =
                    parse_at(&file, node.offset).map_err(io)?
                {
                    name = Some(given);
                }
            }
            // A compaction that recorded the settings carries the name of its time.
            Kind::Compaction => {
                if let Some(Entry::Compaction {
                    provider: Some(_),
                    model: Some(_),
                    thinking: Some(_),
                    name: recorded,
                    ..
                }) = parse_at(&file, node.offset).map_err(io)?
                {
                    name = recorded;
                }
            }
            _ => {}
        }
    }
    let name = name.map(|n| n.trim().to_string()).filter(|n| !n.is_empty());
    described.named = name.is_some();
    described.title = name.or_else(|| first_prompt.as_deref().and_then(title_from_prompt));
    Ok(described)
}

/// The first non-blank line of a prompt, cut to `TITLE_CHARS` characters (`…` marks a cut).
pub fn title_from_prompt(prompt: &str) -> Option<String> {
    let line = prompt.lines().map(str::trim).find(|l| !l.is_empty())?;
    if line.chars().count() <= TITLE_CHARS {
        return Some(line.to_string());
    }
    let mut cut: String = line.chars().take(TITLE_CHARS - 1).collect();
    cut.truncate(cut.trim_end().len());
    cut.push('…');
    Some(cut)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_prompt_gives_its_first_line_cut_to_length() {
        assert_eq!(
            title_from_prompt("\n  fix the build  \nit fails on CI"),
            Some("fix the build".to_string())
        );
        assert_eq!(title_from_prompt(" \n\t"), None);
        let long = "é".repeat(200);
        let title = title_from_prompt(&long).unwrap();
        assert_eq!(title.chars().count(), TITLE_CHARS);
        assert!(title.ends_with('…'));
    }
}
