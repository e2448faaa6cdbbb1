//! Diagnostics as the model and the front ends get them: per file, the errors and warnings
//! of the current text — the ones the change brought first, then those that were there
//! before it (marked), each with `line:col`, the server's code and message, at most
//! `max` shown — or why they are not there (not in time, server unavailable). The text goes
//! into the tool result; `details.lsp` carries the same for front ends (docs/protocol.md).

use super::documents::Published;
use super::location::{Encoding, column_of, shown};
pub use super::view::{counts_of, text_of};
use lsp_types::{Diagnostic, DiagnosticSeverity, NumberOrString};
use serde_json::{Value, json};
use std::collections::HashMap;
use std::path::{Path, PathBuf};

/// One diagnostic as shown.
#[derive(Clone, Debug, PartialEq)]
pub struct Shown {
    pub error: bool,
    /// 1-based line and character column.
    pub line: usize,
    pub column: usize,
    pub code: Option<String>,
    pub message: String,
    /// It was there before the change too.
    pub existed: bool,
}

#[derive(Clone, Debug, PartialEq)]
pub enum Outcome {
    Checked {
        shown: Vec<Shown>,
        errors: usize,
        warnings: usize,
        /// Errors and warnings not shown (over the cap).
        more: usize,
    },
    /// The diagnostics did not come in time: why.
    Late(String),
    /// No server could check the file: why.
    Unavailable(String),
}

/// What one server said of one file.
#[derive(Clone, Debug, PartialEq)]
pub struct FileReport {
    pub path: PathBuf,
    pub server: String,
    pub outcome: Outcome,
}

fn severity_is_error(diagnostic: &Diagnostic) -> Option<bool> {
    match diagnostic.severity {
        None | Some(DiagnosticSeverity::ERROR) => Some(true),
        Some(DiagnosticSeverity::WARNING) => Some(false),
        _ => None,
    }
}

fn code_of(diagnostic: &Diagnostic) -> Option<String> {
    match &diagnostic.code {
        Some(NumberOrString::Number(n)) => Some(n.to_string()),
        Some(NumberOrString::String(s)) => Some(s.clone()),
        None => None,
    }
}

type Key = (bool, Option<String>, String);

fn key(diagnostic: &Diagnostic, error: bool) -> Key {
    (error, code_of(diagnostic), diagnostic.message.clone())
}

/// The errors and warnings of `now` (of `text`), those also in `before` marked; when the
/// text did not change (`changed` false) every one was there before.
pub fn checked(
    now: &Published,
    before: Option<&Published>,
    changed: bool,
    text: &str,
    encoding: Encoding,
    max: usize,
) -> Outcome {
    let mut earlier: HashMap<Key, usize> = HashMap::new();
    if let Some(before) = before {
        for diagnostic in before.items.iter() {
            if let Some(error) = severity_is_error(diagnostic) {
                *earlier.entry(key(diagnostic, error)).or_default() += 1;
            }
        }
    }
    let mut all: Vec<(bool, bool, &Diagnostic)> = now
        .items
        .iter()
        .filter_map(|diagnostic| {
            let error = severity_is_error(diagnostic)?;
            let existed = !changed
                || earlier
                    .get_mut(&key(diagnostic, error))
                    .is_some_and(|count| {
                        let had = *count > 0;
                        *count = count.saturating_sub(1);
                        had
                    });
            Some((existed, error, diagnostic))
        })
        .collect();
    // New ones first, errors before warnings, then in file order.
    all.sort_by_key(|(existed, error, d)| {
        (
            *existed,
            !*error,
            d.range.start.line,
            d.range.start.character,
        )
    });
    let errors = all.iter().filter(|(_, error, _)| *error).count();
    let warnings = all.len() - errors;
    let more = all.len().saturating_sub(max);
    let lines: Vec<&str> = if all.is_empty() {
        Vec::new()
    } else {
        text.lines().collect()
    };
    let shown = all
        .into_iter()
        .take(max)
        .map(|(existed, error, d)| {
            let line_index = usize::try_from(d.range.start.line).unwrap_or(usize::MAX);
            let line_text = lines.get(line_index).copied().unwrap_or("");
            Shown {
                error,
                line: line_index.saturating_add(1),
                column: column_of(line_text, d.range.start.character, encoding),
                code: code_of(d),
                message: d.message.clone(),
                existed,
            }
        })
        .collect();
    Outcome::Checked {
        shown,
        errors,
        warnings,
        more,
    }
}

/// One line of a message: the first, cut to a reasonable length.
fn one_line(message: &str) -> String {
    let first = message.lines().next().unwrap_or("").trim();
    let cut = crate::tools::truncate::clip(first, 300);
    if cut.len() < message.trim().len() {
        format!("{cut} …")
    } else {
        cut.to_string()
    }
}

/// `error 3:5 [TS2304] Cannot find name 'fooo'.`
pub fn shown_line(item: &Shown) -> String {
    let mut line = format!(
        "{} {}:{}",
        if item.error { "error" } else { "warning" },
        item.line,
        item.column
    );
    if let Some(code) = &item.code {
        line.push_str(&format!(" [{code}]"));
    }
    line.push(' ');
    line.push_str(&one_line(&item.message));
    if item.existed {
        line.push_str(" (already there before this change)");
    }
    line
}

fn counted(n: usize, noun: &str) -> String {
    if n == 1 {
        format!("1 {noun}")
    } else {
        format!("{n} {noun}s")
    }
}

/// The text the model reads, for the reports of one tool call; `None` without reports.
pub fn text(reports: &[FileReport], cwd: &Path) -> Option<String> {
    if reports.is_empty() {
        return None;
    }
    let mut out = Vec::new();
    for report in reports {
        let file = shown(&report.path, cwd);
        match &report.outcome {
            Outcome::Checked {
                shown,
                errors,
                warnings,
                more,
            } => {
                if errors + warnings == 0 {
                    out.push(format!(
                        "Language server ({}): no errors or warnings in {file}.",
                        report.server
                    ));
                    continue;
                }
                out.push(format!(
                    "Language server ({}): {} and {} in {file}:",
                    report.server,
                    counted(*errors, "error"),
                    counted(*warnings, "warning")
                ));
                out.extend(shown.iter().map(|item| format!("  {}", shown_line(item))));
                if *more > 0 {
                    out.push(format!("  … and {more} more"));
                }
            }
            Outcome::Late(why) => out.push(format!(
                "Language server ({}): no diagnostics for {file} yet: {why}.",
                report.server
            )),
            Outcome::Unavailable(why) => out.push(format!(
                "Language server ({}): {file} was not checked: {why}.",
                report.server
            )),
        }
    }
    Some(out.join("\n"))
}

/// `details.lsp` of a tool result: `{files: [...], errors, warnings, text}`.
pub fn details(reports: &[FileReport], cwd: &Path, text: &str) -> Value {
    let mut total = (0, 0);
    let files: Vec<Value> = reports
        .iter()
        .map(|report| {
            let mut file = json!({
                "path": shown(&report.path, cwd),
                "server": report.server,
            });
            let extra = match &report.outcome {
                Outcome::Checked {
                    shown,
                    errors,
                    warnings,
                    more,
                } => {
                    total.0 += errors;
                    total.1 += warnings;
                    json!({
                        "status": "checked",
                        "errors": errors,
                        "warnings": warnings,
                        "notShown": more,
                        "diagnostics": shown.iter().map(|item| json!({
                            "severity": if item.error { "error" } else { "warning" },
                            "line": item.line,
                            "column": item.column,
                            "code": item.code,
                            "message": item.message,
                            "existedBefore": item.existed,
                        })).collect::<Vec<_>>(),
                    })
                }
                Outcome::Late(why) => json!({"status": "late", "reason": why}),
                Outcome::Unavailable(why) => json!({"status": "unavailable", "reason": why}),
            };
            if let (Some(file), Some(extra)) = (file.as_object_mut(), extra.as_object()) {
                file.extend(extra.clone());
            }
            file
        })
        .collect();
    json!({"files": files, "errors": total.0, "warnings": total.1, "text": text})
}

/// Add the reports to a tool's output: the text as a block of its own, `details.lsp` for
/// front ends.
pub fn attach(output: &mut crate::tools::ToolOutput, reports: &[FileReport], cwd: &Path) {
    let Some(text) = text(reports, cwd) else {
        return;
    };
    let details = details(reports, cwd, &text);
    output
        .content
        .push(crate::protocol::message::Content::text(text));
    match &mut output.details {
        Some(Value::Object(map)) => {
            map.insert("lsp".to_string(), details);
        }
        Some(_) => {}
        None => output.details = Some(json!({"lsp": details})),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use lsp_types::{Position, Range};

    fn diagnostic(line: u32, severity: DiagnosticSeverity, message: &str) -> Diagnostic {
        Diagnostic {
            range: Range::new(Position::new(line, 2), Position::new(line, 3)),
            severity: Some(severity),
            code: Some(NumberOrString::Number(7)),
            message: message.into(),
            ..Diagnostic::default()
        }
    }

    #[test]
    fn new_problems_come_first_and_old_ones_are_marked() {
        let before = Published::new(
            Some(1),
            vec![diagnostic(0, DiagnosticSeverity::WARNING, "old")],
            1,
        );
        let now = Published::new(
            Some(2),
            vec![
                diagnostic(0, DiagnosticSeverity::WARNING, "old"),
                diagnostic(3, DiagnosticSeverity::ERROR, "new"),
                diagnostic(5, DiagnosticSeverity::HINT, "hint"),
            ],
            2,
        );
        let text = "ab\n\n\n\u{e9}\u{e9}x\n";
        let outcome = checked(&now, Some(&before), true, text, Encoding::Utf8, 10);
        let Outcome::Checked {
            shown,
            errors,
            warnings,
            more,
        } = outcome
        else {
            panic!("{outcome:?}");
        };
        assert_eq!((errors, warnings, more), (1, 1, 0));
        assert_eq!(shown_line(&shown[0]), "error 4:2 [7] new");
        assert_eq!(
            shown_line(&shown[1]),
            "warning 1:3 [7] old (already there before this change)"
        );
        let capped = checked(&now, None, true, text, Encoding::Utf8, 1);
        assert!(matches!(capped, Outcome::Checked { more: 1, .. }));
    }

    #[test]
    fn reports_read_as_text_and_details() {
        let reports = vec![
            FileReport {
                path: "/w/a.py".into(),
                server: "pyright".into(),
                outcome: Outcome::Checked {
                    shown: vec![],
                    errors: 0,
                    warnings: 0,
                    more: 0,
                },
            },
            FileReport {
                path: "/elsewhere/b.py".into(),
                server: "pyright".into(),
                outcome: Outcome::Late("pyright is still starting".into()),
            },
        ];
        let text = text(&reports, Path::new("/w")).unwrap();
        assert_eq!(
            text,
            "Language server (pyright): no errors or warnings in a.py.\n\
             Language server (pyright): no diagnostics for /elsewhere/b.py yet: pyright is still starting."
        );
        let mut output = crate::tools::ToolOutput::text("done");
        attach(&mut output, &reports, Path::new("/w"));
        assert_eq!(counts_of(output.details.as_ref()), Some((0, 0)));
        assert_eq!(text_of(output.details.as_ref()), Some(text.as_str()));
        assert_eq!(output.content.len(), 2);
    }
}
