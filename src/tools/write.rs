//! `write`: create or replace a whole file. Parent directories are created; the write is
//! atomic (temporary file + rename) and an existing file keeps its permissions.

use super::freshness::{Changed, FileMemory, Fingerprint};
use super::path::{display, resolve};
use super::{Subject, Tool, ToolContext, ToolOutput, atomic, diff, parse_args, run_blocking};
use futures_util::future::BoxFuture;
use serde::Deserialize;
use serde_json::{Value, json};
use std::path::Path;

pub struct WriteTool;

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Args {
    path: String,
    content: String,
}

impl Tool for WriteTool {
    fn name(&self) -> &'static str {
        "write"
    }

    fn description(&self) -> &'static str {
        "Write a file, replacing it if it exists; parent directories are created. Use it for \
         new files or complete rewrites; prefer edit for changes to an existing file. Paths are \
         relative to the working directory."
    }

    fn parameters(&self) -> Value {
        json!({
            "type": "object",
            "properties": {
                "path": {"type": "string", "description": "Path of the file to write"},
                "content": {"type": "string", "description": "The complete new contents"}
            },
            "required": ["path", "content"],
            "additionalProperties": false
        })
    }

    fn read_only(&self) -> bool {
        false
    }

    fn subject(&self) -> Subject {
        Subject::Path("path")
    }

    fn summarize(&self, args: &Value) -> String {
        let lines = args
            .get("content")
            .and_then(Value::as_str)
            .map_or(0, |c| c.lines().count());
        let path = self.subject().value(args).unwrap_or("");
        format!("{path} ({})", plural(lines, "line"))
    }

    fn preview(&self, args: &Value, cwd: &Path) -> Option<Result<String, String>> {
        let args: Args = serde_json::from_value(args.clone()).ok()?;
        let path = resolve(cwd, &args.path);
        let shown = display(cwd, &path);
        Some(
            diff::current_text(&path)
                .map(|old| diff::unified(&shown, old.as_deref(), &args.content))
                .map_err(|why| format!("{shown} cannot be compared: {why}")),
        )
    }

    fn execute(&self, args: Value, ctx: ToolContext) -> BoxFuture<'static, ToolOutput> {
        Box::pin(async move {
            let args: Args = match parse_args("write", args) {
                Ok(args) => args,
                Err(output) => return output,
            };
            let (cwd, files) = (ctx.cwd.clone(), ctx.files.clone());
            run_blocking(&ctx.cancel, true, move || write_file(&cwd, &args, &files)).await
        })
    }
}

/// Write the file, unless it changed since the model last saw it (`files`); what was
/// written is what the model has seen of it from now on.
fn write_file(cwd: &Path, args: &Args, files: &FileMemory) -> ToolOutput {
    let path = resolve(cwd, &args.path);
    let shown = display(cwd, &path);
    if let Err(changed) = files.check_unchanged(&path) {
        return ToolOutput::error(stale_message(&shown, &changed));
    }
    // What an overwrite replaces, so its result can show the change (none when the file
    // cannot be compared: too large, binary...).
    let previous = diff::current_text(&path).ok().flatten();
    match atomic::write(&path, args.content.as_bytes()) {
        Ok(created) => {
            files.saw(&path, Fingerprint::of_bytes(args.content.as_bytes()));
            let bytes = args.content.len();
            let lines = super::truncate::count_lines(&args.content);
            let verb = if created { "Created" } else { "Wrote" };
            let mut details = json!({"path": shown, "bytes": bytes, "created": created});
            if let (false, Some(old)) = (created, previous) {
                details["diff"] = json!(diff::unified(&shown, Some(&old), &args.content));
            }
            ToolOutput::text(format!(
                "{verb} {shown} ({}, {}).",
                plural(bytes, "byte"),
                plural(lines, "line")
            ))
            .with_details(details)
        }
        Err(e) => ToolOutput::error(format!("Cannot write {shown}: {e}")),
    }
}

/// Why a write was refused: the file is not what the model saw.
fn stale_message(shown: &str, changed: &Changed) -> String {
    let size = if changed.seen_len == changed.now_len {
        format!(
            "its size is the same ({}), its contents are not",
            plural_u64(changed.now_len)
        )
    } else {
        format!(
            "it had {} and now has {}",
            plural_u64(changed.seen_len),
            plural_u64(changed.now_len)
        )
    };
    format!(
        "Not written: {shown} changed since you last read or wrote it ({size}); someone or \
         something else edited it, and writing would throw that away. Read it again, then \
         write it, or use edit to change only what you mean to."
    )
}

fn plural_u64(bytes: u64) -> String {
    if bytes == 1 {
        "1 byte".to_string()
    } else {
        format!("{bytes} bytes")
    }
}

/// `1 line`, `2 lines`.
fn plural(count: usize, noun: &str) -> String {
    if count == 1 {
        format!("1 {noun}")
    } else {
        format!("{count} {noun}s")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::protocol::message::join_text;

    fn write(dir: &Path, path: &str, content: &str) -> ToolOutput {
        write_seen(dir, path, content, &FileMemory::default())
    }

    fn write_seen(dir: &Path, path: &str, content: &str, files: &FileMemory) -> ToolOutput {
        write_file(
            dir,
            &Args {
                path: path.into(),
                content: content.into(),
            },
            files,
        )
    }

    #[test]
    fn refuses_to_replace_a_file_changed_since_the_model_saw_it() {
        let dir = tempfile::tempdir().unwrap();
        let files = FileMemory::default();
        assert!(!write_seen(dir.path(), "a.txt", "mine\n", &files).is_error);
        // Someone else edits the file after the model wrote it.
        std::fs::write(dir.path().join("a.txt"), "theirs, longer\n").unwrap();
        let out = write_seen(dir.path(), "a.txt", "mine again\n", &files);
        assert!(out.is_error);
        assert_eq!(
            join_text(&out.content),
            "Not written: a.txt changed since you last read or wrote it (it had 5 bytes and \
             now has 15 bytes); someone or something else edited it, and writing would throw \
             that away. Read it again, then write it, or use edit to change only what you \
             mean to."
        );
        assert_eq!(
            std::fs::read_to_string(dir.path().join("a.txt")).unwrap(),
            "theirs, longer\n"
        );
        // Once the model has seen the new contents, it may replace them.
        files.saw(
            &dir.path().join("a.txt"),
            Fingerprint::of_bytes(b"theirs, longer\n"),
        );
        assert!(!write_seen(dir.path(), "a.txt", "mine again\n", &files).is_error);
    }

    #[test]
    fn creates_and_replaces_files() {
        let dir = tempfile::tempdir().unwrap();
        let out = write(dir.path(), "deep/er/new.txt", "a\nb\n");
        assert!(!out.is_error);
        assert_eq!(
            join_text(&out.content),
            "Created deep/er/new.txt (4 bytes, 2 lines)."
        );
        assert!(
            out.details.unwrap().get("diff").is_none(),
            "a new file has no diff"
        );
        let out = write(dir.path(), "deep/er/new.txt", "c");
        assert_eq!(
            join_text(&out.content),
            "Wrote deep/er/new.txt (1 byte, 1 line)."
        );
        // An overwrite shows what it replaced.
        let diff = out.details.as_ref().unwrap()["diff"].as_str().unwrap();
        assert!(diff.contains("-a\n-b\n+c"), "{diff}");
        assert_eq!(
            std::fs::read_to_string(dir.path().join("deep/er/new.txt")).unwrap(),
            "c"
        );
        let out = write(dir.path(), "deep", "x");
        assert!(out.is_error);
        assert!(join_text(&out.content).contains("directory"));
    }

    #[test]
    fn previews_what_a_write_would_change() {
        let dir = tempfile::tempdir().unwrap();
        let preview = |content: &str| {
            WriteTool
                .preview(&json!({"path": "f.txt", "content": content}), dir.path())
                .unwrap()
        };
        assert_eq!(
            preview("new\n").unwrap(),
            "--- /dev/null\n+++ b/f.txt\n@@ -0,0 +1 @@\n+new\n"
        );
        std::fs::write(dir.path().join("f.txt"), "old\n").unwrap();
        assert!(preview("new\n").unwrap().contains("-old\n+new\n"));
        assert_eq!(
            std::fs::read_to_string(dir.path().join("f.txt")).unwrap(),
            "old\n",
            "a preview writes nothing"
        );
    }
}
