//! The interface's welcome for a user with no way to reach the provider: shown when no key
//! is given, in the environment or stored, and not shown to a user who signed in with
//! `agent login` (the stored credential counts as a key).

use crate::support::env::env;
use crate::support::process::command;
use crate::support::pty::Tui;
use std::process::Stdio;
use tokio::io::AsyncWriteExt;

/// A hosted-looking endpoint nothing is ever sent to (the tests type no prompt).
const HOSTED: &str = "http://models.agent-test.invalid/v1";

fn start(home: &std::path::Path, cwd: &std::path::Path) -> Tui {
    Tui::spawn_sized(
        &["--base-url", HOSTED, "--model", "test-model"],
        home,
        cwd,
        crate::support::pty::ROWS,
        crate::support::pty::COLS,
        &[("AGENT_CREDENTIAL_STORE", "file")],
    )
}

/// `/session`'s answer: everything the start-up said is on screen before it.
async fn after_start_up(tui: &Tui) -> String {
    tui.wait_for_text("Ask anything").await;
    tui.type_text("/session");
    tui.enter();
    tui.wait_for("the session's description", |s| s.contains("sessions/"))
        .await
}

#[tokio::test]
async fn the_welcome_is_for_users_with_no_key_and_not_for_those_signed_in() {
    let e = env();
    let mut tui = start(e.home.path(), e.cwd.path());
    let shown = after_start_up(&tui).await;
    assert!(shown.contains("Welcome!"), "no key anywhere: {shown}");
    tui.send(b"\x03");
    tui.send(b"\x03");
    tui.exit_code().await;

    let mut login = command(e.home.path(), e.cwd.path());
    login
        .env("AGENT_CREDENTIAL_STORE", "file")
        .args(["login", "--provider", "openai"])
        .stdin(Stdio::piped());
    let mut child = login.spawn().unwrap();
    let mut stdin = child.stdin.take().unwrap();
    stdin
        .write_all(b"sk-stored-for-the-welcome\n")
        .await
        .unwrap();
    drop(stdin);
    let output = child.wait_with_output().await.unwrap();
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );

    let mut tui = start(e.home.path(), e.cwd.path());
    let shown = after_start_up(&tui).await;
    assert!(!shown.contains("Welcome!"), "signed in: {shown}");
    tui.send(b"\x03");
    tui.send(b"\x03");
    tui.exit_code().await;
}
