//! Making the interface yours (issue 35): themes — light or dark as the terminal says by
//! OSC 11, a theme file of the user's, NO_COLOR over all — and a `[tui] status_line` command
//! that writes the status line from the session's state, in a real terminal.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // test code fails loudly

use crate::support;

use support::chat;
use support::env::{Env, env};
use support::pty::{COLS, Terminal, Tui};
use support::server::{FakeServer, Reply};

/// The colour query the interface sends in `auto`.
const OSC_11_QUERY: &[u8] = b"\x1b]11;?";
/// Any foreground or background colour (crossterm writes every colour so).
const COLOUR_SGR: [&[u8]; 2] = [b"\x1b[38;", b"\x1b[48;"];

fn write_config(env: &Env, tui: &str) {
    std::fs::write(
        env.home.path().join("config.toml"),
        format!("[tui]\n{tui}\n"),
    )
    .unwrap();
}

/// The interface in colour (the support sets NO_COLOR; empty means unset), in `terminal`.
fn start_in(env: &Env, server: &FakeServer, terminal: Terminal) -> Tui {
    env.start_in(server, &[], &[("NO_COLOR", "")], terminal)
}

/// The colour of the prompt sign `›` (the palette's accent).
async fn prompt_colour(tui: &Tui) -> vt100::Color {
    tui.wait_for_text("Ask anything").await;
    let (row, col) = tui.find("›").expect("the prompt sign");
    tui.fg_at(row, col)
}

#[tokio::test]
async fn a_light_terminal_gets_the_light_theme_and_its_answer_is_not_typed() {
    let env = env();
    let server = FakeServer::start(vec![]).await;
    let tui = start_in(
        &env,
        &server,
        Terminal {
            background: Some((0xff, 0xff, 0xff)),
            ..Terminal::default()
        },
    );
    // The light palette's accent: 256-colour 25 (dark's is ANSI cyan).
    assert_eq!(prompt_colour(&tui).await, vt100::Color::Idx(25));
    assert!(tui.wrote(OSC_11_QUERY));
    // The answer was read as an answer, not as keys: the composer is empty and typing works.
    tui.type_text("typed");
    let screen = tui.wait_for_text("› typed").await;
    assert!(
        !screen.contains("rgb:") && !screen.contains("11;"),
        "{screen}"
    );
}

#[tokio::test]
async fn a_terminal_that_does_not_answer_osc_11_gets_dark_at_once() {
    let env = env();
    let server = FakeServer::start(vec![]).await;
    // It answers DA1 (sent after the colour query) only: no colour, so no wait.
    let tui = start_in(&env, &server, Terminal::default());
    assert_eq!(prompt_colour(&tui).await, vt100::Color::Idx(6));
    assert!(tui.wrote(OSC_11_QUERY));
    tui.type_text("typed");
    tui.wait_for_text("› typed").await;
}

#[tokio::test]
async fn a_terminal_that_answers_nothing_still_starts_dark() {
    let env = env();
    let server = FakeServer::start(vec![]).await;
    let tui = start_in(
        &env,
        &server,
        Terminal {
            silent: true,
            ..Terminal::default()
        },
    );
    assert_eq!(prompt_colour(&tui).await, vt100::Color::Idx(6));
    // It asked, and waited no longer than its timeout for an answer that never came.
    assert!(tui.wrote(OSC_11_QUERY));
    tui.type_text("typed");
    tui.wait_for_text("› typed").await;
}

#[tokio::test]
async fn a_user_theme_colours_the_interface_without_asking_the_terminal() {
    let env = env();
    std::fs::create_dir(env.home.path().join("themes")).unwrap();
    std::fs::write(
        env.home.path().join("themes/mine.toml"),
        "extends = \"light\"\naccent = \"#ff8800\"\n",
    )
    .unwrap();
    write_config(&env, "theme = \"mine\"");
    let server = FakeServer::start(vec![]).await;
    let tui = start_in(
        &env,
        &server,
        Terminal {
            background: Some((0, 0, 0)),
            ..Terminal::default()
        },
    );
    assert_eq!(
        prompt_colour(&tui).await,
        vt100::Color::Rgb(0xff, 0x88, 0x00)
    );
    assert!(
        !tui.wrote(OSC_11_QUERY),
        "a theme that is set needs no question"
    );
}

#[tokio::test]
async fn a_broken_user_theme_is_named_with_its_line_and_dark_is_used() {
    let env = env();
    std::fs::create_dir(env.home.path().join("themes")).unwrap();
    std::fs::write(
        env.home.path().join("themes/mine.toml"),
        "# my colours\naccent = \"orangey\"\n",
    )
    .unwrap();
    write_config(&env, "theme = \"mine\"");
    let server = FakeServer::start(vec![]).await;
    let tui = start_in(&env, &server, Terminal::default());
    let screen = tui.wait_for_text("not a colour").await;
    assert!(screen.contains("mine.toml"), "{screen}");
    assert!(screen.contains("line 2"), "{screen}");
    assert!(screen.contains("no such theme"), "{screen}");
    assert_eq!(prompt_colour(&tui).await, vt100::Color::Idx(6));
}

#[tokio::test]
async fn no_color_wins_over_every_theme() {
    let env = env();
    write_config(&env, "theme = \"high-contrast\"");
    let server = FakeServer::start(vec![Reply::sse(chat::text(
        "# Heading\n\nSome `code`, a [link](https://example.com) and:\n\n```rust\nfn main() { let x = 1; }\n```\n",
    ))])
    .await;
    // The support's default environment has NO_COLOR=1.
    let tui = env.start(&server, &[]);
    tui.wait_for_text("Ask anything").await;
    tui.type_text("show me");
    tui.enter();
    tui.wait_for_text("fn main()").await;
    tui.wait_until_idle().await;
    for sgr in COLOUR_SGR {
        assert!(!tui.wrote(sgr), "a colour was written under NO_COLOR");
    }
    assert!(!tui.wrote(OSC_11_QUERY));
}

/// A status line script at `home/NAME.sh`; `status_line` runs it.
fn status_script(env: &Env, name: &str, body: &str) {
    let path = env.home.path().join(format!("{name}.sh"));
    std::fs::write(&path, body).unwrap();
    write_config(env, &format!("status_line = \"sh '{}'\"", path.display()));
}

#[tokio::test]
async fn a_status_line_command_shows_its_line_and_gets_the_state() {
    let env = env();
    let state = env.home.path().join("state.json");
    status_script(
        &env,
        "status",
        &format!(
            r#"input=$(cat)
printf '%s' "$input" > '{state}'
model=$(printf '%s' "$input" | sed -n 's/.*"model":{{[^}}]*"id":"\([^"]*\)".*/\1/p')
mode=$(printf '%s' "$input" | sed -n 's/.*"permissionMode":"\([^"]*\)".*/\1/p')
printf '\033[32mMY-LINE\033[0m %s %s \033[2J\033[5;1Hmoved\n' "$model" "$mode"
echo 'second line'
"#,
            state = state.display()
        ),
    );
    let server = FakeServer::start(vec![]).await;
    let tui = start_in(&env, &server, Terminal::default());
    let screen = tui.wait_for_text("MY-LINE test-model ask").await;
    // Its line replaces the built-in one; only the first line shows, without the cursor
    // movement or the screen clear it printed; its colour stays.
    assert!(!screen.contains("/ commands"), "{screen}");
    assert!(!screen.contains("second line"), "{screen}");
    let (row, col) = tui.find("MY-LINE").unwrap();
    assert_eq!(tui.fg_at(row, col), vt100::Color::Idx(2));
    assert_eq!(
        tui.find("MY-LINE test-model ask moved").map(|(r, _)| r),
        Some(row)
    );
    let sent: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&state).unwrap()).unwrap();
    assert_eq!(sent["version"], 1);
    assert_eq!(sent["model"]["id"], "test-model");
    assert_eq!(sent["state"], "idle");
    assert_eq!(sent["editorMode"], "default");
    assert_eq!(
        std::path::Path::new(sent["cwd"].as_str().unwrap())
            .canonicalize()
            .unwrap(),
        env.cwd.path().canonicalize().unwrap()
    );
    assert!(sent["sessionId"].as_str().is_some_and(|id| !id.is_empty()));
    assert_eq!(sent["columns"], COLS);
    // A change of state runs it again: shift+tab changes the permission mode.
    tui.send(b"\x1b[Z");
    tui.wait_for("the line with the new mode", |s| {
        s.contains("MY-LINE test-model ") && !s.contains("MY-LINE test-model ask")
    })
    .await;
}

#[tokio::test]
async fn a_status_line_command_that_hangs_is_killed_and_the_interface_keeps_working() {
    let env = env();
    let pid_file = env.home.path().join("sleeper.pid");
    // The command's child hangs: killing only `sh` would leave it.
    status_script(
        &env,
        "hang",
        &format!("sleep 1000 &\necho $! > '{}'\nwait\n", pid_file.display()),
    );
    let server = FakeServer::start(vec![]).await;
    let tui = start_in(&env, &server, Terminal::default());
    tui.wait_for_text("Ask anything").await;
    let sleeper = support::harness::wait_for_pid(&pid_file).await;
    // While it hangs, keys still echo, and the built-in line shows.
    tui.type_text("still typing");
    let screen = tui.wait_for_text("› still typing").await;
    assert!(screen.contains("ask mode"), "{screen}");
    tui.wait_for_text("took more than 2 s and was stopped")
        .await;
    assert!(
        support::harness::wait_until_dead(sleeper).await,
        "the hung command's process group was killed"
    );
    // It hangs again after a change, and is killed again, without a second note.
    std::fs::remove_file(&pid_file).unwrap();
    tui.send(b"\x1b[Z");
    let again = support::harness::wait_for_pid(&pid_file).await;
    assert_ne!(again, sleeper);
    assert!(support::harness::wait_until_dead(again).await);
    tui.type_text(" more");
    let screen = tui.wait_for_text("› still typing more").await;
    assert_eq!(
        screen.matches("took more than 2 s").count(),
        1,
        "said once: {screen}"
    );
}

#[tokio::test]
async fn a_failing_status_line_command_gives_the_built_in_line() {
    let env = env();
    status_script(&env, "fail", "echo 'NOT SHOWN'\nexit 3\n");
    let server = FakeServer::start(vec![]).await;
    let tui = start_in(&env, &server, Terminal::default());
    let screen = tui.wait_for_text("ended with exit status: 3").await;
    assert!(screen.contains("ask mode"), "{screen}");
    assert!(!screen.contains("NOT SHOWN"), "{screen}");
}

#[tokio::test]
async fn slash_theme_switches_now_and_keeps_it_in_the_config() {
    let env = env();
    write_config(&env, "theme = \"dark\"");
    let server = FakeServer::start(vec![]).await;
    let tui = start_in(&env, &server, Terminal::default());
    assert_eq!(prompt_colour(&tui).await, vt100::Color::Idx(6));
    tui.type_text("/theme light");
    tui.enter();
    tui.wait_for_text("Theme: light, now and in").await;
    assert_eq!(prompt_colour(&tui).await, vt100::Color::Idx(25));
    let config = std::fs::read_to_string(env.home.path().join("config.toml")).unwrap();
    assert!(config.contains("[tui]\ntheme = \"light\""), "{config}");
    tui.type_text("/theme nosuch");
    tui.enter();
    tui.wait_for_text("No theme `nosuch`").await;
}

#[tokio::test]
async fn theme_picker_previews_as_you_move_esc_goes_back_and_enter_keeps() {
    let env = env();
    write_config(&env, "theme = \"dark\"");
    let server = FakeServer::start(vec![]).await;
    let tui = start_in(&env, &server, Terminal::default());
    assert_eq!(prompt_colour(&tui).await, vt100::Color::Idx(6));
    tui.type_text("/theme");
    tui.enter();
    tui.wait_for_text("↑↓ preview").await;
    let marker = |name: &str| {
        let (row, col) = tui.find(&format!("› {name}")).expect("the selected theme");
        tui.fg_at(row, col)
    };
    assert_eq!(marker("dark"), vt100::Color::Idx(6));
    // Down: light is selected and shown in its own colours at once.
    tui.send(b"\x1b[B");
    tui.wait_for_text("› light").await;
    assert_eq!(marker("light"), vt100::Color::Idx(25));
    // esc: back to the theme it had, nothing written.
    tui.send(b"\x1b");
    tui.wait_for("the picker to close", |s| !s.contains("↑↓ preview"))
        .await;
    assert_eq!(prompt_colour(&tui).await, vt100::Color::Idx(6));
    let config = std::fs::read_to_string(env.home.path().join("config.toml")).unwrap();
    assert!(!config.contains("light"), "{config}");
    // enter keeps the selected one, now and in the config.
    tui.type_text("/theme");
    tui.enter();
    tui.wait_for_text("↑↓ preview").await;
    tui.send(b"\x1b[B");
    tui.wait_for_text("› light").await;
    tui.enter();
    tui.wait_for_text("Theme: light, now and in").await;
    assert_eq!(prompt_colour(&tui).await, vt100::Color::Idx(25));
    let config = std::fs::read_to_string(env.home.path().join("config.toml")).unwrap();
    assert!(config.contains("theme = \"light\""), "{config}");
}
