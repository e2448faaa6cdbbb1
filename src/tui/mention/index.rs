//! The files an `@` can name, and fuzzy matching over them, off the UI thread: one worker
//! thread walks the working tree (`.gitignore` honoured, via `ignore`) into a list of
//! relative paths — directories end in `/` — and answers each query with the best matches
//! (`nucleo-matcher`, path-aware scoring). Queries typed faster than they are answered are
//! skipped to the newest. The list is walked again each time a picker opens, so files made
//! since appear; until the new walk is done the old list answers.

use nucleo_matcher::pattern::{CaseMatching, Normalization, Pattern};
use nucleo_matcher::{Config, Matcher};
use std::path::Path;
use std::sync::mpsc;

/// Paths indexed at most (a home directory must not eat the memory).
pub const MAX_PATHS: usize = 500_000;
/// Matches returned for a query.
pub const LIMIT: usize = 8;

/// The relative paths below `root`, `.gitignore` honoured, shallow ones first.
pub fn walk(root: &Path) -> Vec<String> {
    let mut paths = Vec::new();
    let walker = ignore::WalkBuilder::new(root)
        .hidden(true)
        .git_ignore(true)
        .git_global(false)
        .parents(true)
        .require_git(false)
        .build();
    for entry in walker.flatten() {
        if paths.len() >= MAX_PATHS {
            break;
        }
        let Ok(relative) = entry.path().strip_prefix(root) else {
            continue;
        };
        let Some(text) = relative.to_str().filter(|t| !t.is_empty()) else {
            continue;
        };
        if entry.file_type().is_some_and(|t| t.is_dir()) {
            paths.push(format!("{text}/"));
        } else {
            paths.push(text.to_string());
        }
    }
    paths.sort_by_key(|p| p.matches('/').count());
    paths
}

/// The best `limit` of `paths` for `query` (the first ones for an empty query).
pub fn best(paths: &[String], query: &str, matcher: &mut Matcher, limit: usize) -> Vec<String> {
    if query.is_empty() {
        return paths.iter().take(limit).cloned().collect();
    }
    let pattern = Pattern::parse(query, CaseMatching::Smart, Normalization::Smart);
    let mut matches = pattern.match_list(paths.iter(), matcher);
    matches.truncate(limit);
    matches.into_iter().map(|(path, _)| path.clone()).collect()
}

/// A query for the worker: whether to walk the tree again first.
pub struct Query {
    pub text: String,
    pub refresh: bool,
}

/// Start the worker: it walks `root` at once, then answers queries with `answer(query,
/// matches)` until the sender is dropped.
pub fn start(
    root: std::path::PathBuf,
    answer: impl Fn(String, Vec<String>) + Send + 'static,
) -> mpsc::Sender<Query> {
    let (sender, queries) = mpsc::channel::<Query>();
    let spawned = std::thread::Builder::new()
        .name("mention-index".to_string())
        .spawn(move || {
            let mut paths = walk(&root);
            let mut matcher = Matcher::new(Config::DEFAULT.match_paths());
            while let Ok(mut query) = queries.recv() {
                let mut refresh = query.refresh;
                while let Ok(newer) = queries.try_recv() {
                    refresh |= newer.refresh;
                    query = newer;
                }
                answer(
                    query.text.clone(),
                    best(&paths, &query.text, &mut matcher, LIMIT),
                );
                if refresh {
                    paths = walk(&root);
                    answer(
                        query.text.clone(),
                        best(&paths, &query.text, &mut matcher, LIMIT),
                    );
                }
            }
        });
    if let Err(e) = spawned {
        tracing::warn!(error = %e, "the @ file index could not start");
    }
    sender
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn walks_without_ignored_files_and_matches_fuzzily() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(dir.path().join("src/tui")).unwrap();
        std::fs::create_dir_all(dir.path().join("target")).unwrap();
        std::fs::write(dir.path().join(".gitignore"), "target/\n").unwrap();
        std::fs::write(dir.path().join("src/tui/composer.rs"), "").unwrap();
        std::fs::write(dir.path().join("src/main.rs"), "").unwrap();
        std::fs::write(dir.path().join("target/junk.rs"), "").unwrap();
        let paths = walk(dir.path());
        assert!(!paths.iter().any(|p| p.starts_with("target")), "{paths:?}");
        assert!(paths.contains(&"src/tui/".to_string()), "{paths:?}");
        let mut matcher = Matcher::new(Config::DEFAULT.match_paths());
        assert_eq!(
            best(&paths, "tuicomp", &mut matcher, 3)[0],
            "src/tui/composer.rs"
        );
        assert_eq!(best(&paths, "", &mut matcher, 1), ["src/"]);
    }
}
