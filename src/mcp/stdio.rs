//! A stdio server's connection: the child process, and rmcp's line transport over its stdin
//! and stdout — with stdout read here first, line by line, so that a message larger than
//! rmcp accepts becomes a bounded one that says what happened (`oversized`) instead of
//! vanishing (rmcp drops such a line, and the call it answers would wait for its timeout).
//! Closing follows the MCP shutdown sequence: stdin closed, a moment to exit, SIGTERM, then
//! SIGKILL; dropping it kills the child (the caller wraps it to kill its process group).

use super::oversized::{LINE_LIMIT, Oversized};
use process_wrap::tokio::{ChildWrapper, CommandWrap};
use rmcp::RoleClient;
use rmcp::service::{RxJsonRpcMessage, TxJsonRpcMessage};
use rmcp::transport::Transport;
use rmcp::transport::async_rw::AsyncRwTransport;
use std::time::Duration;
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader, DuplexStream};
use tokio::process::{ChildStderr, ChildStdin, ChildStdout};

/// How long a server has to exit after its stdin closed, and again after SIGTERM.
const EXIT_WAIT: Duration = Duration::from_secs(3);

pub struct StdioTransport {
    child: Option<Box<dyn ChildWrapper>>,
    lines: AsyncRwTransport<RoleClient, DuplexStream, ChildStdin>,
}

impl StdioTransport {
    /// Start `command` with piped stdio; returns the transport, the child's stderr and pid.
    pub fn spawn(
        server: &str,
        mut command: CommandWrap,
    ) -> std::io::Result<(StdioTransport, Option<ChildStderr>, Option<u32>)> {
        command
            .command_mut()
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped());
        let mut child = command.spawn()?;
        let taken = |what: &str| std::io::Error::other(format!("the server's {what} is missing"));
        let stdin = child.stdin().take().ok_or_else(|| taken("stdin"))?;
        let stdout = child.stdout().take().ok_or_else(|| taken("stdout"))?;
        let stderr = child.stderr().take();
        let pid = child.id();
        let (ours, rmcp_side) = tokio::io::duplex(64 * 1024);
        crate::tasks::spawn(relay(server.to_string(), stdout, ours));
        Ok((
            StdioTransport {
                child: Some(child),
                lines: AsyncRwTransport::new_client(rmcp_side, stdin),
            },
            stderr,
            pid,
        ))
    }

    async fn shut_down(&mut self) -> std::io::Result<()> {
        let Some(child) = self.child.as_mut() else {
            return Ok(());
        };
        self.lines.close().await?;
        if exited(child).await {
            self.child = None;
            return Ok(());
        }
        if let Err(error) = child.signal(libc::SIGTERM) {
            tracing::debug!(%error, "SIGTERM to an MCP server failed");
        } else if exited(child).await {
            self.child = None;
            return Ok(());
        }
        let killed = Box::into_pin(child.kill()).await;
        self.child = None;
        killed
    }
}

/// Whether the child exits within `EXIT_WAIT`.
async fn exited(child: &mut Box<dyn ChildWrapper>) -> bool {
    matches!(
        tokio::time::timeout(EXIT_WAIT, child.wait()).await,
        Ok(Ok(_))
    )
}

impl Transport<RoleClient> for StdioTransport {
    type Error = std::io::Error;

    fn send(
        &mut self,
        item: TxJsonRpcMessage<RoleClient>,
    ) -> impl Future<Output = Result<(), Self::Error>> + Send + 'static {
        self.lines.send(item)
    }

    fn receive(&mut self) -> impl Future<Output = Option<RxJsonRpcMessage<RoleClient>>> + Send {
        self.lines.receive()
    }

    fn close(&mut self) -> impl Future<Output = Result<(), Self::Error>> + Send {
        self.shut_down()
    }
}

/// Pass the server's stdout on to rmcp line by line; a line over `LINE_LIMIT` is read to
/// its end without being kept and passed on as `Oversized` makes it. Ends with the
/// server's stdout (or when rmcp stopped reading).
async fn relay(server: String, stdout: ChildStdout, mut out: DuplexStream) {
    let mut reader = BufReader::with_capacity(256 * 1024, stdout);
    let mut line: Vec<u8> = Vec::new();
    let mut oversized: Option<Oversized> = None;
    loop {
        let (taken, ended) = {
            let available = match reader.fill_buf().await {
                Ok(available) if !available.is_empty() => available,
                // The end of the output: a last line without its newline is no message.
                _ => return,
            };
            let newline = available.iter().position(|b| *b == b'\n');
            let taken = newline.map_or(available.len(), |at| at + 1);
            let piece = &available[..taken];
            match &mut oversized {
                Some(long) => long.feed(piece),
                None if line.len() + taken > LINE_LIMIT => {
                    let mut long = Oversized::start(&line);
                    long.feed(piece);
                    oversized = Some(long);
                    line = Vec::new();
                }
                None => line.extend_from_slice(piece),
            }
            (taken, newline.is_some())
        };
        reader.consume(taken);
        if !ended {
            continue;
        }
        let passed = match oversized.take() {
            Some(long) => match long.finish() {
                Some(mut message) => {
                    tracing::warn!(
                        target: "mcp",
                        server,
                        limit = LINE_LIMIT,
                        "a message over the size limit was cut"
                    );
                    message.push(b'\n');
                    out.write_all(&message).await
                }
                None => {
                    tracing::warn!(
                        target: "mcp",
                        server,
                        limit = LINE_LIMIT,
                        "a message over the size limit that answers nothing was dropped"
                    );
                    Ok(())
                }
            },
            None => out.write_all(&line).await,
        };
        line.clear();
        if passed.is_err() {
            return;
        }
    }
}
