//! The web client (`agent serve --web`, docs/protocol.md §4.6): the size of its files as
//! served and gzip-compressed (target ≤ 300 KB), and its first paint on loopback in a
//! headless Chromium (target ≤ 300 ms; also the time until the session list is shown), each
//! load in a fresh browser context. The browser part needs node, chromium and
//! playwright-core (tests/web/install.sh); without them its row says so.

use crate::{AGENT, Bench};
use anyhow::Context;
use serde_json::Value;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::Duration;

const WEB_DIR: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/web");

/// The files the page loads.
const FILES: &[&str] = &["/", "/app.js", "/markdown.js", "/app.css", "/icon.svg"];

struct Served {
    child: Child,
    addr: String,
    _home: tempfile::TempDir,
}

impl Drop for Served {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn start(bench: &Bench) -> anyhow::Result<Served> {
    let home = tempfile::tempdir().context("creating a home directory")?;
    std::fs::write(
        home.path().join("config.toml"),
        format!(
            "provider = \"local\"\nmodel = \"bench-model\"\n[providers.local]\napi = \"openai-chat\"\nbase_url = \"{}\"\n",
            bench.server.v1()
        ),
    )?;
    let mut child = Command::new(AGENT)
        .args(["serve", "--web", "--listen", "127.0.0.1:0"])
        .current_dir(bench.cwd.path())
        .env("AGENT_HOME", home.path())
        .env_remove("AGENT_SERVE_TOKENS")
        .env_remove("RUST_LOG")
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .context("starting agent serve --web")?;
    let stdout = child.stdout.take().context("no stdout")?;
    let mut lines = BufReader::new(stdout).lines();
    let first = lines.next().context("agent serve said nothing")??;
    let addr = first
        .strip_prefix("agent serve: listening on http://")
        .context("agent serve did not say where it listens")?
        .to_string();
    // Keep reading (and dropping) what it prints.
    std::thread::spawn(move || lines.for_each(drop));
    Ok(Served {
        child,
        addr,
        _home: home,
    })
}

/// One file's body as served.
fn fetch(addr: &str, path: &str) -> anyhow::Result<Vec<u8>> {
    let mut stream = TcpStream::connect(addr)?;
    stream.set_read_timeout(Some(Duration::from_secs(60)))?;
    write!(
        stream,
        "GET {path} HTTP/1.1\r\nhost: {addr}\r\nconnection: close\r\n\r\n"
    )?;
    let mut answer = Vec::new();
    stream.read_to_end(&mut answer)?;
    let at = answer
        .windows(4)
        .position(|w| w == b"\r\n\r\n")
        .context("no end of headers")?;
    anyhow::ensure!(answer.starts_with(b"HTTP/1.1 200"), "{path} is not served");
    Ok(answer[at + 4..].to_vec())
}

/// `gzip -9`'s size of `bytes`.
fn gzipped(bytes: &[u8]) -> anyhow::Result<usize> {
    let mut gzip = Command::new("gzip")
        .arg("-9c")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .context("gzip")?;
    gzip.stdin.take().context("no stdin")?.write_all(bytes)?;
    let out = gzip.wait_with_output()?;
    Ok(out.stdout.len())
}

fn sizes(served: &Served) -> anyhow::Result<()> {
    let (mut raw, mut compressed) = (0, 0);
    for path in FILES {
        let body = fetch(&served.addr, path)?;
        raw += body.len();
        compressed += gzipped(&body)?;
    }
    println!(
        "| web client files ({} of them): {:.1} KB as served, {:.1} KB gzip -9 (target ≤ 300 KB) | | | |",
        FILES.len(),
        raw as f64 / 1000.0,
        compressed as f64 / 1000.0
    );
    Ok(())
}

fn first_paint(bench: &Bench, served: &Served) -> anyhow::Result<()> {
    let chromium = ["/usr/bin/chromium", "/usr/bin/chromium-browser"]
        .iter()
        .map(Path::new)
        .find(|p| p.exists());
    let installed = Path::new(WEB_DIR)
        .join("node_modules/playwright-core/package.json")
        .exists();
    let Some(chromium) = chromium.filter(|_| installed) else {
        println!(
            "| web client first paint: not measured (needs chromium, node and playwright-core: tests/web/install.sh) | | | |"
        );
        return Ok(());
    };
    let out = Command::new("node")
        .arg(Path::new(WEB_DIR).join("paint.mjs"))
        .current_dir(WEB_DIR)
        .env("WEB_URL", format!("http://{}", served.addr))
        .env("CHROMIUM", chromium)
        .env("RUNS", bench.runs.to_string())
        .stderr(Stdio::inherit())
        .output()
        .context("running tests/web/paint.mjs")?;
    let loads: Vec<Value> = String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter_map(|l| serde_json::from_str(l).ok())
        .collect();
    anyhow::ensure!(!loads.is_empty(), "tests/web/paint.mjs measured nothing");
    let median = |key: &str| {
        let mut values: Vec<f64> = loads.iter().filter_map(|l| l[key].as_f64()).collect();
        values.sort_by(f64::total_cmp);
        values.get(values.len() / 2).copied().unwrap_or(f64::NAN)
    };
    println!(
        "| web client first contentful paint, loopback, headless Chromium, nothing cached (target ≤ 300 ms) | {:.0} ms | | |",
        median("firstPaintMs")
    );
    println!(
        "| web client: the session list shown (page, script, `GET /v1/sessions`) | {:.0} ms | | |",
        median("listedMs")
    );
    Ok(())
}

pub async fn run(bench: &Bench) -> anyhow::Result<()> {
    let served = start(bench)?;
    sizes(&served)?;
    first_paint(bench, &served)
}
