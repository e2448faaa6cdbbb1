//! What the terminal shows stays whole: the real interface in a pseudo-terminal, read back
//! through a terminal emulator — resizing never drops rows, and wide characters (CJK,
//! emoji, flags, combining marks) keep their cells.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // test code fails loudly

use crate::support;

use support::chat;
use support::env::env;
use support::pty::Tui;
use support::tmux::{words, words_whole};

async fn ready(tui: &Tui) {
    tui.wait_for_text("Ask anything").await;
}

/// The status line ends with the model's name and the token counts (then `$?`: the test
/// model has no prices) at the right edge:
/// once they end at column `width`, the interface has redrawn at that width. (A row the
/// terminal merely cut or widened ends elsewhere.)
async fn redrawn_at(tui: &Tui, width: usize) {
    tui.wait_for(&format!("a redraw at width {width}"), |_| {
        tui.screen().lines().any(|l| {
            l.contains("test-model · ↑")
                && (l.ends_with(char::is_numeric) || l.ends_with("$?"))
                && l.chars().count() == width
        })
    })
    .await;
}

/// Where each needle first appears in `text`, in order; panics if one is missing.
fn in_order(text: &str, needles: &[String]) {
    let mut from = 0;
    for needle in needles {
        match text[from..].find(needle.as_str()) {
            Some(at) => from += at + needle.len(),
            None => panic!("`{needle}` is missing (or out of order) in:\n{text}"),
        }
    }
}

#[tokio::test]
async fn shrinking_and_growing_the_terminal_keeps_every_row() {
    let env = env();
    let answers: Vec<String> = (1..=8).map(|i| format!("Answer number {i}.")).collect();
    let refs: Vec<&str> = answers.iter().map(String::as_str).collect();
    let server = chat::answering(&refs).await;
    let mut tui = env.start(&server, &[]);
    ready(&tui).await;
    for i in 1..=8 {
        tui.ask(
            &format!("prompt number {i}"),
            &format!("Answer number {i}."),
        )
        .await;
    }
    redrawn_at(&tui, 100).await;
    // 40 → 20 rows (the terminal pushes the top into its scrollback), then back to 40
    // (it pulls them back): the live area must follow, not paint over the conversation.
    tui.resize(20, 90);
    redrawn_at(&tui, 90).await;
    tui.resize(40, 100);
    redrawn_at(&tui, 100).await;
    let mut expected = Vec::new();
    for i in 1..=8 {
        expected.push(format!("› prompt number {i}"));
        expected.push(format!("● Answer number {i}."));
    }
    in_order(&tui.transcript(), &expected);
    // And again, several times, with typing in between.
    for (rows, cols) in [(12, 80), (30, 70), (15, 100), (40, 100)] {
        tui.resize(rows, cols);
        redrawn_at(&tui, usize::from(cols)).await;
    }
    in_order(&tui.transcript(), &expected);
    tui.quit().await;
}

/// A width the terminal went through while the interface was stopped (a loaded machine, a
/// debugger, a job-control stop): one SIGWINCH comes for both changes, and by the time it is
/// read the size is again the one the interface drew at. This terminal cuts its rows when it
/// narrows (xterm does too), so the ends of the rows are gone all the same: the
/// conversation is printed again.
#[tokio::test]
async fn a_width_undone_while_the_interface_was_stopped_is_printed_again() {
    let env = env();
    let long = format!("{}omega", "alpha ".repeat(14));
    let server = chat::answering(&[&long]).await;
    let mut tui = env.start(&server, &[]);
    ready(&tui).await;
    tui.ask("say it", "omega").await;
    assert!(tui.screen().contains("omega"), "{}", tui.screen());

    let pid = i32::try_from(tui.pid().unwrap()).unwrap();
    signal_and_wait(pid, libc::SIGSTOP, 'T');
    tui.resize(support::pty::ROWS, 40);
    tui.resize(support::pty::ROWS, support::pty::COLS);
    assert!(!tui.transcript().contains("omega"), "{}", tui.transcript());
    signal_and_wait(pid, libc::SIGCONT, 'S');
    tui.wait_for_text("omega").await;
    tui.quit().await;
}

/// ctrl+z gives the terminal back to the shell (job control stops the interface) and `fg`
/// takes it again, the composer as it was; what the shell printed meanwhile stays. A size
/// change still settling at ctrl+z, or whose signal is read only after `fg`, does not print
/// the conversation again over it: the interface measured the terminal when it came back.
#[tokio::test]
#[ignore = "fails one run in three to five: after `fg` the shell's lines are gone from the \
            whole transcript within 20 ms and the interface sits at the top row, as after a \
            reprint; never with the agent logging at debug level; not yet understood"]
async fn ctrl_z_gives_the_terminal_to_the_shell_and_fg_takes_it_back() {
    if !support::skip::on_path("bash") {
        support::skip::skip("bash is not installed");
        return;
    }
    let env = env();
    let server = chat::answering(&["unused"]).await;
    let mut tui = env.start_in(
        &server,
        &[],
        &[],
        support::pty::Terminal {
            // An interactive shell (job control on) runs the interface as its foreground
            // job, says something once it has stopped, and brings it back.
            wrapper: Some(&[
                "bash",
                "--norc",
                "--noprofile",
                "-i",
                "-c",
                "\"$0\" \"$@\"; echo the shell said zq7; fg",
            ]),
            ..support::pty::Terminal::default()
        },
    );
    ready(&tui).await;
    tui.type_text("draft kept");
    tui.wait_for_text("draft kept").await;
    // The new size and ctrl+z at once: the resize is still settling when the key comes.
    tui.resize(support::pty::ROWS, 90);
    tui.send(b"\x1a");
    tui.wait_for_text("the shell said zq7").await;
    tui.wait_for(
        "the interface back at 90 columns, the draft in its composer",
        |s| {
            s.lines().any(|l| l.trim_end() == "› draft kept")
                && s.lines()
                    .any(|l| l.ends_with("test-model") && l.chars().count() == 90)
        },
    )
    .await;
    // Well past `SETTLE`: a reprint would have cleared the shell's line by now.
    tokio::time::sleep(std::time::Duration::from_millis(600)).await;
    let transcript = tui.transcript();
    assert!(transcript.contains("the shell said zq7"), "{transcript}");
    // The draft away, then ctrl+d: the interface ends, and the shell with it.
    tui.send(b"\x15\x04");
    assert_eq!(tui.exit_code().await, 0);
}

/// A key that comes with a resize is taken at once. crossterm, on a resize signal and
/// terminal input ready together, returns the resize and leaves the input unread until more
/// comes (its poll is edge-triggered): ctrl+d typed just after a resize did not quit until
/// the next key. (Before the fix a key of the forty waited for the next, here forever.)
#[tokio::test]
async fn a_key_typed_as_the_terminal_resizes_is_taken_at_once() {
    let env = env();
    let server = chat::answering(&["unused"]).await;
    let mut tui = env.start(&server, &[]);
    ready(&tui).await;
    let mut typed = String::new();
    for i in 0..40u8 {
        let key = char::from(b'a' + i % 26);
        let narrower = u16::from(i % 2);
        tui.resize(30 + narrower, 100 - 10 * narrower);
        tui.send(key.to_string().as_bytes());
        typed.push(key);
        let composer = format!("› {typed}");
        tui.wait_for(&format!("`{typed}` in the composer"), |screen| {
            screen.lines().any(|line| line.trim_end() == composer)
        })
        .await;
    }
    tui.send(b"\x15\x04");
    assert_eq!(tui.exit_code().await, 0);
}

/// The other order: a key and a resize come together while the transcript view is up, the
/// key read first — crossterm then drops the resize signal. The view is drawn again at the
/// new width all the same (the frame after the key finds the terminal's size changed).
#[tokio::test]
async fn a_resize_that_comes_with_a_key_in_the_transcript_view_is_followed() {
    let env = env();
    let words = words(80);
    let answer = words.concat();
    let server = chat::answering(&[&answer]).await;
    let mut tui = env.start(&server, &[]);
    ready(&tui).await;
    tui.ask("tell me", "w079").await;
    tui.send(b"\x0f");
    tui.wait_for_text("Transcript (").await;
    // Stopped, the program gets the key and the resize signal at once when it goes on:
    // the key is ready first.
    let pid = i32::try_from(tui.pid().unwrap()).unwrap();
    signal_and_wait(pid, libc::SIGSTOP, 'T');
    tui.resize(30, 70);
    tui.send(b"g");
    signal_and_wait(pid, libc::SIGCONT, 'S');
    // Laid out at 70 columns: every word whole (the terminal's own cut of the 100-column
    // rows leaves pieces of words).
    tui.wait_for("the view at 70 columns", |s| {
        s.contains("Transcript (") && words.iter().all(|w| s.contains(w.trim())) && words_whole(s)
    })
    .await;
    tui.close_view(b"\x1b", "Transcript (").await;
    tui.quit().await;
}

/// Send `signal` to `pid` and wait until its state (in /proc) is `state`.
fn signal_and_wait(pid: i32, signal: i32, state: char) {
    // SAFETY: kill has no memory effects; the pid is the test's own child.
    assert_eq!(unsafe { libc::kill(pid, signal) }, 0);
    let stat = format!("/proc/{pid}/stat");
    for _ in 0..2000 {
        let text = std::fs::read_to_string(&stat).unwrap();
        // The state follows the command's name in parentheses.
        let now = text.rsplit(')').next().unwrap().trim_start().chars().next();
        if now == Some(state) {
            return;
        }
        std::thread::sleep(std::time::Duration::from_millis(1));
    }
    panic!("process {pid} never reached state {state}");
}

#[tokio::test]
async fn wide_characters_are_committed_whole() {
    let env = env();
    let cjk: String = ('\u{4e00}'..).take(100).collect();
    let answer = format!(
        "{cjk}\n\nemoji a🙂b👍c🎉d flags 🇫🇷🇯🇵 marks e\u{301}a\u{308} end\n\nfamily 👨\u{200d}👩\u{200d}👧"
    );
    let server = chat::answering(&[&answer]).await;
    let mut tui = env.start(&server, &[]);
    ready(&tui).await;
    tui.type_text("漢字とemoji 🙂 please");
    tui.enter();
    tui.wait_for_text("family").await;
    tui.wait_until_idle().await;
    let transcript = tui.transcript();
    assert!(
        transcript.contains("› 漢字とemoji 🙂 please"),
        "{transcript}"
    );
    // The hundred characters wrap over rows but none is lost or spaced out.
    let joined: String = transcript.chars().filter(|c| !c.is_whitespace()).collect();
    assert!(joined.contains(&cjk), "{transcript}");
    assert!(
        transcript.contains("emoji a🙂b👍c🎉d flags 🇫🇷🇯🇵 marks e\u{301}a\u{308} end"),
        "{transcript}"
    );
    assert!(
        transcript.contains("family 👨\u{200d}👩\u{200d}👧"),
        "{transcript}"
    );
    tui.quit().await;
}

#[tokio::test]
async fn command_colours_are_drawn_not_printed() {
    let env = env();
    let server = support::server::FakeServer::start(vec![]).await;
    let base = server.v1();
    let mut tui = Tui::spawn_sized(
        &["--base-url", &base, "--model", "test-model"],
        env.home.path(),
        env.cwd.path(),
        30,
        100,
        &[("NO_COLOR", "")],
    );
    ready(&tui).await;
    tui.type_text(r"!printf '\033[31mRED\033[0m plain \033]0;title\007\033[2Jafter\n'");
    tui.enter();
    let screen = tui.wait_for_text("RED plain after").await;
    // Nothing but the text: no raw codes, no window title, no cleared screen.
    assert!(
        screen
            .lines()
            .any(|l| l.trim_end() == "  ⎿ RED plain after"),
        "{screen}"
    );
    // The word is red on the terminal.
    let (row, col) = tui.find("RED plain").expect("on screen");
    assert_eq!(tui.fg_at(row, col), vt100::Color::Idx(1));
    assert_eq!(tui.fg_at(row, col + 4), vt100::Color::Default);
    tui.quit().await;
}

#[tokio::test]
async fn a_retried_answer_replaces_the_failed_partial_one() {
    use support::server::{End, FakeServer, Reply};
    let env = env();
    let partial = |paragraphs: usize| {
        let mut deltas: Vec<String> = (1..=paragraphs)
            .map(|i| format!("Partial paragraph {i}.\n\n"))
            .collect();
        deltas.push("cut".to_string());
        let refs: Vec<&str> = deltas.iter().map(String::as_str).collect();
        let frames = chat::text_deltas(&refs);
        // Everything but the end, slowly enough to be drawn: the connection drops
        // mid-answer.
        Reply::sse(frames[..frames.len() - 3].to_vec())
            .slowly(std::time::Duration::from_millis(30))
            .then(End::Drop)
    };
    let server = FakeServer::start(vec![
        partial(3),
        Reply::sse(chat::text("The whole answer.")),
        partial(30),
        Reply::sse(chat::text("The second whole answer.")),
    ])
    .await;
    let base = server.v1();
    let mut tui = Tui::spawn_sized(
        &["--base-url", &base, "--model", "test-model"],
        env.home.path(),
        env.cwd.path(),
        16,
        80,
        &[],
    );
    ready(&tui).await;
    tui.type_text("first");
    tui.enter();
    tui.wait_for_text("Partial paragraph 3.").await;
    tui.wait_for_text("The whole answer.").await;
    tui.wait_until_idle().await;
    let transcript = tui.transcript();
    assert!(!transcript.contains("Partial paragraph"), "{transcript}");
    assert_eq!(transcript.matches("retrying").count(), 1, "{transcript}");

    // Longer than the screen: what went into the scrollback stays, and says so.
    tui.type_text("second");
    tui.enter();
    tui.wait_for_text("Partial paragraph 30.").await;
    tui.wait_for_text("The second whole answer.").await;
    tui.wait_until_idle().await;
    let transcript = tui.transcript();
    assert!(
        transcript.contains("The partial answer above was cut off"),
        "{transcript}"
    );
    assert!(
        !transcript.contains("Partial paragraph 30."),
        "{transcript}"
    );
    tui.quit().await;
}
