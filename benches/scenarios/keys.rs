//! Keypress → frame with a `[keys]` section in the config (issue 35): every key goes through
//! the keymap's lookup, so this figure should match the plain one.

use super::{Bench, keypress_row, quit, session_gen, typing_latencies};
use crate::pty::Tui;
use anyhow::Context;
use std::time::Duration;

/// A dozen rebindings, none of them on a letter (typing stays text).
const KEYS: &str = r#"[keys]
"composer.submit" = "shift+enter"
"composer.newline" = ["enter", "ctrl+j"]
"composer.history_search" = ["ctrl+r", "f3"]
"view.transcript" = ["f2", "ctrl+o"]
"view.agents" = "none"
"thinking.toggle" = "alt+t"
"mode.cycle" = ["shift+tab", "f4"]
"composer.edit_queued" = "alt+e"
"approval.allow" = ["y", "enter", "f5"]
"menu.choose" = ["enter", "f6"]
"view.close" = ["esc", "q", "f7"]
"agent.next" = ["tab", "f8"]
"#;

pub async fn keypress_with_keys(bench: &Bench) -> anyhow::Result<()> {
    let home = tempfile::tempdir().context("creating a home directory")?;
    std::fs::write(home.path().join("config.toml"), KEYS).context("writing the config")?;
    session_gen::generate(home.path(), bench.cwd.path(), usize::MAX, 10, None)?;
    let base = bench.server.v1();
    let args = ["--base-url", base.as_str(), "--model", "bench-model", "-c"];
    let tui = Tui::spawn_sized(&args, home.path(), bench.cwd.path(), 40, 120, &[]);
    tui.wait_for("the prompt", |s| s.lines().any(|l| l.starts_with("› ")))
        .await;
    tokio::time::sleep(Duration::from_millis(300)).await;
    let latencies = typing_latencies(&tui, |typed| format!("› {typed}")).await;
    keypress_row(
        "keypress → frame, 10 messages in the session, 12 `[keys]` rebindings",
        &latencies,
        &tui,
    );
    quit(tui).await;
    Ok(())
}
