//! Issue 34 §1 in a pseudo-terminal: `/usage` (totals, per model, top tools, "price unknown"
//! rather than $0), `/context` (what the next request holds, as a bar and a table) and the
//! status line's cost.

use crate::support::chat;
use crate::support::env::env;
use crate::support::server::{FakeServer, Reply};
use serde_json::json;

#[tokio::test]
async fn usage_and_context_show_what_was_spent_and_what_the_next_request_holds() {
    let env = env();
    std::fs::write(
        env.cwd.path().join("AGENTS.md"),
        "Always answer in haiku.\n",
    )
    .unwrap();
    let server = FakeServer::start(vec![
        Reply::sse(chat::tool_call(
            "b1",
            "bash",
            json!({"command": "echo listed"}),
        )),
        Reply::sse(chat::text("all done")),
    ])
    .await;
    let mut tui = env.start(&server, &["--permission-mode", "auto"]);
    tui.wait_for_text("Ask anything").await;
    tui.type_text("list it");
    tui.enter();
    tui.wait_for_text("all done").await;
    // `test-model` has no prices: the status line says the cost is unknown.
    tui.wait_for("the unknown cost in the status line", |s| s.contains("$?"))
        .await;

    tui.type_text("/usage");
    tui.enter();
    let screen = tui
        .wait_for("the usage table", |s| {
            s.contains("Usage of this session") && s.contains("Top tools")
        })
        .await;
    assert!(
        screen.contains("2 calls · 30 input · 12 output"),
        "{screen}"
    );
    assert!(screen.contains("cost price unknown"), "{screen}");
    assert!(screen.contains("no prices for: test-model"), "{screen}");
    assert!(screen.contains("openai/test-model"), "{screen}");
    assert!(screen.contains("bash"), "{screen}");

    tui.type_text("/context");
    tui.enter();
    let screen = tui
        .wait_for("the context table", |s| s.contains("■ messages"))
        .await;
    assert!(screen.contains("what the next request holds"), "{screen}");
    for part in [
        "system_prompt",
        "context_files",
        "tools_builtin",
        "messages",
        "█",
    ] {
        assert!(screen.contains(part), "{part}: {screen}");
    }
    tui.quit().await;
}
