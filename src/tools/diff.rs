//! Unified diffs of a file's text before and after a change — for `edit` and `write`
//! results, and for the preview an approval dialog shows before a call runs — and reading
//! the current text of a file for one without ever blocking or holding too much: only a
//! regular file, of bounded size, that is UTF-8 text.

use similar::TextDiff;
use std::path::Path;
use std::time::Duration;

/// Files larger than this are not diffed.
pub const MAX_DIFF_BYTES: u64 = 4 * 1024 * 1024;
/// A diff that takes longer than this settles for a coarser (still correct) result.
const DIFF_TIMEOUT: Duration = Duration::from_millis(500);

/// `old` → `new` as a unified diff with three lines of context, headed `a/<shown>` and
/// `b/<shown>` (`/dev/null` for a file that did not exist).
pub fn unified(shown: &str, old: Option<&str>, new: &str) -> String {
    let before = match old {
        Some(_) => format!("a/{shown}"),
        None => "/dev/null".to_string(),
    };
    TextDiff::configure()
        .timeout(DIFF_TIMEOUT)
        .diff_lines(old.unwrap_or(""), new)
        .unified_diff()
        .context_radius(3)
        .header(&before, &format!("b/{shown}"))
        .to_string()
}

/// The text of the file at `path` for a diff: `Ok(None)` when there is no file yet, `Err`
/// with the reason when it cannot be diffed (not a regular file, too large, binary, not
/// UTF-8, unreadable).
pub fn current_text(path: &Path) -> Result<Option<String>, String> {
    let metadata = match std::fs::metadata(path) {
        Ok(metadata) => metadata,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(format!("cannot read it: {e}")),
    };
    if !metadata.is_file() {
        return Err("it is not a regular file".to_string());
    }
    if metadata.len() > MAX_DIFF_BYTES {
        return Err(format!(
            "it is too large to compare ({} KB)",
            metadata.len() / 1024
        ));
    }
    let bytes = std::fs::read(path).map_err(|e| format!("cannot read it: {e}"))?;
    if bytes.iter().take(8192).any(|b| *b == 0) {
        return Err("it is a binary file".to_string());
    }
    String::from_utf8(bytes)
        .map(Some)
        .map_err(|_| "it is not UTF-8 text".to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn diffs_new_and_changed_files() {
        let diff = unified("a.txt", None, "one\ntwo\n");
        assert_eq!(
            diff,
            "--- /dev/null\n+++ b/a.txt\n@@ -0,0 +1,2 @@\n+one\n+two\n"
        );
        let diff = unified("a.txt", Some("one\ntwo\n"), "one\n2\n");
        assert!(diff.contains("\n-two\n+2\n"), "{diff}");
    }

    #[test]
    fn reads_only_what_can_be_diffed() {
        let dir = tempfile::tempdir().unwrap();
        assert_eq!(current_text(&dir.path().join("none")), Ok(None));
        std::fs::write(dir.path().join("t"), "text").unwrap();
        assert_eq!(
            current_text(&dir.path().join("t")),
            Ok(Some("text".to_string()))
        );
        std::fs::write(dir.path().join("b"), [0u8, 1, 2]).unwrap();
        assert!(current_text(&dir.path().join("b")).is_err());
        assert!(current_text(dir.path()).is_err());
        let fifo = dir.path().join("fifo");
        let path = std::ffi::CString::new(fifo.to_str().unwrap()).unwrap();
        // SAFETY: a valid, NUL-terminated path.
        assert_eq!(unsafe { libc::mkfifo(path.as_ptr(), 0o600) }, 0);
        // A FIFO would block a read forever: it is refused without opening it.
        assert!(current_text(&fifo).is_err());
    }
}
