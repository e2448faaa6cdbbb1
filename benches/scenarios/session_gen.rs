//! Generated session files: many turns of realistic size, optionally with compactions every
//! so often (as a long real session has), in the format of docs/sessions.md.

use serde_json::json;
use std::io::Write;
use std::path::{Path, PathBuf};

/// Write a session for `cwd` under `home/sessions` with about `target_bytes` of entries
/// (or `messages` messages, whichever ends first) and return its path.
pub fn generate(
    home: &Path,
    cwd: &Path,
    target_bytes: usize,
    messages: usize,
    compact_every_bytes: Option<usize>,
) -> PathBuf {
    let slug: String = cwd
        .to_string_lossy()
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '.' || c == '_' {
                c
            } else {
                '-'
            }
        })
        .collect();
    let dir = home
        .join("sessions")
        .join(format!("-{}-", slug.trim_matches('-')));
    std::fs::create_dir_all(&dir).expect("session dir");
    let path = dir.join("2026-01-01T00-00-00-000Z_bench0000000000000000000.jsonl");
    let mut out = std::io::BufWriter::new(std::fs::File::create(&path).expect("session file"));
    let header = json!({"type": "session", "version": 1, "id": "bench0000000000000000000", "cwd": cwd, "timestamp": 1});
    writeln!(out, "{header}").expect("write");
    let mut parent: Option<String> = None;
    let mut written = 0usize;
    let mut since_compaction = 0usize;
    let mut last_kept: Option<String> = None;
    let filler = "Lorem ipsum dolor sit amet, consectetur adipiscing elit. ".repeat(40);
    let mut n = 0usize;
    let mut timestamp = 1_000i64;
    while written < target_bytes && n < messages {
        let id = format!("{n:012x}");
        timestamp += 1;
        let message = if n.is_multiple_of(2) {
            json!({"role": "user", "content": [{"type": "text", "text": format!("question {n}: {}", &filler[..200])}], "timestamp": timestamp})
        } else {
            json!({"role": "assistant", "content": [{"type": "text", "text": format!("answer {n}: {filler}")}],
                   "provider": "bench", "model": "bench-model",
                   "usage": {"input": 1000, "output": 500, "cacheRead": 0, "cacheWrite": 0, "totalTokens": 1500,
                             "cost": {"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0, "total": 0}},
                   "stopReason": "stop", "timestamp": timestamp})
        };
        let line = json!({"type": "message", "id": id, "parentId": parent, "timestamp": timestamp, "message": message}).to_string();
        writeln!(out, "{line}").expect("write");
        written += line.len() + 1;
        since_compaction += line.len() + 1;
        if n.is_multiple_of(2) {
            last_kept = Some(id.clone());
        }
        parent = Some(id);
        n += 1;
        if let Some(every) = compact_every_bytes
            && since_compaction >= every
            && n.is_multiple_of(2)
        {
            let id = format!("c{n:011x}");
            timestamp += 1;
            let line = json!({"type": "compaction", "id": id, "parentId": parent, "timestamp": timestamp,
                              "summary": format!("## Goal\nSummary up to message {n}. {}", &filler[..400]),
                              "firstKeptEntryId": last_kept, "tokensBefore": 150_000, "tokensAfter": 20_000})
            .to_string();
            writeln!(out, "{line}").expect("write");
            written += line.len() + 1;
            since_compaction = 0;
            parent = Some(id);
        }
    }
    out.flush().expect("flush");
    path
}
