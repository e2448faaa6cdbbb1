//! `read`: a text file's contents, a window of lines at a time, with a notice saying how to
//! continue when the window does not reach the end. Images (PNG, JPEG, GIF, WebP) come back
//! as image content; other binary files are refused. A missing file names similar ones.

use super::freshness::{FileMemory, Fingerprint, Hashing};
use super::identity;
use super::path::{display, not_found_message, resolve};
use super::regular::{self, OpenError};
use super::truncate::{MAX_BYTES, MAX_LINES, clip};
use super::visibility::Hidden;
use super::{OutputKind, Subject, Tool, ToolContext, ToolOutput, parse_args, run_blocking};
use crate::protocol::message::Content;
use base64::Engine;
use futures_util::future::BoxFuture;
use serde::Deserialize;
use serde_json::{Value, json};
use std::io::{BufRead, BufReader, Read};
use std::path::Path;
use tokio_util::sync::CancellationToken;

pub struct ReadTool;

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Args {
    path: String,
    /// First line to show, 1-based.
    #[serde(default)]
    offset: Option<usize>,
    #[serde(default)]
    limit: Option<usize>,
}

impl Tool for ReadTool {
    fn name(&self) -> &'static str {
        "read"
    }

    fn description(&self) -> &'static str {
        "Read a file. Text output is limited to 2000 lines or 50 KB; use offset (1-based line) \
         and limit to read further. Images (png, jpg, gif, webp) are returned as images. Paths \
         are relative to the working directory."
    }

    fn parameters(&self) -> Value {
        json!({
            "type": "object",
            "properties": {
                "path": {"type": "string", "description": "Path of the file to read"},
                "offset": {"type": "integer", "minimum": 1, "description": "Line number to start at (1-based)"},
                "limit": {"type": "integer", "minimum": 1, "description": "Maximum number of lines to read"}
            },
            "required": ["path"],
            "additionalProperties": false
        })
    }

    fn read_only(&self) -> bool {
        true
    }

    fn subject(&self) -> Subject {
        Subject::Path("path")
    }

    fn output_kind(&self) -> OutputKind {
        OutputKind::FileContents
    }

    fn summarize(&self, args: &Value) -> String {
        let path = self.subject().value(args).unwrap_or("");
        match args.get("offset").and_then(Value::as_u64) {
            Some(offset) => format!("{path}:{offset}"),
            None => path.to_string(),
        }
    }

    fn execute(&self, args: Value, ctx: ToolContext) -> BoxFuture<'static, ToolOutput> {
        Box::pin(async move {
            let args: Args = match parse_args("read", args) {
                Ok(args) => args,
                Err(output) => return output,
            };
            let cwd = ctx.cwd.clone();
            // File reading is blocking I/O; keep it off the async workers.
            let (cancel, files) = (ctx.cancel.clone(), ctx.files.clone());
            let hidden = ctx.hidden.clone();
            let sandbox = ctx.settings.sandbox.clone();
            run_blocking(&ctx.cancel, false, move || {
                let path = resolve(&cwd, &args.path);
                let known = sandbox.nested.get().denied;
                let deny_read = sandbox.deny_read.matcher();
                if let Some(refusal) = deny_read.refuse(&path, &known) {
                    return ToolOutput::error(refusal);
                }
                read_window(
                    &cwd,
                    &args,
                    &cancel,
                    &files,
                    hidden.as_deref(),
                    Some(&deny_read),
                )
            })
            .await
        })
    }
}

/// Read the window `args` asks for; a file shown (whole or in part) is remembered as seen
/// in `files`, with the fingerprint of all of it. The file opened is compared by device
/// and inode with those the deny rules name (`hidden`): a hard link to a denied file,
/// swapped in after the call was judged, is refused too.
fn read_window(
    cwd: &Path,
    args: &Args,
    cancel: &CancellationToken,
    files: &FileMemory,
    hidden: Option<&Hidden>,
    deny_read: Option<&crate::sandbox::deny_read::Matcher>,
) -> ToolOutput {
    let path = resolve(cwd, &args.path);
    let shown = display(cwd, &path);
    let (file, metadata) = match regular::open(&path) {
        Ok(opened) => opened,
        Err(OpenError::NotFound) => return ToolOutput::error(not_found_message(cwd, &path)),
        Err(OpenError::Directory) => {
            return ToolOutput::error(format!(
                "{shown} is a directory, not a file; use ls to list it"
            ));
        }
        Err(OpenError::NotRegular(kind)) => {
            return ToolOutput::error(format!(
                "{shown} is {kind}, not a regular file; read only reads regular files"
            ));
        }
        Err(OpenError::Io(e)) => return ToolOutput::error(format!("Cannot read {shown}: {e}")),
    };
    if let Some(refusal) =
        hidden.and_then(|h| h.refuses("read", &shown, &identity::File::of_open(&file, &metadata)))
    {
        return ToolOutput::error(refusal);
    }
    // Where the file opened really is: a link swapped in after the path was checked.
    if let Some(refusal) = deny_read.and_then(|m| m.refuse_opened(&path, &file)) {
        return ToolOutput::error(refusal);
    }
    if has_image_extension(&path) {
        return read_image(file, &path, &shown, metadata.len(), files);
    }
    let mut reader = BufReader::with_capacity(64 * 1024, file);
    match reader.fill_buf() {
        Ok(head) if looks_binary(head) => {
            return ToolOutput::error(format!(
                "{shown} looks like a binary file ({} bytes); read only shows text",
                metadata.len()
            ));
        }
        Ok(_) => {}
        Err(e) => return ToolOutput::error(format!("Cannot read {shown}: {e}")),
    }
    let offset = args.offset.unwrap_or(1).max(1);
    let limit = args.limit.unwrap_or(MAX_LINES).clamp(1, MAX_LINES);
    match collect_window(reader, offset, limit, cancel) {
        Ok(window) => {
            if offset <= window.total_lines.max(1) {
                files.saw(&path, window.fingerprint);
            }
            render(&shown, offset, window)
        }
        Err(e) => ToolOutput::error(format!("Cannot read {shown}: {e}")),
    }
}

/// Images larger than this are refused (providers reject larger ones anyway).
const MAX_IMAGE_BYTES: u64 = 5 * 1024 * 1024;

fn has_image_extension(path: &Path) -> bool {
    path.extension().and_then(|e| e.to_str()).is_some_and(|e| {
        ["png", "jpg", "jpeg", "gif", "webp"]
            .iter()
            .any(|known| e.eq_ignore_ascii_case(known))
    })
}

/// The image type of `bytes`, from their signature.
fn image_mime_type(bytes: &[u8]) -> Option<&'static str> {
    if bytes.starts_with(b"\x89PNG\r\n\x1a\n") {
        Some("image/png")
    } else if bytes.starts_with(&[0xff, 0xd8, 0xff]) {
        Some("image/jpeg")
    } else if bytes.starts_with(b"GIF87a") || bytes.starts_with(b"GIF89a") {
        Some("image/gif")
    } else if bytes.len() >= 12 && &bytes[..4] == b"RIFF" && &bytes[8..12] == b"WEBP" {
        Some("image/webp")
    } else {
        None
    }
}

fn read_image(
    mut file: std::fs::File,
    path: &Path,
    shown: &str,
    size: u64,
    files: &FileMemory,
) -> ToolOutput {
    if size > MAX_IMAGE_BYTES {
        return ToolOutput::error(format!(
            "{shown} is an image of {size} bytes, more than the 5 MB that can be shown; \
             make a smaller copy first (e.g. with bash)"
        ));
    }
    let mut bytes = Vec::new();
    if let Err(e) = file.read_to_end(&mut bytes) {
        return ToolOutput::error(format!("Cannot read {shown}: {e}"));
    }
    let Some(mime_type) = image_mime_type(&bytes) else {
        return ToolOutput::error(format!(
            "{shown} has an image extension but is not a PNG, JPEG, GIF or WebP image"
        ));
    };
    files.saw(path, Fingerprint::of_bytes(&bytes));
    ToolOutput {
        content: vec![
            Content::text(format!("Read image {shown} [{mime_type}, {size} bytes]")),
            Content::Image {
                data: base64::engine::general_purpose::STANDARD.encode(&bytes),
                mime_type: mime_type.to_string(),
            },
        ],
        details: Some(json!({"path": shown, "mimeType": mime_type, "bytes": size})),
        is_error: false,
    }
}

/// A file with a NUL byte in its first block is treated as binary.
fn looks_binary(head: &[u8]) -> bool {
    head.iter().take(8192).any(|b| *b == 0)
}

struct Window {
    text: String,
    shown_lines: usize,
    total_lines: usize,
    /// The byte budget cut the window short (not the line limit).
    hit_byte_limit: bool,
    /// A single line was longer than the whole budget and was clipped.
    clipped_line: bool,
    /// Of every byte of the file.
    fingerprint: Fingerprint,
}

/// Collect lines `offset..offset+limit` within the byte budget; keeps reading to count the
/// file's lines for the notice. Reads in blocks: a line that is not shown is only counted,
/// and a shown line is kept only up to the budget, so a huge line-free file costs no
/// memory. Stops when `cancel` fires.
fn collect_window(
    mut reader: impl BufRead,
    offset: usize,
    limit: usize,
    cancel: &CancellationToken,
) -> std::io::Result<Window> {
    let mut window = Window {
        text: String::new(),
        shown_lines: 0,
        total_lines: 0,
        hit_byte_limit: false,
        clipped_line: false,
        fingerprint: Fingerprint::of_bytes(&[]),
    };
    let mut hashing = Hashing::default();
    // The line being read (1-based), its bytes if it is shown, and whether it has any.
    let mut number = 1usize;
    let mut line: Vec<u8> = Vec::new();
    let mut started = false;
    loop {
        if cancel.is_cancelled() {
            return Err(std::io::ErrorKind::Interrupted.into());
        }
        let block = reader.fill_buf()?;
        if block.is_empty() {
            break;
        }
        let length = block.len();
        hashing.update(block);
        let mut start = 0;
        while start < length {
            let shown = number >= offset && window.shown_lines < limit && !window.hit_byte_limit;
            let (end, complete) = match block[start..].iter().position(|b| *b == b'\n') {
                Some(at) => (start + at + 1, true),
                None => (length, false),
            };
            if shown && line.len() <= MAX_BYTES {
                let room = MAX_BYTES + 1 - line.len();
                line.extend_from_slice(&block[start..end.min(start + room)]);
            }
            started = true;
            if complete {
                finish_line(&mut window, &mut line, shown);
                number += 1;
                started = false;
            }
            start = end;
        }
        reader.consume(length);
    }
    if started {
        let shown = number >= offset && window.shown_lines < limit && !window.hit_byte_limit;
        finish_line(&mut window, &mut line, shown);
    }
    window.fingerprint = hashing.finish();
    Ok(window)
}

/// A line ended: count it, and keep it if it is shown and fits the budget.
fn finish_line(window: &mut Window, line: &mut Vec<u8>, shown: bool) {
    window.total_lines += 1;
    if !shown {
        line.clear();
        return;
    }
    let text = String::from_utf8_lossy(line);
    if window.text.len() + text.len() > MAX_BYTES {
        if window.shown_lines == 0 {
            window.text.push_str(clip(&text, MAX_BYTES));
            window.shown_lines = 1;
            window.clipped_line = true;
        }
        window.hit_byte_limit = true;
    } else {
        window.text.push_str(&text);
        window.shown_lines += 1;
    }
    line.clear();
}

fn render(shown: &str, offset: usize, window: Window) -> ToolOutput {
    let details = json!({
        "path": shown,
        "totalLines": window.total_lines,
        "shownLines": window.shown_lines,
    });
    if window.total_lines == 0 {
        return ToolOutput::text(format!("[{shown} is empty]")).with_details(details);
    }
    if offset > window.total_lines {
        return ToolOutput::error(format!(
            "offset {offset} is past the end of {shown} ({} lines)",
            window.total_lines
        ));
    }
    let mut text = window.text;
    let last = offset + window.shown_lines - 1;
    if window.clipped_line {
        text.push_str(&format!(
            "\n\n[Line {offset} is longer than 50 KB and was cut. Use bash (e.g. cut or head -c) to see it in pieces.]"
        ));
    } else if last < window.total_lines {
        let reason = if window.hit_byte_limit {
            " (50 KB limit)"
        } else {
            ""
        };
        if !text.ends_with('\n') {
            text.push('\n');
        }
        text.push_str(&format!(
            "\n[Showing lines {offset}-{last} of {}{reason}. Use offset={} to continue.]",
            window.total_lines,
            last + 1
        ));
    }
    ToolOutput::text(text).with_details(details)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn read(dir: &Path, path: &str, offset: Option<usize>, limit: Option<usize>) -> ToolOutput {
        read_window(
            dir,
            &Args {
                path: path.into(),
                offset,
                limit,
            },
            &CancellationToken::new(),
            &FileMemory::default(),
            None,
            None,
        )
    }

    #[test]
    fn devices_are_refused_and_huge_lines_cost_no_more_than_the_budget() {
        let dir = tempfile::tempdir().unwrap();
        let out = read(dir.path(), "/dev/null", None, None);
        assert!(
            out.is_error && text(&out).contains("device"),
            "{}",
            text(&out)
        );
        // A FIFO would block the read (and its thread) until a writer came: refused.
        let status = std::process::Command::new("mkfifo")
            .arg(dir.path().join("pipe"))
            .status()
            .unwrap();
        assert!(status.success());
        let out = read(dir.path(), "pipe", None, None);
        assert_eq!(
            text(&out),
            "pipe is a FIFO (named pipe), not a regular file; read only reads regular files"
        );
        // 3 MB without a newline: one clipped line, then a normal second line.
        let mut big = "y".repeat(3 * 1024 * 1024);
        big.push_str("\nsecond\n");
        std::fs::write(dir.path().join("wide.txt"), &big).unwrap();
        let out = read(dir.path(), "wide.txt", None, None);
        assert!(text(&out).len() < MAX_BYTES + 500);
        assert!(
            text(&out).contains("longer than 50 KB"),
            "{}",
            &text(&out)[text(&out).len() - 200..]
        );
        let out = read(dir.path(), "wide.txt", Some(2), None);
        assert_eq!(text(&out), "second\n");
        // The same text in pieces of every size gives the same lines.
        std::fs::write(dir.path().join("plain.txt"), "a\nbb\n\nccc").unwrap();
        let out = read(dir.path(), "plain.txt", None, None);
        assert_eq!(text(&out), "a\nbb\n\nccc");
        for capacity in 1..8 {
            let reader = BufReader::with_capacity(capacity, "one\ntwo\n\nthree".as_bytes());
            let window = collect_window(reader, 2, 10, &CancellationToken::new()).unwrap();
            assert_eq!(
                (window.text.as_str(), window.total_lines),
                ("two\n\nthree", 4),
                "capacity {capacity}"
            );
        }
    }

    fn text(output: &ToolOutput) -> &str {
        match &output.content[0] {
            crate::protocol::message::Content::Text { text } => text,
            _ => panic!("expected text"),
        }
    }

    #[test]
    fn reads_windows_with_a_continuation_notice() {
        let dir = tempfile::tempdir().unwrap();
        let body: String = (1..=3000).map(|i| format!("line {i}\n")).collect();
        std::fs::write(dir.path().join("big.txt"), &body).unwrap();
        let out = read(dir.path(), "big.txt", None, None);
        assert!(!out.is_error);
        assert!(text(&out).starts_with("line 1\n"));
        assert!(text(&out).contains("line 2000\n"));
        assert!(!text(&out).contains("line 2001\n"));
        assert!(
            text(&out).ends_with("[Showing lines 1-2000 of 3000. Use offset=2001 to continue.]")
        );
        let out = read(dir.path(), "big.txt", Some(2999), Some(5));
        assert_eq!(text(&out), "line 2999\nline 3000\n");
        let out = read(dir.path(), "big.txt", Some(5000), None);
        assert!(out.is_error);
        assert!(text(&out).contains("past the end"));
    }

    #[test]
    fn a_hard_link_to_a_denied_file_is_refused_when_it_is_opened() {
        // The call was judged before the link appeared: what is opened decides.
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("secret.txt"), "TOKEN=hunter2\n").unwrap();
        std::fs::hard_link(dir.path().join("secret.txt"), dir.path().join("x")).unwrap();
        std::fs::write(dir.path().join("plain.txt"), "hello\n").unwrap();
        let deny = vec!["read(secret.txt)".to_string()];
        let rules = super::super::rules::RuleSet::parse(&[], &[], &deny, dir.path()).unwrap();
        let hidden = Hidden::from_rules(&rules, dir.path()).unwrap();
        let read = |path: &str| {
            let args = Args {
                path: path.into(),
                offset: None,
                limit: None,
            };
            read_window(
                dir.path(),
                &args,
                &CancellationToken::new(),
                &FileMemory::default(),
                Some(&hidden),
                None,
            )
        };
        let refused = read("x");
        assert!(refused.is_error);
        let message = text(&refused);
        assert!(
            message.contains("x is the same file as secret.txt")
                && message.contains("`read(secret.txt)`")
                && !message.contains("hunter2"),
            "{message}"
        );
        assert!(!read("plain.txt").is_error);
    }

    #[test]
    fn refuses_binary_missing_and_directories() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("a.bin"), [0u8, 1, 2, 3]).unwrap();
        let out = read(dir.path(), "a.bin", None, None);
        assert!(out.is_error && text(&out).contains("binary"));
        let out = read(dir.path(), "nope.txt", None, None);
        assert!(out.is_error && text(&out).contains("File not found: nope.txt"));
        std::fs::write(dir.path().join("notes.txt"), "x").unwrap();
        let out = read(dir.path(), "note.txt", None, None);
        assert!(text(&out).ends_with("Similar names in the working directory: notes.txt"));
        let out = read(dir.path(), ".", None, None);
        assert!(out.is_error && text(&out).contains("directory"));
    }

    #[test]
    fn returns_images_as_image_content() {
        let dir = tempfile::tempdir().unwrap();
        let png = b"\x89PNG\r\n\x1a\n\0\0\0\rIHDR";
        std::fs::write(dir.path().join("pic.PNG"), png).unwrap();
        let out = read(dir.path(), "pic.PNG", None, None);
        assert!(!out.is_error);
        assert_eq!(text(&out), "Read image pic.PNG [image/png, 16 bytes]");
        assert_eq!(
            out.content[1],
            Content::Image {
                data: base64::engine::general_purpose::STANDARD.encode(png),
                mime_type: "image/png".into()
            }
        );
        std::fs::write(dir.path().join("fake.jpg"), "not really").unwrap();
        let out = read(dir.path(), "fake.jpg", None, None);
        assert!(out.is_error && text(&out).contains("not a PNG, JPEG"));
    }

    #[test]
    fn cuts_at_the_byte_budget_and_keeps_invalid_utf8_readable() {
        let dir = tempfile::tempdir().unwrap();
        let long_line = "x".repeat(1000) + "\n";
        std::fs::write(dir.path().join("wide.txt"), long_line.repeat(100)).unwrap();
        let out = read(dir.path(), "wide.txt", None, None);
        assert!(text(&out).contains("(50 KB limit). Use offset=52 to continue."));
        std::fs::write(dir.path().join("latin1.txt"), b"caf\xe9\n").unwrap();
        let out = read(dir.path(), "latin1.txt", None, None);
        assert_eq!(text(&out), "caf\u{fffd}\n");
    }
}
