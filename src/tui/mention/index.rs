//! The files an `@` can name, and fuzzy matching over them, off the UI thread: one worker
//! thread walks the working tree (`.gitignore` honoured, via `ignore`) into a list of
//! relative paths — directories end in `/` — and answers each query with the best matches
//! (`nucleo-matcher`, path-aware scoring). Queries typed faster than they are answered are
//! skipped to the newest. The list is walked again each time a picker opens, so files made
//! since appear; until the new walk is done the old list answers.
//!
//! A keystroke costs one scoring pass, never a sort of every match: only the best `limit`
//! are kept as the list is scored, and a query that extends the previous one scores only
//! the paths that one matched (a fuzzy match of `abc` is a match of `ab`). A pass that
//! takes longer than `FIRST_RESULTS` (a short query over a large tree: every path matches
//! and is scored) answers early with the best so far, then again when done; and it is
//! dropped as soon as a newer query is waiting.

use nucleo_matcher::pattern::{CaseMatching, Normalization, Pattern};
use nucleo_matcher::{Config, Matcher, Utf32Str};
use std::path::Path;
use std::sync::mpsc;
use std::time::{Duration, Instant};

/// Paths indexed at most (a home directory must not eat the memory).
pub const MAX_PATHS: usize = 500_000;
/// Matches returned for a query.
pub const LIMIT: usize = 8;
/// A query still being scored after this is answered with the best matches so far.
pub const FIRST_RESULTS: Duration = Duration::from_millis(8);
/// Paths scored between two looks at the clock (and at newer queries).
const CHUNK: usize = 2048;

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
    /// When a pass still scoring answers with the best so far.
    first_results: Duration,
}

impl Default for Search {
    fn default() -> Self {
        Search {
            matcher: Matcher::new(Config::DEFAULT.match_paths()),
            last: None,
            buffer: Vec::new(),
            first_results: FIRST_RESULTS,
        }
    }
}

impl Search {
    /// A search that answers early after `first_results` instead of `FIRST_RESULTS`.
    pub fn answering_early_after(first_results: Duration) -> Search {
        Search {
            first_results,
            ..Search::default()
        }
    }

    /// The list changed (walked again): nothing of the last query holds.
    pub fn forget(&mut self) {
        self.last = None;
    }

    /// The best `limit` of `paths` for `query` (the first ones for an empty query): by
    /// score, and among equal scores in list order (shallow paths first).
    pub fn best(&mut self, paths: &[String], query: &str, limit: usize) -> Vec<String> {
        self.best_within(paths, query, limit, &mut |_| true)
            .unwrap_or_default()
    }

    /// `best`, telling `progress` along the way: every `CHUNK` paths it is called (with
    /// the best so far, once, when `FIRST_RESULTS` has passed) and the pass stops, with
    /// `None`, when it returns `false`.
    pub fn best_within(
        &mut self,
        paths: &[String],
        query: &str,
        limit: usize,
        progress: &mut dyn FnMut(Option<Vec<String>>) -> bool,
    ) -> Option<Vec<String>> {
        if query.is_empty() {
            self.last = None;
            return Some(paths.iter().take(limit).cloned().collect());
        }
        let started = Instant::now();
        let pattern = Pattern::parse(query, CaseMatching::Smart, Normalization::Smart);
        let candidates: Box<dyn Iterator<Item = u32>> = match self.last.take() {
            Some((last, matched)) if narrows(&last, query) => Box::new(matched.into_iter()),
            _ => Box::new((0..=u32::MAX).take(paths.len())),
        };
        let named = |positions: &mut dyn Iterator<Item = u32>| -> Vec<String> {
            positions
                .filter_map(|p| usize::try_from(p).ok().and_then(|i| paths.get(i)))
                .cloned()
                .collect()
        };
        let mut matched = Vec::new();
        let mut top = Top::new(limit);
        let mut told_early = false;
        for (seen, position) in candidates.enumerate() {
            if seen % CHUNK == CHUNK - 1 {
                let early = (!told_early && started.elapsed() >= self.first_results)
                    .then(|| named(&mut top.positions()));
                told_early |= early.is_some();
                if !progress(early) {
                    return None;
                }
            }
            let Some(path) = usize::try_from(position).ok().and_then(|i| paths.get(i)) else {
                continue;
            };
            let haystack = Utf32Str::new(path, &mut self.buffer);
            if let Some(score) = pattern.score(haystack, &mut self.matcher) {
                matched.push(position);
                top.offer(score, position);
            }
        }
        self.last = Some((query.to_string(), matched));
        Some(named(&mut top.positions()))
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
            let mut pending: Option<Query> = None;
            while let Some(mut query) = pending.take().or_else(|| queries.recv().ok()) {
                let mut refresh = query.refresh;
                while let Ok(newer) = queries.try_recv() {
                    refresh |= newer.refresh;
                    query = newer;
                }
                let mut newer: Option<Query> = None;
                let mut progress = |early: Option<Vec<String>>| {
                    if let Some(found) = early {
                        answer(query.text.clone(), found);
                    }
                    if newer.is_none() {
                        newer = queries.try_recv().ok();
                    }
                    newer.is_none()
                };
                if let Some(found) = search.best_within(&paths, &query.text, LIMIT, &mut progress) {
                    answer(query.text.clone(), found);
                }
                if let Some(newer) = newer {
                    // Answered next, with the walk it may ask for.
                    pending = Some(Query {
                        refresh: newer.refresh || refresh,
                        ..newer
                    });
                    continue;
                }
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
        let mut search = Search::default();
        assert_eq!(search.best(&paths, "tuicomp", 3)[0], "src/tui/composer.rs");
        assert_eq!(search.best(&paths, "", 1), ["src/"]);
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

    #[test]
    fn a_long_pass_answers_early_and_stops_for_a_newer_query() {
        let paths: Vec<String> = (0..3 * CHUNK)
            .map(|i| format!("dir{}/file{i}.rs", i % 7))
            .collect();
        let mut search = Search::answering_early_after(Duration::ZERO);
        let mut early = Vec::new();
        let done = search.best_within(&paths, "file1", 3, &mut |found| {
            early.extend(found);
            true
        });
        assert_eq!(done, Some(reference(&paths, "file1", 3)));
        assert_eq!(early.len(), 1, "one early answer: {early:?}");
        assert!(early[0].iter().all(|p| p.contains("file1")), "{early:?}");

        // Stopped at the first look: no answer, and nothing of it is reused.
        let stopped = search.best_within(&paths, "file12", 3, &mut |_| false);
        assert_eq!(stopped, None);
        assert_eq!(
            search.best(&paths, "file123", 3),
            reference(&paths, "file123", 3)
        );
    }
}
