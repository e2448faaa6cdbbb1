//! Time travel in the interface: what a checkpoint did not cover (said once, when it
//! changes), `/rewind` (and esc esc on an empty composer), `/fork` and `/tree`.

use super::app::App;
use crate::protocol::event::SkippedFile;

impl App {
    /// A checkpoint was taken: say what it does not cover, when that changed since the
    /// last one (every mutating call takes one; the same list again is no news).
    pub fn on_checkpoint(&mut self, skipped: &[SkippedFile]) {
        if skipped == self.checkpoint_skipped.as_slice() {
            return;
        }
        self.checkpoint_skipped = skipped.to_vec();
        if skipped.is_empty() {
            return;
        }
        const SHOWN: usize = 3;
        let mut text = format!(
            "Checkpoint: {} path(s) not covered, a rewind cannot restore them: ",
            skipped.len()
        );
        let listed: Vec<String> = skipped
            .iter()
            .take(SHOWN)
            .map(|s| format!("{} ({})", s.path, s.reason))
            .collect();
        text.push_str(&listed.join("; "));
        if skipped.len() > SHOWN {
            text.push_str(&format!("; and {} more", skipped.len() - SHOWN));
        }
        self.warning(&text);
    }
}
