//! The sandbox's egress proxy (`[sandbox] allow_hosts`, docs/security.md): what one
//! connection costs through it, and what the network namespace costs a command.
//!
//! A loopback "registry" on 127.0.0.2 answers one small response per connection. Inside
//! the real sandbox, below the real supervisor, a Python client opens connection after
//! connection to it — straight (`network = true`: no namespace, no proxy), through the
//! proxy as a plain HTTP request, and through a `CONNECT` tunnel — and reports the median
//! time of a whole exchange (connect, request, response, close). The proxy's cost per
//! connection is the difference. Separately, `true` run with `allow_hosts` against the same
//! command with the network simply off: the namespace, its listener and the proxy's start.
//! Python is the client because it is one process for all the connections (a curl per
//! connection would measure process starts); without it the scenario says so and skips.

use crate::measure::median_duration;
use crate::registry::Registry;
use agent::sandbox::egress::Pattern;
use agent::sandbox::{Sandbox, SandboxConfig, SandboxMode, Status};
use agent::tools::{Tool, ToolContext, ToolSettings};
use anyhow::Context;
use serde_json::{Value, json};
use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// Connections per client run.
const CONNECTIONS: usize = 200;

const CLIENT: &str = r#"
import http.client, json, statistics, sys, time
host, port, count, mode = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4]
times = []
for _ in range(count):
    started = time.perf_counter()
    if mode == 'direct':
        c = http.client.HTTPConnection(host, port)
        c.request('GET', '/x')
    elif mode == 'plain':
        c = http.client.HTTPConnection('127.0.0.1', 3128)
        c.request('GET', 'http://%s:%d/x' % (host, port))
    else:
        c = http.client.HTTPConnection('127.0.0.1', 3128)
        c.set_tunnel(host, port)
        c.request('GET', '/x')
    r = c.getresponse()
    r.read()
    c.close()
    if r.status != 200:
        sys.exit('status %d' % r.status)
    times.append(time.perf_counter() - started)
print(json.dumps({'mode': mode, 'median_us': statistics.median(times) * 1e6}))
"#;

pub async fn run(runs: usize) -> anyhow::Result<()> {
    let python = "/usr/bin/python3";
    if !Path::new(python).is_file() {
        println!("| egress proxy: skipped ({python} is missing) | | | |");
        return Ok(());
    }
    let registry = Registry::start("127.0.0.2");
    registry.file("/x", "text/plain", "ok\n");
    let work = tempfile::tempdir().context("creating a workspace")?;
    std::fs::write(work.path().join("client.py"), CLIENT).context("writing the client")?;
    let proxied = sandbox(work.path(), false, &[&registry.host_port()])?;
    let open = sandbox(work.path(), true, &[])?;
    let off = sandbox(work.path(), false, &[])?;
    let client = |mode: &str| {
        format!(
            "{python} client.py 127.0.0.2 {} {CONNECTIONS} {mode}",
            registry.addr.port()
        )
    };
    let (mut direct, mut plain, mut tunnel) = (Vec::new(), Vec::new(), Vec::new());
    for _ in 0..runs {
        direct.push(median_of(
            &bash(work.path(), &open, &client("direct")).await?,
        )?);
        plain.push(median_of(
            &bash(work.path(), &proxied, &client("plain")).await?,
        )?);
        tunnel.push(median_of(
            &bash(work.path(), &proxied, &client("connect")).await?,
        )?);
    }
    let (direct, plain, tunnel) = (
        median_duration(&direct),
        median_duration(&plain),
        median_duration(&tunnel),
    );
    let ms = |d: Duration| format!("{:.3} ms", d.as_secs_f64() * 1000.0);
    println!(
        "| one HTTP exchange on its own connection, straight (`network = true`) | {} | | |",
        ms(direct)
    );
    println!(
        "| the same through the egress proxy, plain HTTP | {} | | |",
        ms(plain)
    );
    println!(
        "| the same through the egress proxy, `CONNECT` tunnel | {} | | |",
        ms(tunnel)
    );
    println!(
        "| the egress proxy's cost per connection, plain / tunnel | {} / {} | | |",
        ms(plain.saturating_sub(direct)),
        ms(tunnel.saturating_sub(direct))
    );
    let (mut with_hosts, mut without) = (Vec::new(), Vec::new());
    for _ in 0..runs * 4 {
        let started = Instant::now();
        bash(work.path(), &off, "true").await?;
        without.push(started.elapsed());
        let started = Instant::now();
        bash(work.path(), &proxied, "true").await?;
        with_hosts.push(started.elapsed());
    }
    let (with_hosts, without) = (median_duration(&with_hosts), median_duration(&without));
    println!(
        "| `true` through the bash tool, sandboxed, network off | {} | | |",
        ms(without)
    );
    println!(
        "| `true` through the bash tool, sandboxed, `allow_hosts` (namespace + proxy) | {} | | |",
        ms(with_hosts)
    );
    Ok(())
}

fn sandbox(cwd: &Path, network: bool, hosts: &[&str]) -> anyhow::Result<Sandbox> {
    let config = SandboxConfig {
        mode: SandboxMode::WorkspaceWrite,
        network,
        allow_hosts: hosts
            .iter()
            .map(|h| Pattern::parse(h).map_err(anyhow::Error::msg))
            .collect::<anyhow::Result<_>>()?,
        ..SandboxConfig::default()
    };
    let sandbox = Sandbox::start(&config, cwd);
    anyhow::ensure!(
        sandbox.status == Status::Enforced,
        "the sandbox is not enforced here: {:?}",
        sandbox.status
    );
    Ok(sandbox)
}

/// Run `command` with the bash tool under `sandbox`; its text.
async fn bash(cwd: &Path, sandbox: &Sandbox, command: &str) -> anyhow::Result<String> {
    let settings = ToolSettings {
        supervisor: crate::AGENT.into(),
        sandbox: sandbox.clone(),
        ..ToolSettings::default()
    };
    let ctx = ToolContext {
        tool_call_id: String::new(),
        cwd: cwd.to_path_buf(),
        cancel: tokio_util::sync::CancellationToken::new(),
        on_update: Arc::new(|_| {}),
        settings: Arc::new(settings),
        hidden: None,
        files: Default::default(),
        spill: Default::default(),
        shells: Default::default(),
        session_net: Default::default(),
    };
    let output = agent::tools::bash::BashTool
        .execute(json!({ "command": command }), ctx)
        .await;
    let text = agent::protocol::message::join_text(&output.content);
    anyhow::ensure!(!output.is_error, "`{command}` failed: {text}");
    Ok(text)
}

/// The client's median, from its JSON line.
fn median_of(text: &str) -> anyhow::Result<Duration> {
    let line = text
        .lines()
        .find(|l| l.starts_with('{'))
        .with_context(|| format!("no result from the client: {text}"))?;
    let value: Value = serde_json::from_str(line)?;
    let micros = value["median_us"]
        .as_f64()
        .with_context(|| format!("no median: {line}"))?;
    Ok(Duration::from_secs_f64(micros / 1e6))
}
