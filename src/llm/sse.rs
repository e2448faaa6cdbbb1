//! The SSE byte stream, fed to eventsource-stream one complete event at a time.
//!
//! eventsource-stream keeps unparsed input in a `String` and, after every line, moves the
//! rest of that buffer to its front: fed a large network read (a fast local server sends
//! hundreds of events per read), its cost grows with the square of the read size. Cutting
//! the byte stream at event boundaries first (one linear scan) keeps its buffer to a single
//! event, so parsing stays proportional to the input.

use bytes::{Bytes, BytesMut};
use futures_util::stream::{self, Stream, StreamExt};

/// Re-chunk `input` so every item ends exactly at an event boundary (a blank line). Bytes
/// after the last boundary come out when the input ends.
pub fn split_events<S, E>(input: S) -> impl Stream<Item = Result<Bytes, E>>
where
    S: Stream<Item = Result<Bytes, E>> + Unpin,
{
    struct State<S> {
        input: S,
        pending: BytesMut,
        /// Where the search for the next boundary resumes.
        scanned: usize,
        done: bool,
    }
    let state = State {
        input,
        pending: BytesMut::new(),
        scanned: 0,
        done: false,
    };
    stream::unfold(state, |mut state| async move {
        loop {
            if let Some(end) = boundary(&state.pending, state.scanned) {
                state.scanned = 0;
                let event = state.pending.split_to(end).freeze();
                return Some((Ok(event), state));
            }
            state.scanned = state.pending.len().saturating_sub(3);
            if state.done {
                if state.pending.is_empty() {
                    return None;
                }
                let rest = state.pending.split().freeze();
                return Some((Ok(rest), state));
            }
            match state.input.next().await {
                Some(Ok(chunk)) => state.pending.extend_from_slice(&chunk),
                Some(Err(e)) => {
                    state.done = true;
                    return Some((Err(e), state));
                }
                None => state.done = true,
            }
        }
    })
}

/// The end (exclusive) of the first event in `buffer`, searching from `from`: just after
/// a blank line, whatever the line endings (`\n\n`, `\r\n\r\n`, `\r\r`).
fn boundary(buffer: &[u8], from: usize) -> Option<usize> {
    let mut i = from;
    while i < buffer.len() {
        match buffer[i] {
            b'\n' if buffer.get(i + 1) == Some(&b'\n') => return Some(i + 2),
            b'\n' if buffer.get(i + 1) == Some(&b'\r') && buffer.get(i + 2) == Some(&b'\n') => {
                return Some(i + 3);
            }
            b'\r' if buffer.get(i + 1) == Some(&b'\r') => return Some(i + 2),
            b'\r' if buffer.get(i + 1) == Some(&b'\n') && buffer.get(i + 2) == Some(&b'\r') => {
                return Some(if buffer.get(i + 3) == Some(&b'\n') {
                    i + 4
                } else {
                    i + 3
                });
            }
            _ => i += 1,
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;
    use eventsource_stream::Eventsource;

    async fn events(chunks: Vec<&'static [u8]>) -> Vec<(String, String)> {
        let input = stream::iter(
            chunks
                .into_iter()
                .map(|c| Ok::<_, std::io::Error>(Bytes::from_static(c))),
        );
        split_events(input)
            .eventsource()
            .map(|e| e.map(|e| (e.event, e.data)).unwrap())
            .collect()
            .await
    }

    #[tokio::test]
    async fn events_survive_any_chunking_and_line_ending() {
        let whole: &[u8] =
            b"data: a\n\n: comment\nevent: error\ndata: b\r\n\r\ndata: c\r\rdata: d\n";
        let expected = [
            ("message".to_string(), "a".to_string()),
            ("error".to_string(), "b".to_string()),
            ("message".to_string(), "c".to_string()),
        ];
        assert_eq!(events(vec![whole]).await[..3], expected[..]);
        // Every split point, including inside a boundary.
        for cut in 0..whole.len() {
            let (a, b) = whole.split_at(cut);
            let a: &'static [u8] = Box::leak(a.to_vec().into_boxed_slice());
            let b: &'static [u8] = Box::leak(b.to_vec().into_boxed_slice());
            assert_eq!(events(vec![a, b]).await[..3], expected[..], "cut at {cut}");
        }
    }
}
