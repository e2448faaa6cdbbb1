//! `find`: files and directories whose name (or, for a pattern with `/`, relative path)
//! matches a glob, walking the tree as `walk` does (`.gitignore` honoured). Results are
//! limited with a notice saying how to see more.

use super::path::display;
use super::visibility::Hidden;
use super::walk::{Denied, PathGlob, search_root, walk};
use super::{Subject, Tool, ToolContext, ToolOutput, parse_args, run_blocking};
use futures_util::future::BoxFuture;
use serde::Deserialize;
use serde_json::{Value, json};
use std::path::Path;
use std::sync::Arc;
use tokio_util::sync::CancellationToken;

pub struct FindTool;

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Args {
    pattern: String,
    #[serde(default)]
    path: Option<String>,
    #[serde(default)]
    limit: Option<usize>,
}

const DEFAULT_LIMIT: usize = 1000;

impl Tool for FindTool {
    fn name(&self) -> &'static str {
        "find"
    }

    fn description(&self) -> &'static str {
        "Find files and directories by glob, honouring .gitignore. A pattern without `/` \
         matches names anywhere (`*.rs`, `Cargo.toml`); one with `/` matches paths relative \
         to the search directory (`src/**/*.ts`). Directories end in `/`. At most 1000 \
         results unless limit says otherwise."
    }

    fn parameters(&self) -> Value {
        json!({
            "type": "object",
            "properties": {
                "pattern": {"type": "string", "minLength": 1, "description": "Glob, e.g. *.rs or src/**/mod.rs"},
                "path": {"type": "string", "description": "Directory to search (default: working directory)"},
                "limit": {"type": "integer", "minimum": 1, "description": "Maximum number of results (default 1000)"}
            },
            "required": ["pattern"],
            "additionalProperties": false
        })
    }

    fn read_only(&self) -> bool {
        true
    }

    fn subject(&self) -> Subject {
        Subject::Path("path")
    }

    fn summarize(&self, args: &Value) -> String {
        let pattern = args.get("pattern").and_then(Value::as_str).unwrap_or("");
        pattern.to_string()
    }

    fn execute(&self, args: Value, ctx: ToolContext) -> BoxFuture<'static, ToolOutput> {
        Box::pin(async move {
            let args: Args = match parse_args("find", args) {
                Ok(args) => args,
                Err(output) => return output,
            };
            let cwd = ctx.cwd.clone();
            let cancel = ctx.cancel.clone();
            let hidden = ctx.hidden.clone();
            let sandbox = ctx.settings.sandbox.clone();
            run_blocking(&ctx.cancel, false, move || {
                let denied = Denied {
                    matcher: sandbox.deny_read.matcher(),
                    files: false,
                    // Names only: a file's content is not shown.
                    known: Vec::new(),
                };
                find(&cwd, &args, &cancel, hidden, denied)
            })
            .await
        })
    }
}

fn find(
    cwd: &Path,
    args: &Args,
    cancel: &CancellationToken,
    hidden: Option<Arc<Hidden>>,
    denied: Denied,
) -> ToolOutput {
    let root = match search_root(cwd, args.path.as_deref()) {
        Ok(root) => root,
        Err(message) => return ToolOutput::error(message),
    };
    let glob = match PathGlob::new(&args.pattern) {
        Ok(glob) => glob,
        Err(message) => return ToolOutput::error(message),
    };
    let limit = args.limit.unwrap_or(DEFAULT_LIMIT).max(1);
    let mut found = Vec::new();
    let mut more = false;
    let mut entries = match walk(&root, hidden, denied) {
        Ok(entries) => entries,
        Err(message) => return ToolOutput::error(message),
    };
    while let Some(entry) = entries.next() {
        if cancel.is_cancelled() {
            return ToolOutput::error(super::CANCELLED_TEXT);
        }
        if entry.depth() == 0 || !glob.is_match(&root, entry.path()) {
            continue;
        }
        // Another path to a file the rules name (a hard link) is left out too.
        if entries.leaves_out_path(entry.path()) {
            continue;
        }
        if found.len() == limit {
            more = true;
            break;
        }
        let mut shown = display(cwd, entry.path());
        if entry.file_type().is_some_and(|t| t.is_dir()) {
            shown.push('/');
        }
        found.push(shown);
    }
    let details = json!({"count": found.len(), "limitReached": more});
    let mut text = if found.is_empty() {
        format!("No files match `{}`.", args.pattern)
    } else {
        found.join("\n")
    };
    if more {
        text.push_str(&format!(
            "\n\n[Showing the first {limit} results; there are more. Use a narrower pattern or \
             path, or a larger limit, to see more.]"
        ));
    }
    let notes = entries.notes();
    if !notes.is_empty() {
        text.push_str("\n\n");
        text.push_str(&notes.join("\n"));
    }
    ToolOutput::text(text).with_details(details)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::protocol::message::join_text;

    fn find_in(dir: &Path, args: Value) -> String {
        let args: Args = serde_json::from_value(args).unwrap();
        join_text(&find(dir, &args, &CancellationToken::new(), None, Denied::none()).content)
    }

    #[test]
    fn finds_by_name_or_path_and_limits_results() {
        let dir = tempfile::tempdir().unwrap();
        for name in [
            "src/a.rs",
            "src/deep/b.rs",
            "src/deep/c.txt",
            "build/gen.rs",
            "README.md",
        ] {
            let path = dir.path().join(name);
            std::fs::create_dir_all(path.parent().unwrap()).unwrap();
            std::fs::write(path, "").unwrap();
        }
        std::fs::write(dir.path().join(".gitignore"), "build/\n").unwrap();
        assert_eq!(
            find_in(dir.path(), json!({"pattern": "*.rs"})),
            "src/a.rs\nsrc/deep/b.rs"
        );
        assert_eq!(find_in(dir.path(), json!({"pattern": "deep"})), "src/deep/");
        assert_eq!(
            find_in(dir.path(), json!({"pattern": "src/*.rs"})),
            "src/a.rs"
        );
        assert_eq!(
            find_in(dir.path(), json!({"pattern": "*.rs", "path": "src/deep"})),
            "src/deep/b.rs"
        );
        let text = find_in(dir.path(), json!({"pattern": "*", "limit": 2}));
        assert!(
            text.starts_with(".gitignore\nREADME.md\n\n[Showing the first 2 results"),
            "{text}"
        );
        assert_eq!(
            find_in(dir.path(), json!({"pattern": "*.py"})),
            "No files match `*.py`."
        );
    }
}
