//! The files an `@` can name, and fuzzy matching over them, off the UI thread: one worker
//! thread walks the working tree (`.gitignore` honoured, via `ignore`) into a list of
//! relative paths — directories end in `/` — and answers each query with the best matches
//! (`nucleo-matcher`, path-aware scoring). Queries typed faster than they are answered are
//! skipped to the newest. The list is walked again each time a picker opens, so files made
//! since appear; until the new walk is done the old list answers.
//!
//! A keystroke costs one scoring pass, never a sort of every match: only the best `limit`
//! are kept as the list is scored, and a query that extends the previous one scores only
//! the paths that one matched (a fuzzy match of `abc` is a match of `ab`).

use nucleo_matcher::pattern::{CaseMatching, Normalization, Pattern};
use nucleo_matcher::{Config, Matcher, Utf32Str};
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

/// Matching queries against one list of paths, remembering what the last query matched.
pub struct Search {
    matcher: Matcher,
    /// The last query, and the positions in the list of every path it matched (in order).
    last: Option<(String, Vec<u32>)>,
    buffer: Vec<char>,
}

impl Default for Search {
    fn default() -> Self {
        Search {
            matcher: Matcher::new(Config::DEFAULT.match_paths()),
            last: None,
            buffer: Vec::new(),
        }
    }
}

impl Search {
    /// The list changed (walked again): nothing of the last query holds.
    pub fn forget(&mut self) {
        self.last = None;
    }

    /// The best `limit` of `paths` for `query` (the first ones for an empty query): by
    /// score, and among equal scores in list order (shallow paths first).
    pub fn best(&mut self, paths: &[String], query: &str, limit: usize) -> Vec<String> {
        if query.is_empty() {
            self.last = None;
            return paths.iter().take(limit).cloned().collect();
        }
        let pattern = Pattern::parse(query, CaseMatching::Smart, Normalization::Smart);
        let narrowed = match self.last.take() {
            Some((last, matched)) if narrows(&last, query) => Some(matched),
            _ => None,
        };
        let mut matched = Vec::new();
        let mut top = Top::new(limit);
        let mut score = |position: u32, path: &str| {
            if let Some(score) =
                pattern.score(Utf32Str::new(path, &mut self.buffer), &mut self.matcher)
            {
                matched.push(position);
                top.offer(score, position);
            }
        };
        match narrowed {
            Some(candidates) => {
                for position in candidates {
                    if let Some(path) = usize::try_from(position).ok().and_then(|i| paths.get(i)) {
                        score(position, path);
                    }
                }
            }
            None => {
                for (position, path) in (0..=u32::MAX).zip(paths) {
                    score(position, path);
                }
            }
        }
        self.last = Some((query.to_string(), matched));
        top.positions()
            .filter_map(|p| usize::try_from(p).ok().and_then(|i| paths.get(i)))
            .cloned()
            .collect()
    }
}

/// Whether every path `query` matches is among those `last` matched: it extends `last`,
/// and neither uses the syntax that can widen a match as it grows (`!` negation, the
/// `^`/`$` anchors, `'` exact atoms, `\` escapes).
fn narrows(last: &str, query: &str) -> bool {
    query.starts_with(last) && !query.contains(['!', '^', '$', '\'', '\\'])
}

/// The best `limit` (score, position) pairs offered: higher score first, then earlier.
struct Top {
    limit: usize,
    best: Vec<(u32, u32)>,
}

impl Top {
    fn new(limit: usize) -> Top {
        Top {
            limit,
            best: Vec::with_capacity(limit + 1),
        }
    }

    fn offer(&mut self, score: u32, position: u32) {
        if self.limit == 0 {
            return;
        }
        // Positions come in increasing order: a tie never displaces an earlier path.
        if self.best.len() == self.limit
            && self.best.last().is_some_and(|&(worst, _)| worst >= score)
        {
            return;
        }
        let at = self.best.partition_point(|&(s, _)| s >= score);
        self.best.insert(at, (score, position));
        self.best.truncate(self.limit);
    }

    fn positions(&self) -> impl Iterator<Item = u32> + '_ {
        self.best.iter().map(|&(_, position)| position)
    }
}

/// The best `limit` of `paths` for `query`, by a search that remembers nothing.
pub fn best(paths: &[String], query: &str, limit: usize) -> Vec<String> {
    Search::default().best(paths, query, limit)
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
            let mut search = Search::default();
            while let Ok(mut query) = queries.recv() {
                let mut refresh = query.refresh;
                while let Ok(newer) = queries.try_recv() {
                    refresh |= newer.refresh;
                    query = newer;
                }
                answer(query.text.clone(), search.best(&paths, &query.text, LIMIT));
                if refresh {
                    paths = walk(&root);
                    search.forget();
                    answer(query.text.clone(), search.best(&paths, &query.text, LIMIT));
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
        assert_eq!(best(&paths, "tuicomp", 3)[0], "src/tui/composer.rs");
        assert_eq!(best(&paths, "", 1), ["src/"]);
    }

    /// What nucleo's own `match_list` ranks first (by score, ties in list order).
    fn reference(paths: &[String], query: &str, limit: usize) -> Vec<String> {
        let mut matcher = Matcher::new(Config::DEFAULT.match_paths());
        let pattern = Pattern::parse(query, CaseMatching::Smart, Normalization::Smart);
        let mut matches = pattern.match_list(paths.iter(), &mut matcher);
        matches.truncate(limit);
        matches.into_iter().map(|(p, _)| p.clone()).collect()
    }

    #[test]
    fn typing_a_query_gives_what_matching_the_whole_list_gives() {
        let mut paths = Vec::new();
        for dir in [
            "src",
            "src/tui",
            "src/tui/mention",
            "docs",
            "tests",
            "Src/Old",
        ] {
            for file in [
                "mod.rs",
                "index.rs",
                "main.rs",
                "composer.rs",
                "README.md",
                "a b.txt",
            ] {
                paths.push(format!("{dir}/{file}"));
            }
        }
        let mut search = Search::default();
        for typed in [
            "src/tui/index",
            "tm",
            "S",
            "Src",
            "main !tui",
            "a b",
            "^src$",
            "'mod r",
        ] {
            for end in 0..=typed.len() {
                let query = &typed[..end];
                assert_eq!(
                    search.best(&paths, query, 4),
                    if query.is_empty() {
                        paths[..4].to_vec()
                    } else {
                        reference(&paths, query, 4)
                    },
                    "query {query:?}"
                );
            }
            // Deleting back to a shorter query widens the match again.
            assert_eq!(search.best(&paths, "s", 4), reference(&paths, "s", 4));
        }
    }
}
