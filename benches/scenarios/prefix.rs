//! Prefix stability (issue 34 §3): a 40-turn scripted RPC session — tool calls, a sub-agent,
//! one compaction — against the loopback server; from the recorded requests, how many bytes
//! of each main-conversation request the next one repeats at its start, rendered in the
//! order a provider reads them (tool definitions, then the messages, system prompt first).
//! Deterministic (no timing): it may be run in a debug build,
//! `cargo test --bench scenarios -- prefix`.

use super::AGENT;
use crate::chat;
use crate::server::{FakeServer, Reply};
use anyhow::Context;
use serde_json::{Value, json};
use std::process::Stdio;
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};

const TURNS: usize = 40;
const COMPACT_AFTER: usize = 30;
const TASK_AT: usize = 20;

fn render(body: &Value) -> String {
    let mut out = body["tools"].to_string();
    for message in body["messages"].as_array().into_iter().flatten() {
        out.push_str(&message.to_string());
    }
    out
}

/// A sub-agent's request: its first user message is the `task` prompt.
fn is_child(body: &Value) -> bool {
    body["messages"]
        .as_array()
        .into_iter()
        .flatten()
        .find(|m| m["role"] == "user")
        .is_some_and(|m| m["content"].to_string().contains("CHILD:"))
}

fn common_prefix(a: &str, b: &str) -> usize {
    a.bytes().zip(b.bytes()).take_while(|(x, y)| x == y).count()
}

pub async fn run() -> anyhow::Result<()> {
    let server = FakeServer::start(Vec::new()).await;
    for turn in 1..=TURNS {
        if turn == TASK_AT {
            server.push(Reply::sse(chat::tool_call(
                "task_1",
                "task",
                json!({"description": "look around", "prompt": "CHILD: list the files"}),
            )));
        } else if turn % 4 == 1 {
            server.push(Reply::sse(chat::tool_call(
                &format!("call_{turn}"),
                "bash",
                json!({"command": format!("echo turn {turn}")}),
            )));
        }
        server.push(Reply::sse(chat::text(&format!("Answer number {turn}."))));
        if turn == COMPACT_AFTER {
            server.push(Reply::sse(chat::text("Summary: forty turns of testing.")));
        }
    }
    server.route("CHILD", vec![Reply::sse(chat::text("two files"))]);
    let home = tempfile::tempdir().context("home")?;
    // Keep little verbatim, so that `compact` has something to summarise.
    std::fs::write(
        home.path().join("config.toml"),
        "[compaction]\nkeep_recent_tokens = 200\n",
    )
    .context("config.toml")?;
    let cwd = tempfile::tempdir().context("cwd")?;
    let mut child = tokio::process::Command::new(AGENT)
        .args(["--base-url", &server.v1(), "--model", "test-model"])
        .args(["--mode", "rpc", "--permission-mode", "auto"])
        .current_dir(cwd.path())
        .env("AGENT_HOME", home.path())
        .env_remove("OPENAI_API_KEY")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .kill_on_drop(true)
        .spawn()
        .context("starting the agent")?;
    let mut stdin = child.stdin.take().context("stdin")?;
    let mut lines = BufReader::new(child.stdout.take().context("stdout")?).lines();
    let mut until = async |pred: &dyn Fn(&Value) -> bool| -> anyhow::Result<()> {
        while let Some(line) = lines.next_line().await? {
            if serde_json::from_str::<Value>(&line).is_ok_and(|v| pred(&v)) {
                return Ok(());
            }
        }
        anyhow::bail!("the agent stopped")
    };
    let mut compaction_request = None;
    for turn in 1..=TURNS {
        let prompt = json!({"type": "prompt", "message": format!("prompt number {turn}")});
        stdin.write_all(format!("{prompt}\n").as_bytes()).await?;
        until(&|v| v["type"] == "agent_end").await?;
        if turn == COMPACT_AFTER {
            compaction_request = Some(server.requests().len());
            stdin
                .write_all(b"{\"id\":\"c\",\"type\":\"compact\"}\n")
                .await?;
            until(&|v| v["type"] == "response" && v["id"] == "c").await?;
        }
    }
    drop(stdin);
    let _ = child.wait().await;
    let bodies = server.bodies();
    if std::env::var("PREFIX_DEBUG").is_ok() {
        eprintln!(
            "{} requests, compaction at {compaction_request:?}",
            bodies.len()
        );
        for body in &bodies {
            let last = &body["messages"][body["messages"].as_array().map_or(0, |m| m.len()) - 1];
            eprintln!(
                "  {}",
                last.to_string().chars().take(100).collect::<String>()
            );
        }
    }
    let main: Vec<String> = bodies
        .iter()
        .enumerate()
        .filter(|(i, body)| Some(*i) != compaction_request && !is_child(body))
        .map(|(_, body)| render(body))
        .collect();
    // The pair whose second request follows the compaction (the history was rewritten).
    let after_compaction =
        compaction_request.map(|at| bodies[..at].iter().filter(|b| !is_child(b)).count());
    let (mut repeated, mut total, mut whole) = (0usize, 0usize, 0usize);
    for (i, pair) in main.windows(2).enumerate() {
        if Some(i + 1) == after_compaction {
            println!(
                "| compaction turn | {:.3} |",
                common_prefix(&pair[0], &pair[1]) as f64 / pair[0].len() as f64
            );
            continue;
        }
        let common = common_prefix(&pair[0], &pair[1]);
        repeated += common;
        total += pair[0].len();
        whole += usize::from(common == pair[0].len());
    }
    let pairs = main.len().saturating_sub(2);
    println!(
        "| prefix stability, {} requests ({} pairs outside the compaction) | {:.4} | {whole}/{pairs} pairs repeat the whole previous request |",
        main.len(),
        pairs,
        repeated as f64 / total.max(1) as f64
    );
    Ok(())
}
