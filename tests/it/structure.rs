//! The shape of the source, checked by reading src/** as text: the layers point one way
//! (protocol ← engine ← start-up ← front ends, and no front end imports another) and the
//! engine operations the front ends used to copy live in one place each (docs: issue 30,
//! the design's "wave 3" layout). Comments are left out; a `use crate::{a, b}`
//! group counts as importing `a` and `b`. The TUI's own rules are in `structure_tui`.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // test code fails loudly

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

/// One source file: its path under src/ (with `/`), and its text without comments.
struct Source {
    path: String,
    code: String,
}

fn sources() -> Vec<Source> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut files = Vec::new();
    collect(&root, &mut files);
    files.sort();
    files
        .into_iter()
        .map(|file| {
            let text = std::fs::read_to_string(&file).unwrap();
            let relative = file.strip_prefix(&root).unwrap();
            let path = relative
                .components()
                .map(|c| c.as_os_str().to_string_lossy().into_owned())
                .collect::<Vec<_>>()
                .join("/");
            Source {
                path,
                code: without_comments(&text),
            }
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

/// The text with every line comment (`//`, `///`, `//!`) cut off; a `//` inside a string
/// (a URL) cuts the rest of its line too, which loses no `crate::` path in practice.
fn without_comments(text: &str) -> String {
    text.lines()
        .map(|line| line.split_once("//").map_or(line, |(code, _)| code))
        .collect::<Vec<_>>()
        .join("\n")
}

/// The modules of this crate a file names (`crate::NAME`, `crate::{NAME, …}`), top level only.
fn imported(code: &str) -> BTreeSet<String> {
    let mut names = BTreeSet::new();
    let mut rest = code;
    while let Some(at) = rest.find("crate::") {
        let preceded = rest[..at]
            .chars()
            .next_back()
            .is_some_and(|c| c.is_alphanumeric() || c == '_');
        rest = &rest[at + "crate::".len()..];
        if preceded {
            continue; // `other_crate::`
        }
        if let Some(group) = rest.strip_prefix('{') {
            let mut depth = 1;
            let end = group
                .char_indices()
                .find(|&(_, c)| {
                    depth += match c {
                        '{' => 1,
                        '}' => -1,
                        _ => 0,
                    };
                    depth == 0
                })
                .map_or(group.len(), |(i, _)| i);
            let mut depth = 0;
            let mut item = String::new();
            for c in group[..end].chars().chain([',']) {
                match c {
                    '{' => depth += 1,
                    '}' => depth -= 1,
                    ',' if depth == 0 => {
                        names.insert(first_ident(&item));
                        item.clear();
                        continue;
                    }
                    _ => {}
                }
                item.push(c);
            }
        } else {
            names.insert(first_ident(rest));
        }
    }
    names.remove("");
    names
}

fn first_ident(text: &str) -> String {
    text.trim_start()
        .chars()
        .take_while(|c| c.is_alphanumeric() || *c == '_')
        .collect()
}

/// Files under `dir` (`agent/`, or one file such as `lib.rs`).
fn under<'a>(sources: &'a [Source], dir: &str) -> impl Iterator<Item = &'a Source> {
    let prefix = format!("{dir}/");
    sources
        .iter()
        .filter(move |s| s.path.starts_with(&prefix) || s.path == format!("{dir}.rs"))
}

/// Each file under `dir` that imports one of `forbidden`, with what it imports.
fn imports_of(sources: &[Source], dir: &str, forbidden: &[&str]) -> Vec<String> {
    under(sources, dir)
        .filter_map(|source| {
            let found: Vec<String> = imported(&source.code)
                .into_iter()
                .filter(|name| forbidden.contains(&name.as_str()))
                .collect();
            (!found.is_empty())
                .then(|| format!("src/{}: crate::{}", source.path, found.join(", crate::")))
        })
        .collect()
}

/// The front ends: each translates its input into engine commands and renders events.
const FRONT_ENDS: &[&str] = &["tui", "modes", "acp", "proxy"];

#[test]
fn the_reader_of_imports_sees_paths_and_groups() {
    let code = "use crate::protocol::event::AgentEvent;\nuse crate::{tools::{self, Tool}, llm};\n\
                let x = other_crate::thing(); crate::secrets::redact(&t);";
    let names: Vec<String> = imported(code).into_iter().collect();
    assert_eq!(names, ["llm", "protocol", "secrets", "tools"]);
    assert_eq!(
        without_comments("let a = 1; // crate::tui\n/// crate::modes"),
        "let a = 1; \n"
    );
}

#[test]
fn the_protocol_imports_nothing_of_ours_above_it() {
    let sources = sources();
    let found: Vec<String> = under(&sources, "protocol")
        .filter_map(|source| {
            let above: Vec<String> = imported(&source.code)
                .into_iter()
                .filter(|name| name != "protocol")
                .collect();
            (!above.is_empty())
                .then(|| format!("src/{}: crate::{}", source.path, above.join(", crate::")))
        })
        .collect();
    assert!(
        found.is_empty(),
        "the protocol imports from above it:\n{}",
        found.join("\n")
    );
}

#[test]
fn the_engine_and_start_up_import_no_front_end() {
    let sources = sources();
    let mut found = imports_of(&sources, "agent", &[FRONT_ENDS, &["startup"]].concat());
    found.extend(imports_of(&sources, "startup", FRONT_ENDS));
    assert!(
        found.is_empty(),
        "imports of a layer above:\n{}",
        found.join("\n")
    );
}

#[test]
fn the_model_layer_and_the_config_reach_into_the_engine_for_nothing_but_its_settings() {
    let sources = sources();
    let mut found = imports_of(&sources, "llm", &["agent", "config", "startup"]);
    found.extend(imports_of(&sources, "llm", FRONT_ENDS));
    found.extend(imports_of(
        &sources,
        "config",
        &[FRONT_ENDS, &["startup"]].concat(),
    ));
    // The config builds the engine's settings types (limits, retries, the loop guard,
    // compaction, budgets) and nothing else of the engine.
    let settings_types = [
        "crate::agent::limits::",
        "crate::agent::budget::Budgets",
        "crate::agent::guard::",
        "crate::agent::compaction::",
    ];
    for source in under(&sources, "config") {
        for (index, _) in source.code.match_indices("crate::agent") {
            let path = &source.code[index..];
            if !settings_types
                .iter()
                .any(|allowed| path.starts_with(allowed))
            {
                let line = path.lines().next().unwrap_or_default();
                found.push(format!("src/{}: {line}", source.path));
            }
        }
    }
    assert!(
        found.is_empty(),
        "imports of a layer above:\n{}",
        found.join("\n")
    );
}

#[test]
fn no_front_end_imports_another() {
    let sources = sources();
    let mut found = Vec::new();
    for front_end in FRONT_ENDS {
        // The TUI's own imports are `structure_tui`'s to check.
        if *front_end == "tui" {
            continue;
        }
        let others: Vec<&str> = FRONT_ENDS
            .iter()
            .copied()
            .filter(|f| f != front_end)
            .collect();
        found.extend(imports_of(&sources, front_end, &others));
    }
    assert!(
        found.is_empty(),
        "a front end imports another:\n{}",
        found.join("\n")
    );
}

/// Files that contain `needle`, outside the directories in `allowed` and the exceptions.
fn found_outside(
    sources: &[Source],
    needle: &str,
    allowed: &[&str],
    pending: &[&str],
) -> Vec<String> {
    sources
        .iter()
        .filter(|s| s.code.contains(needle))
        .filter(|s| {
            !allowed
                .iter()
                .any(|dir| s.path.starts_with(&format!("{dir}/")))
        })
        .filter(|s| !pending.contains(&s.path.as_str()))
        .map(|s| format!("src/{}", s.path))
        .collect()
}

#[test]
fn sessions_are_opened_by_start_up_and_the_engine_only() {
    let sources = sources();
    let found = found_outside(&sources, "session::open(", &["startup", "agent"], &[]);
    assert!(
        found.is_empty(),
        "a session opened elsewhere:\n{}",
        found.join("\n")
    );
}

#[test]
fn tools_are_looked_up_and_previewed_by_the_engine_and_the_tools_only() {
    let sources = sources();
    let mut found = found_outside(&sources, "builtin_tool(", &["agent", "tools"], &[]);
    found.extend(found_outside(
        &sources,
        ".preview(",
        &["agent", "tools"],
        &[],
    ));
    assert!(
        found.is_empty(),
        "a tool looked up or previewed outside the engine (use tools::meta, or the preview \
         the approval request carries):\n{}",
        found.join("\n")
    );
}

#[test]
fn provider_slash_model_is_parsed_in_one_place() {
    let sources = sources();
    let mut found = Vec::new();
    for source in &sources {
        if source.path == "agent/commands/models.rs" {
            continue;
        }
        let lines: Vec<&str> = source.code.lines().collect();
        for (index, line) in lines.iter().enumerate() {
            if !line.contains("split_once('/')") {
                continue;
            }
            let near = &lines[index.saturating_sub(10)..(index + 10).min(lines.len())];
            if near
                .iter()
                .any(|l| l.contains("resolve_model") || l.contains("models.resolve("))
            {
                found.push(format!("src/{}:{}", source.path, index + 1));
            }
        }
    }
    assert!(
        found.is_empty(),
        "`provider/model` parsed outside agent::commands::models:\n{}",
        found.join("\n")
    );
}
