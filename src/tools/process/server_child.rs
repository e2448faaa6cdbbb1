//! What a long-lived helper server the agent starts (an MCP stdio server, a language server)
//! needs of its process: dying with the agent however the agent dies, and its stderr read to
//! the end — every line to the log, the last few kept for an error message.

use std::collections::VecDeque;
use std::sync::{Arc, Mutex, PoisonError};
use tokio::io::AsyncReadExt;

/// A longer stderr line is cut into pieces of this many bytes.
const MAX_LINE: usize = 2000;

/// The child gets SIGKILL when the agent dies, however it dies.
pub fn die_with_agent(command: &mut tokio::process::Command) {
    let agent = i32::try_from(std::process::id()).unwrap_or(0);
    // SAFETY: the closure runs between fork and exec and makes only async-signal-safe
    // system calls (prctl, getppid): no allocation, no lock.
    unsafe {
        command.pre_exec(move || {
            if libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL) != 0 {
                return Err(std::io::Error::last_os_error());
            }
            // The agent died before the call above: its parent is another process now.
            if libc::getppid() != agent {
                return Err(std::io::Error::from_raw_os_error(libc::ESRCH));
            }
            Ok(())
        });
    }
}

/// The last lines a server wrote to stderr (at most the number it was made for).
#[derive(Clone)]
pub struct StderrTail {
    lines: Arc<Mutex<VecDeque<String>>>,
    keep: usize,
}

impl StderrTail {
    /// Keeping the last `keep` lines.
    pub fn new(keep: usize) -> StderrTail {
        StderrTail {
            lines: Arc::default(),
            keep: keep.max(1),
        }
    }

    fn push(&self, line: String) {
        let mut lines = self.lines.lock().unwrap_or_else(PoisonError::into_inner);
        if lines.len() == self.keep {
            lines.pop_front();
        }
        lines.push_back(line);
    }

    /// The last `count` lines, joined, for an error message; `None` when there were none.
    pub fn last(&self, count: usize) -> Option<String> {
        let lines = self.lines.lock().unwrap_or_else(PoisonError::into_inner);
        let start = lines.len().saturating_sub(count);
        let text: Vec<&str> = lines.iter().skip(start).map(String::as_str).collect();
        (!text.is_empty()).then(|| text.join(" | "))
    }
}

/// Read a server's stderr to its end: every line to `log` (with the server's name) and to
/// `tail`; a line longer than `MAX_LINE` is cut into pieces. Reading it at all matters: a
/// chatty server would otherwise block on a full pipe.
pub async fn read_stderr(
    server: String,
    mut stderr: tokio::process::ChildStderr,
    tail: StderrTail,
    log: fn(&str, &str),
) {
    let emit = |bytes: &[u8]| {
        let text = String::from_utf8_lossy(bytes);
        let line = crate::tools::truncate::clip(text.trim_end(), MAX_LINE);
        if !line.is_empty() {
            log(&server, line);
            tail.push(line.to_string());
        }
    };
    let mut buffer = Vec::new();
    let mut chunk = [0u8; 4096];
    loop {
        let read = match stderr.read(&mut chunk).await {
            Ok(0) | Err(_) => break,
            Ok(n) => n,
        };
        buffer.extend_from_slice(&chunk[..read]);
        while let Some(end) = buffer.iter().position(|b| *b == b'\n') {
            let line: Vec<u8> = buffer.drain(..=end).collect();
            emit(&line);
        }
        if buffer.len() > MAX_LINE {
            emit(&std::mem::take(&mut buffer));
        }
    }
    if !buffer.is_empty() {
        emit(&buffer);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_tail_keeps_the_last_lines() {
        let tail = StderrTail::new(2);
        assert_eq!(tail.last(3), None);
        for line in ["a", "b", "c"] {
            tail.push(line.to_string());
        }
        assert_eq!(tail.last(3).as_deref(), Some("b | c"));
        assert_eq!(tail.last(1).as_deref(), Some("c"));
    }
}
