//! Logging with `tracing` to a file under the agent's log directory — never to the
//! terminal, which belongs to the TUI or to the output of headless modes. The directory is
//! private (0700) and the file too (0600), whatever the umask or an older agent left, and
//! every record passes through `secrets::redact`, so no configured API key reaches the log
//! even inside a provider's error text.

use std::fs::{File, OpenOptions, Permissions};
use std::io::Write;
use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt, PermissionsExt};
use std::path::Path;
use std::sync::{Mutex, MutexGuard, PoisonError};
use tracing_subscriber::fmt::MakeWriter;

/// Start logging to `dir/agent.log` at `level` (a level or `tracing` filter). Logging is a
/// convenience: if the file cannot be opened the agent runs without it.
pub fn init(dir: &Path, level: &str) {
    let Ok(file) = open_private(dir) else {
        return;
    };
    let filter = tracing_subscriber::EnvFilter::try_new(level)
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("info"));
    let _ = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(RedactingFile(Mutex::new(file)))
        .with_ansi(false)
        .with_target(false)
        .try_init();
}

/// `dir/agent.log`, opened for appending, with the directory at 0700 and the file at 0600.
/// Modes are set explicitly after creation: a creation mode is filtered by the umask, and
/// a directory or file made by an earlier version may be world-readable.
fn open_private(dir: &Path) -> std::io::Result<File> {
    std::fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(dir)?;
    std::fs::set_permissions(dir, Permissions::from_mode(0o700))?;
    let file = OpenOptions::new()
        .create(true)
        .append(true)
        .mode(0o600)
        .open(dir.join("agent.log"))?;
    file.set_permissions(Permissions::from_mode(0o600))?;
    Ok(file)
}

/// The log file, with every record redacted on its way in. The formatter hands each
/// record over in one `write_all`, so a key is never split between two writes.
struct RedactingFile(Mutex<File>);

struct Record<'a>(MutexGuard<'a, File>);

impl<'a> MakeWriter<'a> for RedactingFile {
    type Writer = Record<'a>;

    fn make_writer(&'a self) -> Self::Writer {
        Record(self.0.lock().unwrap_or_else(PoisonError::into_inner))
    }
}

impl Write for Record<'_> {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0
            .write_all(&crate::secrets::redact_bytes(buf.to_vec()))?;
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        self.0.flush()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_log_is_private_even_where_an_older_one_was_not() {
        let home = tempfile::tempdir().unwrap();
        let dir = home.path().join("logs");
        std::fs::create_dir(&dir).unwrap();
        std::fs::set_permissions(&dir, Permissions::from_mode(0o755)).unwrap();
        std::fs::write(dir.join("agent.log"), "old\n").unwrap();
        std::fs::set_permissions(dir.join("agent.log"), Permissions::from_mode(0o644)).unwrap();
        open_private(&dir).unwrap();
        let mode = |p: &Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode(&dir), 0o700);
        assert_eq!(mode(&dir.join("agent.log")), 0o600);
    }

    #[test]
    fn records_are_redacted() {
        crate::secrets::register("sk-log-test-secret-42");
        let home = tempfile::tempdir().unwrap();
        let file = open_private(home.path()).unwrap();
        let log = RedactingFile(Mutex::new(file));
        log.make_writer()
            .write_all(b"error: bad key sk-log-test-secret-42\n")
            .unwrap();
        let text = std::fs::read_to_string(home.path().join("agent.log")).unwrap();
        assert_eq!(text, "error: bad key [REDACTED]\n");
    }
}
