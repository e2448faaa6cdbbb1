//! The signature of a thinking block that came from a Responses reasoning item: what a
//! stateless request needs to send that item back, its id and its encrypted content, as a
//! small JSON object. Sessions written before ids were kept hold the bare encrypted content;
//! those read back without an id.

use serde::{Deserialize, Serialize};
use std::borrow::Cow;

#[derive(Serialize)]
struct Signature<'a> {
    #[serde(skip_serializing_if = "Option::is_none")]
    id: Option<&'a str>,
    encrypted_content: &'a str,
}

#[derive(Deserialize)]
struct Stored<'a> {
    #[serde(default, borrow)]
    id: Option<Cow<'a, str>>,
    #[serde(borrow)]
    encrypted_content: Cow<'a, str>,
}

pub fn encode(id: Option<&str>, encrypted_content: &str) -> String {
    let signature = Signature {
        id: id.filter(|id| !id.is_empty()),
        encrypted_content,
    };
    serde_json::to_string(&signature).unwrap_or_else(|_| encrypted_content.to_string())
}

/// The item id (if known) and the encrypted content, borrowed from `signature` where
/// it holds them unescaped (base64 always is).
pub fn decode(signature: &str) -> (Option<Cow<'_, str>>, Cow<'_, str>) {
    if signature.starts_with('{')
        && let Ok(stored) = serde_json::from_str::<Stored>(signature)
    {
        return (stored.id, stored.encrypted_content);
    }
    (None, Cow::Borrowed(signature))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn signatures_round_trip_and_old_ones_still_read() {
        let signature = encode(Some("rs_1"), "gAAA");
        assert_eq!(decode(&signature), (Some("rs_1".into()), "gAAA".into()));
        assert_eq!(decode(&encode(None, "gAAA")), (None, "gAAA".into()));
        assert_eq!(decode("gAAAAABo"), (None, "gAAAAABo".into()));
    }
}
