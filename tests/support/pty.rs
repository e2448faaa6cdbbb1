//! The real `agent` binary in a pseudo-terminal (portable-pty), its output fed to a
//! terminal emulator (vt100) so tests read the screen as a person would. Like a real
//! terminal, it answers the cursor-position (DSR) and device-attributes (DA1) queries (and,
//! when asked to, the background colour: OSC 11), and
//! it honours synchronized output (mode 2026), which vt100 does not: a frame between
//! `CSI ? 2026 h` and `CSI ? 2026 l` is seen whole or not at all, never half drawn.

use portable_pty::{Child, CommandBuilder, MasterPty, PtySize, native_pty_system};
use std::io::{Read, Write};
use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

pub const ROWS: u16 = 40;
pub const COLS: u16 = 100;

/// How the test's terminal answers queries beyond the cursor position.
#[derive(Clone, Copy, Debug, Default)]
pub struct Terminal {
    /// Answers OSC 11 (the background colour) with this colour; `None`: ignores it.
    pub background: Option<(u8, u8, u8)>,
    /// Answers neither OSC 11 nor DA1 (device attributes).
    pub silent: bool,
    /// Never says where the cursor is (DSR): the program's start waits out crossterm's 2 s.
    pub no_cursor_answer: bool,
    /// Starts the agent through this program and its arguments (`unshare …`), the agent's
    /// path and arguments last; `None`: the agent itself.
    pub wrapper: Option<&'static [&'static str]>,
}

pub struct Tui {
    parser: Arc<Mutex<vt100::Parser>>,
    writer: Arc<Mutex<Box<dyn Write + Send>>>,
    child: Box<dyn Child + Send + Sync>,
    master: Box<dyn MasterPty + Send>,
    cols: u16,
    /// Every byte the program wrote, for what the screen does not keep (OSC 52).
    raw: Arc<Mutex<Vec<u8>>>,
    /// Set when the reader has seen the end of the output (every writer gone).
    drained: Arc<std::sync::atomic::AtomicBool>,
}

impl Tui {
    pub fn spawn(args: &[&str], home: &Path, cwd: &Path) -> Tui {
        Tui::spawn_sized(args, home, cwd, ROWS, COLS, &[])
    }

    pub fn spawn_sized(
        args: &[&str],
        home: &Path,
        cwd: &Path,
        rows: u16,
        cols: u16,
        env: &[(&str, &str)],
    ) -> Tui {
        Tui::spawn_with_terminal(args, home, cwd, rows, cols, env, Terminal::default())
    }

    /// Like `spawn_sized`, in a terminal that answers the colour and attribute queries as
    /// `terminal` says.
    pub fn spawn_with_terminal(
        args: &[&str],
        home: &Path,
        cwd: &Path,
        rows: u16,
        cols: u16,
        env: &[(&str, &str)],
        terminal: Terminal,
    ) -> Tui {
        let pty = native_pty_system();
        let pair = pty
            .openpty(PtySize {
                rows,
                cols,
                pixel_width: 0,
                pixel_height: 0,
            })
            .expect("open a pty");
        let command = agent_command(terminal.wrapper, args, home, cwd, env);
        let child = pair
            .slave
            .spawn_command(command)
            .expect("spawn agent in the pty");
        drop(pair.slave);
        let mut reader = pair.master.try_clone_reader().expect("pty reader");
        let writer = Arc::new(Mutex::new(pair.master.take_writer().expect("pty writer")));
        let size = |n: u16| std::num::NonZeroU16::new(n).expect("a terminal size");
        let parser = Arc::new(Mutex::new(vt100::Parser::new(
            size(rows),
            size(cols),
            10_000,
        )));
        let (feed, reply) = (parser.clone(), writer.clone());
        let raw = Arc::new(Mutex::new(Vec::new()));
        let written = raw.clone();
        let drained = Arc::new(std::sync::atomic::AtomicBool::new(false));
        let reader_done = drained.clone();
        std::thread::spawn(move || {
            // However the loop ends, the output has been read to its end.
            struct Done(Arc<std::sync::atomic::AtomicBool>);
            impl Drop for Done {
                fn drop(&mut self) {
                    self.0.store(true, std::sync::atomic::Ordering::SeqCst);
                }
            }
            let _done = Done(reader_done);
            let mut chunk = [0u8; 8192];
            let mut sync = SyncOutput::default();
            // Held from the start of a synchronized frame to its end: readers wait.
            let mut held: Option<std::sync::MutexGuard<'_, vt100::Parser>> = None;
            // The end of the previous read: a query may come in two reads.
            let mut carry: Vec<u8> = Vec::new();
            loop {
                let n = match reader.read(&mut chunk) {
                    Ok(0) | Err(_) => return,
                    Ok(n) => n,
                };
                let bytes = &chunk[..n];
                written.lock().unwrap().extend_from_slice(bytes);
                let mut from = 0;
                for (at, begins) in sync.marks(bytes) {
                    let mut parser = held.take().unwrap_or_else(|| feed.lock().unwrap());
                    parser.process(&bytes[from..at]);
                    from = at;
                    if begins {
                        held = Some(parser);
                    }
                }
                let mut parser = held.take().unwrap_or_else(|| feed.lock().unwrap());
                parser.process(&bytes[from..]);
                let asks = |query: &[u8]| asks(&carry, bytes, query);
                // Device status report: "where is the cursor?"
                if !terminal.no_cursor_answer && asks(b"\x1b[6n") {
                    let (row, col) = parser.screen().cursor_position();
                    let answer = format!("\x1b[{};{}R", row + 1, col + 1);
                    let _ = reply.lock().unwrap().write_all(answer.as_bytes());
                }
                // OSC 11: "what is your background colour?" — answered first, as a
                // terminal answers queries in the order they came.
                if let Some((r, g, b)) = terminal.background
                    && asks(b"\x1b]11;?")
                {
                    let answer =
                        format!("\x1b]11;rgb:{r:02x}{r:02x}/{g:02x}{g:02x}/{b:02x}{b:02x}\x1b\\");
                    let _ = reply.lock().unwrap().write_all(answer.as_bytes());
                }
                // Primary device attributes: "what are you?" (a VT220 with colours).
                if !terminal.silent && asks(b"\x1b[c") {
                    let _ = reply.lock().unwrap().write_all(b"\x1b[?62;22c");
                }
                carry = [carry.as_slice(), bytes].concat();
                carry.drain(..carry.len().saturating_sub(5));
                if sync.inside {
                    held = Some(parser);
                }
            }
        });
        Tui {
            parser,
            writer,
            child,
            master: pair.master,
            cols,
            raw,
            drained,
        }
    }

    /// Whether the program has written `needle` (escape sequences included).
    pub fn wrote(&self, needle: &[u8]) -> bool {
        self.raw
            .lock()
            .unwrap()
            .windows(needle.len())
            .any(|w| w == needle)
    }

    /// How many times the program has written `needle` (escape sequences included).
    pub fn count(&self, needle: &[u8]) -> usize {
        self.raw
            .lock()
            .unwrap()
            .windows(needle.len())
            .filter(|w| *w == needle)
            .count()
    }

    /// The terminal window changed size (SIGWINCH reaches the program).
    pub fn resize(&mut self, rows: u16, cols: u16) {
        let size = |n: u16| std::num::NonZeroU16::new(n).expect("a terminal size");
        self.parser
            .lock()
            .unwrap()
            .screen_mut()
            .set_size(size(rows), size(cols));
        self.cols = cols;
        self.master
            .resize(PtySize {
                rows,
                cols,
                pixel_width: 0,
                pixel_height: 0,
            })
            .expect("resize the pty");
    }

    pub fn pid(&self) -> Option<u32> {
        self.child.process_id()
    }

    pub fn send(&self, bytes: &[u8]) {
        let mut writer = self.writer.lock().unwrap();
        writer.write_all(bytes).unwrap();
        writer.flush().unwrap();
    }

    /// Type text a key at a time, as a person would (a paste would arrive at once).
    pub fn type_text(&self, text: &str) {
        for c in text.chars() {
            let mut buf = [0u8; 4];
            self.send(c.encode_utf8(&mut buf).as_bytes());
            std::thread::sleep(Duration::from_millis(2));
        }
    }

    pub fn enter(&self) {
        self.send(b"\r");
    }

    /// The visible screen, one string per row.
    pub fn screen(&self) -> String {
        self.parser.lock().unwrap().screen().contents()
    }

    /// Everything the terminal holds: the scrollback then the screen.
    pub fn transcript(&self) -> String {
        let mut parser = self.parser.lock().unwrap();
        let screen = parser.screen().contents();
        let mut above = Vec::new();
        let scrolled = parser.screen().scrollback_len();
        for offset in (1..=scrolled).rev() {
            parser.screen_mut().set_scrollback(offset);
            let top = parser
                .screen()
                .rows(0, self.cols)
                .next()
                .unwrap_or_default();
            above.push(top);
        }
        parser.screen_mut().set_scrollback(0);
        above.push(screen);
        above.join("\n")
    }

    /// Wait (up to 120 s) until the screen satisfies `pred`; returns it.
    pub async fn wait_for(&self, what: &str, pred: impl Fn(&str) -> bool) -> String {
        let deadline = Instant::now() + Duration::from_secs(120);
        loop {
            let screen = self.transcript();
            if pred(&screen) {
                return screen;
            }
            if Instant::now() > deadline {
                panic!("timed out waiting for {what}; the terminal shows:\n{screen}");
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }

    /// Wait until the visible screen satisfies `pred`, checking every 200 µs — for latency
    /// measurements, where `wait_for`'s coarse polling would be the figure.
    pub async fn wait_for_screen_precisely(&self, what: &str, pred: impl Fn(&str) -> bool) {
        let deadline = Instant::now() + Duration::from_secs(120);
        loop {
            if pred(&self.screen()) {
                return;
            }
            if Instant::now() > deadline {
                panic!(
                    "timed out waiting for {what}; the terminal shows:\n{}",
                    self.screen()
                );
            }
            std::thread::sleep(Duration::from_micros(200));
        }
    }

    /// Where `text` first starts on the visible screen: (row, column).
    pub fn find(&self, text: &str) -> Option<(u16, u16)> {
        let parser = self.parser.lock().unwrap();
        let screen = parser.screen();
        let (_, cols) = screen.size();
        for (row, line) in screen.rows(0, cols.get()).enumerate() {
            if let Some(at) = line.find(text) {
                let col = line[..at].chars().count();
                return Some((u16::try_from(row).ok()?, u16::try_from(col).ok()?));
            }
        }
        None
    }

    /// The foreground colour of the cell at (row, column).
    pub fn fg_at(&self, row: u16, col: u16) -> vt100::Color {
        let parser = self.parser.lock().unwrap();
        parser
            .screen()
            .cell(row, col)
            .map(|cell| cell.fgcolor())
            .unwrap_or_default()
    }

    /// Send `text` from an emptied composer (ctrl+u) and wait until `answer` shows and the
    /// run has ended.
    pub async fn ask(&self, text: &str, answer: &str) {
        self.send(b"\x15");
        self.type_text(text);
        self.enter();
        self.wait_for_text(answer).await;
        self.wait_until_idle().await;
    }

    pub async fn wait_for_text(&self, text: &str) -> String {
        self.wait_for(text, |s| s.contains(text)).await
    }

    /// Wait until no run is going (the live area's `esc to interrupt` is gone). Call it
    /// only once the screen showed the run happened (e.g. its answer): before the program
    /// has read the key that starts a run, the screen looks idle too.
    pub async fn wait_until_idle(&self) -> String {
        self.wait_for("the run to end", |s| !s.contains("esc to interrupt"))
            .await
    }

    /// Close a full-screen view with `key` and wait until its `title` is off the screen.
    pub async fn close_view(&self, key: &[u8], title: &str) {
        self.send(key);
        self.wait_for("the view to close", |s| !s.contains(title))
            .await;
    }

    /// Quit with ctrl+d (at an empty prompt): the program ends with exit code 0.
    pub async fn quit(&mut self) {
        self.send(b"\x04");
        assert_eq!(self.exit_code().await, 0, "ctrl+d ends the program cleanly");
    }

    /// Wait for the process to end; its exit code.
    pub async fn exit_code(&mut self) -> u32 {
        let deadline = Instant::now() + Duration::from_secs(120);
        loop {
            if let Ok(Some(status)) = self.child.try_wait() {
                // What it wrote last (the terminal modes restored) may still be on its way
                // to the emulator: wait until the reader has seen the end of the output.
                while !self.drained.load(std::sync::atomic::Ordering::SeqCst)
                    && Instant::now() < deadline
                {
                    tokio::time::sleep(Duration::from_millis(10)).await;
                }
                return status.exit_code();
            }
            if Instant::now() > deadline {
                let _ = self.child.kill();
                panic!("agent did not exit; the terminal shows:\n{}", self.screen());
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }

    /// Modes the interface must have restored when it exits.
    pub fn terminal_restored(&self) -> bool {
        let parser = self.parser.lock().unwrap();
        let screen = parser.screen();
        !screen.bracketed_paste() && !screen.hide_cursor()
    }
}

/// The agent with `args` (through `wrapper`, if any: its program and arguments, the agent's
/// path and arguments last), as every test's terminal starts it: its home and project, the
/// test's environment variables, and none of the user's keys or log settings.
pub fn agent_command(
    wrapper: Option<&[&str]>,
    args: &[&str],
    home: &Path,
    cwd: &Path,
    env: &[(&str, &str)],
) -> CommandBuilder {
    let mut command = match wrapper {
        Some([program, wrapper_args @ ..]) => {
            let mut command = CommandBuilder::new(program);
            command.args(wrapper_args);
            command.arg(env!("CARGO_BIN_EXE_agent"));
            command
        }
        _ => CommandBuilder::new(env!("CARGO_BIN_EXE_agent")),
    };
    command.args(args);
    command.cwd(cwd);
    command.env("AGENT_HOME", home);
    // Nothing above the temp directory is the test's project (support::process).
    command.env("GIT_CEILING_DIRECTORIES", std::env::temp_dir());
    command.env("TERM", "xterm-256color");
    command.env("NO_COLOR", "1");
    for var in [
        "OPENAI_API_KEY",
        "OPENAI_BASE_URL",
        "ANTHROPIC_API_KEY",
        "ANTHROPIC_BASE_URL",
        "RUST_LOG",
    ] {
        command.env_remove(var);
    }
    for (name, value) in env {
        command.env(name, value);
    }
    command
}

impl Drop for Tui {
    fn drop(&mut self) {
        let _ = self.child.kill();
    }
}

/// Finds the synchronized-output markers in the byte stream, also when one is split
/// between two reads.
#[derive(Default)]
struct SyncOutput {
    /// The last bytes seen (a marker's length at most).
    tail: Vec<u8>,
    /// Inside a synchronized frame.
    inside: bool,
}

impl SyncOutput {
    const BEGIN: &'static [u8] = b"\x1b[?2026h";
    const END: &'static [u8] = b"\x1b[?2026l";

    /// Where in `bytes` a marker ends, and whether it begins a frame (`false`: ends one).
    fn marks(&mut self, bytes: &[u8]) -> Vec<(usize, bool)> {
        let mut marks = Vec::new();
        for (i, byte) in bytes.iter().enumerate() {
            self.tail.push(*byte);
            if self.tail.len() > Self::BEGIN.len() {
                self.tail.remove(0);
            }
            if self.tail.ends_with(Self::BEGIN) && !self.inside {
                self.inside = true;
                marks.push((i + 1, true));
            } else if self.tail.ends_with(Self::END) && self.inside {
                self.inside = false;
                marks.push((i + 1, false));
            }
        }
        marks
    }
}

/// Whether `query` ends in `bytes`, the read just made (it may begin in `carry`, the end of
/// the read before): each query is answered once, when its last byte arrives.
fn asks(carry: &[u8], bytes: &[u8], query: &[u8]) -> bool {
    let seen = [carry, bytes].concat();
    seen.windows(query.len())
        .enumerate()
        .any(|(at, window)| window == query && at + query.len() > carry.len())
}
