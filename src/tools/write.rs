//! `write`: create or replace a whole file. Parent directories are created; the write is
//! atomic (temporary file + rename) and an existing file keeps its permissions.

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
            let cwd = ctx.cwd.clone();
            run_blocking(&ctx.cancel, true, move || write_file(&cwd, &args)).await
        })
    }
}

fn write_file(cwd: &Path, args: &Args) -> ToolOutput {
    let path = resolve(cwd, &args.path);
    let shown = display(cwd, &path);
    // What an overwrite replaces, so its result can show the change (none when the file
    // cannot be compared: too large, binary...).
    let previous = diff::current_text(&path).ok().flatten();
    match atomic::write(&path, args.content.as_bytes()) {
        Ok(created) => {
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
        write_file(
            dir,
            &Args {
                path: path.into(),
                content: content.into(),
            },
        )
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
