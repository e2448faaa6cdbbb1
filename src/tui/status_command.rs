//! `[tui] status_line`: a command of the user's writes the status line. It gets the session's
//! state as one JSON object on stdin (docs/protocol.md §5.6) and the first line it prints is
//! shown — its colours kept, every other escape sequence and control character dropped
//! (`ansi`). It runs in its own task, never on the way of a key or a frame: each frame only
//! hands the task the state it shows (a comparison; nothing happens if it did not change).
//! Changes are coalesced (one run after a quiet moment, never two at once); a run that takes
//! longer than `TIMEOUT` is killed with its whole process group, the last good line stays,
//! and that is said once. A command that fails or prints nothing gives the built-in line.

use super::app::TaskResult;
use ratatui::style::Style;
use ratatui::text::Line;
use serde::Serialize;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::Duration;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::sync::{mpsc, watch};

/// How long the command may take.
pub const TIMEOUT: Duration = Duration::from_secs(2);
/// Changes closer together than this make one run.
const SETTLE: Duration = Duration::from_millis(300);
/// The most of its output that is read (the line shown is the first).
const MAX_OUTPUT: u64 = 4096;

/// What the command is told: the session's state (`git` is added when it runs).
#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct StatusInput {
    pub version: u32,
    pub session_id: String,
    pub session_file: Option<String>,
    pub title: Option<String>,
    pub cwd: String,
    pub model: ModelState,
    pub permission_mode: String,
    pub state: String,
    /// The composer's editing mode (`default`, or the vim mode).
    pub editor_mode: String,
    pub usage: UsageState,
    pub context: ContextState,
    pub mcp: Option<McpState>,
    pub columns: u16,
}

#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct ModelState {
    pub provider: String,
    pub id: String,
    pub thinking: String,
}

#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct UsageState {
    pub input: u64,
    pub output: u64,
    pub cache_read: u64,
    pub cache_write: u64,
    pub cost_usd: f64,
}

#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct ContextState {
    pub tokens: u64,
    pub window: u64,
    /// Rounded; 0 when the window is unknown.
    pub percent: u64,
}

#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct McpState {
    pub ready: usize,
    pub enabled: usize,
}

/// What the command reads: the state and the repository's branch.
#[derive(Serialize)]
struct Sent<'a> {
    #[serde(flatten)]
    state: &'a StatusInput,
    git: Option<GitState>,
}

#[derive(Serialize)]
struct GitState {
    branch: Option<String>,
}

/// The interface's handle on the command's task, and the line it last gave.
pub struct StatusCommand {
    state: watch::Sender<Option<StatusInput>>,
    /// The command's line; `None`: the built-in one.
    pub line: Option<Line<'static>>,
}

impl StatusCommand {
    /// Starts the task that runs `command` (with `sh -c`, in `cwd`, without the variables in
    /// `hidden_env`) whenever `observe` sees a new state; its lines come back as
    /// `TaskResult::StatusLine`. The task ends with this handle.
    pub fn start(
        command: String,
        cwd: PathBuf,
        hidden_env: Vec<String>,
        color: bool,
        tasks: mpsc::UnboundedSender<TaskResult>,
    ) -> StatusCommand {
        let (state, changes) = watch::channel(None);
        let runner = Runner {
            command,
            cwd,
            hidden_env,
            color,
        };
        crate::tasks::spawn(runner.serve(changes, tasks));
        StatusCommand { state, line: None }
    }

    /// The state the status line shows now: the command runs again if it changed.
    pub fn observe(&self, input: StatusInput) {
        self.state.send_if_modified(|current| {
            if current.as_ref() == Some(&input) {
                false
            } else {
                *current = Some(input);
                true
            }
        });
    }
}

/// Starts `[tui] status_line`'s command for `app`, if one is set.
pub fn attach(app: &mut super::app::App) {
    let Some(command) = app.settings.tui_status_line.clone() else {
        return;
    };
    app.status.command = Some(StatusCommand::start(
        command,
        app.settings.cwd.clone(),
        app.settings.tool_settings.hidden_env.clone(),
        app.theme.color,
        app.tasks.clone(),
    ));
}

/// The command gave a line (`None`: the built-in one is shown).
pub fn received(app: &mut super::app::App, line: Option<Line<'static>>) {
    if let Some(command) = &mut app.status.command
        && command.line != line
    {
        command.line = line;
        app.dirty = true;
    }
}

struct Runner {
    command: String,
    cwd: PathBuf,
    hidden_env: Vec<String>,
    color: bool,
}

/// How one run went.
enum Ran {
    /// Its first line (possibly empty), sanitised.
    Line(Line<'static>),
    Failed(String),
    TimedOut,
}

impl Runner {
    async fn serve(
        self,
        mut changes: watch::Receiver<Option<StatusInput>>,
        tasks: mpsc::UnboundedSender<TaskResult>,
    ) {
        let mut said_timeout = false;
        let mut said_failure = false;
        while changes.changed().await.is_ok() {
            // A burst of changes (a run starting: state, tokens, …) makes one run.
            tokio::time::sleep(SETTLE).await;
            let Some(state) = changes.borrow_and_update().clone() else {
                continue;
            };
            let sent = match self.run(&state).await {
                Ran::Line(line) if line.width() > 0 => TaskResult::StatusLine(Some(line)),
                Ran::Line(_) => TaskResult::StatusLine(None),
                Ran::Failed(why) => {
                    tracing::debug!("status line command: {why}");
                    if !std::mem::replace(&mut said_failure, true) {
                        let _ = tasks.send(TaskResult::Warning(format!(
                            "status line: {why}; showing the built-in line"
                        )));
                    }
                    TaskResult::StatusLine(None)
                }
                Ran::TimedOut => {
                    if !std::mem::replace(&mut said_timeout, true) {
                        let _ = tasks.send(TaskResult::Warning(format!(
                            "status line: the command took more than {} s and was stopped",
                            TIMEOUT.as_secs()
                        )));
                    }
                    continue;
                }
            };
            if tasks.send(sent).is_err() {
                return;
            }
        }
    }

    async fn run(&self, state: &StatusInput) -> Ran {
        let sent = Sent {
            state,
            git: git_branch(&self.cwd),
        };
        let json = match serde_json::to_vec(&sent) {
            Ok(json) => json,
            Err(e) => return Ran::Failed(format!("cannot write the state: {e}")),
        };
        let mut command = tokio::process::Command::new("sh");
        command
            .arg("-c")
            .arg(&self.command)
            .current_dir(&self.cwd)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .process_group(0)
            .kill_on_drop(true);
        for hidden in &self.hidden_env {
            command.env_remove(hidden);
        }
        crate::tools::process::server_child::die_with_agent(&mut command);
        let mut child = match command.spawn() {
            Ok(child) => child,
            Err(e) => return Ran::Failed(format!("cannot run the command: {e}")),
        };
        // Whatever happens below (a timeout, the interface leaving), the command's whole
        // process group goes with this guard.
        let _group = child.id().and_then(|id| i32::try_from(id).ok()).map(Group);
        let talk = async {
            if let Some(mut stdin) = child.stdin.take() {
                // A command that does not read its input closes the pipe: not an error.
                let _ = stdin.write_all(&json).await;
            }
            let mut output = Vec::new();
            if let Some(stdout) = child.stdout.take() {
                let _ = stdout.take(MAX_OUTPUT).read_to_end(&mut output).await;
            }
            (child.wait().await, output)
        };
        match tokio::time::timeout(TIMEOUT, talk).await {
            Err(_) => Ran::TimedOut,
            Ok((Err(e), _)) => Ran::Failed(format!("the command failed: {e}")),
            Ok((Ok(status), _)) if !status.success() => {
                Ran::Failed(format!("the command ended with {status}"))
            }
            Ok((Ok(_), output)) => Ran::Line(first_line(&output, self.color)),
        }
    }
}

/// Kills a process group when dropped.
struct Group(i32);

impl Drop for Group {
    fn drop(&mut self) {
        crate::tools::process::kill_group(self.0);
    }
}

/// The first line of `output`, with its SGR colours (unless `color` is off) and nothing
/// else a terminal would act on.
fn first_line(output: &[u8], color: bool) -> Line<'static> {
    let text = String::from_utf8_lossy(output);
    let first = text.split('\n').next().unwrap_or_default();
    if color {
        super::ansi::lines(first, Style::new())
            .into_iter()
            .next()
            .unwrap_or_default()
    } else {
        Line::from(super::ansi::strip(first))
    }
}

/// The branch checked out in the repository around `cwd` (`None` when HEAD is detached),
/// read from its HEAD file: no git process.
fn git_branch(cwd: &Path) -> Option<GitState> {
    let root = crate::repository::root(cwd)?;
    let dot_git = root.join(".git");
    // A worktree's or submodule's `.git` is a file naming the real directory.
    let git_dir = match std::fs::read_to_string(&dot_git) {
        Ok(text) => {
            let named = text.trim().strip_prefix("gitdir:")?.trim().to_string();
            root.join(named)
        }
        Err(_) => dot_git,
    };
    let head = std::fs::read_to_string(git_dir.join("HEAD")).ok()?;
    let branch = head
        .trim()
        .strip_prefix("ref: refs/heads/")
        .map(str::to_string);
    Some(GitState { branch })
}

/// The first line of a status line command's output as the status line shows it: cut to
/// `width` columns.
pub fn fitted(line: &Line<'static>, width: usize) -> Line<'static> {
    let mut spans = Vec::new();
    let mut room = width;
    for span in &line.spans {
        if room == 0 {
            break;
        }
        let text = super::cells::cut(&span.content, room);
        room = room.saturating_sub(super::width::str_width(&text));
        spans.push(ratatui::text::Span::styled(text, span.style));
    }
    Line::from(spans)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_the_first_line_shows_with_its_colours_and_no_other_escape() {
        let line = first_line(
            b"\x1b[31mred\x1b[0m \x1b[2J\x1b[10;1Hplain\x07\nsecond",
            true,
        );
        assert_eq!(line.to_string(), "red plain");
        assert_eq!(line.spans[0].style.fg, Some(ratatui::style::Color::Red));
        let plain = first_line(b"\x1b[31mred\x1b[0m", false);
        assert_eq!(plain.to_string(), "red");
        assert!(plain.spans.iter().all(|s| s.style.fg.is_none()));
        assert_eq!(first_line(b"", true).width(), 0);
    }

    #[test]
    fn a_long_line_is_cut_to_the_width() {
        let line = first_line(b"\x1b[32mabcdef\x1b[0mghij", true);
        assert_eq!(fitted(&line, 8).width(), 8);
        assert_eq!(fitted(&line, 100).to_string(), "abcdefghij");
    }

    #[test]
    fn the_branch_comes_from_head() {
        let dir = tempfile::tempdir().expect("temp dir");
        for part in [".git", ".git/objects", ".git/refs"] {
            std::fs::create_dir(dir.path().join(part)).expect("mkdir");
        }
        std::fs::write(dir.path().join(".git/HEAD"), "ref: refs/heads/feature/x\n").expect("HEAD");
        let sub = dir.path().join("src");
        std::fs::create_dir(&sub).expect("mkdir");
        let state = git_branch(&sub).expect("a repository");
        assert_eq!(state.branch.as_deref(), Some("feature/x"));
        std::fs::write(dir.path().join(".git/HEAD"), "0123abcd\n").expect("HEAD");
        assert_eq!(git_branch(&sub).and_then(|s| s.branch), None);
    }
}
