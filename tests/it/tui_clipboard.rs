//! ctrl+v in a pseudo-terminal, with a fake `xclip` on PATH (a script this test writes):
//! the clipboard's image becomes a chip, is saved beside the session and is sent; an empty
//! clipboard, or no clipboard tool, is one notice and changes nothing else; a hung tool
//! freezes nothing and is killed; on Wayland `wl-paste` is asked instead.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // test code fails loudly

use crate::support;

use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use support::chat;
use support::env::{Env, env};
use support::harness::{wait_for_pid, wait_until_dead};
use support::pty::{COLS, ROWS, Tui};
use support::server::{FakeServer, Reply};

/// A real 3×2 PNG (red, opaque).
const PNG_3X2: &[u8] = &[
    0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a, 0x00, 0x00, 0x00, 0x0d, 0x49, 0x48, 0x44, 0x52,
    0x00, 0x00, 0x00, 0x03, 0x00, 0x00, 0x00, 0x02, 0x08, 0x06, 0x00, 0x00, 0x00, 0x9d, 0x74, 0x66,
    0x1a, 0x00, 0x00, 0x00, 0x11, 0x49, 0x44, 0x41, 0x54, 0x78, 0x9c, 0x63, 0xf8, 0xcf, 0xc0, 0xf0,
    0x1f, 0x86, 0x19, 0x90, 0x39, 0x00, 0x9b, 0x7e, 0x0b, 0xf5, 0x72, 0xb0, 0xb9, 0x3c, 0x00, 0x00,
    0x00, 0x00, 0x49, 0x45, 0x4e, 0x44, 0xae, 0x42, 0x60, 0x82,
];

/// A directory holding an `xclip` that logs its arguments to `calls` and answers TARGETS
/// with `targets`, and `image/png` with `clip.png` when it exists (else fails, as xclip
/// does for a type the clipboard lacks); with a file `hang` there, it writes its pid to
/// `pid` and hangs.
fn fake_xclip(targets: &str) -> tempfile::TempDir {
    fake_tool("xclip", targets)
}

/// The same for `name` (`xclip` or `wl-paste`: TARGETS or `--list-types` list the types).
fn fake_tool(name: &str, targets: &str) -> tempfile::TempDir {
    let bin = tempfile::tempdir().unwrap();
    let dir = bin.path().display();
    let script = format!(
        "#!/bin/sh\n\
         echo \"$*\" >> {dir}/calls\n\
         if [ -f {dir}/hang ]; then echo $$ > {dir}/pid; exec sleep 60; fi\n\
         case \"$*\" in\n\
         *TARGETS*|--list-types) printf '{targets}' ;;\n\
         *image/png*) [ -f {dir}/clip.png ] || exit 1; exec cat {dir}/clip.png ;;\n\
         *) exit 1 ;;\n\
         esac\n"
    );
    let tool = bin.path().join(name);
    std::fs::write(&tool, script).unwrap();
    std::fs::set_permissions(&tool, std::fs::Permissions::from_mode(0o755)).unwrap();
    bin
}

/// `bin` first on the PATH the tests run with.
fn path_with(bin: &Path) -> String {
    format!(
        "{}:{}",
        bin.display(),
        std::env::var("PATH").unwrap_or_default()
    )
}

/// The interface on X11 (DISPLAY set, no Wayland), with `path` as PATH.
fn start(env: &Env, server: &FakeServer, path: &str) -> Tui {
    start_on(
        env,
        server,
        path,
        &[("DISPLAY", ":99"), ("WAYLAND_DISPLAY", "")],
    )
}

/// The interface with `path` as PATH and `display` (the display variables).
fn start_on(env: &Env, server: &FakeServer, path: &str, display: &[(&str, &str)]) -> Tui {
    let base = server.v1();
    Tui::spawn_sized(
        &["--base-url", &base, "--model", "test-model"],
        env.home.path(),
        env.cwd.path(),
        ROWS,
        COLS,
        &[&[("PATH", path)], display].concat(),
    )
}

fn mode(path: &Path) -> u32 {
    std::fs::metadata(path).unwrap().permissions().mode() & 0o777
}

#[tokio::test]
async fn ctrl_v_puts_the_clipboard_image_in_as_a_chip_saved_beside_the_session_and_sends_it() {
    let env = env();
    std::fs::write(
        env.home.path().join("config.toml"),
        "[providers.openai.models.test-model]\nimages = true\n",
    )
    .unwrap();
    let bin = fake_xclip("TARGETS\\nUTF8_STRING\\nimage/png\\n");
    std::fs::write(bin.path().join("clip.png"), PNG_3X2).unwrap();
    let server = FakeServer::start(vec![Reply::sse(chat::text("A red square."))]).await;
    let mut tui = start(&env, &server, &path_with(bin.path()));
    tui.wait_for_text("Ask anything").await;
    tui.type_text("what is ");
    tui.send(b"\x16");
    let chip = "[image: clipboard-1.png 3×2]";
    tui.wait_for_text(&format!("› what is {chip}")).await;
    let calls = std::fs::read_to_string(bin.path().join("calls")).unwrap();
    assert_eq!(
        calls,
        "-selection clipboard -t TARGETS -o\n-selection clipboard -t image/png -o\n"
    );
    tui.type_text("it?");
    tui.enter();
    tui.wait_for_text("A red square.").await;
    tui.wait_for_text(&format!("Attached: {chip}")).await;
    let parts = server.bodies()[0]["messages"][1]["content"].clone();
    assert_eq!(parts[0]["text"], format!("what is {chip} it?"));
    assert_eq!(
        parts[1]["image_url"]["url"].as_str().unwrap(),
        format!(
            "data:image/png;base64,{}",
            base64::Engine::encode(&base64::engine::general_purpose::STANDARD, PNG_3X2)
        )
    );
    // Saved in the session's own directory, private.
    let session = env.only_session();
    let stem = session.file_stem().unwrap().to_string_lossy().into_owned();
    let files = session.with_file_name(format!("{stem}.files"));
    let saved = files.join("clipboard-1.png");
    assert_eq!(std::fs::read(&saved).unwrap(), PNG_3X2);
    assert_eq!(mode(&files), 0o700);
    assert_eq!(mode(&saved), 0o600);
    tui.quit().await;
}

#[tokio::test]
async fn ctrl_v_without_an_image_on_the_clipboard_or_a_clipboard_tool_says_so() {
    let env = env();
    let server = FakeServer::start(vec![]).await;
    // The clipboard holds text only.
    let bin = fake_xclip("TARGETS\\nUTF8_STRING\\ntext/plain\\n");
    let mut tui = start(&env, &server, &path_with(bin.path()));
    tui.wait_for_text("Ask anything").await;
    tui.type_text("draft");
    tui.send(b"\x16");
    tui.wait_for_text("no image on the clipboard").await;
    let calls = std::fs::read_to_string(bin.path().join("calls")).unwrap();
    assert_eq!(calls, "-selection clipboard -t TARGETS -o\n");
    // The composer keeps what was typed, and takes more.
    tui.type_text("!");
    tui.wait_for_text("› draft!").await;
    tui.send(b"\x15\x04");
    assert_eq!(tui.exit_code().await, 0);
    // No xclip anywhere on PATH (only an empty directory on it).
    let empty = tempfile::tempdir().unwrap();
    let mut tui = start(&env, &server, &empty.path().display().to_string());
    tui.wait_for_text("Ask anything").await;
    tui.send(b"\x16");
    tui.wait_for_text("no clipboard tool found: install wl-clipboard or xclip")
        .await;
    tui.quit().await;
}

#[tokio::test]
async fn on_wayland_wl_paste_is_asked() {
    let env = env();
    let bin = fake_tool("wl-paste", "text/plain\\nimage/png\\n");
    std::fs::write(bin.path().join("clip.png"), PNG_3X2).unwrap();
    let server = FakeServer::start(vec![]).await;
    let path = path_with(bin.path());
    let mut tui = start_on(
        &env,
        &server,
        &path,
        &[("WAYLAND_DISPLAY", "wayland-9"), ("DISPLAY", "")],
    );
    tui.wait_for_text("Ask anything").await;
    tui.send(b"\x16");
    tui.wait_for_text(".png 3×2]").await;
    let calls = std::fs::read_to_string(bin.path().join("calls")).unwrap();
    assert_eq!(calls, "--list-types\n--type image/png\n");
    tui.send(b"\x15\x04");
    assert_eq!(tui.exit_code().await, 0);
}

#[tokio::test]
async fn a_hung_clipboard_tool_freezes_nothing_and_is_given_up_on() {
    let env = env();
    let bin = fake_xclip("TARGETS\\nimage/png\\n");
    std::fs::write(bin.path().join("hang"), "").unwrap();
    let server = FakeServer::start(vec![]).await;
    let mut tui = start(&env, &server, &path_with(bin.path()));
    tui.wait_for_text("Ask anything").await;
    tui.send(b"\x16");
    // The interface goes on taking keys while the tool hangs.
    tui.type_text("still here");
    tui.wait_for_text("› still here").await;
    assert!(!tui.screen().contains("did not answer"));
    tui.wait_for_text("the clipboard tool `xclip` did not answer within 3 s")
        .await;
    let pid = wait_for_pid(&bin.path().join("pid")).await;
    assert!(
        wait_until_dead(pid).await,
        "the hung xclip {pid} was killed"
    );
    tui.wait_for_text("› still here").await;
    tui.send(b"\x15\x04");
    assert_eq!(tui.exit_code().await, 0);
}

/// A chip's label whose image this run does not know (recalled from an earlier run's
/// history, or typed) is not sent as bare text: the prompt stays, and the user is told.
#[tokio::test]
async fn a_chip_label_from_an_earlier_run_is_not_sent_without_its_image() {
    let env = env();
    let server = FakeServer::start(vec![Reply::sse(chat::text("unused"))]).await;
    let bin = fake_xclip("TARGETS\\n");
    let mut tui = start(&env, &server, &path_with(bin.path()));
    tui.wait_for_text("Ask anything").await;
    tui.type_text("look at [image: old.png 10×20]");
    tui.enter();
    tui.wait_for_text("is only text now").await;
    tui.wait_for_text("› look at [image: old.png 10×20]").await;
    assert!(server.bodies().is_empty(), "nothing reached the model");
    tui.send(b"\x15\x04");
    assert_eq!(tui.exit_code().await, 0);
}
