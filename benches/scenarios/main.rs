//! Whole-scenario benchmarks of the real `agent` binary, as docs/benchmarks.md describes:
//! start-up, headless runs with tool rounds and long answers, resuming a 100 MB session, the
//! interface's start (also with three MCP servers), keypress latency and idle wakeups, MCP
//! tool rounds, memory over 1,000 turns, the per-delta cost of `--mode json` against
//! `--mode acp`, the latency `agent proxy` adds to each delta, eight sub-agents streaming
//! at once, what language-server diagnostics add to an edit, what the sandbox adds to a
//! command, a connection's cost through the sandbox's egress proxy, a live session's
//! `attach` replay and fan-out to several clients, the web client's size and first paint, and how much of each request the next one
//! repeats (prefix stability, for prompt caching). It starts its own
//! loopback model server (and MCP server) and needs nothing but
//! the repository:
//!
//!     cargo bench --bench scenarios [-- NAME...]
//!     cargo bench --bench scenarios -- serve [DELTAS] [TOKENS_PER_SECOND]
//!     cargo bench --bench scenarios -- serve tools
//!     BENCH_BASELINE=/path/to/older/agent cargo bench --bench scenarios -- tools exit
//!
//! With `BENCH_BASELINE`, the scenarios that compare (`version`, `tools`, `exit`) alternate
//! their runs between that binary and this build.
//!
//! Figures are medians over several runs; nothing here asserts on time.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // a dev tool: failing loudly is fine
#![allow(clippy::disallowed_methods)] // it starts tasks plainly (the library uses crate::tasks)

#[allow(dead_code)]
#[path = "../../tests/support/chat.rs"]
mod chat;
mod checkpoint;
mod egress;
mod exit;
#[path = "../../tests/support/fixtures.rs"]
mod fixtures;
mod keys;
mod live;
mod lsp;
#[allow(dead_code)]
#[path = "../../tests/fixtures/lsp_server.rs"]
mod lsp_server;
mod mcp;
#[path = "../../tests/support/mcp_fixture.rs"]
mod mcp_fixture;
mod measure;
mod picker;
mod prefix;
mod proxy;
#[allow(dead_code)]
#[path = "../../tests/support/pty.rs"]
mod pty;
#[allow(dead_code)]
#[path = "../../tests/support/registry.rs"]
mod registry;
mod sandbox;
mod schemas;
#[allow(dead_code)]
#[path = "../../tests/support/server.rs"]
mod server;
mod session_gen;
mod subagents;
mod tui_memory;
mod web;

use anyhow::Context;
use measure::{Sample, median, median_duration};
use pty::Tui;
use serde_json::{Value, json};
use server::{FakeServer, Reply};
use std::io::{BufRead, BufReader, Write};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

const AGENT: &str = env!("CARGO_BIN_EXE_agent");

struct Bench {
    server: FakeServer,
    home: tempfile::TempDir,
    cwd: tempfile::TempDir,
    runs: usize,
}

/// The binaries a comparing scenario alternates between: this build alone, or (with
/// `BENCH_BASELINE=/path/to/agent`) that baseline and this build, each with the label its
/// rows get.
fn agents_to_compare() -> Vec<(String, String)> {
    match std::env::var("BENCH_BASELINE") {
        Ok(baseline) if !baseline.is_empty() => vec![
            (format!(" — baseline {baseline}"), baseline),
            (" — this build".to_string(), AGENT.to_string()),
        ],
        _ => vec![(String::new(), AGENT.to_string())],
    }
}

impl Bench {
    fn command(&self, args: &[&str]) -> Command {
        self.command_of(AGENT, args)
    }

    fn command_of(&self, program: &str, args: &[&str]) -> Command {
        let mut command = Command::new(program);
        command
            .args(["--base-url", &self.server.v1(), "--model", "bench-model"])
            .args(args)
            .current_dir(self.cwd.path())
            .env("AGENT_HOME", self.home.path())
            .env_remove("OPENAI_API_KEY")
            .env_remove("RUST_LOG")
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null());
        command
    }
}

/// One reply written in as few chunks as possible: the server streams at full speed.
fn fast(frames: Vec<String>) -> Reply {
    Reply::sse(vec![frames.concat()])
}

fn words(count: usize, last: &str) -> Vec<String> {
    let mut deltas: Vec<String> = (0..count)
        .map(|i| {
            if i % 12 == 11 {
                "word\n".to_string()
            } else {
                "word ".to_string()
            }
        })
        .collect();
    deltas.push(last.to_string());
    deltas
}

fn text_reply(deltas: &[String]) -> Reply {
    let refs: Vec<&str> = deltas.iter().map(String::as_str).collect();
    fast(chat::text_deltas(&refs))
}

fn print_row(name: &str, sample: &Sample) {
    // CPU read from /proc while a process runs has 10 ms ticks.
    let cpu = if sample.cpu.is_zero() {
        "< 10 ms".to_string()
    } else {
        format!("{:.1} ms", sample.cpu.as_secs_f64() * 1000.0)
    };
    println!(
        "| {name} | {:.1} ms | {cpu} | {:.1} MB |",
        sample.wall.as_secs_f64() * 1000.0,
        sample.peak_rss_kb as f64 / 1024.0
    );
}

fn version(bench: &Bench) -> anyhow::Result<()> {
    let agents = agents_to_compare();
    let mut samples = vec![Vec::new(); agents.len()];
    for _ in 0..bench.runs * 4 {
        for (which, (_, program)) in agents.iter().enumerate() {
            let mut command = Command::new(program);
            command.arg("--version").stdout(Stdio::null());
            samples[which].push(measure::run(command)?);
        }
    }
    for (which, (suffix, _)) in agents.iter().enumerate() {
        print_row(
            &format!("`agent --version`{suffix}"),
            &median(&samples[which]),
        );
    }
    Ok(())
}

/// Measure `command` on a blocking thread, so the loopback server keeps serving.
async fn measure_blocking(command: Command) -> anyhow::Result<Sample> {
    tokio::task::spawn_blocking(move || measure::run(command))
        .await
        .context("the measuring thread")?
}

/// One `-p` run's answers: `rounds` `bash` calls (`echo round N`), then a text answer of
/// `deltas` deltas.
fn push_bash_rounds(server: &FakeServer, rounds: usize, deltas: usize) {
    for round in 0..rounds {
        server.push(fast(chat::tool_call(
            &format!("call_{round}"),
            "bash",
            json!({"command": format!("echo round {round}")}),
        )));
    }
    server.push(text_reply(&words(deltas, "END")));
}

/// Ten `bash` tool rounds and a 2,000-delta answer; alternating between the binaries of
/// `agents_to_compare` run by run.
async fn tool_rounds(bench: &Bench, mode: &[&str], label: &str) -> anyhow::Result<()> {
    let agents = agents_to_compare();
    let mut samples = vec![Vec::new(); agents.len()];
    let mut gaps = vec![Vec::new(); agents.len()];
    for _ in 0..bench.runs {
        for (which, (_, program)) in agents.iter().enumerate() {
            let before = bench.server.requests().len();
            push_bash_rounds(&bench.server, 10, 2000);
            let mut args = vec!["--permission-mode", "auto", "--no-session"];
            args.extend_from_slice(mode);
            args.push("go");
            let command = bench.command_of(program, &args);
            samples[which].push(measure_blocking(command).await?);
            // Tool round overhead: from the end of a tool-call response to the next request.
            let requests = bench.server.requests();
            let replies = bench.server.reply_times();
            for i in before..before + 10 {
                if let (Some(reply), Some(next)) = (replies.get(i), requests.get(i + 1)) {
                    gaps[which].push(next.received.saturating_duration_since(*reply));
                }
            }
        }
    }
    for (which, (suffix, _)) in agents.iter().enumerate() {
        print_row(&format!("{label}{suffix}"), &median(&samples[which]));
        if !gaps[which].is_empty() {
            println!(
                "| one tool round (response end → next request), {label}{suffix} | {:.2} ms | | |",
                median_duration(&gaps[which]).as_secs_f64() * 1000.0
            );
        }
    }
    Ok(())
}

async fn long_answer(bench: &Bench) -> anyhow::Result<()> {
    let mut samples = Vec::new();
    for _ in 0..bench.runs {
        bench.server.push(text_reply(&words(50_000, "END")));
        let command = bench.command(&["--no-session", "-p", "write a lot"]);
        samples.push(measure_blocking(command).await?);
    }
    print_row("50,000-delta answer, `-p`", &median(&samples));
    Ok(())
}

/// One answer of `deltas` text deltas, read as an editor or a script reads it: `--mode json`
/// (every event a JSON line) or `--mode acp` (initialize, a new session, a prompt; every
/// delta an `agent_message_chunk`). Both keep a session file; the harness reads all output.
fn streamed_answer(bench: &Bench, acp: bool) -> anyhow::Result<Sample> {
    let mut args = vec!["--permission-mode", "auto"];
    if acp {
        args.extend(["--mode", "acp"]);
    } else {
        args.extend(["--mode", "json", "write a lot"]);
    }
    let mut piped = measure::spawn_piped(&bench.command(&args))?;
    let (Some(mut stdin), Some(stdout)) = (piped.runner.stdin.take(), piped.runner.stdout.take())
    else {
        anyhow::bail!("the runner has no piped stdin/stdout");
    };
    let mut lines = BufReader::new(stdout).lines();
    if acp {
        let cwd = bench.cwd.path().display().to_string();
        let mut answer = |id: u64| -> anyhow::Result<Value> {
            for line in lines.by_ref() {
                let value: Value = serde_json::from_str(&line?)?;
                if value["id"] == id {
                    return Ok(value);
                }
            }
            anyhow::bail!("agent --mode acp ended before answering request {id}")
        };
        let send = |stdin: &mut std::process::ChildStdin, message: Value| {
            writeln!(stdin, "{message}").context("writing to agent --mode acp")
        };
        send(
            &mut stdin,
            json!({"jsonrpc": "2.0", "id": 1, "method": "initialize",
            "params": {"protocolVersion": 1, "clientCapabilities": {}}}),
        )?;
        answer(1)?;
        send(
            &mut stdin,
            json!({"jsonrpc": "2.0", "id": 2, "method": "session/new",
            "params": {"cwd": cwd, "mcpServers": []}}),
        )?;
        let session = answer(2)?["result"]["sessionId"].clone();
        send(
            &mut stdin,
            json!({"jsonrpc": "2.0", "id": 3, "method": "session/prompt",
            "params": {"sessionId": session, "prompt": [{"type": "text", "text": "write a lot"}]}}),
        )?;
        let stop = answer(3)?["result"]["stopReason"].clone();
        anyhow::ensure!(stop == "end_turn", "the prompt ended with {stop}");
    }
    drop(stdin);
    for line in lines {
        line.context("reading the agent's output")?;
    }
    piped.finish()
}

/// The cost of each streamed delta in `--mode json` and `--mode acp`: a 50,000-delta answer
/// against a one-delta one (the difference is the deltas' share).
async fn per_delta(bench: &Bench) -> anyhow::Result<()> {
    const DELTAS: usize = 50_000;
    for (acp, label) in [(false, "`--mode json`"), (true, "`--mode acp`")] {
        let (mut long, mut short) = (Vec::new(), Vec::new());
        for _ in 0..bench.runs {
            bench.server.push(text_reply(&words(DELTAS, "END")));
            long.push(streamed_answer(bench, acp)?);
            bench.server.push(text_reply(&words(0, "END")));
            short.push(streamed_answer(bench, acp)?);
        }
        let (long, short) = (median(&long), median(&short));
        print_row(
            &format!("50,000-delta answer, {label} (output read)"),
            &long,
        );
        let per_delta = long.cpu.saturating_sub(short.cpu).as_secs_f64() * 1e6 / DELTAS as f64;
        println!("| CPU per streamed delta, {label} | | {per_delta:.2} µs | |");
    }
    Ok(())
}

async fn tui_long_answer(bench: &Bench) {
    let mut samples = Vec::new();
    for _ in 0..bench.runs.min(3) {
        bench.server.push(text_reply(&words(50_000, "ENDMARK")));
        let tui = spawn_tui(bench, &["--no-session"]);
        tui.wait_for_text("Ask anything").await;
        let pid = tui.pid().unwrap_or(0);
        let cpu_before = measure::cpu_of(pid);
        tui.type_text("write a lot");
        let started = Instant::now();
        tui.enter();
        tui.wait_for("the end of the answer", |s| {
            s.contains("ENDMARK") && !s.contains("esc to interrupt")
        })
        .await;
        let wall = started.elapsed();
        samples.push(Sample {
            wall,
            cpu: measure::cpu_of(pid).saturating_sub(cpu_before),
            peak_rss_kb: measure::peak_rss_of(pid),
        });
        quit(tui).await;
    }
    print_row(
        "50,000-delta answer, interface (prompt → last frame)",
        &median(&samples),
    );
}

fn spawn_tui(bench: &Bench, extra: &[&str]) -> Tui {
    let base = bench.server.v1();
    let mut args = vec!["--base-url", base.as_str(), "--model", "bench-model"];
    args.extend_from_slice(extra);
    Tui::spawn_sized(&args, bench.home.path(), bench.cwd.path(), 40, 120, &[])
}

/// `spawn_tui` of a given binary (this build or a `BENCH_BASELINE`): the terminal's wrapper,
/// a shell, execs it with the arguments that follow this build's path. Both binaries start
/// the same way, so the shell's start is in both figures.
fn spawn_tui_of(bench: &Bench, program: &str, extra: &[&str]) -> Tui {
    let wrapper: &'static [&'static str] = Box::leak(Box::new([
        "sh",
        "-c",
        "shift; exec \"$0\" \"$@\"",
        Box::leak(program.to_string().into_boxed_str()),
    ]));
    let base = bench.server.v1();
    let mut args = vec!["--base-url", base.as_str(), "--model", "bench-model"];
    args.extend_from_slice(extra);
    let terminal = pty::Terminal {
        wrapper: Some(wrapper),
        ..pty::Terminal::default()
    };
    Tui::spawn_with_terminal(
        &args,
        bench.home.path(),
        bench.cwd.path(),
        40,
        120,
        &[],
        terminal,
    )
}

async fn quit(mut tui: Tui) {
    tui.send(b"\x03");
    tokio::time::sleep(Duration::from_millis(50)).await;
    tui.send(b"\x03");
    tui.exit_code().await;
}

/// The interface's start to its prompt, and its resident memory there (what an idle
/// interface holds); alternating between the binaries of `agents_to_compare` run by run.
async fn tui_start(bench: &Bench) {
    let agents = agents_to_compare();
    let mut samples = vec![Vec::new(); agents.len()];
    for _ in 0..bench.runs {
        for (which, (_, program)) in agents.iter().enumerate() {
            let started = Instant::now();
            let tui = spawn_tui_of(bench, program, &["--no-session"]);
            tui.wait_for_text("Ask anything").await;
            let wall = started.elapsed();
            let pid = tui.pid().unwrap_or(0);
            samples[which].push(Sample {
                wall,
                cpu: measure::cpu_of(pid),
                peak_rss_kb: measure::peak_rss_of(pid),
            });
            quit(tui).await;
        }
    }
    for (which, (suffix, _)) in agents.iter().enumerate() {
        print_row(
            &format!("interface start → prompt ready{suffix}"),
            &median(&samples[which]),
        );
    }
}

async fn idle_wakeups(bench: &Bench) {
    let tui = spawn_tui(bench, &["--no-session"]);
    tui.wait_for_text("Ask anything").await;
    tokio::time::sleep(Duration::from_secs(1)).await;
    let pid = tui.pid().unwrap_or(0);
    let before = measure::wakeups_of(pid);
    tokio::time::sleep(Duration::from_secs(5)).await;
    let after = measure::wakeups_of(pid);
    println!(
        "| idle interface: wakeups per second (5 s) | {:.1} | | |",
        (after - before) as f64 / 5.0
    );
    quit(tui).await;
}

async fn keypress_latency(bench: &Bench, messages: usize) -> anyhow::Result<()> {
    let home = tempfile::tempdir().context("creating a home directory")?;
    session_gen::generate(home.path(), bench.cwd.path(), usize::MAX, messages, None)?;
    let base = bench.server.v1();
    let args = ["--base-url", base.as_str(), "--model", "bench-model", "-c"];
    let tui = Tui::spawn_sized(&args, home.path(), bench.cwd.path(), 40, 120, &[]);
    tui.wait_for_text("› ").await;
    tui.wait_for("the prompt", |s| {
        s.lines()
            .any(|l| l.starts_with("›  ") || l.starts_with("› "))
    })
    .await;
    tokio::time::sleep(Duration::from_millis(300)).await;
    let latencies = typing_latencies(&tui, |typed| format!("› {typed}")).await;
    keypress_row(
        &format!("keypress → frame, {messages} messages in the session"),
        &latencies,
        &tui,
    );
    quit(tui).await;
    Ok(())
}

/// Keypress → frame made yours (issue 35): colour on, a theme file of the user's and a
/// `[tui] status_line` command that takes 50 ms. The command runs in its own task, so the
/// figure should be the plain one's.
async fn keypress_latency_personalised(bench: &Bench) -> anyhow::Result<()> {
    let home = tempfile::tempdir().context("creating a home directory")?;
    session_gen::generate(home.path(), bench.cwd.path(), usize::MAX, 10, None)?;
    std::fs::create_dir_all(home.path().join("themes")).context("creating the themes")?;
    std::fs::write(
        home.path().join("themes/bench.toml"),
        "extends = \"light\"\naccent = \"#005f87\"\nmuted = \"dark-gray\"\n",
    )
    .context("writing the theme")?;
    std::fs::write(
        home.path().join("config.toml"),
        "[tui]\ntheme = \"bench\"\nstatus_line = \"cat >/dev/null; sleep 0.05; echo bench status\"\n",
    )
    .context("writing the config")?;
    let base = bench.server.v1();
    let args = ["--base-url", base.as_str(), "--model", "bench-model", "-c"];
    let env = [("NO_COLOR", "")];
    let tui = Tui::spawn_sized(&args, home.path(), bench.cwd.path(), 40, 120, &env);
    tui.wait_for_text("bench status").await;
    tokio::time::sleep(Duration::from_millis(300)).await;
    let latencies = typing_latencies(&tui, |typed| format!("› {typed}")).await;
    keypress_row(
        "keypress → frame, a user theme and a status line command",
        &latencies,
        &tui,
    );
    quit(tui).await;
    Ok(())
}

/// The same with `[tui] editor_mode = "vim"`: typing in vim's insert mode.
async fn keypress_latency_vim(bench: &Bench, messages: usize) -> anyhow::Result<()> {
    let home = tempfile::tempdir().context("creating a home directory")?;
    std::fs::write(
        home.path().join("config.toml"),
        "[tui]\neditor_mode = \"vim\"\n",
    )
    .context("writing config.toml")?;
    session_gen::generate(home.path(), bench.cwd.path(), usize::MAX, messages, None)?;
    let base = bench.server.v1();
    let args = ["--base-url", base.as_str(), "--model", "bench-model", "-c"];
    let tui = Tui::spawn_sized(&args, home.path(), bench.cwd.path(), 40, 120, &[]);
    tui.wait_for_text("-- INSERT --").await;
    tokio::time::sleep(Duration::from_millis(300)).await;
    let latencies = typing_latencies(&tui, |typed| format!("› {typed}")).await;
    keypress_row(
        &format!("keypress → frame, vim mode, {messages} messages in the session"),
        &latencies,
        &tui,
    );
    quit(tui).await;
    Ok(())
}

/// Type 30 letters a key at a time; how long each took to show, as `shown` (given what
/// was typed so far) on the screen.
async fn typing_latencies(tui: &Tui, shown: impl Fn(&str) -> String) -> Vec<Duration> {
    let mut latencies = Vec::new();
    let mut typed = String::new();
    for i in 0..30u8 {
        let key = b'a' + i % 26;
        typed.push(char::from(key));
        let expected = shown(&typed);
        let started = Instant::now();
        tui.send(&[key]);
        tui.wait_for_screen_precisely("the key on screen", |s| s.contains(&expected))
            .await;
        latencies.push(started.elapsed());
    }
    latencies
}

/// The table row of a keypress scenario: the median latency and the agent's peak memory.
fn keypress_row(label: &str, latencies: &[Duration], tui: &Tui) {
    let pid = tui.pid().unwrap_or(0);
    println!(
        "| {label} | {:.2} ms | | {:.1} MB |",
        median_duration(latencies).as_secs_f64() * 1000.0,
        measure::peak_rss_of(pid) as f64 / 1024.0
    );
}

/// Keypress → frame with the transcript view (ctrl+o) open on a long session: each key
/// typed into its search prompt redraws the whole view.
async fn keypress_latency_in_view(bench: &Bench, messages: usize) -> anyhow::Result<()> {
    let home = tempfile::tempdir().context("creating a home directory")?;
    session_gen::generate(home.path(), bench.cwd.path(), usize::MAX, messages, None)?;
    let base = bench.server.v1();
    let args = ["--base-url", base.as_str(), "--model", "bench-model", "-c"];
    let tui = Tui::spawn_sized(&args, home.path(), bench.cwd.path(), 40, 120, &[]);
    tui.wait_for("the prompt", |s| s.lines().any(|l| l.starts_with("› ")))
        .await;
    tui.send(b"\x0f");
    tui.wait_for_text("Transcript (").await;
    tui.send(b"/");
    tui.wait_for_text("enter searches").await;
    tokio::time::sleep(Duration::from_millis(300)).await;
    let latencies = typing_latencies(&tui, |typed| format!("/{typed}▏")).await;
    keypress_row(
        &format!("keypress → frame, transcript view open, {messages} messages in the session"),
        &latencies,
        &tui,
    );
    tui.send(b"\x1b\x1b");
    tui.wait_for("the view to close", |s| !s.contains("Transcript ("))
        .await;
    quit(tui).await;
    Ok(())
}

async fn resume_large(bench: &Bench, megabytes: usize, compact: bool) -> anyhow::Result<()> {
    let home = tempfile::tempdir().context("creating a home directory")?;
    let path = session_gen::generate(
        home.path(),
        bench.cwd.path(),
        megabytes * 1024 * 1024,
        usize::MAX,
        compact.then_some(600 * 1024),
    )?;
    let size = std::fs::metadata(&path).map(|m| m.len()).unwrap_or(0);
    let mut samples = Vec::new();
    let mut to_request = Vec::new();
    for _ in 0..bench.runs.min(3) {
        // Resume, answer, and cut the file back so every run starts from the same file. A
        // session never compacted is far over the window: it is compacted first (a summary
        // request, then the prompt's).
        if !compact {
            bench.server.push(fast(chat::text("## Goal\nthe summary")));
        }
        bench.server.push(fast(chat::text("ok")));
        let mut command = bench.command(&["-c", "--no-tools", "-p", "hi"]);
        command.env("AGENT_HOME", home.path());
        let before = bench.server.requests().len();
        let started = Instant::now();
        samples.push(measure_blocking(command).await?);
        if let Some(request) = bench.server.requests().get(before) {
            to_request.push(request.received.saturating_duration_since(started));
        }
        std::fs::OpenOptions::new()
            .write(true)
            .open(&path)
            .and_then(|file| file.set_len(size))
            .with_context(|| format!("cutting {} back", path.display()))?;
    }
    let kind = if compact {
        "with compactions"
    } else {
        "no compaction: compacted before the request"
    };
    print_row(
        &format!("resume a {megabytes} MB session ({kind}), `-c -p`"),
        &median(&samples),
    );
    println!(
        "| resume a {megabytes} MB session ({kind}): start → first request | {:.1} ms | | |",
        median_duration(&to_request).as_secs_f64() * 1000.0
    );
    Ok(())
}

async fn thousand_turns(bench: &Bench) -> anyhow::Result<()> {
    let mut command = bench.command(&["--mode", "rpc", "--no-session"]);
    command.stdin(Stdio::piped()).stdout(Stdio::piped());
    let mut child = command.spawn().context("starting agent --mode rpc")?;
    let pid = child.id();
    let (Some(mut stdin), Some(stdout)) = (child.stdin.take(), child.stdout.take()) else {
        anyhow::bail!("agent --mode rpc has no piped stdin/stdout");
    };
    let mut lines = BufReader::new(stdout).lines();
    let filler = "some ordinary answer text ".repeat(20);
    let mut marks = Vec::new();
    for turn in 1..=1000 {
        bench
            .server
            .push(fast(chat::text(&format!("answer {turn}: {filler}"))));
        writeln!(
            stdin,
            "{}",
            json!({"type": "prompt", "message": format!("question {turn}")})
        )
        .context("sending a prompt to agent --mode rpc")?;
        for line in lines.by_ref() {
            let Ok(line) = line else { break };
            if serde_json::from_str::<Value>(&line).is_ok_and(|v| v["type"] == "agent_end") {
                break;
            }
        }
        if [10, 100, 1000].contains(&turn) {
            marks.push((turn, measure::rss_of(pid), measure::peak_rss_of(pid)));
        }
    }
    drop(stdin);
    let _ = child.wait();
    for (turn, rss, peak) in marks {
        println!(
            "| RSS after {turn} turns (`--mode rpc`) | {:.1} MB now | | {:.1} MB peak |",
            rss as f64 / 1024.0,
            peak as f64 / 1024.0
        );
    }
    Ok(())
}

/// `serve [DELTAS] [TOKENS_PER_SECOND]`: only the loopback provider, for profiling the
/// agent by hand. Every request gets the same answer, at full speed or at the given rate.
async fn serve(args: &[String]) {
    if args.first().map(String::as_str) == Some("tools") {
        return serve_tool_rounds().await;
    }
    let deltas: usize = args.first().and_then(|a| a.parse().ok()).unwrap_or(50_000);
    let rate: Option<f64> = args.get(1).and_then(|a| a.parse().ok());
    let server = FakeServer::start(Vec::new()).await;
    for _ in 0..20 {
        let frames = chat::text_deltas(
            &words(deltas, "END")
                .iter()
                .map(String::as_str)
                .collect::<Vec<_>>(),
        );
        server.push(match rate {
            Some(rate) => Reply::sse(frames).slowly(Duration::from_secs_f64(1.0 / rate.max(0.001))),
            None => fast(frames),
        });
    }
    println!(
        "serving {deltas} deltas at {} on {}",
        rate.map_or("full speed".to_string(), |r| format!("{r} tokens/s")),
        server.v1()
    );
    println!("e.g. agent --base-url {} --model bench -p hi", server.v1());
    let _ = tokio::signal::ctrl_c().await;
}

/// `serve tools`: twenty answers of the `tools` scenario's kind (three `bash` rounds and a
/// 200-delta answer each), for a `-p --permission-mode auto` run to go through (what
/// link/make-start-up-keys.sh profiles).
async fn serve_tool_rounds() {
    let server = FakeServer::start(Vec::new()).await;
    for _ in 0..20 {
        push_bash_rounds(&server, 3, 200);
    }
    println!("serving tool rounds on {}", server.v1());
    println!(
        "e.g. agent --base-url {} --model bench --permission-mode auto --no-session -p go",
        server.v1()
    );
    let _ = tokio::signal::ctrl_c().await;
}

/// Which build of the agent the figures come from: the cargo profile (the directory the
/// binary was built into: `release` for `cargo bench`, `dist` for `--profile dist`), its size
/// and the compiler, so a figure in docs/benchmarks.md can say what it measured.
fn build_line() -> String {
    let path = std::path::Path::new(AGENT);
    let profile = path
        .parent()
        .and_then(|dir| dir.file_name())
        .map(|name| name.to_string_lossy().into_owned())
        .unwrap_or_else(|| "unknown".to_string());
    let size = std::fs::metadata(path).map(|m| m.len()).unwrap_or(0);
    let rustc = Command::new("rustc")
        .arg("--version")
        .output()
        .ok()
        .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string())
        .unwrap_or_else(|| "rustc unknown".to_string());
    format!(
        "build: profile `{profile}` (Cargo.toml), binary {:.1} MB, {rustc}",
        size as f64 / 1e6
    )
}

/// Put each measured binary in the page cache the same way, as a program read from disk
/// is: how a file came into the cache changes the resident memory of every process that
/// maps it (a binary just written by the linker or `cp` sits in large folios, which a
/// page fault maps whole: up to ~3.5 MB more resident code for the same run, measured
/// here). Its cached pages are dropped, then one `--version` run reads it back.
fn settle_page_cache() {
    for (_, program) in agents_to_compare() {
        if let Ok(file) = std::fs::File::open(&program) {
            // SAFETY: posix_fadvise on an open descriptor has no memory-safety preconditions.
            unsafe {
                libc::posix_fadvise(
                    std::os::fd::AsRawFd::as_raw_fd(&file),
                    0,
                    0,
                    libc::POSIX_FADV_DONTNEED,
                );
            }
        }
        let _ = Command::new(&program)
            .arg("--version")
            .stdout(Stdio::null())
            .status();
    }
}

fn want(filters: &[String], name: &str) -> bool {
    filters.is_empty() || filters.iter().any(|f| name.contains(f.as_str()))
}

fn main() -> anyhow::Result<()> {
    // The MCP scenarios run this binary as their MCP server (`MCP_FIXTURE=stdio`).
    mcp_fixture::serve_stdio_if_asked();
    let raw: Vec<String> = std::env::args().skip(1).collect();
    // The language-server scenarios run this binary as their server.
    if raw.first().map(String::as_str) == Some(lsp::SERVE_FLAG) {
        lsp_server::serve(raw[1..].to_vec());
        return Ok(());
    }
    if raw.first().map(String::as_str) == Some("__measure") {
        return measure::runner_main(&raw[1..]);
    }
    let args: Vec<String> = raw.into_iter().filter(|a| !a.starts_with("--")).collect();
    let runs = std::env::var("BENCH_RUNS")
        .ok()
        .and_then(|r| r.parse().ok())
        .unwrap_or(5);
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .context("starting the runtime")?;
    runtime.block_on(async {
        if args.first().map(String::as_str) == Some("serve") {
            serve(&args[1..]).await;
            return Ok(());
        }
        let bench = Bench {
            server: FakeServer::start(Vec::new()).await,
            home: tempfile::tempdir().context("creating a home directory")?,
            cwd: tempfile::tempdir().context("creating a working directory")?,
            runs,
        };
        settle_page_cache();
        println!("{}", build_line());
        println!("| scenario | wall | CPU (user+sys) | peak RSS |");
        println!("|---|---|---|---|");
        // Interactive latencies first: later scenarios grow this harness, and spawning a
        // terminal child from a large process takes longer (not the agent's time).
        if want(&args, "version") {
            version(&bench)?;
        }
        if want(&args, "tui") {
            tui_start(&bench).await;
            keypress_latency(&bench, 10).await?;
            keypress_latency(&bench, 10_000).await?;
            keys::keypress_with_keys(&bench).await?;
            keypress_latency_personalised(&bench).await?;
            keypress_latency_vim(&bench, 10_000).await?;
            idle_wakeups(&bench).await;
        }
        // Only when named: the plain and the made-yours keypress side by side (a quick check,
        // also of a debug build).
        if args.iter().any(|a| a == "keypress-personal") {
            keypress_latency(&bench, 10).await?;
            keypress_latency_personalised(&bench).await?;
        }
        if want(&args, "mcp") {
            mcp::start_with_servers(&bench).await?;
            mcp::tool_round(&bench).await?;
        }
        if want(&args, "view") {
            keypress_latency_in_view(&bench, 10_000).await?;
        }
        if want(&args, "tui-memory") {
            tui_memory::resume(&bench, 100, true).await?;
            tui_memory::resume(&bench, 100, false).await?;
            tui_memory::long_answer(&bench).await?;
        }
        if want(&args, "tools") {
            tool_rounds(&bench, &["-p"], "10 tool rounds + 2,000-delta answer, `-p`").await?;
            tool_rounds(
                &bench,
                &["--mode", "json"],
                "10 tool rounds + 2,000-delta answer, `--mode json`",
            )
            .await?;
        }
        if want(&args, "deltas") {
            long_answer(&bench).await?;
            tui_long_answer(&bench).await;
        }
        if want(&args, "acp") {
            per_delta(&bench).await?;
        }
        if want(&args, "turns") {
            thousand_turns(&bench).await?;
        }
        if want(&args, "resume") {
            resume_large(&bench, 100, true).await?;
            resume_large(&bench, 300, true).await?;
            resume_large(&bench, 100, false).await?;
        }
        if want(&args, "checkpoint") {
            checkpoint::run(bench.runs)?;
        }
        if want(&args, "exit") {
            exit::run(&bench).await?;
        }
        if want(&args, "proxy") {
            proxy::run(&bench).await?;
        }
        if want(&args, "subagents") {
            subagents::run(&bench).await?;
        }
        if want(&args, "schemas") {
            schemas::run(bench.runs)?;
        }
        if want(&args, "picker") {
            picker::run(bench.runs)?;
        }
        if want(&args, "egress") {
            egress::run(bench.runs).await?;
        }
        if want(&args, "lsp") {
            lsp::run(&bench).await?;
        }
        if want(&args, "sandbox") {
            sandbox::run(&bench).await?;
        }
        if want(&args, "live") {
            live::run(&bench).await?;
        }
        if want(&args, "web") {
            web::run(&bench).await?;
        }
        if want(&args, "prefix") {
            prefix::run().await?;
        }
        Ok(())
    })
}
