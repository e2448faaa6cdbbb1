//! MCP scenarios: the interface's start with three stdio MCP servers configured (prompt ready
//! must not wait for them; when all three are up is shown beside it), and the cost of one MCP
//! tool round in `-p` next to the server's own round trip, measured with rmcp's client
//! straight against the same server. The server is the test suite's rmcp fixture, run by
//! this very bench binary (`MCP_FIXTURE=stdio`, see `main`), built with the same profile.

use crate::measure::{self, Sample, median, median_duration};
use crate::{Bench, chat, fast, measure_blocking, print_row, quit, text_reply, words};
use anyhow::Context;
use rmcp::ServiceExt;
use rmcp::model::CallToolRequestParams;
use rmcp::transport::TokioChildProcess;
use serde_json::json;
use std::path::Path;
use std::time::{Duration, Instant};

/// `[mcp_servers.NAME]` tables running the fixture, one per name.
fn config(names: &[&str], marks: &Path) -> anyhow::Result<String> {
    let exe = std::env::current_exe().context("finding the bench binary")?;
    let mut text = String::new();
    for name in names {
        text.push_str(&format!(
            "[mcp_servers.{name}]\ncommand = {}\nenv = {{ MCP_FIXTURE = \"stdio\", MCP_FIXTURE_MARKS = {} }}\n\n",
            json!(exe.display().to_string()),
            json!(marks.display().to_string()),
        ));
    }
    Ok(text)
}

/// A home directory whose config.toml has the fixture as each of `names`.
fn home_with(names: &[&str]) -> anyhow::Result<(tempfile::TempDir, tempfile::TempDir)> {
    let home = tempfile::tempdir().context("creating a home directory")?;
    let marks = tempfile::tempdir().context("creating a marks directory")?;
    std::fs::write(
        home.path().join("config.toml"),
        config(names, marks.path())?,
    )
    .context("writing config.toml")?;
    Ok((home, marks))
}

/// Interface start → prompt ready with three stdio servers, and → `mcp 3/3`; runs without
/// servers alternate with them, so both figures see the same (shared) machine.
pub async fn start_with_servers(bench: &Bench) -> anyhow::Result<()> {
    let (home, _marks) = home_with(&["one", "two", "three"])?;
    let plain = tempfile::tempdir().context("creating a home directory")?;
    let base = bench.server.v1();
    let args = [
        "--base-url",
        base.as_str(),
        "--model",
        "bench-model",
        "--no-session",
    ];
    let mut with_servers = Vec::new();
    let mut without = Vec::new();
    let mut all_ready = Vec::new();
    for _ in 0..bench.runs {
        for servers in [false, true] {
            let dir = if servers { home.path() } else { plain.path() };
            let started = Instant::now();
            let tui = crate::pty::Tui::spawn_sized(&args, dir, bench.cwd.path(), 40, 120, &[]);
            tui.wait_for_text("Ask anything").await;
            let wall = started.elapsed();
            if servers {
                tui.wait_for_text("mcp 3/3").await;
                all_ready.push(started.elapsed());
            }
            let pid = tui.pid().unwrap_or(0);
            let sample = Sample {
                wall,
                cpu: measure::cpu_of(pid),
                peak_rss_kb: measure::peak_rss_of(pid),
            };
            if servers {
                with_servers.push(sample);
            } else {
                without.push(sample);
            }
            quit(tui).await;
        }
    }
    print_row(
        "interface start → prompt ready, no MCP server (same runs)",
        &median(&without),
    );
    print_row(
        "interface start → prompt ready, 3 stdio MCP servers",
        &median(&with_servers),
    );
    println!(
        "| interface start → `mcp 3/3` (all three servers ready) | {:.1} ms | | |",
        median_duration(&all_ready).as_secs_f64() * 1000.0
    );
    Ok(())
}

/// Ten rounds of an MCP tool (`mcp__fx__echo`) in `-p`: response end → next request, next
/// to the same call made straight with rmcp's client (the server's own round trip).
pub async fn tool_round(bench: &Bench) -> anyhow::Result<()> {
    let (home, marks) = home_with(&["fx"])?;
    let mut samples = Vec::new();
    let mut gaps = Vec::new();
    for _ in 0..bench.runs {
        let before = bench.server.requests().len();
        for round in 0..10 {
            bench.server.push(fast(chat::tool_call(
                &format!("call_{round}"),
                "mcp__fx__echo",
                json!({"text": format!("round {round}")}),
            )));
        }
        bench.server.push(text_reply(&words(2000, "END")));
        let mut command = bench.command(&["--permission-mode", "auto", "--no-session", "-p", "go"]);
        command.env("AGENT_HOME", home.path());
        samples.push(measure_blocking(command).await?);
        let requests = bench.server.requests();
        let replies = bench.server.reply_times();
        for i in before..before + 10 {
            if let (Some(reply), Some(next)) = (replies.get(i), requests.get(i + 1)) {
                gaps.push(next.received.saturating_duration_since(*reply));
            }
        }
    }
    print_row(
        "10 MCP tool rounds + 2,000-delta answer, `-p`",
        &median(&samples),
    );
    let direct = direct_round_trip(marks.path()).await?;
    let gap = median_duration(&gaps);
    println!(
        "| one MCP tool round (response end → next request), `-p` | {:.2} ms | | |",
        gap.as_secs_f64() * 1000.0
    );
    println!(
        "| the same call straight from rmcp's client (server's own round trip) | {:.2} ms | | |",
        direct.as_secs_f64() * 1000.0
    );
    println!(
        "| MCP tool round overhead over the server's round trip | {:.2} ms | | |",
        gap.saturating_sub(direct).as_secs_f64() * 1000.0
    );
    Ok(())
}

/// Median time of an `echo` call over stdio with rmcp's client alone.
async fn direct_round_trip(marks: &Path) -> anyhow::Result<Duration> {
    let exe = std::env::current_exe().context("finding the bench binary")?;
    let mut command = tokio::process::Command::new(exe);
    command
        .env("MCP_FIXTURE", "stdio")
        .env("MCP_FIXTURE_MARKS", marks);
    let (transport, _stderr) = TokioChildProcess::builder(command)
        .stderr(std::process::Stdio::null())
        .spawn()
        .context("starting the fixture server")?;
    let client = ().serve(transport).await.context("initializing the fixture server")?;
    let mut times = Vec::new();
    for round in 0..200 {
        let mut arguments = serde_json::Map::new();
        arguments.insert("text".into(), json!(format!("round {round}")));
        let params = CallToolRequestParams::new("echo").with_arguments(arguments);
        let started = Instant::now();
        client.call_tool(params).await.context("calling echo")?;
        if round >= 10 {
            times.push(started.elapsed());
        }
    }
    let _ = client.cancel().await;
    Ok(median_duration(&times))
}
