//! Sub-agents: eight children streaming at once. Keypress → frame in the interface while
//! they stream (against the same with none), and, headless, the agent's CPU and peak RSS
//! with eight children against the sum of eight single-agent runs of the same answers.

use super::{AGENT, Bench, chat, fast, measure, measure_blocking, print_row, words};
use crate::measure::{Sample, median_duration};
use crate::pty::Tui;
use crate::server::Reply;
use anyhow::Context;
use serde_json::json;
use std::process::Command;
use std::time::{Duration, Instant};

const CHILDREN: usize = 8;

/// A home whose config lets eight children run at once.
fn home() -> anyhow::Result<tempfile::TempDir> {
    let home = tempfile::tempdir().context("creating a home directory")?;
    std::fs::write(
        home.path().join("config.toml"),
        "[agents]\nmax_parallel = 8\n",
    )
    .context("writing config.toml")?;
    Ok(home)
}

/// The parent's reply starting eight children, each told apart by its prompt.
fn eight_tasks(run: usize) -> Reply {
    let calls: Vec<(String, String, serde_json::Value)> = (0..CHILDREN)
        .map(|i| {
            (
                format!("task_{i}"),
                "task".to_string(),
                json!({"description": format!("part {i}"), "prompt": format!("CHILD-{run}-{i}: go")}),
            )
        })
        .collect();
    let refs: Vec<(&str, &str, serde_json::Value)> = calls
        .iter()
        .map(|(id, name, args)| (id.as_str(), name.as_str(), args.clone()))
        .collect();
    fast(chat::tool_calls(&refs))
}

fn answer(deltas: usize) -> Vec<String> {
    let words = words(deltas, "END");
    let refs: Vec<&str> = words.iter().map(String::as_str).collect();
    chat::text_deltas(&refs)
}

pub async fn run(bench: &Bench) -> anyhow::Result<()> {
    keypress_with_children(bench).await?;
    headless(bench).await
}

/// Keypress → frame while eight children stream (paced: about 10 s each).
async fn keypress_with_children(bench: &Bench) -> anyhow::Result<()> {
    let home = home()?;
    bench.server.push(eight_tasks(0));
    for i in 0..CHILDREN {
        bench.server.route(
            &format!("CHILD-0-{i}:"),
            vec![Reply::sse(answer(2_000)).slowly(Duration::from_millis(5))],
        );
    }
    bench.server.push(fast(chat::text("ENDMARK")));
    let base = bench.server.v1();
    let args = [
        "--base-url",
        base.as_str(),
        "--model",
        "bench-model",
        "--no-session",
        "--permission-mode",
        "auto",
    ];
    let tui = Tui::spawn_sized(&args, home.path(), bench.cwd.path(), 40, 120, &[]);
    tui.wait_for_text("Ask anything").await;
    let pid = tui.pid().unwrap_or(0);
    tui.type_text("split it up");
    tui.enter();
    tui.wait_for("the children streaming", |s| s.contains("responding"))
        .await;
    let mut latencies = Vec::new();
    let mut typed = String::new();
    for i in 0..30 {
        let c = (b'a' + (i % 26) as u8) as char;
        typed.push(c);
        let expected = format!("› {typed}");
        let started = Instant::now();
        tui.send(&[c as u8]);
        tui.wait_for_screen_precisely("the key on screen", |s| s.contains(&expected))
            .await;
        latencies.push(started.elapsed());
    }
    println!(
        "| keypress → frame, {CHILDREN} sub-agents streaming | {:.2} ms | | {:.1} MB |",
        median_duration(&latencies).as_secs_f64() * 1000.0,
        measure::peak_rss_of(pid) as f64 / 1024.0
    );
    tui.wait_for("the parent's answer", |s| s.contains("ENDMARK"))
        .await;
    super::quit(tui).await;
    Ok(())
}

/// `-p` with eight children answering 2,000 deltas each, against eight `-p` runs of one
/// such answer each.
async fn headless(bench: &Bench) -> anyhow::Result<()> {
    let home = home()?;
    let command = |args: &[&str]| {
        let mut command = Command::new(AGENT);
        command
            .args(["--base-url", &bench.server.v1(), "--model", "bench-model"])
            .args(["--no-session", "--permission-mode", "auto"])
            .args(args)
            .current_dir(bench.cwd.path())
            .env("AGENT_HOME", home.path())
            .env_remove("OPENAI_API_KEY")
            .env_remove("RUST_LOG")
            .stdin(std::process::Stdio::null())
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null());
        command
    };
    let mut together = Vec::new();
    let mut apart = Vec::new();
    for run in 1..=bench.runs {
        bench.server.push(eight_tasks(run));
        for i in 0..CHILDREN {
            bench
                .server
                .route(&format!("CHILD-{run}-{i}:"), vec![fast(answer(2_000))]);
        }
        bench.server.push(fast(chat::text("done")));
        together.push(measure_blocking(command(&["-p", "split it up"])).await?);
        let mut sum = Sample::default();
        for _ in 0..CHILDREN {
            bench.server.push(fast(answer(2_000)));
            let one = measure_blocking(command(&["-p", "answer"])).await?;
            sum.wall += one.wall;
            sum.cpu += one.cpu;
            sum.peak_rss_kb = sum.peak_rss_kb.max(one.peak_rss_kb);
        }
        apart.push(sum);
    }
    print_row(
        &format!("`-p`, {CHILDREN} sub-agents × 2,000-delta answers"),
        &measure::median(&together),
    );
    print_row(
        &format!("`-p`, {CHILDREN} single runs × 2,000-delta answer (sum; RSS: largest)"),
        &measure::median(&apart),
    );
    Ok(())
}
