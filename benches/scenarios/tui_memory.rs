//! The interface with long sessions and long answers (issue 21): start → prompt ready and
//! memory when resuming a 100 MB session (with compactions, and never compacted), and the
//! memory the interface holds after a 2 MB streamed answer (also with the transcript view
//! open on it).

use crate::measure::{self, Sample, median};
use crate::pty::Tui;
use crate::{Bench, print_row, session_gen, text_reply};
use anyhow::Context;
use std::time::Instant;

/// `agent -c` on a generated session of `megabytes`: start → the prompt, CPU and peak RSS
/// at that moment.
pub async fn resume(bench: &Bench, megabytes: usize, compact: bool) -> anyhow::Result<()> {
    let home = tempfile::tempdir().context("creating a home directory")?;
    session_gen::generate(
        home.path(),
        bench.cwd.path(),
        megabytes * 1024 * 1024,
        usize::MAX,
        compact.then_some(600 * 1024),
    )?;
    let base = bench.server.v1();
    let args = ["--base-url", base.as_str(), "--model", "bench-model", "-c"];
    let mut samples = Vec::new();
    for _ in 0..bench.runs.min(3) {
        let started = Instant::now();
        let tui = Tui::spawn_sized(&args, home.path(), bench.cwd.path(), 40, 120, &[]);
        tui.wait_for("the prompt", |s| s.contains("Resumed ")).await;
        let wall = started.elapsed();
        let pid = tui.pid().unwrap_or(0);
        samples.push(Sample {
            wall,
            cpu: measure::cpu_of(pid),
            peak_rss_kb: measure::peak_rss_of(pid),
        });
        crate::quit(tui).await;
    }
    let kind = if compact {
        "with compactions"
    } else {
        "never compacted"
    };
    print_row(
        &format!("interface start → prompt ready, `-c` on a {megabytes} MB session ({kind})"),
        &median(&samples),
    );
    Ok(())
}

/// A 2 MB answer streamed into the interface: memory once its last frame is drawn (peak
/// and held), then with the transcript view open at its end.
pub async fn long_answer(bench: &Bench) -> anyhow::Result<()> {
    // 2 MB of ordinary markdown: paragraphs of five lines of twelve words, a line a delta.
    let line = "word ".repeat(12);
    let mut deltas: Vec<String> = (0..2 * 1024 * 1024 / line.len())
        .map(|i| {
            let end = if i % 5 == 4 { "\n\n" } else { "\n" };
            format!("{}{end}", line.trim_end())
        })
        .collect();
    deltas.push("ENDMARK".to_string());
    let (mut peak, mut held, mut in_view) = (Vec::new(), Vec::new(), Vec::new());
    for _ in 0..bench.runs.min(3) {
        bench.server.push(text_reply(&deltas));
        let tui = crate::spawn_tui(bench, &["--no-session"]);
        tui.wait_for_text("Ask anything").await;
        tui.type_text("write a lot");
        tui.enter();
        wait_long(&tui, |s| {
            s.contains("ENDMARK") && !s.contains("esc to interrupt")
        })
        .await;
        let pid = tui.pid().unwrap_or(0);
        peak.push(measure::peak_rss_of(pid));
        held.push(measure::rss_of(pid));
        tui.send(b"\x0f");
        tui.wait_for_text("Transcript (").await;
        in_view.push(measure::rss_of(pid));
        tui.send(b"\x1b");
        tui.wait_for("the view to close", |s| !s.contains("Transcript ("))
            .await;
        crate::quit(tui).await;
    }
    let mb = |values: Vec<u64>| {
        let mut values = values;
        values.sort_unstable();
        values.get(values.len() / 2).copied().unwrap_or(0) as f64 / 1024.0
    };
    println!(
        "| interface after a 2 MB streamed answer: RSS held / with the transcript view open | | | {:.1} / {:.1} MB (peak {:.1} MB) |",
        mb(held),
        mb(in_view),
        mb(peak)
    );
    Ok(())
}

/// Wait until the visible screen satisfies `pred`, for as long as it takes (a debug build
/// streams 2 MB slowly); `Tui::wait_for` gives up after 20 s.
async fn wait_long(tui: &Tui, pred: impl Fn(&str) -> bool) {
    while !pred(&tui.screen()) {
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
}
