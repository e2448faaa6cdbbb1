//! Exporting a session as a self-contained HTML file (`export_html`) or as Markdown
//! (`markdown`). The session file is the source when there is one — every entry of the current branch, also what a compaction
//! took out of the model's context (a branch abandoned by a rewind is left out) — else the
//! conversation in memory.

mod html;
mod markdown;

pub use markdown::Heading as MarkdownHeading;

use super::SessionError;
use super::format::Entry;
use crate::protocol::message::Message;
use html::{Heading, Item};
use std::io::{BufRead, BufReader, Write};
use std::path::Path;
use std::sync::Arc;

/// The session to export.
pub struct Source<'a> {
    pub id: &'a str,
    pub cwd: &'a Path,
    /// The session file, if the session is kept on disk and has been written.
    pub file: Option<&'a Path>,
    /// The conversation in memory, used when there is no file to read.
    pub context: &'a [Arc<Message>],
}

/// Write `source` as HTML to `output` (replaced as a whole: written beside it, then
/// renamed). Blocking: call it off the async workers.
pub fn export_html(source: &Source<'_>, output: &Path) -> Result<(), SessionError> {
    write_replacing(output, html_page(source)?.as_bytes())
}

/// `source` as one self-contained HTML page.
pub fn html_page(source: &Source<'_>) -> Result<String, SessionError> {
    let items = items_of(source)?;
    let cwd = source.cwd.to_string_lossy();
    let file = source.file.map(|f| f.to_string_lossy().into_owned());
    Ok(html::render(
        &Heading {
            id: source.id,
            cwd: &cwd,
            file: file.as_deref(),
            exported_at: std::time::SystemTime::now(),
        },
        &items,
    ))
}

/// `source` as a Markdown document under `heading`.
pub fn markdown(
    source: &Source<'_>,
    heading: &MarkdownHeading<'_>,
) -> Result<String, SessionError> {
    Ok(markdown::render(heading, &items_of(source)?))
}

/// What an export shows: the file's current branch, else the conversation in memory.
fn items_of(source: &Source<'_>) -> Result<Vec<Item>, SessionError> {
    Ok(match source.file.filter(|file| file.is_file()) {
        Some(file) => read_items(file)?,
        None => source
            .context
            .iter()
            .map(|message| Item::Message(Message::clone(message)))
            .collect(),
    })
}

/// Every entry of the session file's current branch that can be read; lines that cannot
/// (a torn last line) are left out, as when the session is loaded.
fn read_items(file: &Path) -> Result<Vec<Item>, SessionError> {
    let (_, index) = super::index::FileIndex::read(file)?;
    let branch: std::collections::HashSet<&str> = index
        .head()
        .map(|head| index.chain(head))
        .unwrap_or_default()
        .into_iter()
        .filter_map(|i| index.nodes.get(i).map(|n| n.id.as_str()))
        .collect();
    let reader = BufReader::new(std::fs::File::open(file).map_err(|e| SessionError::io(file, e))?);
    let mut items = Vec::new();
    for line in reader.split(b'\n') {
        let line = line.map_err(|e| SessionError::io(file, e))?;
        let Ok(entry) = crate::session::entry_line::parse_entry(&line) else {
            continue;
        };
        if !branch.contains(entry.id()) {
            continue;
        }
        items.push(match entry {
            Entry::Message { message, .. } => Item::Message(message),
            Entry::ModelChange {
                provider, model, ..
            } => Item::ModelChange { provider, model },
            Entry::ThinkingChange { thinking, .. } => {
                Item::ThinkingChange(thinking.as_str().to_string())
            }
            Entry::Compaction {
                summary,
                tokens_before,
                tokens_after,
                ..
            } => Item::Compaction {
                summary,
                tokens_before,
                tokens_after,
            },
            Entry::Branch { .. } | Entry::SessionInfo { .. } | Entry::Goal { .. } => continue,
        });
    }
    Ok(items)
}

/// Write `bytes` to `output`, replacing it as a whole (written beside it, then renamed).
pub fn write_replacing(output: &Path, bytes: &[u8]) -> Result<(), SessionError> {
    if let Ok(metadata) = std::fs::metadata(output)
        && !metadata.is_file()
    {
        return Err(SessionError::io(
            output,
            std::io::Error::other("it exists and is not a regular file"),
        ));
    }
    let dir = match output.parent() {
        Some(dir) if !dir.as_os_str().is_empty() => dir,
        _ => Path::new("."),
    };
    let mut file = tempfile::Builder::new()
        .prefix(".export-")
        .tempfile_in(dir)
        .map_err(|e| SessionError::io(dir, e))?;
    file.write_all(bytes)
        .and_then(|()| file.as_file().sync_all())
        .map_err(|e| SessionError::io(output, e))?;
    file.persist(output)
        .map_err(|e| SessionError::io(output, e.error))?;
    Ok(())
}
