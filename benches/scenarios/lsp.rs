//! Language-server scenarios: what diagnostics add to an edit — ten `write` rounds in `-p`
//! with `[lsp]` off and with a server (the test suite's fake server, run by this very bench
//! binary: `__lsp_server`, see `main`), the round's time from the end of the model's
//! response to the next request — and the agent's CPU for one edit answered by 10,000
//! diagnostics, published ten times over.

use crate::measure::{Sample, median, median_duration};
use crate::{Bench, chat, fast, measure_blocking, print_row, text_reply, words};
use anyhow::Context;
use serde_json::json;
use std::path::Path;

/// The first argument that makes this bench binary the fake language server.
pub const SERVE_FLAG: &str = "__lsp_server";

/// A home whose config.toml has the fake server for `.fk` files, started with `args` (or
/// `[lsp]` off when `args` is `None`).
fn home_with(args: Option<&[&str]>) -> anyhow::Result<tempfile::TempDir> {
    let home = tempfile::tempdir().context("creating a home directory")?;
    let exe = std::env::current_exe().context("finding the bench binary")?;
    let config = match args {
        None => "[lsp]\nenabled = false\n".to_string(),
        Some(args) => {
            let mut all = vec![SERVE_FLAG];
            all.extend_from_slice(args);
            format!(
                "[lsp]\ndiagnostics_wait_secs = 30\n[lsp.fake]\ncommand = {}\nargs = {}\nfiletypes = [\"fk\"]\n",
                json!(exe.display().to_string()),
                json!(all)
            )
        }
    };
    std::fs::write(home.path().join("config.toml"), config).context("writing config.toml")?;
    Ok(home)
}

/// `rounds` writes of a `.fk` file (each with an error) and a short answer, in `-p`: the
/// run's sample, and each round's response end → next request.
async fn writes(
    bench: &Bench,
    home: &Path,
    rounds: usize,
) -> anyhow::Result<(Sample, Vec<std::time::Duration>)> {
    let cwd = tempfile::tempdir().context("creating a working directory")?;
    let before = bench.server.requests().len();
    for round in 0..rounds {
        bench.server.push(fast(chat::tool_call(
            &format!("call_{round}"),
            "write",
            json!({"path": "a.fk", "content": format!("line\nERROR: round {round}\n")}),
        )));
    }
    bench.server.push(text_reply(&words(20, "END")));
    let mut command = bench.command(&["--permission-mode", "auto", "--no-session", "-p", "go"]);
    command.env("AGENT_HOME", home).current_dir(cwd.path());
    let sample = measure_blocking(command).await?;
    let requests = bench.server.requests();
    let replies = bench.server.reply_times();
    let gaps = (before..before + rounds)
        .filter_map(|i| {
            let (reply, next) = (replies.get(i)?, requests.get(i + 1)?);
            Some(next.received.saturating_duration_since(*reply))
        })
        .collect();
    Ok((sample, gaps))
}

pub async fn run(bench: &Bench) -> anyhow::Result<()> {
    let off = home_with(None)?;
    let on = home_with(Some(&[]))?;
    let flood = home_with(Some(&["--flood", "10000", "--repeat", "10"]))?;
    let (mut off_runs, mut on_runs, mut flood_runs) = (Vec::new(), Vec::new(), Vec::new());
    let (mut off_gaps, mut on_gaps, mut first_gaps) = (Vec::new(), Vec::new(), Vec::new());
    for _ in 0..bench.runs {
        // Alternating, so both see the same (shared) machine.
        let (sample, gaps) = writes(bench, off.path(), 10).await?;
        off_runs.push(sample);
        off_gaps.extend(gaps);
        let (sample, gaps) = writes(bench, on.path(), 10).await?;
        on_runs.push(sample);
        // The first round starts the server.
        if let Some((first, rest)) = gaps.split_first() {
            first_gaps.push(*first);
            on_gaps.extend_from_slice(rest);
        }
        flood_runs.push(writes(bench, flood.path(), 1).await?.0);
    }
    print_row("10 writes, `-p`, [lsp] off", &median(&off_runs));
    print_row(
        "10 writes, `-p`, diagnostics on (fake server)",
        &median(&on_runs),
    );
    let (off_gap, on_gap) = (median_duration(&off_gaps), median_duration(&on_gaps));
    println!(
        "| one write round (response end → next request), [lsp] off | {:.2} ms | | |",
        off_gap.as_secs_f64() * 1000.0
    );
    println!(
        "| one write round, diagnostics on (server running) | {:.2} ms | | |",
        on_gap.as_secs_f64() * 1000.0
    );
    println!(
        "| latency diagnostics add to an edit | {:.2} ms | | |",
        on_gap.saturating_sub(off_gap).as_secs_f64() * 1000.0
    );
    println!(
        "| first write round (starts the server) | {:.2} ms | | |",
        median_duration(&first_gaps).as_secs_f64() * 1000.0
    );
    print_row(
        "1 write answered by 10,000 diagnostics published 10 times, `-p`",
        &median(&flood_runs),
    );
    Ok(())
}
