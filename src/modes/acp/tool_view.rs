//! How a tool call looks to an editor: its kind (read, edit, search, execute…), title,
//! locations (the file and line it works on), and content (text, images, or `diff` blocks
//! for calls that change a file). Everything is read from the tools' own descriptions
//! (`tools::meta`: the kind of call, its path; the engine's `call_summary`: its summary)
//! and from their results' `details`, so no tool is known here by name.

use crate::agent::call_summary::summarize_call;
use crate::protocol::message::Content as OurContent;
use crate::tools::meta::{CallKind, call_kind, path_of_call};
use agent_client_protocol::v1::schema::{
    ContentBlock, Diff, ImageContent, ToolCallContent, ToolCallLocation, ToolKind,
};
use serde_json::Value;
use std::path::{Path, PathBuf};

/// What kind of work a call of `name` does.
pub fn kind(name: &str) -> ToolKind {
    match call_kind(name) {
        CallKind::Execute => ToolKind::Execute,
        CallKind::Edit => ToolKind::Edit,
        CallKind::Read => ToolKind::Read,
        CallKind::Search => ToolKind::Search,
        CallKind::Fetch => ToolKind::Fetch,
        CallKind::Other => ToolKind::Other,
    }
}

/// `name` and what it works on, as the interface's header shows it.
pub fn title(name: &str, args: &Value) -> String {
    let summary = summarize_call(name, args);
    if summary.is_empty() {
        name.to_string()
    } else {
        format!("{name} {summary}")
    }
}

/// The file a call works on, absolute, if it works on one.
pub fn path(name: &str, args: &Value, cwd: &Path) -> Option<PathBuf> {
    let raw = path_of_call(name, args)?;
    Some(crate::tools::path::resolve(cwd, raw))
}

/// Where a call works, with the line when one is known: the first changed line from the
/// result's details, or the line a read starts at.
pub fn locations(
    name: &str,
    args: &Value,
    details: Option<&Value>,
    cwd: &Path,
) -> Vec<ToolCallLocation> {
    let Some(path) = path(name, args, cwd) else {
        return Vec::new();
    };
    let line = details
        .and_then(|d| d.get("firstChangedLine"))
        .or_else(|| args.get("offset"))
        .and_then(Value::as_u64)
        .and_then(|line| u32::try_from(line).ok());
    vec![ToolCallLocation::new(path).line(line)]
}

/// A result's content for the editor: the change as `diff` blocks when the call changed a
/// file and says how, otherwise its text and images.
pub fn result_content(
    name: &str,
    args: &Value,
    content: &[OurContent],
    details: Option<&Value>,
    is_error: bool,
    cwd: &Path,
) -> Vec<ToolCallContent> {
    if !is_error && let Some(path) = path(name, args, cwd) {
        let mut diffs = change(&path, args, details);
        if !diffs.is_empty() {
            // The text the result's diff stands for is left out; its diagnostics are not.
            if let Some(text) = crate::lsp::report::text_of(details) {
                diffs.push(ToolCallContent::from(text.to_string()));
            }
            return diffs;
        }
    }
    blocks(content)
}

/// Text and image content as tool-call content.
pub fn blocks(content: &[OurContent]) -> Vec<ToolCallContent> {
    content
        .iter()
        .map(|block| match block {
            OurContent::Text { text } => ToolCallContent::from(text.clone()),
            OurContent::Image { data, mime_type } => {
                ToolCallContent::from(ContentBlock::Image(ImageContent::new(data, mime_type)))
            }
        })
        .collect()
}

/// The change a call made to `path`: the hunks of its `details.diff`, or the whole text of
/// a file it created.
fn change(path: &Path, args: &Value, details: Option<&Value>) -> Vec<ToolCallContent> {
    if let Some(diff) = details.and_then(|d| d.get("diff")).and_then(Value::as_str) {
        return diff_blocks(path, diff);
    }
    let created = details
        .and_then(|d| d.get("created"))
        .and_then(Value::as_bool)
        .unwrap_or(false);
    match args.get("content").and_then(Value::as_str) {
        Some(text) if created => vec![ToolCallContent::from(Diff::new(path, text))],
        _ => Vec::new(),
    }
}

/// A unified diff of `path` as one `diff` block per hunk: the hunk's context and removed
/// lines as the old text, its context and added lines as the new (no old text for a file
/// that did not exist).
pub fn diff_blocks(path: &Path, unified: &str) -> Vec<ToolCallContent> {
    let mut blocks = Vec::new();
    let mut new_file = false;
    let mut hunk: Option<(String, String)> = None;
    let mut finish = |hunk: Option<(String, String)>, new_file: bool| {
        if let Some((old, new)) = hunk {
            let old = (!new_file).then_some(old);
            blocks.push(ToolCallContent::from(Diff::new(path, new).old_text(old)));
        }
    };
    for line in unified.lines() {
        if line.starts_with("@@") {
            finish(hunk.take(), new_file);
            hunk = Some((String::new(), String::new()));
            continue;
        }
        let Some((old, new)) = hunk.as_mut() else {
            // The header, before the first hunk.
            if line == "--- /dev/null" {
                new_file = true;
            }
            continue;
        };
        let (mark, text) = line.split_at(line.len().min(1));
        match mark {
            " " | "" => {
                old.push_str(text);
                old.push('\n');
                new.push_str(text);
                new.push('\n');
            }
            "-" => {
                old.push_str(text);
                old.push('\n');
            }
            "+" => {
                new.push_str(text);
                new.push('\n');
            }
            // "\ No newline at end of file"
            _ => {}
        }
    }
    finish(hunk, new_file);
    blocks
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tools::diff::unified;
    use serde_json::json;

    fn diff(content: &ToolCallContent) -> (Option<String>, String) {
        match content {
            ToolCallContent::Diff(diff) => (diff.old_text.clone(), diff.new_text.clone()),
            other => panic!("not a diff: {other:?}"),
        }
    }

    #[test]
    fn kinds_come_from_what_the_tools_say_of_themselves() {
        assert_eq!(kind("read"), ToolKind::Read);
        assert_eq!(kind("write"), ToolKind::Edit);
        assert_eq!(kind("edit"), ToolKind::Edit);
        assert_eq!(kind("bash"), ToolKind::Execute);
        assert_eq!(kind("grep"), ToolKind::Search);
        assert_eq!(kind("find"), ToolKind::Search);
        assert_eq!(kind("ls"), ToolKind::Search);
        assert_eq!(kind("mcp_thing"), ToolKind::Other);
        assert_eq!(kind("web_fetch"), ToolKind::Fetch);
        assert_eq!(
            title("bash", &json!({"command": "ls -la\necho"})),
            "bash ls -la"
        );
    }

    #[test]
    fn a_diff_becomes_one_block_per_hunk_and_a_new_file_has_no_old_text() {
        let old: String = (1..=30).map(|n| format!("line {n}\n")).collect();
        let new = old
            .replace("line 3\n", "line three\n")
            .replace("line 25\n", "");
        let blocks = diff_blocks(Path::new("/r/a.txt"), &unified("a.txt", Some(&old), &new));
        assert_eq!(blocks.len(), 2);
        let (before, after) = diff(&blocks[0]);
        assert_eq!(
            before.as_deref(),
            Some("line 1\nline 2\nline 3\nline 4\nline 5\nline 6\n")
        );
        assert_eq!(
            after,
            "line 1\nline 2\nline three\nline 4\nline 5\nline 6\n"
        );
        let (before, after) = diff(&blocks[1]);
        assert!(before.unwrap().contains("line 25\n"));
        assert!(!after.contains("line 25\n"));

        let created = diff_blocks(Path::new("/r/b.txt"), &unified("b.txt", None, "one\ntwo\n"));
        assert_eq!(diff(&created[0]), (None, "one\ntwo\n".to_string()));
    }

    #[test]
    fn a_change_is_followed_by_its_diagnostics() {
        let args = json!({"path": "a.py", "edits": []});
        let details = json!({
            "diff": unified("a.py", Some("a\n"), "b\n"),
            "lsp": {"errors": 1, "warnings": 0, "text": "Language server (pyright): 1 error"},
        });
        let content = result_content("edit", &args, &[], Some(&details), false, Path::new("/r"));
        assert_eq!(content.len(), 2);
        let ToolCallContent::Content(block) = &content[1] else {
            panic!("{content:?}")
        };
        let ContentBlock::Text(text) = &block.content else {
            panic!("{block:?}")
        };
        assert_eq!(text.text, "Language server (pyright): 1 error");
    }

    #[test]
    fn results_show_changes_as_diffs_and_everything_else_as_content() {
        let cwd = Path::new("/repo");
        let args = json!({"path": "src/a.rs", "edits": []});
        let details =
            json!({"diff": unified("src/a.rs", Some("a\n"), "b\n"), "firstChangedLine": 1});
        let content = result_content("edit", &args, &[], Some(&details), false, cwd);
        assert_eq!(diff(&content[0]), (Some("a\n".into()), "b\n".into()));
        let ToolCallContent::Diff(block) = &content[0] else {
            unreachable!()
        };
        assert_eq!(block.path, Path::new("/repo/src/a.rs"));
        let location = &locations("edit", &args, Some(&details), cwd)[0];
        assert_eq!(
            (location.path.as_path(), location.line),
            (Path::new("/repo/src/a.rs"), Some(1))
        );

        let write = json!({"path": "new.txt", "content": "hello\n"});
        let created = json!({"created": true});
        let content = result_content("write", &write, &[], Some(&created), false, cwd);
        assert_eq!(diff(&content[0]), (None, "hello\n".into()));

        let failed = result_content(
            "edit",
            &args,
            &[OurContent::text("no match")],
            Some(&details),
            true,
            cwd,
        );
        assert!(matches!(&failed[0], ToolCallContent::Content(_)));
        let read = locations("read", &json!({"path": "a.rs", "offset": 40}), None, cwd);
        assert_eq!(read[0].line, Some(40));
        assert!(locations("bash", &json!({"command": "ls"}), None, cwd).is_empty());
    }
}
