//! The proxy relay (`agent proxy`, docs/protocol.md §8): the latency a delta gains on its
//! way through the proxy, and a long answer's cost through it. Two `--mode rpc` agents run
//! side by side — one straight to the loopback model server, one through a real `agent
//! proxy` process in front of a second server — and their prompts alternate, so both see
//! the same (shared) machine. A delta's latency is from the moment the server finished
//! writing the reply that carries it to the moment its `message_update` line reaches the
//! harness; the pipeline is idle before each reply, so this is one delta's trip.

use crate::measure::{self, median_duration};
use crate::server::FakeServer;
use crate::{AGENT, Bench, fast, measure_blocking, print_row, text_reply, words};
use anyhow::Context;
use serde_json::{Value, json};
use std::io::{BufRead, BufReader, Lines, Write};
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};
use std::time::{Duration, Instant};

/// A running `agent proxy` in front of `upstream`, and the home of a client that uses it.
struct Proxy {
    child: Child,
    _home: tempfile::TempDir,
    client_home: tempfile::TempDir,
}

impl Drop for Proxy {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn start_proxy(upstream: &FakeServer) -> anyhow::Result<Proxy> {
    let home = tempfile::tempdir().context("creating the proxy's home")?;
    std::fs::write(
        home.path().join("config.toml"),
        format!(
            "provider = \"upstream\"\nmodel = \"bench-model\"\n\n[providers.upstream]\napi = \
             \"openai-chat\"\nbase_url = \"{}\"\napi_key_env = \"UPSTREAM_KEY\"\n",
            upstream.v1()
        ),
    )
    .context("writing the proxy's config")?;
    let mut child = Command::new(AGENT)
        .args(["proxy", "--listen", "127.0.0.1:0"])
        .env("AGENT_HOME", home.path())
        .env("UPSTREAM_KEY", "sk-bench")
        .env("AGENT_PROXY_TOKENS", "tok-bench")
        .env_remove("RUST_LOG")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .context("starting agent proxy")?;
    let stdout = child.stdout.take().context("the proxy's stdout")?;
    let mut first = String::new();
    BufReader::new(stdout)
        .read_line(&mut first)
        .context("reading where the proxy listens")?;
    let addr = first
        .trim()
        .strip_prefix("agent proxy: listening on ")
        .with_context(|| format!("unexpected first line from agent proxy: {first}"))?
        .to_string();
    let client_home = tempfile::tempdir().context("creating the client's home")?;
    std::fs::write(
        client_home.path().join("config.toml"),
        format!(
            "provider = \"team\"\nmodel = \"bench-model\"\n\n[providers.team]\napi = \
             \"agent-proxy\"\nbase_url = \"{addr}\"\napi_key_env = \"TEAM_TOKEN\"\n"
        ),
    )
    .context("writing the client's config")?;
    Ok(Proxy {
        child,
        _home: home,
        client_home,
    })
}

/// `agent ARGS` as a client of the proxy.
fn through(proxy: &Proxy, bench: &Bench, args: &[&str]) -> Command {
    let mut command = Command::new(AGENT);
    command
        .args(args)
        .current_dir(bench.cwd.path())
        .env("AGENT_HOME", proxy.client_home.path())
        .env("TEAM_TOKEN", "tok-bench")
        .env_remove("OPENAI_API_KEY")
        .env_remove("RUST_LOG")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null());
    command
}

/// An agent in `--mode rpc` answering prompts one by one.
struct Rpc {
    child: Child,
    stdin: ChildStdin,
    lines: Lines<BufReader<ChildStdout>>,
}

impl Rpc {
    fn start(mut command: Command) -> anyhow::Result<Rpc> {
        command.stdin(Stdio::piped()).stdout(Stdio::piped());
        let mut child = command.spawn().context("starting agent --mode rpc")?;
        let (Some(stdin), Some(stdout)) = (child.stdin.take(), child.stdout.take()) else {
            anyhow::bail!("agent --mode rpc has no piped stdin/stdout");
        };
        Ok(Rpc {
            child,
            stdin,
            lines: BufReader::new(stdout).lines(),
        })
    }

    /// Send a prompt whose answer `server` has queued; how long after the server finished
    /// writing it its last delta (`END`) reached us.
    fn delta_latency(&mut self, server: &FakeServer, prompt: &str) -> anyhow::Result<Duration> {
        let replies = server.reply_times().len();
        writeln!(
            self.stdin,
            "{}",
            json!({"type": "prompt", "message": prompt})
        )
        .context("sending a prompt")?;
        let mut arrived = None;
        for line in self.lines.by_ref() {
            let line = line.context("reading the agent's output")?;
            let Ok(value) = serde_json::from_str::<Value>(&line) else {
                continue;
            };
            let event = &value["assistantMessageEvent"];
            if arrived.is_none()
                && event["type"] == "text_delta"
                && event["delta"].as_str().is_some_and(|d| d.contains("END"))
            {
                arrived = Some(Instant::now());
            }
            if value["type"] == "agent_end" {
                break;
            }
        }
        let arrived = arrived.context("the answer's last delta never came")?;
        // The server notes the time right after its last write; wait for that note.
        let written = loop {
            if let Some(time) = server.reply_times().get(replies) {
                break *time;
            }
            std::thread::sleep(Duration::from_micros(100));
        };
        Ok(arrived.saturating_duration_since(written))
    }
}

impl Drop for Rpc {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

pub async fn run(bench: &Bench) -> anyhow::Result<()> {
    let upstream = FakeServer::start(Vec::new()).await;
    let proxy = start_proxy(&upstream)?;
    latency(bench, &upstream, &proxy).await?;
    long_answer(bench, &upstream, &proxy).await?;
    Ok(())
}

async fn latency(bench: &Bench, upstream: &FakeServer, proxy: &Proxy) -> anyhow::Result<()> {
    const PROMPTS: usize = 200;
    let reply = || fast(crate::chat::text_deltas(&["the answer ", "END"]));
    let direct_command = {
        let mut command = bench.command(&["--mode", "rpc", "--no-session"]);
        command.stderr(Stdio::null());
        command
    };
    let proxied_command = through(proxy, bench, &["--mode", "rpc", "--no-session"]);
    let (server, up) = (&bench.server, upstream);
    let (direct, proxied) = tokio::task::block_in_place(|| -> anyhow::Result<_> {
        let mut direct_agent = Rpc::start(direct_command)?;
        let mut proxied_agent = Rpc::start(proxied_command)?;
        let (mut direct, mut proxied) = (Vec::new(), Vec::new());
        for i in 0..PROMPTS {
            server.push(reply());
            up.push(reply());
            let prompt = format!("question {i}");
            let d = direct_agent.delta_latency(server, &prompt)?;
            let p = proxied_agent.delta_latency(up, &prompt)?;
            // The first answers warm up connections and caches.
            if i >= 10 {
                direct.push(d);
                proxied.push(p);
            }
        }
        Ok((median_duration(&direct), median_duration(&proxied)))
    })?;
    let ms = |d: Duration| d.as_secs_f64() * 1000.0;
    println!(
        "| a delta's latency, server → `--mode rpc` output, direct | {:.3} ms | | |",
        ms(direct)
    );
    println!(
        "| a delta's latency, server → `agent proxy` → `--mode rpc` output | {:.3} ms | | |",
        ms(proxied)
    );
    println!(
        "| latency the proxy adds per delta | {:.3} ms | | |",
        ms(proxied.saturating_sub(direct))
    );
    Ok(())
}

/// A 50,000-delta answer in `-p`, direct and through the proxy (the client's own figures,
/// and the proxy's CPU for relaying it).
async fn long_answer(bench: &Bench, upstream: &FakeServer, proxy: &Proxy) -> anyhow::Result<()> {
    let (mut direct, mut proxied, mut relay_cpu) = (Vec::new(), Vec::new(), Vec::new());
    for _ in 0..bench.runs {
        bench.server.push(text_reply(&words(50_000, "END")));
        direct.push(measure_blocking(bench.command(&["--no-session", "-p", "write a lot"])).await?);
        upstream.push(text_reply(&words(50_000, "END")));
        let before = measure::cpu_of(proxy.child.id());
        proxied.push(
            measure_blocking(through(
                proxy,
                bench,
                &["--no-session", "-p", "write a lot"],
            ))
            .await?,
        );
        relay_cpu.push(measure::cpu_of(proxy.child.id()).saturating_sub(before));
    }
    print_row(
        "50,000-delta answer, `-p`, direct (same runs)",
        &measure::median(&direct),
    );
    print_row(
        "50,000-delta answer, `-p`, through `agent proxy` (the client)",
        &measure::median(&proxied),
    );
    println!(
        "| the proxy's CPU to relay it | | {:.1} ms | |",
        median_duration(&relay_cpu).as_secs_f64() * 1000.0
    );
    Ok(())
}
