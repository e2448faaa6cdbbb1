//! The body of a provider's response: its bytes as a stream that tells the watchdog when
//! each arrives, what kind of body it is (an event stream, a whole JSON completion, an HTML
//! page...), read from its `Content-Type` or, when that says nothing useful, from its first
//! byte, and a short description of a body that is not what was asked for.

use super::error::{error_message, snippet};
use super::timeouts::ByteClock;
use bytes::Bytes;
use futures_util::Stream;
use futures_util::stream::BoxStream;
use std::pin::Pin;
use std::task::{Context, Poll};

/// The response body. Every non-empty chunk ticks the clock; a chunk read ahead (to sniff the
/// kind of body) is handed out again first.
pub struct ByteBody {
    inner: BoxStream<'static, reqwest::Result<Bytes>>,
    front: Option<Bytes>,
    clock: ByteClock,
}

impl ByteBody {
    pub fn new(response: reqwest::Response, clock: ByteClock) -> Self {
        ByteBody {
            inner: Box::pin(response.bytes_stream()),
            front: None,
            clock,
        }
    }

    /// Hand `chunk` out again before anything else.
    pub fn put_back(&mut self, chunk: Bytes) {
        self.front = Some(chunk);
    }
}

impl Stream for ByteBody {
    type Item = reqwest::Result<Bytes>;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        if let Some(chunk) = self.front.take() {
            return Poll::Ready(Some(Ok(chunk)));
        }
        let next = self.inner.as_mut().poll_next(cx);
        if let Poll::Ready(Some(Ok(chunk))) = &next
            && !chunk.is_empty()
        {
            self.clock.tick();
        }
        next
    }
}

/// What a successful response's body holds.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BodyKind {
    EventStream,
    /// A whole completion (a server or proxy that does not stream), or an error object.
    Json,
    /// An HTML or XML page: a proxy's login or error page, a web server's index.
    Markup,
    /// Anything else (plain text...): not an answer.
    Other,
    /// The `Content-Type` does not say: the first bytes will.
    Unknown,
}

/// The kind of body its `Content-Type` announces.
pub fn kind_of(content_type: &str) -> BodyKind {
    let essence = content_type
        .split(';')
        .next()
        .unwrap_or("")
        .trim()
        .to_ascii_lowercase();
    if essence == "text/event-stream" {
        BodyKind::EventStream
    } else if essence.ends_with("/json") || essence.ends_with("+json") {
        BodyKind::Json
    } else if essence.contains("html") || essence.ends_with("/xml") || essence.ends_with("+xml") {
        BodyKind::Markup
    } else {
        BodyKind::Unknown
    }
}

/// The kind of body that starts with `start`, or `None` while too little of it is known
/// (`complete` says the body ends there). An unlabelled run of `data:` / `event:` / `:`
/// lines is an event stream.
pub fn sniff(start: &[u8], complete: bool) -> Option<BodyKind> {
    let Some(first) = start.iter().position(|b| !b.is_ascii_whitespace()) else {
        return complete.then_some(BodyKind::EventStream);
    };
    let rest = &start[first..];
    match rest[0] {
        b'{' | b'[' => return Some(BodyKind::Json),
        b'<' => return Some(BodyKind::Markup),
        b':' => return Some(BodyKind::EventStream),
        _ => {}
    }
    let fields: [&[u8]; 4] = [b"data", b"event", b"id", b"retry"];
    for field in fields {
        let known = rest.len().min(field.len() + 1);
        if !field.starts_with(&rest[..known.min(field.len())]) {
            continue;
        }
        match rest.get(field.len()) {
            Some(b':' | b'\n' | b'\r') => return Some(BodyKind::EventStream),
            Some(_) => continue,
            None if complete => continue,
            None => return None,
        }
    }
    Some(BodyKind::Other)
}

/// A body that is not a model response, described for an error message: what it is and
/// how it starts (an HTML page by its title, JSON by its error message).
pub fn describe(content_type: &str, body: &[u8]) -> String {
    let text = String::from_utf8_lossy(body);
    let start = snippet(&text);
    let kind = match kind_of(content_type) {
        BodyKind::Unknown => sniff(body, true).unwrap_or(BodyKind::Other),
        kind => kind,
    };
    let label = match content_type.split(';').next().map(str::trim) {
        Some(essence) if !essence.is_empty() => format!(" ({essence})"),
        _ => String::new(),
    };
    if body.iter().all(u8::is_ascii_whitespace) {
        return format!("an empty body{label}");
    }
    match kind {
        BodyKind::Markup => match title(&text) {
            Some(title) => format!("an HTML page{label} titled \"{title}\": {start}"),
            None => format!("an HTML page{label}: {start}"),
        },
        BodyKind::Json => format!("a JSON body{label}: {}", error_message(&text)),
        _ => format!("a body{label} that starts: {start}"),
    }
}

/// The text of an HTML page's `<title>`, on one line.
fn title(page: &str) -> Option<String> {
    let lower = page.to_ascii_lowercase();
    let open = lower.find("<title")?;
    let start = open + lower[open..].find('>')? + 1;
    let end = start + lower[start..].find("</title")?;
    let title = snippet(page.get(start..end)?);
    (!title.is_empty()).then_some(title)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kinds_come_from_the_content_type_or_the_first_byte() {
        assert_eq!(
            kind_of("text/event-stream; charset=utf-8"),
            BodyKind::EventStream
        );
        assert_eq!(kind_of("application/json"), BodyKind::Json);
        assert_eq!(kind_of("application/problem+json"), BodyKind::Json);
        assert_eq!(kind_of("text/html; charset=UTF-8"), BodyKind::Markup);
        assert_eq!(kind_of(""), BodyKind::Unknown);
        assert_eq!(kind_of("text/plain"), BodyKind::Unknown);
        assert_eq!(sniff(b"\n {\"choices\"", false), Some(BodyKind::Json));
        assert_eq!(sniff(b"<!DOCTYPE", false), Some(BodyKind::Markup));
        assert_eq!(sniff(b": ping", false), Some(BodyKind::EventStream));
        assert_eq!(sniff(b"data: {", false), Some(BodyKind::EventStream));
        assert_eq!(sniff(b"event:", false), Some(BodyKind::EventStream));
        assert_eq!(sniff(b"da", false), None, "too little to tell");
        assert_eq!(sniff(b"da", true), Some(BodyKind::Other));
        assert_eq!(sniff(b"date is", false), Some(BodyKind::Other));
        assert_eq!(sniff(b"Service is up.", false), Some(BodyKind::Other));
        assert_eq!(sniff(b"  ", false), None);
        assert_eq!(sniff(b"", true), Some(BodyKind::EventStream));
    }

    #[test]
    fn bodies_are_described_by_what_they_are() {
        let page = b"<!DOCTYPE html>\n<html><head><title>Sign in \xe2\x80\x93 Proxy</title></head><body>Please log in</body></html>";
        let described = describe("text/html", page);
        assert!(
            described.starts_with(
                "an HTML page (text/html) titled \"Sign in – Proxy\": <!DOCTYPE html>"
            ),
            "{described}"
        );
        assert_eq!(
            describe("", br#"{"error":{"message":"no such model"}}"#),
            "a JSON body: no such model"
        );
        assert_eq!(
            describe("text/plain", b"Bad things\nhappened"),
            "a body (text/plain) that starts: Bad things happened"
        );
        assert_eq!(
            describe("text/plain", b"  \n"),
            "an empty body (text/plain)"
        );
    }
}
