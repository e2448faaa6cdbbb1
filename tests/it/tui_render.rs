//! The interface's pieces rendered into a ratatui buffer and compared with reviewed
//! snapshots (insta): transcript cells, tool cells, diffs, the queue, the status line, the
//! approval dialog, the streaming message.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // test code fails loudly

use crate::support;

use agent::agent::Agent;
use agent::config::Settings;
use agent::protocol::event::{AgentEvent, AssistantMessageEvent, ToolResultPayload};
use agent::protocol::message::{AssistantMessage, Content, Message, UserMessage};
use agent::tui::app::App;
use agent::tui::cells;
use agent::tui::theme::Theme;
use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use ratatui::text::Line;
use serde_json::json;
use std::sync::Arc;

const WIDTH: u16 = 72;

fn lines_to_text(rows: &[Line<'_>]) -> String {
    rows.iter()
        .map(|l| {
            l.spans
                .iter()
                .map(|s| s.content.as_ref())
                .collect::<String>()
                .trim_end()
                .to_string()
        })
        .collect::<Vec<_>>()
        .join("\n")
}

fn buffer_to_text(buffer: &Buffer) -> String {
    buffer
        .content
        .chunks(buffer.area.width as usize)
        .map(|row| {
            row.iter()
                .map(|c| c.symbol())
                .collect::<String>()
                .trim_end()
                .to_string()
        })
        .collect::<Vec<_>>()
        .join("\n")
}

fn settings(cwd: &std::path::Path) -> Arc<Settings> {
    let cli = <agent::cli::Cli as clap::Parser>::parse_from([
        "agent",
        "--model",
        "test-model",
        "--base-url",
        "http://127.0.0.1:9/v1",
        "--api-key",
        "k",
    ]);
    let mut settings = agent::config::load(&cli).expect("settings");
    settings.cwd = cwd.to_path_buf();
    Arc::new(settings)
}

fn app() -> (App, tempfile::TempDir) {
    let dir = tempfile::tempdir().unwrap();
    let agent = Arc::new(Agent::new(support::harness::config(
        "http://127.0.0.1:9/v1",
        dir.path(),
    )));
    let (tasks, _) = tokio::sync::mpsc::unbounded_channel();
    let app = App::new(
        agent::live::link::EngineLink::Local(agent),
        settings(dir.path()),
        Theme::plain(),
        WIDTH,
        tasks,
    );
    (app, dir)
}

fn render(app: &App) -> String {
    render_at(app, 30)
}

/// The live area at most `max_height` rows tall; the spinner (which moves with time) as
/// `*`, and the working directory (a temporary one) as `<cwd>`.
fn render_at(app: &App, max_height: u16) -> String {
    let frame = app.live_frame(WIDTH, max_height);
    let height = frame.height(max_height);
    let mut buffer = Buffer::empty(Rect::new(0, 0, WIDTH, height));
    app.render_live(frame, &mut buffer);
    let cwd = app.settings.cwd.display().to_string();
    buffer_to_text(&buffer)
        .replace(&cwd, "<cwd>")
        .chars()
        .map(|c| if ('⠀'..='⣿').contains(&c) { '*' } else { c })
        .collect()
}

#[test]
fn transcript_cells() {
    let theme = Theme::plain();
    let mut rows = cells::user(
        "Please fix the failing test in src/parser.rs and run the suite again.",
        WIDTH,
        &theme,
    );
    rows.extend(cells::assistant_text("I found it. The parser **skips** the last token:\n\n- `next()` returns early\n- the loop ends one short", WIDTH, &theme));
    rows.extend(cells::thinking(
        "Let me think about where the off-by-one is coming from in this loop.",
        false,
        WIDTH,
        &theme,
    ));
    rows.extend(cells::notice(
        "Compacted the conversation: 151.0k → 23.0k tokens",
        WIDTH,
        &theme,
    ));
    rows.extend(cells::warning(
        "HTTP 429 Too Many Requests: rate limited — retrying in 4 s (1/3)",
        WIDTH,
        &theme,
    ));
    rows.extend(cells::error(
        "HTTP 401 Unauthorized: Incorrect API key provided (check OPENAI_API_KEY)",
        WIDTH,
        &theme,
    ));
    insta::assert_snapshot!(lines_to_text(&rows));
}

#[test]
fn tool_cells_and_diffs() {
    let theme = Theme::plain();
    let output: String = (1..=12)
        .map(|i| format!("test case_{i} ... ok\n"))
        .collect::<String>()
        + "\n[exit code 0]";
    let mut rows = cells::tool(
        "bash",
        &json!({"command": "cargo test"}),
        &[Content::text(output)],
        None,
        false,
        WIDTH,
        &theme,
    );
    rows.extend(cells::tool(
        "read",
        &json!({"path": "src/parser.rs"}),
        &[Content::text("a\nb\nc\n")],
        None,
        false,
        WIDTH,
        &theme,
    ));
    let diff = "--- a/src/parser.rs\n+++ b/src/parser.rs\n@@ -10,3 +10,3 @@\n fn next(&mut self) {\n-    if self.pos >= self.len - 1 {\n+    if self.pos >= self.len {\n         return None;\n";
    rows.extend(cells::tool(
        "edit",
        &json!({"path": "src/parser.rs", "edits": [{"oldText": "a", "newText": "b"}]}),
        &[Content::text("Edited src/parser.rs")],
        Some(&json!({"diff": diff})),
        false,
        WIDTH,
        &theme,
    ));
    rows.extend(cells::tool("bash", &json!({"command": "rm -rf build"}), &[Content::text("Permission denied: `bash` can change files or run programs, and the agent is in read-only mode.")], None, true, WIDTH, &theme));
    insta::assert_snapshot!(lines_to_text(&rows));
}

#[tokio::test]
async fn live_area_while_a_tool_runs_with_a_queue() {
    let (mut app, _dir) = app();
    app.on_agent_event(AgentEvent::AgentStart);
    app.on_agent_event(AgentEvent::ToolExecutionStart {
        tool_call_id: "c1".into(),
        tool_name: "bash".into(),
        args: json!({"command": "cargo build --release"}),
    });
    app.on_agent_event(AgentEvent::ToolExecutionUpdate {
        tool_call_id: "c1".into(),
        tool_name: "bash".into(),
        partial_result: ToolResultPayload {
            content: vec![Content::text(
                "   Compiling serde v1.0\n   Compiling tokio v1.48\n   Compiling agent v0.1.0",
            )],
            details: None,
        },
    });
    app.on_agent_event(AgentEvent::QueueUpdate {
        steering: vec!["use the debug build instead".into()],
        follow_up: vec!["then run the tests".into()],
    });
    let screen = render(&app);
    // The spinner frame depends on time; everything else is fixed.
    let screen: String = screen
        .chars()
        .map(|c| if ('⠀'..='⣿').contains(&c) { '*' } else { c })
        .collect();
    insta::assert_snapshot!(screen);
}

#[tokio::test]
async fn the_streaming_message_shows_its_open_part() {
    let (mut app, _dir) = app();
    app.on_agent_event(AgentEvent::AgentStart);
    app.on_agent_event(AgentEvent::MessageStart {
        message: Arc::new(Message::Assistant(AssistantMessage::empty(
            "test",
            "test-model",
        ))),
    });
    app.on_agent_event(AgentEvent::MessageUpdate {
        assistant_message_event: AssistantMessageEvent::TextStart { content_index: 0 },
    });
    app.on_agent_event(AgentEvent::MessageUpdate {
        assistant_message_event: AssistantMessageEvent::TextDelta {
            content_index: 0,
            delta: "First paragraph is complete.\n\nThe second line is still arr".into(),
        },
    });
    // The finished paragraph went to the scrollback; the open one is live.
    let committed = lines_to_text(&std::mem::take(&mut app.out));
    assert!(
        committed.contains("● First paragraph is complete."),
        "{committed}"
    );
    let screen = render(&app);
    assert!(screen.contains("The second line is still arr"), "{screen}");
    assert!(!screen.contains("First paragraph"), "{screen}");
}

/// What the engine sends with a `bash` call's approval request.
fn command_preview(command: &str) -> agent::protocol::event::ApprovalPreview {
    agent::protocol::event::ApprovalPreview::Command {
        command: command.to_string(),
        unsandboxed_allowed: true,
    }
}

#[tokio::test]
async fn the_approval_dialog_replaces_the_composer() {
    let (mut app, _dir) = app();
    app.on_agent_event(AgentEvent::AgentStart);
    app.on_agent_event(AgentEvent::ToolApprovalRequest {
        tool_call_id: "c1".into(),
        tool_name: "bash".into(),
        args: json!({"command": "git push --force"}),
        reason: "`bash` can change files or run programs".into(),
        agent_id: None,
        cwd: _dir.path().to_path_buf(),
        preview: command_preview("git push --force"),
        suggested_rule: None,
    });
    insta::assert_snapshot!(render(&app));
}

#[tokio::test]
async fn a_long_command_is_shown_whole_and_scrolls() {
    let (mut app, _dir) = app();
    app.on_agent_event(AgentEvent::AgentStart);
    let hidden_tail = "cd build && make -j8 CFLAGS='-O2 -g -Wall -Wextra -Werror' install-everything && rm -rf ~/important-data";
    let command = format!("{hidden_tail}\necho second line\n\u{1b}[8mecho hidden");
    app.on_agent_event(AgentEvent::ToolApprovalRequest {
        tool_call_id: "c1".into(),
        tool_name: "bash".into(),
        args: json!({ "command": command }),
        reason: "it matches the ask rule `bash(rm *)`".into(),
        agent_id: None,
        cwd: _dir.path().to_path_buf(),
        preview: command_preview(&command),
        suggested_rule: None,
    });
    let screen = render(&app);
    assert!(screen.contains("rm -rf ~/important-data"), "{screen}");
    assert!(screen.contains("echo second line"), "{screen}");
    insta::assert_snapshot!(screen);

    // Far more than fits: the body scrolls, and says what is below. (A request made while
    // a dialog shows waits behind it: this one is asked alone.)
    let (mut app, _dir) = self::app();
    app.on_agent_event(AgentEvent::AgentStart);
    let long: String = (1..=60).map(|i| format!("echo step {i}\n")).collect();
    app.on_agent_event(AgentEvent::ToolApprovalRequest {
        tool_call_id: "c2".into(),
        tool_name: "bash".into(),
        args: json!({"command": long}),
        reason: "`bash` can change files or run programs".into(),
        agent_id: None,
        cwd: _dir.path().to_path_buf(),
        preview: command_preview(&long),
        suggested_rule: None,
    });
    app.views.approval_mut().unwrap().opened -= std::time::Duration::from_secs(1);
    let screen = render_at(&app, 20);
    assert!(screen.contains("echo step 1\n"), "{screen}");
    assert!(screen.contains("more below"), "{screen}");
    assert!(!screen.contains("echo step 60"), "{screen}");
    app.on_key(KeyEvent::new(KeyCode::End, KeyModifiers::NONE));
    let screen = render_at(&app, 20);
    assert!(screen.contains("echo step 60"), "{screen}");
    assert!(screen.contains("0 more below"), "{screen}");
    insta::assert_snapshot!("long_command_scrolled_to_the_end", screen);
}

#[tokio::test]
async fn the_status_line_shows_model_usage_and_completions() {
    let (mut app, _dir) = app();
    app.input.composer.set_text("/co");
    let screen = render(&app);
    insta::assert_snapshot!(screen);
    app.on_agent_event(AgentEvent::MessageStart {
        message: Arc::new(Message::User(UserMessage::text("hi"))),
    });
    assert!(lines_to_text(&app.out).contains("› hi"));
}
