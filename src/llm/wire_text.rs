//! Strings of a request body made from borrowed parts of the history: each is serialized
//! piece by piece (serde_json's `collect_str` escapes every piece straight into the body),
//! never first joined into a new `String`, so building a request copies no message text.
//! Hand-written because serde has no "concatenated string" type; it is a few lines.

use crate::protocol::message::Content;
use serde::{Serialize, Serializer};
use serde_json::Value;
use std::fmt::{self, Display};

/// Text pieces sent as one JSON string.
#[derive(Default)]
pub struct Joined<'a> {
    pieces: Vec<&'a str>,
}

impl<'a> Joined<'a> {
    pub fn push(&mut self, piece: &'a str) {
        if !piece.is_empty() {
            self.pieces.push(piece);
        }
    }

    pub fn is_empty(&self) -> bool {
        self.pieces.is_empty()
    }

    /// The text blocks of `content`, one per line (as `message::join_text`).
    pub fn lines(content: &'a [Content]) -> Self {
        let mut joined = Joined::default();
        for block in content {
            if let Content::Text { text } = block {
                if !joined.is_empty() {
                    joined.push("\n");
                }
                joined.push(text);
            }
        }
        joined
    }
}

impl Display for Joined<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.pieces.iter().try_for_each(|piece| f.write_str(piece))
    }
}

impl Serialize for Joined<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_str(self)
    }
}

/// A JSON value sent as a string of its compact text (tool-call arguments); `None`: `{}`.
pub struct JsonText<'a>(pub Option<&'a Value>);

impl Serialize for JsonText<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        match self.0 {
            Some(value) => serializer.collect_str(value),
            None => serializer.serialize_str("{}"),
        }
    }
}

/// An image as a `data:` URL.
pub struct DataUrl<'a> {
    pub mime_type: &'a str,
    pub data: &'a str,
}

impl Display for DataUrl<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("data:")?;
        f.write_str(self.mime_type)?;
        f.write_str(";base64,")?;
        f.write_str(self.data)
    }
}

impl Serialize for DataUrl<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_str(self)
    }
}

/// A body's likely size: the text it carries and an eighth more for the JSON around it
/// (a writer sized so grows once at most, instead of doubling through the whole body).
pub fn body_capacity(text_bytes: usize) -> usize {
    text_bytes
        .saturating_add(text_bytes / 8)
        .saturating_add(4096)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pieces_serialize_as_one_escaped_string() {
        let content = vec![
            Content::text("line \"one\""),
            Content::Image {
                data: "AAAA".into(),
                mime_type: "image/png".into(),
            },
            Content::text(""),
            Content::text("two\n"),
            Content::text(""),
        ];
        let joined = Joined::lines(&content);
        assert_eq!(
            serde_json::to_string(&joined).unwrap(),
            serde_json::to_string(&crate::protocol::message::join_text(&content)).unwrap()
        );
        let value = serde_json::json!({"path": "a \"b\""});
        assert_eq!(
            serde_json::to_string(&JsonText(Some(&value))).unwrap(),
            serde_json::to_string(&value.to_string()).unwrap()
        );
        assert_eq!(serde_json::to_string(&JsonText(None)).unwrap(), r#""{}""#);
        let url = DataUrl {
            mime_type: "image/png",
            data: "AAAA",
        };
        assert_eq!(
            serde_json::to_string(&url).unwrap(),
            r#""data:image/png;base64,AAAA""#
        );
    }
}
