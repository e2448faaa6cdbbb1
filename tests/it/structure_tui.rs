//! The interface's own shape, read from src/tui/** as text (issue 30): it imports nothing
//! from the headless front ends (`crate::modes`), no function in it is longer than 80
//! lines, and `App` is a small core (its state is grouped: the run, the composer, the views
//! over it), and the views over the composer live in src/tui/views/. A function over the
//! limit may be listed in `LONG_NOW` only while it is being split, and may only shrink.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // test code fails loudly

use std::path::{Path, PathBuf};

/// Lines a function may have, its signature and closing brace included.
const MAX_FN_LINES: usize = 80;
/// Fields `App` may have: a new piece of state belongs to the group (or view) that owns it.
const MAX_APP_FIELDS: usize = 15;

/// Functions over the limit while being split (`file:name`, their length now): none now.
const LONG_NOW: &[(&str, usize)] = &[];

fn tui_files() -> Vec<(String, String)> {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut files = Vec::new();
    collect(&src.join("tui"), &mut files);
    files.sort();
    files
        .into_iter()
        .map(|file| {
            let name = file
                .strip_prefix(&src)
                .unwrap()
                .components()
                .map(|c| c.as_os_str().to_string_lossy().into_owned())
                .collect::<Vec<_>>()
                .join("/");
            (name, std::fs::read_to_string(&file).unwrap())
        })
        .collect()
}

fn collect(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            collect(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

/// The code with comments, strings and character literals blanked (each replaced by spaces,
/// line breaks kept), so that braces can be counted and words searched.
fn code_only(text: &str) -> String {
    let chars: Vec<char> = text.chars().collect();
    let mut out = String::with_capacity(text.len());
    let mut i = 0;
    let blank = |c: char| if c == '\n' { '\n' } else { ' ' };
    while i < chars.len() {
        let c = chars[i];
        let next = chars.get(i + 1).copied();
        if c == '/' && next == Some('/') {
            while i < chars.len() && chars[i] != '\n' {
                out.push(' ');
                i += 1;
            }
        } else if c == '/' && next == Some('*') {
            while i < chars.len() && !(chars[i] == '*' && chars.get(i + 1) == Some(&'/')) {
                out.push(blank(chars[i]));
                i += 1;
            }
            out.push_str("  ");
            i += 2;
        } else if c == 'r'
            && (next == Some('"') || next == Some('#'))
            && !ident(chars.get(i.wrapping_sub(1)))
        {
            // A raw string: r"…" or r#"…"#.
            let mut j = i + 1;
            let mut hashes = 0;
            while chars.get(j) == Some(&'#') {
                hashes += 1;
                j += 1;
            }
            if chars.get(j) != Some(&'"') {
                out.push(c);
                i += 1;
                continue;
            }
            j += 1;
            let closing: Vec<char> = std::iter::once('"')
                .chain(std::iter::repeat_n('#', hashes))
                .collect();
            while j < chars.len() && !chars[j..].starts_with(&closing) {
                j += 1;
            }
            j = (j + closing.len()).min(chars.len());
            out.extend(chars[i..j].iter().map(|&c| blank(c)));
            i = j;
        } else if c == '"' {
            let mut j = i + 1;
            while j < chars.len() && chars[j] != '"' {
                j += if chars[j] == '\\' { 2 } else { 1 };
            }
            j = (j + 1).min(chars.len());
            out.extend(chars[i..j].iter().map(|&c| blank(c)));
            i = j;
        } else if c == '\'' && (chars.get(i + 2) == Some(&'\'') || next == Some('\\')) {
            // A character literal ('{', '\n', '\u{1b}'), not a lifetime.
            let mut j = i + 1;
            while j < chars.len() && chars[j] != '\'' {
                j += if chars[j] == '\\' { 2 } else { 1 };
            }
            j = (j + 1).min(chars.len());
            out.extend(chars[i..j].iter().map(|&c| blank(c)));
            i = j;
        } else {
            out.push(c);
            i += 1;
        }
    }
    out
}

fn ident(c: Option<&char>) -> bool {
    c.is_some_and(|c| c.is_alphanumeric() || *c == '_')
}

/// Every function of `code` outside tests: its name and its length in lines.
fn functions(code: &str) -> Vec<(String, usize)> {
    let lines: Vec<&str> = code.lines().collect();
    let mut found = Vec::new();
    let mut at = 0;
    while at < lines.len() {
        let line = lines[at];
        if line.trim_start().starts_with("#[cfg(test)]") {
            break;
        }
        let Some(name) = fn_name(line) else {
            at += 1;
            continue;
        };
        // From the signature to the brace that closes the body (a `;` first: no body).
        let mut depth = 0i32;
        let mut opened = false;
        let mut end = at;
        'scan: for (k, text) in lines.iter().enumerate().skip(at) {
            for c in text.chars() {
                match c {
                    ';' if !opened && depth == 0 => break 'scan,
                    '{' => {
                        depth += 1;
                        opened = true;
                    }
                    '}' => depth -= 1,
                    _ => {}
                }
                if opened && depth == 0 {
                    end = k;
                    break 'scan;
                }
            }
        }
        if opened {
            found.push((name, end - at + 1));
        }
        at += 1;
    }
    found
}

/// The name of the function `line` starts, if it starts one.
fn fn_name(line: &str) -> Option<String> {
    let words: Vec<&str> = line.split_whitespace().collect();
    let at = words.iter().position(|w| *w == "fn")?;
    let before_ok = words[..at].iter().all(|w| {
        matches!(*w, "pub" | "async" | "const" | "unsafe" | "extern") || w.starts_with("pub(")
    });
    if !before_ok {
        return None;
    }
    let name = words.get(at + 1)?;
    Some(
        name.split(|c: char| !(c.is_alphanumeric() || c == '_'))
            .next()?
            .to_string(),
    )
}

#[test]
fn the_interface_imports_nothing_from_the_headless_front_ends() {
    let found: Vec<String> = tui_files()
        .into_iter()
        .filter(|(_, text)| code_only(text).contains("crate::modes"))
        .map(|(name, _)| name)
        .collect();
    assert!(found.is_empty(), "src/tui imports crate::modes: {found:?}");
}

#[test]
fn no_function_in_the_interface_is_longer_than_80_lines_but_those_being_split() {
    let mut over = Vec::new();
    let mut still_long = Vec::new();
    for (file, text) in tui_files() {
        if file.ends_with("_tests.rs") {
            continue;
        }
        for (name, lines) in functions(&code_only(&text)) {
            if lines <= MAX_FN_LINES {
                continue;
            }
            let key = format!("{file}:{name}");
            match LONG_NOW.iter().find(|(known, _)| *known == key) {
                Some((_, now)) if lines <= *now => still_long.push(key),
                _ => over.push(format!("{key} ({lines} lines)")),
            }
        }
    }
    assert!(
        over.is_empty(),
        "functions over {MAX_FN_LINES} lines (split them): {over:?}"
    );
    let split: Vec<&str> = LONG_NOW
        .iter()
        .map(|(key, _)| *key)
        .filter(|key| !still_long.iter().any(|k| k == key))
        .collect();
    assert!(
        split.is_empty(),
        "no longer long: remove from LONG_NOW: {split:?}"
    );
}

/// The type each `impl … View for TYPE` in `code` is for.
fn views_implemented(code: &str) -> Vec<String> {
    code.lines()
        .filter_map(|line| {
            let rest = line.trim_start().strip_prefix("impl")?;
            let (trait_name, ty) = rest.split_once(" for ")?;
            let trait_name = trait_name.trim();
            (trait_name == "View" || trait_name.ends_with("::View")).then(|| {
                ty.split(|c: char| !(c.is_alphanumeric() || c == '_'))
                    .next()
                    .unwrap_or_default()
                    .to_string()
            })
        })
        .collect()
}

/// The views over the composer live in src/tui/views/, the stack's own directory: the
/// dialogs, the menus and the full-screen views, each with its state and keys.
#[test]
fn the_views_live_in_the_views_directory() {
    let mut outside = Vec::new();
    let mut inside = Vec::new();
    for (file, text) in tui_files() {
        let views = views_implemented(&code_only(&text));
        if file.starts_with("tui/views/") {
            inside.extend(views);
        } else {
            outside.extend(views.into_iter().map(|v| format!("{file}: {v}")));
        }
    }
    assert!(
        outside.is_empty(),
        "views outside src/tui/views/ (move them there): {outside:?}"
    );
    for expected in [
        "Approval",
        "Approvals",
        "Menu",
        "Picker",
        "TranscriptView",
        "DiffView",
        "AgentView",
    ] {
        assert!(
            inside.iter().any(|v| v == expected),
            "no `impl View for {expected}` in src/tui/views/: {inside:?}"
        );
    }
}

#[test]
fn app_is_a_small_core() {
    let (_, text) = tui_files()
        .into_iter()
        .find(|(name, _)| name == "tui/app.rs")
        .unwrap();
    let code = code_only(&text);
    let body = code
        .split_once("pub struct App {")
        .and_then(|(_, rest)| rest.split_once("\n}"))
        .map(|(body, _)| body)
        .unwrap();
    let fields = body
        .lines()
        .filter(|l| {
            let l = l.trim_start();
            !l.starts_with('#')
                && l.split_once(':').is_some_and(|(name, _)| {
                    let name = name.trim_start_matches("pub ").trim();
                    !name.is_empty() && name.chars().all(|c| c.is_alphanumeric() || c == '_')
                })
        })
        .count();
    assert!(
        fields <= MAX_APP_FIELDS,
        "App has {fields} fields; at most {MAX_APP_FIELDS}: group new state with its owner"
    );
}

#[test]
fn the_counting_sees_functions_strings_and_characters_as_they_are() {
    let code = code_only(
        "fn a() {\n    let s = \"}\";\n    let c = '{';\n    // }\n}\npub(crate) async fn b<'x>(x: &'x str) -> usize {\n    r#\"}\"#.len()\n}\nfn c();\n",
    );
    assert_eq!(
        functions(&code),
        [("a".to_string(), 5), ("b".to_string(), 3)]
    );
}
