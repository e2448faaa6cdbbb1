//! A running command's output: the last part kept in memory for the model and for live
//! updates, and — once there is more than the model will be shown — all of it in a file in
//! the conversation's spill directory (`tools::spill`: beside the session file).

use crate::protocol::event::ToolResultPayload;
use crate::protocol::message::Content;
use crate::tools::spill::SpillDir;
use crate::tools::truncate::{MAX_BYTES, MAX_LINES, tail};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use tokio::io::AsyncWriteExt;

/// The in-memory tail kept while a command runs.
const TAIL_BYTES: usize = 2 * MAX_BYTES;
/// Lines shown in live updates.
const UPDATE_LINES: usize = 50;

/// Keeps the last `TAIL_BYTES` of output in memory and, once output outgrows what the model
/// will be shown (in bytes or in lines), all of it in a file.
pub struct Collector {
    tail: Vec<u8>,
    total_bytes: usize,
    total_lines: usize,
    spill: Option<(tokio::fs::File, PathBuf)>,
    spill_failed: bool,
    spill_dir: Arc<SpillDir>,
}

impl Collector {
    /// Full output, when there is too much, goes to a file in `spill_dir`.
    pub fn new(spill_dir: Arc<SpillDir>) -> Collector {
        Collector {
            tail: Vec::new(),
            total_bytes: 0,
            total_lines: 0,
            spill: None,
            spill_failed: false,
            spill_dir,
        }
    }

    pub async fn push(&mut self, bytes: &[u8]) {
        self.total_bytes += bytes.len();
        self.total_lines += bytes.iter().filter(|b| **b == b'\n').count();
        let too_long = self.total_bytes > MAX_BYTES || self.total_lines > MAX_LINES;
        if self.spill.is_none() && !self.spill_failed && too_long {
            self.start_spill().await;
        }
        if let Some((file, _)) = &mut self.spill
            && file.write_all(bytes).await.is_err()
        {
            self.spill = None;
            self.spill_failed = true;
        }
        self.tail.extend_from_slice(bytes);
        if self.tail.len() > 2 * TAIL_BYTES {
            let excess = self.tail.len() - TAIL_BYTES;
            self.tail.drain(..excess);
        }
    }

    /// Start the full-output file with what is already in memory (all of it, so far).
    async fn start_spill(&mut self) {
        let (file, path) = match self.spill_dir.create("bash-", ".log") {
            Ok(created) => created,
            Err(error) => {
                tracing::warn!(%error, "could not save a command's full output");
                self.spill_failed = true;
                return;
            }
        };
        let mut file = tokio::fs::File::from_std(file);
        if file.write_all(&self.tail).await.is_err() {
            self.spill_failed = true;
            return;
        }
        self.spill = Some((file, path));
    }

    fn text(&self) -> String {
        let mut text = String::from_utf8_lossy(&self.tail).into_owned();
        if self.total_bytes > self.tail.len() {
            // The kept bytes may start mid-line; drop the partial first line.
            if let Some(newline) = text.find('\n') {
                text.drain(..=newline);
            }
        }
        text
    }

    pub fn update(&self) -> ToolResultPayload {
        let shown = tail(&self.text(), UPDATE_LINES, 8 * 1024);
        ToolResultPayload {
            content: vec![Content::text(shown.text)],
            details: None,
        }
    }

    /// The output the model is shown — its tail, with a notice when that is not all of
    /// it — whether that is not all of it, and the file holding all of it, if one was
    /// written.
    pub async fn finish(mut self) -> (String, bool, Option<PathBuf>) {
        let spill_path = match self.spill.take() {
            Some((mut file, path)) => {
                let _ = file.flush().await;
                Some(path)
            }
            None => None,
        };
        let text = self.text();
        let shown = tail(&text, MAX_LINES, MAX_BYTES);
        let output = shown.text.trim_end_matches('\n');
        let mut result = if output.is_empty() {
            "(no output)".to_string()
        } else {
            output.to_string()
        };
        let truncated = shown.truncated || self.total_bytes > self.tail.len();
        if truncated {
            result.push_str(&truncation_notice(
                shown.kept_lines,
                self.total_bytes,
                spill_path.as_deref(),
            ));
        }
        (result, truncated, spill_path)
    }
}

fn truncation_notice(kept_lines: usize, total_bytes: usize, spill: Option<&Path>) -> String {
    let mut notice = format!(
        "\n\n[Output truncated: showing the last {kept_lines} lines of {total_bytes} bytes."
    );
    match spill {
        Some(path) => notice.push_str(&format!(" Full output: {}]", path.display())),
        None => notice.push(']'),
    }
    notice
}
