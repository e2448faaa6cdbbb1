//! The picker's search through the sessions' contents, off the key path: each change of the
//! search line cancels the search going on and starts another on a blocking thread, which
//! streams the sessions whose file holds every typed word (in the list's order, so rows
//! never move) back to the interface as they are found (`TaskResult::Picker`).

use crate::tui::app::TaskResult;
use std::path::{Path, PathBuf};
use tokio::sync::mpsc::UnboundedSender;
use tokio_util::sync::CancellationToken;

/// What the search through contents tells the picker.
#[derive(Debug)]
pub enum Found {
    /// Entry `entry` holds the words of search `generation`.
    Match { generation: u64, entry: usize },
    /// Search `generation` has looked through every file.
    Done { generation: u64 },
}

/// Look through `candidates` (entry, file) for `words` on a blocking thread, telling
/// `tasks` each match as it is found, until `cancel` says the search line changed.
pub fn start(
    generation: u64,
    candidates: Vec<(usize, PathBuf)>,
    words: Vec<String>,
    cancel: CancellationToken,
    tasks: UnboundedSender<TaskResult>,
) {
    crate::tasks::spawn_blocking(move || {
        for (entry, path) in candidates {
            if cancel.is_cancelled() {
                return;
            }
            if file_holds(&path, &words, &cancel) {
                let found = Found::Match { generation, entry };
                let _ = tasks.send(TaskResult::Picker(super::Update::Found(found)));
            }
        }
        if !cancel.is_cancelled() {
            let found = Found::Done { generation };
            let _ = tasks.send(TaskResult::Picker(super::Update::Found(found)));
        }
    });
}

/// Whether the file at `path` holds every one of `words` (lowercase), ignoring ASCII case:
/// a byte search (`memchr::memmem`) through the file, one block of it in memory at a time;
/// `false` as soon as `cancel` is.
pub fn file_holds(path: &Path, words: &[String], cancel: &CancellationToken) -> bool {
    use std::io::Read;
    let Ok(mut file) = std::fs::File::open(path) else {
        return false;
    };
    let finders: Vec<memchr::memmem::Finder<'_>> = words
        .iter()
        .map(|w| memchr::memmem::Finder::new(w.as_bytes()))
        .collect();
    let mut found = vec![false; finders.len()];
    let overlap = words.iter().map(String::len).max().unwrap_or(0);
    let mut block = vec![0u8; 256 * 1024];
    let mut kept = 0;
    loop {
        if cancel.is_cancelled() {
            return false;
        }
        let Ok(read) = file.read(&mut block[kept..]) else {
            return false;
        };
        if read == 0 {
            return false;
        }
        let filled = kept + read;
        block[kept..filled].make_ascii_lowercase();
        for (finder, found) in finders.iter().zip(found.iter_mut()) {
            *found = *found || finder.find(&block[..filled]).is_some();
        }
        if found.iter().all(|f| *f) {
            return true;
        }
        // The block's end is searched again with what follows: a word across the boundary.
        kept = overlap.min(filled);
        block.copy_within(filled - kept..filled, 0);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_word_across_blocks_is_found() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("s");
        let mut text = "x".repeat(256 * 1024 - 3);
        text.push_str("needle");
        std::fs::write(&path, text).unwrap();
        let go_on = CancellationToken::new();
        assert!(file_holds(&path, &["needle".to_string()], &go_on));
        assert!(!file_holds(
            &path,
            &["needle".to_string(), "hay".to_string()],
            &go_on
        ));
        go_on.cancel();
        assert!(!file_holds(&path, &["needle".to_string()], &go_on));
    }
}
