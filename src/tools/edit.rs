//! `edit`: exact text replacements in an existing file. Each `oldText` must occur exactly
//! once in the original file; either every edit applies or none does. CRLF line endings and
//! a UTF-8 byte-order mark survive the edit. The result carries a unified diff in
//! `details.diff`.

use super::edit_match::{MatchError, find_unique, line_of};
use super::freshness::{FileMemory, Fingerprint};
use super::path::{display, not_found_message, resolve};
use super::regular::{self, OpenError};
use super::{Subject, Tool, ToolContext, ToolOutput, atomic, diff, parse_args, run_blocking};
use futures_util::future::BoxFuture;
use serde::Deserialize;
use serde_json::{Value, json};
use std::ops::Range;
use std::path::Path;

pub struct EditTool;

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Args {
    path: String,
    edits: Vec<Replacement>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
struct Replacement {
    old_text: String,
    new_text: String,
}

const BOM: &str = "\u{feff}";

impl Tool for EditTool {
    fn name(&self) -> &'static str {
        "edit"
    }

    fn description(&self) -> &'static str {
        "Edit a file by exact text replacement. Each oldText must match exactly one place in \
         the file, including whitespace and indentation; add surrounding lines to make it \
         unique. Several edits of one file go in one call: all apply or none do. Read the file \
         first."
    }

    fn parameters(&self) -> Value {
        json!({
            "type": "object",
            "properties": {
                "path": {"type": "string", "description": "Path of the file to edit"},
                "edits": {
                    "type": "array",
                    "minItems": 1,
                    "description": "Replacements, each matched against the original file",
                    "items": {
                        "type": "object",
                        "properties": {
                            "oldText": {"type": "string", "minLength": 1, "description": "Exact text to replace; must occur once"},
                            "newText": {"type": "string", "description": "Replacement text"}
                        },
                        "required": ["oldText", "newText"],
                        "additionalProperties": false
                    }
                }
            },
            "required": ["path", "edits"],
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
        let edits = args
            .get("edits")
            .and_then(Value::as_array)
            .map_or(0, Vec::len);
        let plural = if edits == 1 { "" } else { "s" };
        let path = self.subject().value(args).unwrap_or("");
        format!("{path} ({edits} edit{plural})")
    }

    fn preview(&self, args: &Value, cwd: &Path) -> Option<Result<String, String>> {
        let args: Args = serde_json::from_value(args.clone()).ok()?;
        let path = resolve(cwd, &args.path);
        let shown = display(cwd, &path);
        let original = match diff::current_text(&path) {
            Ok(Some(text)) => text,
            Ok(None) => return Some(Err(format!("{shown} does not exist: the edit will fail"))),
            Err(why) => return Some(Err(format!("{shown} cannot be compared: {why}"))),
        };
        let file = TextFile::decode(&original);
        Some(match apply(&file.body, &args.edits, file.crlf) {
            Ok(edited) => Ok(diff::unified(&shown, Some(&file.body), &edited.text)),
            Err(problem) => Err(format!("The edit will fail: {problem}")),
        })
    }

    fn execute(&self, args: Value, ctx: ToolContext) -> BoxFuture<'static, ToolOutput> {
        Box::pin(async move {
            let args: Args = match parse_args("edit", args) {
                Ok(args) => args,
                Err(output) => return output,
            };
            let cwd = ctx.cwd.clone();
            let files = ctx.files.clone();
            let deny_read = ctx.settings.sandbox.deny_read.clone();
            run_blocking(&ctx.cancel, true, move || {
                // An edit's result shows the file around the change: a denied file is not
                // edited either.
                let path = resolve(&cwd, &args.path);
                if let Some(refusal) = deny_read.matcher().refuse(&path, &[]) {
                    return ToolOutput::error(refusal);
                }
                edit_file(&cwd, &args, &files)
            })
            .await
        })
    }
}

/// Apply the edits; the file as edited is what the model has seen of it (`files`).
fn edit_file(cwd: &Path, args: &Args, files: &FileMemory) -> ToolOutput {
    let path = resolve(cwd, &args.path);
    let shown = display(cwd, &path);
    let bytes = match read_regular(&path) {
        Ok(bytes) => bytes,
        Err(OpenError::NotFound) => {
            return ToolOutput::error(format!(
                "{} (edit changes existing files; use write to create one)",
                not_found_message(cwd, &path)
            ));
        }
        Err(OpenError::Directory) => {
            return ToolOutput::error(format!("Cannot edit {shown}: it is a directory"));
        }
        Err(OpenError::NotRegular(kind)) => {
            return ToolOutput::error(format!(
                "Cannot edit {shown}: it is {kind}, not a regular file"
            ));
        }
        Err(OpenError::Io(e)) => return ToolOutput::error(format!("Cannot read {shown}: {e}")),
    };
    if bytes.iter().take(8192).any(|b| *b == 0) {
        return ToolOutput::error(format!(
            "{shown} looks like a binary file; edit changes text"
        ));
    }
    let Ok(original) = String::from_utf8(bytes) else {
        return ToolOutput::error(format!(
            "{shown} is not valid UTF-8 text, so it cannot be edited safely; use bash instead"
        ));
    };
    let file = TextFile::decode(&original);
    let edited = match apply(&file.body, &args.edits, file.crlf) {
        Ok(edited) => edited,
        Err(problem) => {
            let note = if args.edits.len() > 1 {
                " No edits were applied."
            } else {
                ""
            };
            return ToolOutput::error(format!("Cannot edit {shown}: {problem}{note}"));
        }
    };
    let encoded = file.encode(&edited.text);
    if let Err(e) = atomic::write(&path, encoded.as_bytes()) {
        return ToolOutput::error(format!("Cannot write {shown}: {e}"));
    }
    files.saw(&path, Fingerprint::of_bytes(encoded.as_bytes()));
    let diff = diff::unified(&shown, Some(&file.body), &edited.text);
    let count = args.edits.len();
    let plural = if count == 1 { "" } else { "s" };
    ToolOutput::text(format!(
        "Edited {shown}: {count} replacement{plural}, first change at line {}.",
        edited.first_line
    ))
    .with_details(json!({"path": shown, "diff": diff, "firstChangedLine": edited.first_line}))
}

/// The whole contents of a regular file.
fn read_regular(path: &Path) -> Result<Vec<u8>, OpenError> {
    use std::io::Read;
    let (mut file, metadata) = regular::open(path)?;
    let mut bytes = Vec::with_capacity(usize::try_from(metadata.len()).unwrap_or(0));
    file.read_to_end(&mut bytes)?;
    Ok(bytes)
}

/// A text file split into what edits work on (LF line endings, no BOM) and what must be
/// put back when it is written.
struct TextFile {
    body: String,
    bom: bool,
    crlf: bool,
}

impl TextFile {
    fn decode(text: &str) -> TextFile {
        let (bom, text) = match text.strip_prefix(BOM) {
            Some(rest) => (true, rest),
            None => (false, text),
        };
        // Only a file whose every line ends in CRLF is converted; mixed endings are kept
        // byte for byte.
        let newlines = text.matches('\n').count();
        let crlf = newlines > 0 && text.matches("\r\n").count() == newlines;
        let body = if crlf {
            text.replace("\r\n", "\n")
        } else {
            text.to_string()
        };
        TextFile { body, bom, crlf }
    }

    fn encode(&self, body: &str) -> String {
        let body = if self.crlf {
            body.replace('\n', "\r\n")
        } else {
            body.to_string()
        };
        if self.bom {
            format!("{BOM}{body}")
        } else {
            body
        }
    }
}

struct Edited {
    text: String,
    first_line: usize,
}

/// Apply every replacement to `body`, or explain why not.
fn apply(body: &str, edits: &[Replacement], crlf: bool) -> Result<Edited, String> {
    // The body has LF endings when the file used CRLF throughout or had no CR at all; the
    // model's text is brought to the same form.
    let lf_only = crlf || !body.contains('\r');
    let normalise = |text: &str| {
        if lf_only {
            text.replace("\r\n", "\n")
        } else {
            text.to_string()
        }
    };
    let label = |i: usize| {
        if edits.len() > 1 {
            format!("edit {} of {}: ", i + 1, edits.len())
        } else {
            String::new()
        }
    };
    let mut located: Vec<(Range<usize>, String, usize)> = Vec::new();
    for (i, edit) in edits.iter().enumerate() {
        let old = normalise(&edit.old_text);
        if old.is_empty() {
            return Err(format!("{}oldText is empty", label(i)));
        }
        match find_unique(body, &old) {
            Ok(range) => located.push((range, normalise(&edit.new_text), i)),
            Err(MatchError::NotFound(closest)) => {
                let mut message = format!("{}oldText was not found in the file.", label(i));
                if !closest.is_empty() {
                    message.push('\n');
                    message.push_str(&closest);
                }
                return Err(message);
            }
            Err(MatchError::Ambiguous(lines)) => {
                let shown: Vec<String> = lines.iter().take(10).map(|l| l.to_string()).collect();
                return Err(format!(
                    "{}oldText matches {} places (lines {}); include more surrounding lines so \
                     it matches exactly one.",
                    label(i),
                    lines.len(),
                    shown.join(", ")
                ));
            }
        }
    }
    located.sort_by_key(|(range, _, _)| range.start);
    for pair in located.windows(2) {
        if pair[1].0.start < pair[0].0.end {
            return Err(format!(
                "edits {} and {} overlap; merge them into one edit",
                pair[0].2 + 1,
                pair[1].2 + 1
            ));
        }
    }
    let mut text = body.to_string();
    for (range, new_text, _) in located.iter().rev() {
        text.replace_range(range.clone(), new_text);
    }
    if text == body {
        return Err("the edits change nothing (newText equals oldText)".to_string());
    }
    let first_line = located
        .first()
        .map(|(range, _, _)| line_of(body, range.start))
        .unwrap_or(1);
    Ok(Edited { text, first_line })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::protocol::message::join_text;

    fn edit(dir: &Path, path: &str, edits: &[(&str, &str)]) -> ToolOutput {
        edit_file(
            dir,
            &Args {
                path: path.into(),
                edits: edits
                    .iter()
                    .map(|(old, new)| Replacement {
                        old_text: old.to_string(),
                        new_text: new.to_string(),
                    })
                    .collect(),
            },
            &FileMemory::default(),
        )
    }

    #[test]
    fn previews_the_diff_an_edit_would_make_without_making_it() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("a.rs"), "let x = 1;\n").unwrap();
        let args = |old: &str| serde_json::json!({"path": "a.rs", "edits": [{"oldText": old, "newText": "let x = 2;"}]});
        let diff = EditTool
            .preview(&args("let x = 1;"), dir.path())
            .unwrap()
            .unwrap();
        assert!(diff.contains("-let x = 1;\n+let x = 2;\n"), "{diff}");
        assert_eq!(
            std::fs::read_to_string(dir.path().join("a.rs")).unwrap(),
            "let x = 1;\n"
        );
        let failing = EditTool.preview(&args("nope"), dir.path()).unwrap();
        assert!(failing.unwrap_err().starts_with("The edit will fail"));
    }

    #[test]
    fn replaces_exactly_once_and_reports_a_diff() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("lib.rs");
        std::fs::write(
            &file,
            "fn one() -> u8 {\n    1\n}\n\nfn two() -> u8 {\n    1\n}\n",
        )
        .unwrap();
        let out = edit(dir.path(), "lib.rs", &[("    1\n", "    2\n")]);
        assert!(out.is_error);
        assert!(
            join_text(&out.content).contains("oldText matches 2 places (lines 2, 6)"),
            "{}",
            join_text(&out.content)
        );
        let out = edit(
            dir.path(),
            "lib.rs",
            &[("fn two() -> u8 {\n    1", "fn two() -> u8 {\n    2")],
        );
        assert!(!out.is_error, "{}", join_text(&out.content));
        assert_eq!(
            join_text(&out.content),
            "Edited lib.rs: 1 replacement, first change at line 5."
        );
        let diff = out.details.as_ref().unwrap()["diff"].as_str().unwrap();
        assert!(diff.starts_with("--- a/lib.rs\n+++ b/lib.rs\n@@"), "{diff}");
        assert!(diff.contains("\n-    1\n+    2\n"), "{diff}");
        assert!(
            std::fs::read_to_string(&file)
                .unwrap()
                .ends_with("fn two() -> u8 {\n    2\n}\n")
        );
    }

    #[test]
    fn applies_all_edits_or_none() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("a.txt");
        std::fs::write(&file, "alpha\nbeta\ngamma\n").unwrap();
        let out = edit(
            dir.path(),
            "a.txt",
            &[("alpha", "ALPHA"), ("delta", "DELTA")],
        );
        assert!(out.is_error);
        let text = join_text(&out.content);
        assert!(
            text.contains("edit 2 of 2: oldText was not found"),
            "{text}"
        );
        assert!(text.ends_with("No edits were applied."), "{text}");
        assert_eq!(
            std::fs::read_to_string(&file).unwrap(),
            "alpha\nbeta\ngamma\n"
        );

        let out = edit(
            dir.path(),
            "a.txt",
            &[("alpha\nbeta", "x"), ("beta\ngamma", "y")],
        );
        assert!(join_text(&out.content).contains("edits 1 and 2 overlap"));

        let out = edit(
            dir.path(),
            "a.txt",
            &[("gamma", "GAMMA"), ("alpha", "ALPHA")],
        );
        assert!(!out.is_error);
        assert_eq!(
            std::fs::read_to_string(&file).unwrap(),
            "ALPHA\nbeta\nGAMMA\n"
        );

        let out = edit(dir.path(), "a.txt", &[("beta", "beta")]);
        assert!(join_text(&out.content).contains("change nothing"));
    }

    #[test]
    fn keeps_crlf_line_endings_and_the_byte_order_mark() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("win.txt");
        std::fs::write(&file, "\u{feff}one\r\ntwo\r\nthree\r\n").unwrap();
        // The model writes plain newlines.
        let out = edit(dir.path(), "win.txt", &[("one\ntwo", "one\n2\nmore")]);
        assert!(!out.is_error, "{}", join_text(&out.content));
        assert_eq!(
            std::fs::read(&file).unwrap(),
            "\u{feff}one\r\n2\r\nmore\r\nthree\r\n".as_bytes()
        );
        let diff = out.details.as_ref().unwrap()["diff"].as_str().unwrap();
        assert!(!diff.contains('\r'), "{diff}");

        let unix = dir.path().join("unix.txt");
        std::fs::write(&unix, "a\nb\n").unwrap();
        let out = edit(dir.path(), "unix.txt", &[("a\r\nb", "a\r\nB")]);
        assert!(!out.is_error, "{}", join_text(&out.content));
        assert_eq!(std::fs::read(&unix).unwrap(), b"a\nB\n");

        let mixed = dir.path().join("mixed.txt");
        std::fs::write(&mixed, "a\r\nb\nc\n").unwrap();
        edit(dir.path(), "mixed.txt", &[("c", "C")]);
        assert_eq!(std::fs::read(&mixed).unwrap(), b"a\r\nb\nC\n");
    }

    #[test]
    fn refuses_missing_binary_and_fuzzy_matches() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("main.rs"), "fn main() {\n    run();\n}\n").unwrap();
        let out = edit(dir.path(), "mian.rs", &[("a", "b")]);
        let text = join_text(&out.content);
        assert!(
            text.contains("Similar names in the working directory: main.rs"),
            "{text}"
        );
        let status = std::process::Command::new("mkfifo")
            .arg(dir.path().join("pipe"))
            .status()
            .unwrap();
        assert!(status.success());
        let out = edit(dir.path(), "pipe", &[("a", "b")]);
        assert_eq!(
            join_text(&out.content),
            "Cannot edit pipe: it is a FIFO (named pipe), not a regular file"
        );
        std::fs::write(dir.path().join("blob.bin"), [1u8, 0, 2]).unwrap();
        let out = edit(dir.path(), "blob.bin", &[("a", "b")]);
        assert!(join_text(&out.content).contains("binary"));
        let out = edit(dir.path(), "main.rs", &[("fn main() {\n  run();", "x")]);
        let text = join_text(&out.content);
        assert!(
            text.contains("differ from oldText only in whitespace"),
            "{text}"
        );
        assert!(text.contains("     2\t    run();"), "{text}");
        assert_eq!(
            std::fs::read_to_string(dir.path().join("main.rs")).unwrap(),
            "fn main() {\n    run();\n}\n"
        );
    }
}
