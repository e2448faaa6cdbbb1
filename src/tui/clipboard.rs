//! ctrl+v's image: read from the system clipboard with the desktop's own tool — `wl-paste`
//! on Wayland (WAYLAND_DISPLAY set), `xclip` on X11 (DISPLAY set) — first asking which
//! types the clipboard holds, then taking the first image type the models take (png, jpeg,
//! gif, webp). It runs in a task, never on the interface's thread, and a tool that has not
//! answered by `TIMEOUT` is killed.

use crate::agent::mentions::MAX_IMAGE_BYTES;
use std::process::Stdio;
use std::time::Duration;
use tokio::io::AsyncReadExt;
use tokio::time::Instant;

/// How long reading the clipboard may take, every tool run together.
pub const TIMEOUT: Duration = Duration::from_secs(3);

/// The image types taken, best first, with the extension a saved copy gets.
const TYPES: [(&str, &str); 4] = [
    ("image/png", "png"),
    ("image/jpeg", "jpg"),
    ("image/gif", "gif"),
    ("image/webp", "webp"),
];

#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum ClipboardError {
    #[error("no image on the clipboard")]
    NoImage,
    #[error("no clipboard tool found: install wl-clipboard or xclip")]
    NoTool,
    #[error("no clipboard to read an image from: neither WAYLAND_DISPLAY nor DISPLAY is set")]
    NoDisplay,
    #[error("the clipboard tool `{0}` did not answer within {secs} s", secs = TIMEOUT.as_secs())]
    TimedOut(&'static str),
    #[error("the clipboard's image is larger than {} MB", MAX_IMAGE_BYTES / 1024 / 1024)]
    TooLarge,
    #[error("the clipboard could not be read: {0}")]
    Failed(String),
}

/// An image read from the clipboard.
#[derive(Debug)]
pub struct ClipboardImage {
    pub bytes: Vec<u8>,
    /// `png`, `jpg`, `gif` or `webp`.
    pub extension: &'static str,
    pub width: usize,
    pub height: usize,
}

/// A clipboard tool: how to list the clipboard's types and how to read one.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Tool {
    WlPaste,
    Xclip,
}

impl Tool {
    fn program(self) -> &'static str {
        match self {
            Tool::WlPaste => "wl-paste",
            Tool::Xclip => "xclip",
        }
    }

    fn list(self) -> Vec<&'static str> {
        match self {
            Tool::WlPaste => vec!["--list-types"],
            Tool::Xclip => vec!["-selection", "clipboard", "-t", "TARGETS", "-o"],
        }
    }

    fn read(self, mime: &'static str) -> Vec<&'static str> {
        match self {
            Tool::WlPaste => vec!["--type", mime],
            Tool::Xclip => vec!["-selection", "clipboard", "-t", mime, "-o"],
        }
    }
}

/// The tools to try, in order, for the displays the environment names (an empty variable
/// names none).
fn tools(var: impl Fn(&str) -> Option<String>) -> Vec<Tool> {
    let set = |name: &str| var(name).is_some_and(|v| !v.is_empty());
    let mut tools = Vec::new();
    if set("WAYLAND_DISPLAY") {
        tools.push(Tool::WlPaste);
    }
    // XWayland: xclip serves when wl-paste is missing.
    if set("DISPLAY") {
        tools.push(Tool::Xclip);
    }
    tools
}

/// The image on the system clipboard.
pub async fn read_image() -> Result<ClipboardImage, ClipboardError> {
    let tools = tools(|name| std::env::var(name).ok());
    if tools.is_empty() {
        return Err(ClipboardError::NoDisplay);
    }
    let deadline = Instant::now() + TIMEOUT;
    for tool in tools {
        match read_with(tool, deadline).await {
            Err(ClipboardError::NoTool) => continue,
            other => return other,
        }
    }
    Err(ClipboardError::NoTool)
}

async fn read_with(tool: Tool, deadline: Instant) -> Result<ClipboardImage, ClipboardError> {
    let program = tool.program();
    let (listed, types) = run(program, &tool.list(), 64 * 1024, deadline).await?;
    if !listed {
        // An empty clipboard: wl-paste and xclip both say so by failing.
        return Err(ClipboardError::NoImage);
    }
    let types = String::from_utf8_lossy(&types);
    let Some((mime, extension)) = TYPES
        .iter()
        .find(|(mime, _)| types.lines().any(|t| t.trim() == *mime))
    else {
        return Err(ClipboardError::NoImage);
    };
    let (read, bytes) = run(program, &tool.read(mime), MAX_IMAGE_BYTES, deadline).await?;
    if !read || bytes.is_empty() {
        return Err(ClipboardError::NoImage);
    }
    let size = imagesize::blob_size(&bytes)
        .map_err(|_| ClipboardError::Failed(format!("its {mime} is not a readable image")))?;
    Ok(ClipboardImage {
        bytes,
        extension,
        width: size.width,
        height: size.height,
    })
}

/// Run `program` with `args` until `deadline`: whether it succeeded, and its output (at
/// most `limit` bytes, else `TooLarge`). A program that outlives the deadline is killed.
async fn run(
    program: &'static str,
    args: &[&str],
    limit: u64,
    deadline: Instant,
) -> Result<(bool, Vec<u8>), ClipboardError> {
    let mut child = tokio::process::Command::new(program)
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .kill_on_drop(true)
        .spawn()
        .map_err(|e| match e.kind() {
            std::io::ErrorKind::NotFound => ClipboardError::NoTool,
            _ => ClipboardError::Failed(format!("{program}: {e}")),
        })?;
    let failed = |e: std::io::Error| ClipboardError::Failed(format!("{program}: {e}"));
    let output = async {
        let mut out = Vec::new();
        if let Some(stdout) = child.stdout.take() {
            stdout
                .take(limit.saturating_add(1))
                .read_to_end(&mut out)
                .await
                .map_err(failed)?;
        }
        if u64::try_from(out.len()).unwrap_or(u64::MAX) > limit {
            return Err(ClipboardError::TooLarge);
        }
        let status = child.wait().await.map_err(failed)?;
        Ok((status.success(), out))
    };
    // On a timeout the child is dropped with the future, and killed.
    tokio::time::timeout_at(deadline, output)
        .await
        .unwrap_or(Err(ClipboardError::TimedOut(program)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_tools_follow_the_displays_an_empty_variable_names_none() {
        let env = |vars: &'static [(&'static str, &'static str)]| {
            move |name: &str| {
                vars.iter()
                    .find(|(n, _)| *n == name)
                    .map(|(_, v)| v.to_string())
            }
        };
        assert_eq!(tools(env(&[])), []);
        assert_eq!(tools(env(&[("DISPLAY", ":0")])), [Tool::Xclip]);
        assert_eq!(
            tools(env(&[("WAYLAND_DISPLAY", "wayland-0"), ("DISPLAY", ":0")])),
            [Tool::WlPaste, Tool::Xclip]
        );
        assert_eq!(
            tools(env(&[("WAYLAND_DISPLAY", ""), ("DISPLAY", ":1")])),
            [Tool::Xclip]
        );
    }

    #[tokio::test]
    async fn a_tool_that_hangs_is_killed_at_the_deadline() {
        let dir = tempfile::tempdir().unwrap();
        let pid_file = dir.path().join("pid");
        let script = format!("echo $$ > {}; exec sleep 30", pid_file.display());
        let started = std::time::Instant::now();
        let deadline = Instant::now() + Duration::from_millis(300);
        let result = run("sh", &["-c", &script], 1024, deadline).await;
        assert_eq!(result, Err(ClipboardError::TimedOut("sh")));
        assert!(started.elapsed() < Duration::from_secs(10));
        let pid: i32 = std::fs::read_to_string(&pid_file)
            .unwrap()
            .trim()
            .parse()
            .unwrap();
        // Killed and reaped (or about to be): the process goes.
        let gone = || {
            // SAFETY: signal 0 only asks whether the process exists.
            let exists = unsafe { libc::kill(pid, 0) } == 0;
            let zombie = std::fs::read_to_string(format!("/proc/{pid}/stat"))
                .is_ok_and(|s| s.contains(") Z "));
            !exists || zombie
        };
        let until = std::time::Instant::now() + Duration::from_secs(5);
        while !gone() && std::time::Instant::now() < until {
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        assert!(gone(), "the hung tool {pid} still runs");
    }

    #[tokio::test]
    async fn output_beyond_the_limit_is_too_large_and_a_missing_tool_is_no_tool() {
        let deadline = Instant::now() + Duration::from_secs(10);
        let result = run("sh", &["-c", "head -c 5000 /dev/zero"], 4096, deadline).await;
        assert_eq!(result, Err(ClipboardError::TooLarge));
        let (ok, out) = run("sh", &["-c", "printf abc"], 4096, deadline)
            .await
            .unwrap();
        assert!(ok);
        assert_eq!(out, b"abc");
        let missing = run("no-such-clipboard-tool-here", &[], 10, deadline).await;
        assert_eq!(missing, Err(ClipboardError::NoTool));
    }
}
