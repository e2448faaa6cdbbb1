//! Best-effort parsing of a JSON object that is still streaming, so a tool call's arguments
//! can be shown while the model writes them. Hand-written because the crates that do this
//! either pull in a whole second JSON parser (jiter) or are unmaintained; this closes the
//! open strings and containers of the prefix and lets serde_json do the parsing.

use serde_json::Value;

/// Parse `raw` as complete JSON, or failing that as the longest sensible completion of the
/// prefix: an open value string is closed, dangling `,`/`:` dropped, open containers closed.
/// Returns `None` when not even a prefix makes sense (e.g. empty input).
pub fn parse_partial(raw: &str) -> Option<Value> {
    if let Ok(value) = serde_json::from_str(raw) {
        return Some(value);
    }
    let scan = Scan::of(raw);
    let mut candidate = String::with_capacity(raw.len() + scan.stack.len() + 8);
    candidate.push_str(raw);
    if scan.in_string {
        if scan.string_is_key {
            candidate.truncate(scan.string_start);
        } else {
            trim_incomplete_escape(&mut candidate);
            candidate.push('"');
        }
    }
    let trimmed_len = candidate.trim_end().len();
    candidate.truncate(trimmed_len);
    if candidate.ends_with(',') {
        candidate.pop();
    } else if candidate.ends_with(':') {
        candidate.push_str("null");
    }
    close_containers(&mut candidate, &scan.stack);
    if let Ok(value) = serde_json::from_str(&candidate) {
        return Some(value);
    }
    // Fall back to the last point where an element had just finished.
    let (cut, stack) = scan.boundary?;
    let mut fallback = raw[..cut].trim_end().to_string();
    if fallback.ends_with(',') {
        fallback.pop();
    }
    close_containers(&mut fallback, &stack);
    serde_json::from_str(&fallback).ok()
}

fn close_containers(out: &mut String, stack: &[u8]) {
    for open in stack.iter().rev() {
        out.push(if *open == b'{' { '}' } else { ']' });
    }
}

/// Drop a trailing backslash or unfinished `\uXXXX` escape so the string can be closed.
fn trim_incomplete_escape(s: &mut String) {
    let bytes = s.as_bytes();
    // Count the run of backslashes at the end: an odd count means a dangling escape.
    let trailing = bytes.iter().rev().take_while(|b| **b == b'\\').count();
    if trailing % 2 == 1 {
        s.pop();
        return;
    }
    if let Some(pos) = s.rfind("\\u") {
        let tail = &s[pos + 2..];
        let preceded_by_escape =
            s[..pos].bytes().rev().take_while(|b| *b == b'\\').count() % 2 == 1;
        if !preceded_by_escape && tail.len() < 4 && tail.bytes().all(|b| b.is_ascii_hexdigit()) {
            s.truncate(pos);
        }
    }
}

struct Scan {
    /// Open containers, `{` or `[`, outermost first.
    stack: Vec<u8>,
    in_string: bool,
    string_is_key: bool,
    string_start: usize,
    /// A byte offset where the prefix ended just after a complete element, with the open
    /// containers at that point.
    boundary: Option<(usize, Vec<u8>)>,
}

impl Scan {
    fn of(raw: &str) -> Scan {
        let mut scan = Scan {
            stack: Vec::new(),
            in_string: false,
            string_is_key: false,
            string_start: 0,
            boundary: None,
        };
        // For each open object: whether the next string is a key.
        let mut expect_key: Vec<bool> = Vec::new();
        let mut escaped = false;
        for (pos, byte) in raw.bytes().enumerate() {
            if scan.in_string {
                if escaped {
                    escaped = false;
                } else if byte == b'\\' {
                    escaped = true;
                } else if byte == b'"' {
                    scan.in_string = false;
                }
                continue;
            }
            match byte {
                b'"' => {
                    scan.in_string = true;
                    scan.string_start = pos;
                    scan.string_is_key =
                        scan.stack.last() == Some(&b'{') && expect_key.last() == Some(&true);
                }
                b'{' | b'[' => {
                    scan.stack.push(byte);
                    if byte == b'{' {
                        expect_key.push(true);
                    }
                    scan.boundary = Some((pos + 1, scan.stack.clone()));
                }
                b'}' => {
                    scan.stack.pop();
                    expect_key.pop();
                }
                b']' => {
                    scan.stack.pop();
                }
                b':' => {
                    if let Some(k) = expect_key.last_mut() {
                        *k = false;
                    }
                }
                b',' => {
                    if scan.stack.last() == Some(&b'{')
                        && let Some(k) = expect_key.last_mut()
                    {
                        *k = true;
                    }
                    scan.boundary = Some((pos, scan.stack.clone()));
                }
                _ => {}
            }
        }
        scan
    }
}

#[cfg(test)]
mod tests {
    use super::parse_partial;
    use serde_json::json;

    #[test]
    fn completes_prefixes_of_an_object() {
        let full = r#"{"path": "src/a b.rs", "n": 12, "flags": [true, null], "x": {"y": "z"}}"#;
        // Every prefix parses to something or nothing, never panics, and the full text
        // parses exactly.
        for end in 0..=full.len() {
            let _ = parse_partial(&full[..end]);
        }
        assert_eq!(parse_partial(full).unwrap()["x"]["y"], "z");
        assert_eq!(
            parse_partial(r#"{"path": "src/a"#).unwrap(),
            json!({"path": "src/a"})
        );
        assert_eq!(
            parse_partial(r#"{"path": "src/a", "co"#).unwrap(),
            json!({"path": "src/a"})
        );
        assert_eq!(
            parse_partial(r#"{"path": "x", "n":"#).unwrap(),
            json!({"path": "x", "n": null})
        );
        assert_eq!(
            parse_partial(r#"{"n": 1, "b": tr"#).unwrap(),
            json!({"n": 1})
        );
        assert_eq!(
            parse_partial(r#"{"a": [1, 2"#).unwrap(),
            json!({"a": [1, 2]})
        );
        assert_eq!(parse_partial("{").unwrap(), json!({}));
        assert_eq!(parse_partial(""), None);
    }

    #[test]
    fn drops_dangling_escapes() {
        assert_eq!(parse_partial(r#"{"a": "x\"#).unwrap(), json!({"a": "x"}));
        assert_eq!(parse_partial(r#"{"a": "x\u00"#).unwrap(), json!({"a": "x"}));
        assert_eq!(parse_partial(r#"{"a": "x\\"#).unwrap(), json!({"a": "x\\"}));
        assert_eq!(parse_partial(r#"{"a": "x\n"#).unwrap(), json!({"a": "x\n"}));
    }
}
