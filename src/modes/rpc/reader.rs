//! Reading RPC command lines from stdin: LF-delimited, each line at most `MAX_LINE_BYTES`
//! and valid UTF-8. A line that breaks either rule is reported as such (the caller answers
//! it as a `parse` error) and reading goes on with the next line; memory never grows past
//! one line's cap.
//!
//! Written by hand: tokio-util's `LinesCodec` has a length cap, but its stream ends at the
//! first over-long or non-UTF-8 line, and every line here must get an answer.

use tokio::io::{AsyncBufRead, AsyncBufReadExt};

/// The longest command line accepted: far above any real command (a prompt with pasted
/// files), far below what would hurt the machine.
pub const MAX_LINE_BYTES: usize = 64 * 1024 * 1024;

/// One line of input.
#[derive(Debug, PartialEq, Eq)]
pub enum Frame {
    Line(String),
    /// The line was not valid UTF-8, or longer than the cap: why, for the `parse` answer.
    Invalid(String),
}

pub struct LineReader<R> {
    reader: R,
    max: usize,
}

impl<R: AsyncBufRead + Unpin> LineReader<R> {
    pub fn new(reader: R, max: usize) -> Self {
        LineReader { reader, max }
    }

    /// The next line (without its `\n`); `None` at end of input. A last line without a
    /// final `\n` still counts.
    pub async fn next(&mut self) -> std::io::Result<Option<Frame>> {
        let mut line = Vec::new();
        // Bytes of this line beyond the cap, which were read and thrown away.
        let mut dropped: usize = 0;
        loop {
            let buffer = self.reader.fill_buf().await?;
            if buffer.is_empty() {
                if line.is_empty() && dropped == 0 {
                    return Ok(None);
                }
                return Ok(Some(self.frame(line, dropped)));
            }
            let (chunk, used, complete) = match buffer.iter().position(|&b| b == b'\n') {
                Some(end) => (&buffer[..end], end + 1, true),
                None => (buffer, buffer.len(), false),
            };
            let room = self.max.saturating_sub(line.len());
            if dropped == 0 && chunk.len() <= room {
                line.extend_from_slice(chunk);
            } else {
                // Over the cap: keep nothing more of this line, but count it.
                dropped = dropped
                    .saturating_add(line.len())
                    .saturating_add(chunk.len());
                line = Vec::new();
            }
            self.reader.consume(used);
            if complete {
                return Ok(Some(self.frame(line, dropped)));
            }
        }
    }

    fn frame(&self, line: Vec<u8>, dropped: usize) -> Frame {
        if dropped > 0 {
            return Frame::Invalid(format!(
                "the line ({dropped} bytes) is longer than the limit of {}; it was discarded",
                size(self.max)
            ));
        }
        match String::from_utf8(line) {
            Ok(text) => Frame::Line(text),
            Err(e) => Frame::Invalid(format!(
                "the line is not valid UTF-8 (invalid byte at offset {})",
                e.utf8_error().valid_up_to()
            )),
        }
    }
}

fn size(bytes: usize) -> String {
    if bytes >= 1024 * 1024 && bytes.is_multiple_of(1024 * 1024) {
        format!("{} MiB", bytes / (1024 * 1024))
    } else {
        format!("{bytes} bytes")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tokio::io::BufReader;

    async fn frames(input: &[u8], max: usize, buffer: usize) -> Vec<Frame> {
        let mut reader = LineReader::new(BufReader::with_capacity(buffer, input), max);
        let mut out = Vec::new();
        while let Some(frame) = reader.next().await.unwrap() {
            out.push(frame);
        }
        out
    }

    #[tokio::test]
    async fn splits_lines_and_keeps_a_last_line_without_newline() {
        for buffer in [1, 3, 64] {
            assert_eq!(
                frames(b"{\"a\":1}\n\nlast", 100, buffer).await,
                vec![
                    Frame::Line("{\"a\":1}".into()),
                    Frame::Line(String::new()),
                    Frame::Line("last".into())
                ]
            );
        }
    }

    #[tokio::test]
    async fn a_line_over_the_cap_is_reported_and_reading_goes_on() {
        for buffer in [1, 4, 7, 64] {
            let got = frames(b"0123456789\nok\n0123456789", 8, buffer).await;
            assert_eq!(got.len(), 3, "{got:?}");
            assert!(
                matches!(&got[0], Frame::Invalid(why) if why.contains("(10 bytes) is longer than the limit of 8 bytes")),
                "{got:?}"
            );
            assert_eq!(got[1], Frame::Line("ok".into()));
            assert!(matches!(&got[2], Frame::Invalid(_)), "{got:?}");
        }
        // Exactly at the cap is fine.
        assert_eq!(
            frames(b"01234567\n", 8, 3).await,
            vec![Frame::Line("01234567".into())]
        );
    }

    #[tokio::test]
    async fn invalid_utf8_is_reported_with_its_offset() {
        let got = frames(b"{\"x\":\"\xff\"}\n{}\n", 100, 64).await;
        assert_eq!(
            got,
            vec![
                Frame::Invalid("the line is not valid UTF-8 (invalid byte at offset 6)".into()),
                Frame::Line("{}".into())
            ]
        );
    }
}
