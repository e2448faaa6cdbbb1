//! The sandbox's cost per command: ten `bash` rounds (`true N`) in `-p`, with `--sandbox off`
//! and with `--sandbox workspace-write`, the runs alternating so both see the same load; per
//! round, the time from the end of the model's tool-call response to the next request (the
//! command started, confined, waited for and reported). The figure is the difference of the
//! medians (docs/security.md's target: at most 5 ms).

use crate::measure::{Sample, median, median_duration};
use crate::{Bench, chat, fast, measure_blocking, print_row, text_reply, words};
use serde_json::json;
use std::time::Duration;

/// One `-p` run of ten `bash` rounds with `sandbox`: its sample and each round's gap.
async fn rounds(bench: &Bench, sandbox: &str) -> anyhow::Result<(Sample, Vec<Duration>)> {
    let before = bench.server.requests().len();
    for round in 0..10 {
        bench.server.push(fast(chat::tool_call(
            &format!("call_{round}"),
            "bash",
            // A different command each round: the loop guard stops a call repeated as is.
            json!({"command": format!("true {round}")}),
        )));
    }
    bench.server.push(text_reply(&words(10, "END")));
    let command = bench.command(&[
        "--permission-mode",
        "auto",
        "--no-session",
        "--sandbox",
        sandbox,
        "-p",
        "go",
    ]);
    let sample = measure_blocking(command).await?;
    let requests = bench.server.requests();
    let replies = bench.server.reply_times();
    let gaps = (before..before + 10)
        .filter_map(|i| {
            let (reply, next) = (replies.get(i)?, requests.get(i + 1)?);
            Some(next.received.saturating_duration_since(*reply))
        })
        .collect();
    Ok((sample, gaps))
}

pub async fn run(bench: &Bench) -> anyhow::Result<()> {
    let modes = ["off", "workspace-write"];
    let mut samples: [Vec<Sample>; 2] = Default::default();
    let mut gaps: [Vec<Duration>; 2] = Default::default();
    for _ in 0..bench.runs {
        for (i, mode) in modes.iter().enumerate() {
            let (sample, round_gaps) = rounds(bench, mode).await?;
            samples[i].push(sample);
            gaps[i].extend(round_gaps);
        }
    }
    for (i, mode) in modes.iter().enumerate() {
        print_row(
            &format!("10 `bash` rounds (`true N`), `-p`, `--sandbox {mode}`"),
            &median(&samples[i]),
        );
    }
    if gaps.iter().all(|g| !g.is_empty()) {
        let [off, on] = [median_duration(&gaps[0]), median_duration(&gaps[1])];
        println!(
            "| one `bash` round, sandbox off / workspace-write | {:.2} / {:.2} ms | | |",
            off.as_secs_f64() * 1000.0,
            on.as_secs_f64() * 1000.0
        );
        println!(
            "| the sandbox's cost per command (difference of the medians) | {:.2} ms | | |",
            (on.as_secs_f64() - off.as_secs_f64()) * 1000.0
        );
    }
    Ok(())
}
