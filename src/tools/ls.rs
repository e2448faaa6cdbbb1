//! `ls`: the entries of one directory, sorted, directories marked with `/`, hidden files
//! included (it lists what is there; `find` and `grep` are the ones that honour
//! `.gitignore`). Long listings are limited with a notice saying how to see more. Entries
//! the permission rules hide are left out, and the listing says how many.

use super::identity::File;
use super::path::{display, not_found_message, resolve};
use super::visibility::Hidden;
use super::{Subject, Tool, ToolContext, ToolOutput, parse_args, run_blocking};
use crate::sandbox::deny_read::DenyRead;
use futures_util::future::BoxFuture;
use serde::Deserialize;
use serde_json::{Value, json};
use std::path::Path;
use std::sync::Arc;

pub struct LsTool;

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Args {
    #[serde(default)]
    path: Option<String>,
    #[serde(default)]
    limit: Option<usize>,
}

const DEFAULT_LIMIT: usize = 500;

impl Tool for LsTool {
    fn name(&self) -> &'static str {
        "ls"
    }

    fn description(&self) -> &'static str {
        "List a directory's entries (hidden ones too), sorted; directories end in `/`. At \
         most 500 entries unless limit says otherwise."
    }

    fn parameters(&self) -> Value {
        json!({
            "type": "object",
            "properties": {
                "path": {"type": "string", "description": "Directory to list (default: working directory)"},
                "limit": {"type": "integer", "minimum": 1, "description": "Maximum number of entries (default 500)"}
            },
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
        match self.subject().value(args).filter(|p| !p.is_empty()) {
            Some(path) => path.to_string(),
            None => ".".to_string(),
        }
    }

    fn execute(&self, args: Value, ctx: ToolContext) -> BoxFuture<'static, ToolOutput> {
        Box::pin(async move {
            let args: Args = match parse_args("ls", args) {
                Ok(args) => args,
                Err(output) => return output,
            };
            let cwd = ctx.cwd.clone();
            let hidden = ctx.hidden.clone();
            let deny_read = ctx.settings.sandbox.deny_read.clone();
            run_blocking(&ctx.cancel, false, move || {
                list(&cwd, &args, hidden.as_ref(), &deny_read)
            })
            .await
        })
    }
}

fn list(cwd: &Path, args: &Args, hidden: Option<&Arc<Hidden>>, deny_read: &DenyRead) -> ToolOutput {
    let dir = match args
        .path
        .as_deref()
        .map(str::trim)
        .filter(|p| !p.is_empty())
    {
        Some(raw) => resolve(cwd, raw),
        None => cwd.to_path_buf(),
    };
    // A denied directory's entries are as unreadable as its files (commands see it empty).
    if let Some(refusal) = deny_read.matcher().refuse(&dir, &[]) {
        return ToolOutput::error(refusal);
    }
    let shown = display(cwd, &dir);
    let entries = match std::fs::read_dir(&dir) {
        Ok(entries) => entries,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            return ToolOutput::error(not_found_message(cwd, &dir));
        }
        Err(_) if dir.is_file() => {
            return ToolOutput::error(format!("{shown} is a file, not a directory; use read"));
        }
        Err(e) => return ToolOutput::error(format!("Cannot list {shown}: {e}")),
    };
    let mut left_out = 0;
    // Other paths to the files the rules name (hard links, bind mounts) are left out too.
    let named = hidden.map(Hidden::named_files);
    let same_as_named = |entry: &std::fs::DirEntry| {
        named.as_ref().is_some_and(|named| {
            File::of_path(&entry.path()).is_some_and(|f| named.path_of(&f).is_some())
        })
    };
    let mut names: Vec<String> = entries
        .filter_map(Result::ok)
        .filter(|entry| {
            let hide = hidden.is_some_and(|h| h.hides(&entry.path(), None)) || same_as_named(entry);
            left_out += usize::from(hide);
            !hide
        })
        .map(|entry| {
            let mut name = entry.file_name().to_string_lossy().into_owned();
            // Follows symbolic links, so a link to a directory is listed as one.
            if entry.path().is_dir() {
                name.push('/');
            }
            name
        })
        .collect();
    names.sort_by(|a, b| a.to_lowercase().cmp(&b.to_lowercase()).then(a.cmp(b)));
    let total = names.len();
    let limit = args.limit.unwrap_or(DEFAULT_LIMIT).max(1);
    let details = json!({"path": shown, "entries": total});
    let mut text = if total == 0 {
        "(empty directory)".to_string()
    } else {
        names[..total.min(limit)].join("\n")
    };
    if total > limit {
        text.push_str(&format!(
            "\n\n[Showing {limit} of {total} entries. Use a larger limit, or find with a \
             pattern, to see the rest.]"
        ));
    }
    if left_out > 0 {
        text.push_str("\n\n");
        text.push_str(&super::visibility::hidden_note(left_out));
    }
    ToolOutput::text(text).with_details(details)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::protocol::message::join_text;

    fn ls(dir: &Path, path: Option<&str>, limit: Option<usize>) -> ToolOutput {
        list(
            dir,
            &Args {
                path: path.map(String::from),
                limit,
            },
            None,
            &DenyRead::default(),
        )
    }

    #[test]
    fn lists_sorted_entries_with_directories_marked() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir(dir.path().join("src")).unwrap();
        for name in ["b.txt", "A.txt", ".env"] {
            std::fs::write(dir.path().join(name), "").unwrap();
        }
        assert_eq!(
            join_text(&ls(dir.path(), None, None).content),
            ".env\nA.txt\nb.txt\nsrc/"
        );
        let text = join_text(&ls(dir.path(), Some("."), Some(2)).content);
        assert_eq!(
            text,
            ".env\nA.txt\n\n[Showing 2 of 4 entries. Use a larger limit, or find with a pattern, to see the rest.]"
        );
        assert_eq!(
            join_text(&ls(dir.path(), Some("src"), None).content),
            "(empty directory)"
        );
        let out = ls(dir.path(), Some("b.txt"), None);
        assert!(out.is_error && join_text(&out.content).contains("is a file"));
        let out = ls(dir.path(), Some("scr"), None);
        assert!(join_text(&out.content).contains("Similar names in the working directory: src"));
    }
}
