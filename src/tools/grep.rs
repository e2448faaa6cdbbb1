//! `grep`: search file contents with a regular expression (or a literal string), walking
//! the tree as `walk` does. Built on ripgrep's own crates (`grep-searcher`, `grep-regex`);
//! binary files are skipped, output is `path:line: text` with optional context lines, and
//! the number of matches is limited with a notice saying how to see more.

use super::path::display;
use super::truncate::{MAX_BYTES, clip};
use super::walk::{PathGlob, search_root, walk};
use super::{Subject, Tool, ToolContext, ToolOutput, parse_args, run_blocking};
use futures_util::future::BoxFuture;
use grep_regex::RegexMatcherBuilder;
use grep_searcher::{BinaryDetection, Searcher, SearcherBuilder, Sink, SinkContext, SinkMatch};
use serde::Deserialize;
use serde_json::{Value, json};
use std::path::Path;
use tokio_util::sync::CancellationToken;

pub struct GrepTool;

#[derive(Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
struct Args {
    pattern: String,
    #[serde(default)]
    path: Option<String>,
    #[serde(default)]
    glob: Option<String>,
    #[serde(default)]
    ignore_case: bool,
    #[serde(default)]
    literal: bool,
    #[serde(default)]
    context: Option<usize>,
    #[serde(default)]
    limit: Option<usize>,
}

const DEFAULT_LIMIT: usize = 100;
const MAX_CONTEXT: usize = 20;
/// Longer lines are cut in the output (at a character boundary).
const MAX_LINE_BYTES: usize = 500;

impl Tool for GrepTool {
    fn name(&self) -> &'static str {
        "grep"
    }

    fn description(&self) -> &'static str {
        "Search file contents with a regular expression (Rust regex syntax), honouring \
         .gitignore; binary files are skipped. Output lines are `path:line: text` (context \
         lines use `-`). At most 100 matches unless limit says otherwise."
    }

    fn parameters(&self) -> Value {
        json!({
            "type": "object",
            "properties": {
                "pattern": {"type": "string", "minLength": 1, "description": "Regular expression (or text, with literal)"},
                "path": {"type": "string", "description": "Directory or file to search (default: working directory)"},
                "glob": {"type": "string", "description": "Only files matching this glob, e.g. *.rs or src/**/*.ts"},
                "ignoreCase": {"type": "boolean", "description": "Case-insensitive search"},
                "literal": {"type": "boolean", "description": "Treat pattern as plain text, not a regex"},
                "context": {"type": "integer", "minimum": 0, "maximum": MAX_CONTEXT, "description": "Lines of context before and after each match"},
                "limit": {"type": "integer", "minimum": 1, "description": "Maximum number of matches (default 100)"}
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
        match self.subject().value(args).filter(|p| !p.is_empty()) {
            Some(path) => format!("{pattern} in {path}"),
            None => pattern.to_string(),
        }
    }

    fn execute(&self, args: Value, ctx: ToolContext) -> BoxFuture<'static, ToolOutput> {
        Box::pin(async move {
            let args: Args = match parse_args("grep", args) {
                Ok(args) => args,
                Err(output) => return output,
            };
            let cwd = ctx.cwd.clone();
            let cancel = ctx.cancel.clone();
            run_blocking(&ctx.cancel, false, move || grep(&cwd, &args, &cancel)).await
        })
    }
}

fn grep(cwd: &Path, args: &Args, cancel: &CancellationToken) -> ToolOutput {
    let root = match search_root(cwd, args.path.as_deref()) {
        Ok(root) => root,
        Err(message) => return ToolOutput::error(message),
    };
    let glob = match args.glob.as_deref().map(PathGlob::new).transpose() {
        Ok(glob) => glob,
        Err(message) => return ToolOutput::error(message),
    };
    let matcher = match RegexMatcherBuilder::new()
        .case_insensitive(args.ignore_case)
        .fixed_strings(args.literal)
        .line_terminator(Some(b'\n'))
        .build(&args.pattern)
    {
        Ok(matcher) => matcher,
        Err(e) => {
            return ToolOutput::error(format!(
                "Invalid regular expression: {e}. Set literal to true to search for plain text."
            ));
        }
    };
    let context = args.context.unwrap_or(0).min(MAX_CONTEXT);
    let mut searcher = SearcherBuilder::new()
        .binary_detection(BinaryDetection::quit(0))
        .line_number(true)
        .before_context(context)
        .after_context(context)
        .build();
    let mut collected = Collected {
        limit: args.limit.unwrap_or(DEFAULT_LIMIT).max(1),
        ..Collected::default()
    };
    for entry in walk(&root) {
        if cancel.is_cancelled() {
            return ToolOutput::error(super::CANCELLED_TEXT);
        }
        let Ok(entry) = entry else { continue };
        if !entry.file_type().is_some_and(|t| t.is_file()) {
            continue;
        }
        let path = entry.path();
        if glob.as_ref().is_some_and(|g| !g.is_match(&root, path)) {
            continue;
        }
        let mut sink = FileSink {
            shown: display(cwd, path),
            out: &mut collected,
            cancel,
            any_match: false,
        };
        // An unreadable file is skipped, as ripgrep does.
        let _ = searcher.search_path(&matcher, path, &mut sink);
        collected.files_searched += 1;
        if collected.stopped() {
            break;
        }
    }
    render(&args.pattern, collected)
}

#[derive(Default)]
struct Collected {
    text: String,
    matches: usize,
    limit: usize,
    files_with_matches: usize,
    files_searched: usize,
    hit_limit: bool,
    hit_bytes: bool,
}

impl Collected {
    fn stopped(&self) -> bool {
        self.hit_limit || self.hit_bytes
    }

    /// Add one output line; false once the byte budget is spent.
    fn push_line(&mut self, line: &str) -> bool {
        if self.text.len() + line.len() + 1 > MAX_BYTES {
            self.hit_bytes = true;
            return false;
        }
        self.text.push_str(line);
        self.text.push('\n');
        true
    }
}

/// Collects one file's matches and context lines into `out`.
struct FileSink<'a> {
    shown: String,
    out: &'a mut Collected,
    cancel: &'a CancellationToken,
    any_match: bool,
}

impl FileSink<'_> {
    fn line(&mut self, separator: char, number: Option<u64>, bytes: &[u8]) -> bool {
        let text = String::from_utf8_lossy(bytes);
        let text = text.trim_end_matches(['\n', '\r']);
        let clipped = clip(text, MAX_LINE_BYTES);
        let cut = if clipped.len() < text.len() {
            " …[line cut]"
        } else {
            ""
        };
        let number = number.map(|n| n.to_string()).unwrap_or_default();
        let line = format!(
            "{}{separator}{number}{separator} {clipped}{cut}",
            self.shown
        );
        self.out.push_line(&line)
    }
}

impl Sink for FileSink<'_> {
    type Error = std::io::Error;

    fn matched(&mut self, _: &Searcher, found: &SinkMatch<'_>) -> Result<bool, Self::Error> {
        if self.cancel.is_cancelled() || self.out.hit_limit {
            return Ok(false);
        }
        if !self.any_match {
            self.any_match = true;
            self.out.files_with_matches += 1;
        }
        if !self.line(':', found.line_number(), found.bytes()) {
            return Ok(false);
        }
        self.out.matches += 1;
        if self.out.matches >= self.out.limit {
            self.out.hit_limit = true;
            return Ok(false);
        }
        Ok(true)
    }

    fn context(&mut self, _: &Searcher, context: &SinkContext<'_>) -> Result<bool, Self::Error> {
        Ok(!self.cancel.is_cancelled() && self.line('-', context.line_number(), context.bytes()))
    }

    fn context_break(&mut self, _: &Searcher) -> Result<bool, Self::Error> {
        Ok(self.out.push_line("--"))
    }
}

fn render(pattern: &str, collected: Collected) -> ToolOutput {
    let details = json!({
        "matches": collected.matches,
        "files": collected.files_with_matches,
        "limitReached": collected.stopped(),
    });
    if collected.matches == 0 {
        return ToolOutput::text(format!(
            "No matches for `{pattern}` ({} files searched).",
            collected.files_searched
        ))
        .with_details(details);
    }
    let mut text = collected.text;
    if collected.hit_limit {
        text.push_str(&format!(
            "\n[Showing the first {} matches; there may be more. Use a narrower pattern, path \
             or glob, or a larger limit, to see more.]",
            collected.matches
        ));
    } else if collected.hit_bytes {
        text.push_str(&format!(
            "\n[Output stopped at 50 KB after {} matches. Use a narrower pattern, path or \
             glob to see the rest.]",
            collected.matches
        ));
    }
    ToolOutput::text(text).with_details(details)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::protocol::message::join_text;

    fn grep_in(dir: &Path, args: Value) -> String {
        let args: Args = serde_json::from_value(args).unwrap();
        join_text(&grep(dir, &args, &CancellationToken::new()).content)
    }

    fn tree() -> tempfile::TempDir {
        let dir = tempfile::tempdir().unwrap();
        let files = [
            (
                "src/lib.rs",
                "pub fn add(a: u8) -> u8 {\n    a + 1\n}\n\n// TODO: more\n",
            ),
            (
                "src/main.rs",
                "fn main() {\n    println!(\"{}\", add(1));\n}\n",
            ),
            ("notes.md", "todo: write docs\nAdd tests\n"),
            ("ignored/skip.rs", "fn add() {}\n"),
            (".gitignore", "ignored/\n"),
        ];
        for (name, body) in files {
            let path = dir.path().join(name);
            std::fs::create_dir_all(path.parent().unwrap()).unwrap();
            std::fs::write(path, body).unwrap();
        }
        std::fs::write(dir.path().join("image.bin"), b"add\0\x01\x02add").unwrap();
        dir
    }

    #[test]
    fn finds_matches_with_line_numbers_and_skips_ignored_and_binary_files() {
        let dir = tree();
        assert_eq!(
            grep_in(dir.path(), json!({"pattern": "add\\("})),
            "src/lib.rs:1: pub fn add(a: u8) -> u8 {\nsrc/main.rs:2:     println!(\"{}\", add(1));\n"
        );
        assert_eq!(
            grep_in(
                dir.path(),
                json!({"pattern": "todo", "ignoreCase": true, "glob": "*.md"})
            ),
            "notes.md:1: todo: write docs\n"
        );
        assert_eq!(
            grep_in(
                dir.path(),
                json!({"pattern": "a + 1", "literal": true, "context": 1})
            ),
            "src/lib.rs-1- pub fn add(a: u8) -> u8 {\nsrc/lib.rs:2:     a + 1\nsrc/lib.rs-3- }\n"
        );
        assert_eq!(
            grep_in(dir.path(), json!({"pattern": "fn", "path": "src/main.rs"})),
            "src/main.rs:1: fn main() {\n"
        );
    }

    #[test]
    fn limits_matches_and_explains_errors() {
        let dir = tree();
        let text = grep_in(dir.path(), json!({"pattern": "[a-z]", "limit": 2}));
        assert!(
            text.starts_with(".gitignore:1: ignored/\nnotes.md:1: todo: write docs\n\n"),
            "{text}"
        );
        assert!(text.contains("[Showing the first 2 matches"), "{text}");
        let text = grep_in(dir.path(), json!({"pattern": "nowhere to be seen"}));
        assert!(
            text.starts_with("No matches for `nowhere to be seen`"),
            "{text}"
        );
        let text = grep_in(dir.path(), json!({"pattern": "(unclosed"}));
        assert!(text.starts_with("Invalid regular expression"), "{text}");
        let text = grep_in(dir.path(), json!({"pattern": "x", "path": "srcc"}));
        assert!(
            text.contains("Similar names in the working directory: src"),
            "{text}"
        );
    }
}
