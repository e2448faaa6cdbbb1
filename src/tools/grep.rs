//! `grep`: search file contents with a regular expression (or a literal string), walking
//! the tree as `walk` does. Built on ripgrep's own crates (`grep-searcher`, `grep-regex`);
//! output is `path:line: text` with optional context lines, and the number of matches is
//! limited with a notice saying how to see more. A file with a NUL byte is binary: searched
//! to its end all the same, its matches are reported as "binary file matches", as ripgrep
//! reports them. Paths the permission rules hide are left out, and the result says so.

use super::path::display;
use super::regular;
use super::truncate::{MAX_BYTES, clip};
use super::visibility::Hidden;
use super::walk::{Denied, PathGlob, search_root, walk};
use super::{Subject, Tool, ToolContext, ToolOutput, parse_args, run_blocking};
use futures_util::future::BoxFuture;
use grep_regex::RegexMatcherBuilder;
use grep_searcher::{BinaryDetection, Searcher, SearcherBuilder, Sink, SinkContext, SinkMatch};
use serde::Deserialize;
use serde_json::{Value, json};
use std::path::Path;
use std::sync::Arc;
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
         .gitignore; in binary files (with NUL bytes) matches are counted, not shown. Output \
         lines are `path:line: text` (context lines use `-`). At most 100 matches unless \
         limit says otherwise."
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
            let hidden = ctx.hidden.clone();
            let sandbox = ctx.settings.sandbox.clone();
            run_blocking(&ctx.cancel, false, move || {
                let denied = Denied {
                    matcher: sandbox.deny_read.matcher(),
                    files: true,
                    known: sandbox.nested.get().denied,
                };
                grep(&cwd, &args, &cancel, hidden, denied)
            })
            .await
        })
    }
}

fn grep(
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
    // A NUL byte makes a file binary, but the search goes on to the end (NUL counting as a
    // line break), so no match is missed; such a file's matches are reported as ripgrep
    // reports them, as "binary file matches", not as lines.
    let mut searcher = SearcherBuilder::new()
        .binary_detection(BinaryDetection::convert(0))
        .line_number(true)
        .before_context(context)
        .after_context(context)
        .build();
    let mut collected = Collected {
        limit: args.limit.unwrap_or(DEFAULT_LIMIT).max(1),
        ..Collected::default()
    };
    let mut entries = match walk(&root, hidden, denied) {
        Ok(entries) => entries,
        Err(message) => return ToolOutput::error(message),
    };
    while let Some(entry) = entries.next() {
        if cancel.is_cancelled() {
            return ToolOutput::error(super::CANCELLED_TEXT);
        }
        if !entry.file_type().is_some_and(|t| t.is_file()) {
            continue;
        }
        let path = entry.path();
        if glob.as_ref().is_some_and(|g| !g.is_match(&root, path)) {
            continue;
        }
        // Opened without blocking and checked again: a FIFO swapped in is skipped. An
        // unreadable file is skipped, as ripgrep does.
        let Ok((file, metadata)) = regular::open(path) else {
            continue;
        };
        if entries.leaves_out(&file, &metadata) {
            continue;
        }
        let mut sink = FileSink::new(display(cwd, path), &collected, cancel);
        let searched = searcher.search_file(&matcher, &file, &mut sink);
        collected.files_searched += 1;
        if searched.is_ok() {
            sink.finish_into(&mut collected);
        }
        if collected.stopped() {
            break;
        }
    }
    collected.notes = entries.notes();
    render(&args.pattern, collected)
}

#[derive(Default)]
struct Collected {
    text: String,
    /// Matching lines shown.
    matches: usize,
    limit: usize,
    files_with_matches: usize,
    /// Files with NUL bytes whose matches were counted, not shown.
    binary_files: usize,
    files_searched: usize,
    hit_limit: bool,
    hit_bytes: bool,
    /// What the walk left out.
    notes: Vec<String>,
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

    /// Matches shown or reported so far; the limit counts a binary file as one.
    fn reported(&self) -> usize {
        self.matches + self.binary_files
    }
}

/// Collects one file's matches and context lines; they join the output when the file is
/// done, as lines, or as one "binary file matches" line if a NUL byte turned up.
struct FileSink<'a> {
    shown: String,
    cancel: &'a CancellationToken,
    /// Matches that may still be shown before the limit.
    room: usize,
    lines: Vec<String>,
    matches: usize,
    /// Where the first NUL byte is, once one was seen.
    binary_offset: Option<u64>,
    /// About how many bytes `lines` hold: past the output budget, the file stops.
    bytes: usize,
}

impl<'a> FileSink<'a> {
    fn new(shown: String, out: &Collected, cancel: &'a CancellationToken) -> Self {
        FileSink {
            shown,
            cancel,
            room: out.limit.saturating_sub(out.reported()),
            lines: Vec::new(),
            matches: 0,
            binary_offset: None,
            bytes: 0,
        }
    }

    fn line(&mut self, separator: char, number: Option<u64>, bytes: &[u8]) {
        if self.binary_offset.is_some() {
            return;
        }
        self.bytes += bytes.len().min(MAX_LINE_BYTES + 100);
        let text = String::from_utf8_lossy(bytes);
        let text = text.trim_end_matches(['\n', '\r']);
        let clipped = clip(text, MAX_LINE_BYTES);
        let cut = if clipped.len() < text.len() {
            " …[line cut]"
        } else {
            ""
        };
        let number = number.map(|n| n.to_string()).unwrap_or_default();
        self.lines.push(format!(
            "{}{separator}{number}{separator} {clipped}{cut}",
            self.shown
        ));
    }

    /// Move this file's findings into `out`.
    fn finish_into(self, out: &mut Collected) {
        if self.matches == 0 {
            return;
        }
        out.files_with_matches += 1;
        if let Some(offset) = self.binary_offset {
            let plural = if self.matches == 1 { "" } else { "es" };
            let line = format!(
                "{}: binary file matches ({} match{plural}; it contains a NUL byte at offset {offset})",
                self.shown, self.matches
            );
            if out.push_line(&line) {
                out.binary_files += 1;
            }
        } else {
            for line in &self.lines {
                if !out.push_line(line) {
                    return;
                }
            }
            out.matches += self.matches;
        }
        if out.reported() >= out.limit {
            out.hit_limit = true;
        }
    }
}

impl Sink for FileSink<'_> {
    type Error = std::io::Error;

    fn matched(&mut self, _: &Searcher, found: &SinkMatch<'_>) -> Result<bool, Self::Error> {
        if self.cancel.is_cancelled() {
            return Ok(false);
        }
        self.matches += 1;
        self.line(':', found.line_number(), found.bytes());
        // A binary file is counted to its end; lines stop at the limit or the budget.
        Ok(self.binary_offset.is_some() || (self.matches < self.room && self.bytes <= MAX_BYTES))
    }

    fn context(&mut self, _: &Searcher, context: &SinkContext<'_>) -> Result<bool, Self::Error> {
        self.line('-', context.line_number(), context.bytes());
        Ok(!self.cancel.is_cancelled())
    }

    fn context_break(&mut self, _: &Searcher) -> Result<bool, Self::Error> {
        if self.binary_offset.is_none() {
            self.lines.push("--".to_string());
        }
        Ok(true)
    }

    fn binary_data(&mut self, _: &Searcher, offset: u64) -> Result<bool, Self::Error> {
        self.binary_offset.get_or_insert(offset);
        self.lines.clear();
        Ok(!self.cancel.is_cancelled())
    }
}

fn render(pattern: &str, collected: Collected) -> ToolOutput {
    let details = json!({
        "matches": collected.matches,
        "files": collected.files_with_matches,
        "binaryFiles": collected.binary_files,
        "limitReached": collected.stopped(),
    });
    let notes = collected.notes.join("\n");
    if collected.reported() == 0 {
        let mut text = format!(
            "No matches for `{pattern}` ({} files searched).",
            collected.files_searched
        );
        if !notes.is_empty() {
            text.push_str("\n\n");
            text.push_str(&notes);
        }
        return ToolOutput::text(text).with_details(details);
    }
    let reported = collected.reported();
    let mut text = collected.text;
    if collected.hit_limit {
        text.push_str(&format!(
            "\n[Showing the first {} matches; there may be more. Use a narrower pattern, path \
             or glob, or a larger limit, to see more.]",
            reported
        ));
    } else if collected.hit_bytes {
        text.push_str(&format!(
            "\n[Output stopped at 50 KB after {} matches. Use a narrower pattern, path or \
             glob to see the rest.]",
            reported
        ));
    }
    if collected.binary_files > 0 {
        text.push_str(
            "\n[A file with a NUL byte is treated as binary, as ripgrep does: it is searched to \
             its end, but its matches are counted, not shown. To see them, use bash, e.g. \
             `grep -a -n PATTERN FILE | cut -c1-300`.]",
        );
    }
    if !notes.is_empty() {
        text.push('\n');
        text.push_str(&notes);
    }
    ToolOutput::text(text).with_details(details)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::protocol::message::join_text;

    fn grep_in(dir: &Path, args: Value) -> String {
        let args: Args = serde_json::from_value(args).unwrap();
        join_text(&grep(dir, &args, &CancellationToken::new(), None, Denied::none()).content)
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
            text.starts_with(
                ".gitignore:1: ignored/\nimage.bin: binary file matches (2 matches; it contains a NUL byte at offset 3)\n\n"
            ),
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

    #[test]
    fn a_nul_byte_does_not_hide_matches_and_the_result_says_so() {
        let dir = tempfile::tempdir().unwrap();
        // A log that is text apart from one stray NUL, with the match after it.
        let mut log = b"start\n\0\n".to_vec();
        log.extend(b"line\n".repeat(20_000));
        log.extend(b"needle found\n");
        std::fs::write(dir.path().join("app.log"), &log).unwrap();
        std::fs::write(dir.path().join("plain.txt"), "a needle\n").unwrap();
        let text = grep_in(dir.path(), json!({"pattern": "needle"}));
        assert!(
            text.starts_with(
                "app.log: binary file matches (1 match; it contains a NUL byte at offset 6)\nplain.txt:1: a needle\n"
            ),
            "{text}"
        );
        assert!(
            text.contains("treated as binary, as ripgrep does"),
            "{text}"
        );
        let text = grep_in(dir.path(), json!({"pattern": "absent"}));
        assert!(
            text.starts_with("No matches for `absent` (2 files searched)."),
            "{text}"
        );
    }
}
