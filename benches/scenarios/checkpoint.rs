//! The checkpoint before a mutating tool call: a 10,000-file tree (100 directories of 100
//! files) where one file changed since the last checkpoint, in process (the engine takes
//! checkpoints on a blocking thread of its own process) — on Linux only the changed
//! directory is read (the kernel says which), elsewhere, and for the first checkpoints
//! of a process, the whole tree is walked (both are measured). Also the first, full
//! checkpoint of the tree, and the first one of a new process (its index rebuilt from disk).

use agent::checkpoint::{Checkpoints, Moment, Settings};
use std::time::{Duration, Instant};

pub fn run(runs: usize) -> anyhow::Result<()> {
    let home = tempfile::tempdir()?;
    let work = tempfile::tempdir()?;
    for dir in 0..100 {
        let path = work.path().join(format!("dir{dir:03}"));
        std::fs::create_dir(&path)?;
        for file in 0..100 {
            let content = format!("file {dir}/{file}\n").repeat(40);
            std::fs::write(path.join(format!("f{file:03}.txt")), content)?;
        }
    }
    let root = home.path().join("checkpoints");
    let open = || {
        Checkpoints::open(
            &root,
            work.path(),
            &Settings::default(),
            Vec::new(),
            "bench",
        )
    };
    let checkpoints = open();
    let started = Instant::now();
    let first = checkpoints.take(Moment::Before, None, None)?;
    let full = started.elapsed();
    anyhow::ensure!(
        first.files == 10_000,
        "expected 10,000 files, got {}",
        first.files
    );

    let mut times = Vec::new();
    let mut walks = Vec::new();
    for run in 0..runs.max(5) * 4 {
        std::fs::write(
            work.path().join(format!("dir{:03}/f050.txt", run % 100)),
            format!("changed {run}\n"),
        )?;
        let started = Instant::now();
        let record = checkpoints.take(Moment::Before, None, None)?;
        let elapsed = started.elapsed();
        anyhow::ensure!(record.new_bytes < 100, "re-read {} bytes", record.new_bytes);
        if checkpoints.last_scan().walked {
            walks.push(elapsed);
        } else {
            times.push(elapsed);
        }
    }
    if times.is_empty() {
        // Not watched here (not Linux, or a network file system): every checkpoint walks.
        times = walks.clone();
    }
    let fresh = open();
    let started = Instant::now();
    fresh.take(Moment::Before, None, None)?;
    let fresh_time = started.elapsed();

    let ms = |d: Duration| format!("{:.1} ms", d.as_secs_f64() * 1000.0);
    println!(
        "| checkpoint, 10,000-file tree, one file changed | {} | | |",
        ms(crate::measure::median_duration(&times))
    );
    println!(
        "| checkpoint, 10,000-file tree, one file changed, whole tree walked (median of {}) | {} | | |",
        walks.len(),
        ms(crate::measure::median_duration(&walks))
    );
    println!(
        "| checkpoint, 10,000-file tree, first (all read) | {} | | |",
        ms(full)
    );
    println!(
        "| checkpoint, 10,000-file tree, first in a new process | {} | | |",
        ms(fresh_time)
    );
    Ok(())
}
