//! The wire of `--mode acp`: newline-delimited JSON-RPC, read from stdin and written to
//! stdout. Nothing else is ever written to stdout (logs go to the log file).
//!
//! Written by hand rather than the SDK's `ByteStreams`/`Stdio`, for two reasons. Input: their
//! line reader ends the connection at the first line that is not UTF-8 and keeps no limit on
//! a line's length; here such a line is answered as a JSON-RPC parse error and reading goes
//! on (the RPC mode's bounded reader). Output: they write and flush each message on its own,
//! a system call per streamed token; here a writer task writes whatever has queued up in one
//! go, as `--mode json` does.

use crate::modes::rpc::reader::{Frame, LineReader, MAX_LINE_BYTES};
use agent_client_protocol::Lines;
use futures_util::{Sink, Stream, stream};
use std::io;
use std::pin::Pin;
use std::task::{Context, Poll};
use tokio::io::{AsyncBufRead, AsyncWrite, AsyncWriteExt, BufReader};
use tokio::sync::{mpsc, oneshot};
use tokio_util::sync::CancellationToken;

/// The process's stdin and stdout as a JSON-RPC line transport. `reader_left` is cancelled
/// when a write finds the editor's end of stdout closed: the editor left (nothing written
/// from then on can reach it), the connection did not fail.
pub fn stdio(
    reader_left: CancellationToken,
) -> Lines<LineSink, impl Stream<Item = io::Result<String>> + Send + 'static> {
    Lines::new(
        LineSink::new(tokio::io::stdout(), reader_left),
        incoming(BufReader::new(tokio::io::stdin())),
    )
}

/// The lines of `reader`, without blank ones; a line that is too long or not UTF-8 becomes
/// a text that is not JSON, so the connection answers it with a parse error (saying why)
/// and goes on. A read error ends the input like its end does.
pub fn incoming<R>(reader: R) -> impl Stream<Item = io::Result<String>> + Send + 'static
where
    R: AsyncBufRead + Unpin + Send + 'static,
{
    stream::unfold(
        LineReader::new(reader, MAX_LINE_BYTES),
        |mut reader| async move {
            loop {
                match reader.next().await {
                    Ok(Some(Frame::Line(line))) if line.trim().is_empty() => continue,
                    Ok(Some(Frame::Line(line))) => return Some((Ok(line), reader)),
                    Ok(Some(Frame::Invalid(why))) => {
                        return Some((Ok(format!("<{why}>")), reader));
                    }
                    Ok(None) => return None,
                    Err(error) => {
                        tracing::info!(%error, "reading the ACP input failed; treating it as its end");
                        return None;
                    }
                }
            }
        },
    )
}

/// Hands each line to a writer task and never waits for the write: the task writes every
/// line queued meanwhile in one go and flushes. Closing waits until all is written. Once a
/// write failed (the reader is gone), sending fails too.
pub struct LineSink {
    lines: Option<mpsc::UnboundedSender<String>>,
    written: Option<oneshot::Receiver<io::Result<()>>>,
}

impl LineSink {
    /// Must be called inside a tokio runtime. `reader_left` is cancelled when a write fails
    /// because nobody reads any more.
    pub fn new<W: AsyncWrite + Unpin + Send + 'static>(
        writer: W,
        reader_left: CancellationToken,
    ) -> LineSink {
        let (lines, queue) = mpsc::unbounded_channel();
        let (done, written) = oneshot::channel();
        crate::tasks::spawn(async move {
            let result = write_lines(writer, queue).await;
            if let Err(error) = &result
                && error.kind() == io::ErrorKind::BrokenPipe
            {
                reader_left.cancel();
            }
            let _ = done.send(result);
        });
        LineSink {
            lines: Some(lines),
            written: Some(written),
        }
    }

    fn gone() -> io::Error {
        io::Error::new(io::ErrorKind::BrokenPipe, "the ACP output is closed")
    }
}

async fn write_lines<W: AsyncWrite + Unpin>(
    mut writer: W,
    mut queue: mpsc::UnboundedReceiver<String>,
) -> io::Result<()> {
    let mut buffer = Vec::new();
    while let Some(line) = queue.recv().await {
        buffer.clear();
        buffer.extend_from_slice(line.as_bytes());
        buffer.push(b'\n');
        while let Ok(line) = queue.try_recv() {
            buffer.extend_from_slice(line.as_bytes());
            buffer.push(b'\n');
        }
        writer.write_all(&buffer).await?;
        writer.flush().await?;
    }
    writer.flush().await
}

impl Sink<String> for LineSink {
    type Error = io::Error;

    fn poll_ready(self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<io::Result<()>> {
        match &self.lines {
            Some(lines) if !lines.is_closed() => Poll::Ready(Ok(())),
            _ => Poll::Ready(Err(LineSink::gone())),
        }
    }

    fn start_send(self: Pin<&mut Self>, line: String) -> io::Result<()> {
        match &self.lines {
            // Every message to the editor passes here: no configured API key leaves.
            Some(lines) => lines
                .send(crate::secrets::redact_string(line))
                .map_err(|_| LineSink::gone()),
            None => Err(LineSink::gone()),
        }
    }

    fn poll_flush(self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<io::Result<()>> {
        Poll::Ready(Ok(()))
    }

    fn poll_close(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        self.lines = None;
        let Some(written) = self.written.as_mut() else {
            return Poll::Ready(Ok(()));
        };
        let result = match Pin::new(written).poll(cx) {
            Poll::Pending => return Poll::Pending,
            Poll::Ready(Ok(result)) => result,
            Poll::Ready(Err(_)) => Ok(()),
        };
        self.written = None;
        Poll::Ready(result)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use futures_util::{SinkExt, StreamExt};

    #[tokio::test]
    async fn input_skips_blank_lines_and_turns_bad_ones_into_non_json() {
        let input: &[u8] = b"{\"a\":1}\n\n  \n{\"x\":\"\xff\"}\nlast";
        let lines: Vec<String> = incoming(input).map(|line| line.unwrap()).collect().await;
        assert_eq!(lines.len(), 3, "{lines:?}");
        assert_eq!(lines[0], "{\"a\":1}");
        assert!(
            lines[1].starts_with("<the line is not valid UTF-8"),
            "{lines:?}"
        );
        assert!(serde_json::from_str::<serde_json::Value>(&lines[1]).is_err());
        assert_eq!(lines[2], "last");
    }

    #[tokio::test]
    async fn output_is_written_in_order_and_closing_waits_for_it() {
        let (writer, mut reader) = tokio::io::duplex(1 << 16);
        let mut sink = LineSink::new(writer, CancellationToken::new());
        for n in 0..100 {
            sink.send(format!("{{\"n\":{n}}}")).await.unwrap();
        }
        sink.close().await.unwrap();
        let mut text = String::new();
        tokio::io::AsyncReadExt::read_to_string(&mut reader, &mut text)
            .await
            .unwrap();
        let expected: String = (0..100).map(|n| format!("{{\"n\":{n}}}\n")).collect();
        assert_eq!(text, expected);
    }

    #[tokio::test]
    async fn sending_fails_once_the_reader_is_gone() {
        let (writer, reader) = tokio::io::duplex(16);
        drop(reader);
        let mut sink = LineSink::new(writer, CancellationToken::new());
        sink.send("first".to_string()).await.unwrap();
        // Wait until the writer task has met the closed reader and stopped.
        while !sink.lines.as_ref().unwrap().is_closed() {
            tokio::task::yield_now().await;
        }
        assert!(sink.send("second".to_string()).await.is_err());
        assert!(
            sink.close().await.is_err(),
            "closing reports the failed write"
        );
    }
}
