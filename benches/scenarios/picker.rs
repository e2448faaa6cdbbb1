//! The `@` file picker on a 100,000-file tree (1,000 directories of 100 files), in process
//! (the interface matches on a thread of its own): walking the tree into the index once,
//! then each keystroke of a query typed a character at a time — the time from the query to
//! its best matches, which is what a keystroke waits for before the picker can redraw — and
//! to its first results (a long pass answers early with the best so far).

use agent::tui::mention::index::{LIMIT, Search, walk};
use std::time::{Duration, Instant};

pub fn run(runs: usize) -> anyhow::Result<()> {
    let work = tempfile::tempdir()?;
    for dir in 0..1_000 {
        let path = work
            .path()
            .join(format!("pkg{:02}/module{dir:03}", dir / 100));
        std::fs::create_dir_all(&path)?;
        for file in 0..100 {
            std::fs::File::create(path.join(format!("file_{file:03}.rs")))?;
        }
    }
    let mut walks = Vec::new();
    let mut paths = Vec::new();
    for _ in 0..runs.max(1) {
        let started = Instant::now();
        paths = walk(work.path());
        walks.push(started.elapsed());
    }
    anyhow::ensure!(
        paths.len() >= 100_000,
        "expected 100,000 paths, got {}",
        paths.len()
    );
    let typed = "pkg07/module742/file_042";
    let mut keystrokes: Vec<Duration> = Vec::new();
    let mut firsts: Vec<Duration> = Vec::new();
    for _ in 0..runs.max(1) {
        // As in the interface: one search per picker, fed the query as it grows; the
        // first results are the early answer of a long pass, or else its only one.
        let mut search = Search::default();
        for end in 1..=typed.len() {
            let started = Instant::now();
            let mut first = None;
            let found = search
                .best_within(&paths, &typed[..end], LIMIT, &mut |early| {
                    if early.is_some() && first.is_none() {
                        first = Some(started.elapsed());
                    }
                    true
                })
                .unwrap_or_default();
            let elapsed = started.elapsed();
            keystrokes.push(elapsed);
            firsts.push(first.unwrap_or(elapsed));
            anyhow::ensure!(!found.is_empty(), "no match for {}", &typed[..end]);
        }
    }
    keystrokes.sort_unstable();
    firsts.sort_unstable();
    let median = keystrokes[keystrokes.len() / 2];
    let worst = keystrokes[keystrokes.len() - 1];
    println!(
        "| `@` picker: keystroke → first results, 100,000 paths (median / slowest of {}) | {:.2} / {:.2} ms | | |",
        firsts.len(),
        firsts[firsts.len() / 2].as_secs_f64() * 1000.0,
        firsts[firsts.len() - 1].as_secs_f64() * 1000.0
    );
    println!(
        "| `@` picker: index a 100,000-file tree (once per picker opening, off the UI thread) | {:.1} ms | | |",
        super::measure::median_duration(&walks).as_secs_f64() * 1000.0
    );
    println!(
        "| `@` picker: keystroke → all scored, best matches, 100,000 paths (median / slowest of {} keystrokes) | {:.2} / {:.2} ms | | |",
        keystrokes.len(),
        median.as_secs_f64() * 1000.0,
        worst.as_secs_f64() * 1000.0
    );
    Ok(())
}
