//! Generated session files: many turns of realistic size, optionally with compactions every
//! so often (as a long real session has), written with the agent's own session encoder.

use agent::llm::request::ThinkingLevel;
use agent::protocol::message::{
    AssistantContent, AssistantMessage, Message, StopReason, UserMessage,
};
use agent::session::format::{Header, NewEntry, encode};
use agent::session::store;
use anyhow::Context;
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
) -> anyhow::Result<PathBuf> {
    let path = store::new_path(
        &home.join("sessions"),
        cwd,
        "bench0000000000000000000",
        1_000,
    );
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
    }
    let file =
        std::fs::File::create(&path).with_context(|| format!("creating {}", path.display()))?;
    let mut out = std::io::BufWriter::new(file);
    let header = Header::new("bench0000000000000000000", &cwd.to_string_lossy(), 1_000);
    writeln!(out, "{}", serde_json::to_string(&header)?).context("writing the session")?;
    let filler = "Lorem ipsum dolor sit amet, consectetur adipiscing elit. ".repeat(40);
    let (mut parent, mut last_user): (Option<String>, Option<String>) = (None, None);
    let (mut written, mut since_compaction, mut n, mut timestamp) =
        (0usize, 0usize, 0usize, 1_000i64);
    while written < target_bytes && n < messages {
        timestamp += 1;
        let message = if n.is_multiple_of(2) {
            let mut user = UserMessage::text(format!("question {n}: {}", &filler[..200]));
            user.timestamp = timestamp;
            Message::User(user)
        } else {
            let mut answer = AssistantMessage::empty("bench", "bench-model");
            answer.content.push(AssistantContent::Text {
                text: format!("answer {n}: {filler}"),
            });
            answer.usage.input = 1_000;
            answer.usage.output = 500;
            answer.usage.total_tokens = 1_500;
            answer.stop_reason = StopReason::Stop;
            answer.timestamp = timestamp;
            Message::Assistant(answer)
        };
        let id = format!("{n:012x}");
        let line = encode(
            NewEntry::Message(&message),
            &id,
            parent.as_deref(),
            timestamp,
        )?;
        out.write_all(&line).context("writing the session")?;
        written += line.len();
        since_compaction += line.len();
        if n.is_multiple_of(2) {
            last_user = Some(id.clone());
        }
        parent = Some(id);
        n += 1;
        if let Some(every) = compact_every_bytes
            && since_compaction >= every
            && n.is_multiple_of(2)
        {
            timestamp += 1;
            let id = format!("c{n:011x}");
            let summary = format!("## Goal\nSummary up to message {n}. {}", &filler[..400]);
            let entry = NewEntry::Compaction {
                summary: &summary,
                first_kept_entry_id: last_user.as_deref(),
                tokens_before: 150_000,
                tokens_after: 20_000,
                model: Some(("bench", "bench-model")),
                thinking: Some(ThinkingLevel::Off),
                name: None,
                goal: None,
                preserved: &[],
            };
            let line = encode(entry, &id, parent.as_deref(), timestamp)?;
            out.write_all(&line).context("writing the session")?;
            written += line.len();
            since_compaction = 0;
            parent = Some(id);
        }
    }
    out.flush().context("writing the session")?;
    Ok(path)
}
