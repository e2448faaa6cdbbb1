//! How long `-p` takes to end once the model's last answer has arrived, with a session
//! file and checkpoints on (the defaults): one `bash` call that writes a file (so a
//! checkpoint is taken before and after it), then a short answer. The figure is the time
//! from the end of the last response (as the loopback server wrote it) to the process's
//! exit as seen by its parent — what a script running `agent -p` in a loop waits for
//! after every answer. The working tree is a small project (20 directories of 10 files).
//!
//! With `BENCH_BASELINE=/path/to/agent` the runs alternate between that binary and this
//! build, so both figures come from the same moments of a busy machine.

use crate::measure::median_duration;
use crate::{Bench, chat, fast};
use anyhow::Context;
use serde_json::json;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

pub async fn run(bench: &Bench) -> anyhow::Result<()> {
    let work = tempfile::tempdir().context("creating a working tree")?;
    for dir in 0..20 {
        let path = work.path().join(format!("src{dir:02}"));
        std::fs::create_dir(&path)?;
        for file in 0..10 {
            std::fs::write(
                path.join(format!("m{file}.rs")),
                "fn main() {}\n".repeat(20),
            )?;
        }
    }
    let agents = crate::agents_to_compare();
    let mut gaps: Vec<Vec<Duration>> = vec![Vec::new(); agents.len()];
    for _ in 0..bench.runs * 2 {
        for (which, (_, program)) in agents.iter().enumerate() {
            gaps[which].push(one_run(bench, program, work.path()).await?);
        }
    }
    for ((label, _), gaps) in agents.iter().zip(&gaps) {
        println!(
            "| `-p` exit after the last answer, checkpoints on{label} | {:.2} ms | | |",
            median_duration(gaps).as_secs_f64() * 1000.0
        );
    }
    Ok(())
}

async fn one_run(bench: &Bench, program: &str, work: &std::path::Path) -> anyhow::Result<Duration> {
    bench.server.push(fast(chat::tool_call(
        "call_1",
        "bash",
        json!({"command": "echo changed > out.txt"}),
    )));
    bench.server.push(fast(chat::text("done")));
    let before = bench.server.requests().len();
    let mut command = Command::new(program);
    command
        .args(["--base-url", &bench.server.v1(), "--model", "bench-model"])
        .args(["--permission-mode", "auto", "-p", "change a file"])
        .current_dir(work)
        .env("AGENT_HOME", bench.home.path())
        .env_remove("OPENAI_API_KEY")
        .env_remove("RUST_LOG")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null());
    // Spawned and waited for directly (not through the measuring runner): the figure is
    // the moment of the exit, which the runner's own exit would delay.
    let exited = tokio::task::spawn_blocking(move || {
        let status = command.status();
        (status, Instant::now())
    })
    .await
    .context("the waiting thread")?;
    let (status, exited) = exited;
    anyhow::ensure!(status?.success(), "agent -p failed");
    let replies = bench.server.reply_times();
    anyhow::ensure!(
        bench.server.requests().len() == before + 2,
        "expected two requests, got {}",
        bench.server.requests().len() - before
    );
    let last = replies.get(before + 1).context("the last reply's time")?;
    Ok(exited.saturating_duration_since(*last))
}
