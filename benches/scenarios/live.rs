//! Live sessions (docs/protocol.md §4.5): how long `attach` takes to replay a 10,000-message
//! session (connect → the answer with every message read), and what fanning a 50,000-delta
//! answer out to 4 attached clients costs the owning `agent --mode rpc` in CPU, against one
//! client and none.

use super::{Bench, chat, fast, measure, session_gen, words};
use anyhow::Context;
use serde_json::{Value, json};
use std::io::{BufRead, BufReader, Write};
use std::os::unix::net::UnixStream;
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::time::{Duration, Instant};

/// An `agent --mode rpc` whose stdout a thread reads: it reports when `agent_end` comes.
struct Owner {
    child: Child,
    stdin: ChildStdin,
    lines: std::sync::mpsc::Receiver<Value>,
}

impl Owner {
    fn start(bench: &Bench, home: &Path, extra: &[&str]) -> anyhow::Result<Owner> {
        let mut command = Command::new(super::AGENT);
        command
            .args(["--base-url", &bench.server.v1(), "--model", "bench-model"])
            .args(["--mode", "rpc", "--permission-mode", "auto"])
            .args(extra)
            .current_dir(bench.cwd.path())
            .env("AGENT_HOME", home)
            .env_remove("OPENAI_API_KEY")
            .env_remove("RUST_LOG")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null());
        let mut child = command.spawn().context("starting agent --mode rpc")?;
        let stdin = child.stdin.take().context("no stdin")?;
        let stdout = child.stdout.take().context("no stdout")?;
        let (tx, lines) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines().map_while(Result::ok) {
                // Only what the scenario waits for; every line is read.
                if (line.contains("\"response\"") || line.contains("\"agent_end\""))
                    && let Ok(value) = serde_json::from_str(&line)
                {
                    let _ = tx.send(value);
                }
            }
        });
        Ok(Owner {
            child,
            stdin,
            lines,
        })
    }

    fn send(&mut self, line: Value) -> anyhow::Result<()> {
        writeln!(self.stdin, "{line}").context("writing to the owner")
    }

    fn until(&self, pred: impl Fn(&Value) -> bool) -> anyhow::Result<Value> {
        loop {
            let line = self
                .lines
                .recv_timeout(Duration::from_secs(300))
                .context("the owner stopped answering")?;
            if pred(&line) {
                return Ok(line);
            }
        }
    }

    /// The socket its session is served on.
    fn socket(&mut self, home: &Path) -> anyhow::Result<PathBuf> {
        self.send(json!({"id": "state", "type": "get_state"}))?;
        let state = self.until(|l| l["id"] == "state")?;
        let id = state["data"]["sessionId"]
            .as_str()
            .context("no session id")?;
        Ok(home.join("run").join(format!("{id}.sock")))
    }

    fn finish(mut self) {
        drop(self.stdin);
        let _ = self.child.wait();
    }
}

/// Connect, `attach` (replaying the `last` messages; all with `None`), and read lines
/// until `done` says so: how long it took.
fn attach_and_read(
    socket: &Path,
    last: Option<usize>,
    done: impl Fn(&Value) -> bool,
) -> anyhow::Result<Duration> {
    let started = Instant::now();
    let mut stream = UnixStream::connect(socket).context("connecting to the live session")?;
    writeln!(
        stream,
        "{}",
        json!({"id": "a", "type": "attach", "last": last})
    )
    .context("attach")?;
    for line in BufReader::new(stream).lines() {
        let value: Value = serde_json::from_str(&line.context("reading the socket")?)?;
        if done(&value) {
            return Ok(started.elapsed());
        }
    }
    anyhow::bail!("the live session closed the connection")
}

async fn attach_replay(bench: &Bench, messages: usize) -> anyhow::Result<()> {
    let home = tempfile::tempdir().context("creating a home directory")?;
    session_gen::generate(home.path(), bench.cwd.path(), usize::MAX, messages, None)?;
    let mut owner = Owner::start(bench, home.path(), &["-c"])?;
    let socket = owner.socket(home.path())?;
    // The whole conversation, and what `agent attach`'s interface asks for: its last
    // screens (`tui::run::REPLAY` messages, as a resumed session shows).
    for (last, what) in [
        (None, "every message"),
        (
            Some(200),
            "the last 200 messages (what `agent attach` asks)",
        ),
    ] {
        let mut times = Vec::new();
        for _ in 0..bench.runs {
            let socket = socket.clone();
            times.push(
                tokio::task::spawn_blocking(move || {
                    attach_and_read(&socket, last, |l| l["id"] == "a")
                })
                .await??,
            );
        }
        println!(
            "| `attach` replay of a {messages}-message session (connect → {what} read) | {:.1} ms | | |",
            measure::median_duration(&times).as_secs_f64() * 1000.0
        );
    }
    owner.finish();
    Ok(())
}

/// The owner's CPU for one 50,000-delta answer with `clients` attached clients reading it.
async fn fan_out_once(bench: &Bench, clients: usize) -> anyhow::Result<Duration> {
    let home = tempfile::tempdir().context("creating a home directory")?;
    let mut owner = Owner::start(bench, home.path(), &["--no-session"])?;
    let socket = owner.socket(home.path())?;
    let (ready_tx, ready) = std::sync::mpsc::channel();
    let mut readers = Vec::new();
    for _ in 0..clients {
        let (socket, ready_tx) = (socket.clone(), ready_tx.clone());
        readers.push(std::thread::spawn(move || -> anyhow::Result<()> {
            let mut stream = UnixStream::connect(&socket)?;
            writeln!(stream, "{}", json!({"id": "a", "type": "attach"}))?;
            let mut lines = BufReader::new(stream).lines();
            for line in lines.by_ref() {
                if line?.contains("\"id\":\"a\"") {
                    break;
                }
            }
            let _ = ready_tx.send(());
            for line in lines {
                if line?.contains("\"agent_end\"") {
                    return Ok(());
                }
            }
            Ok(())
        }));
    }
    for _ in 0..clients {
        ready.recv().context("a client did not attach")?;
    }
    bench.server.push(fast(chat::text_deltas(
        &words(50_000, "END")
            .iter()
            .map(String::as_str)
            .collect::<Vec<_>>(),
    )));
    let before = measure::cpu_of(owner.child.id());
    owner.send(json!({"id": "p", "type": "prompt", "message": "write a lot"}))?;
    owner.until(|l| l["type"] == "agent_end")?;
    for reader in readers {
        let _ = reader.join();
    }
    let cpu = measure::cpu_of(owner.child.id()).saturating_sub(before);
    owner.finish();
    Ok(cpu)
}

async fn fan_out(bench: &Bench) -> anyhow::Result<()> {
    for clients in [0, 1, 4] {
        let mut cpu = Vec::new();
        for _ in 0..bench.runs {
            cpu.push(fan_out_once(bench, clients).await?);
        }
        println!(
            "| 50,000-delta answer, `--mode rpc` with {clients} live client(s) attached: the owner's CPU | | {:.1} ms | |",
            measure::median_duration(&cpu).as_secs_f64() * 1000.0
        );
    }
    Ok(())
}

pub async fn run(bench: &Bench) -> anyhow::Result<()> {
    attach_replay(bench, 10_000).await?;
    fan_out(bench).await
}
