//! Keeping tool output within what a model should read: at most a number of lines and bytes,
//! from the head (files) or the tail (command output), always on a character boundary.

pub const MAX_LINES: usize = 2000;
pub const MAX_BYTES: usize = 50 * 1024;

#[derive(Debug, PartialEq)]
pub struct Truncated {
    pub text: String,
    /// Lines in the input, and how many were kept.
    pub total_lines: usize,
    pub kept_lines: usize,
    pub truncated: bool,
}

/// The last `max_lines` lines / `max_bytes` bytes of `text`.
pub fn tail(text: &str, max_lines: usize, max_bytes: usize) -> Truncated {
    let total_lines = count_lines(text);
    if total_lines <= max_lines && text.len() <= max_bytes {
        return Truncated {
            text: text.to_string(),
            total_lines,
            kept_lines: total_lines,
            truncated: false,
        };
    }
    let body = text.strip_suffix('\n').unwrap_or(text);
    let mut start = body.len();
    let mut kept = 0;
    for (pos, _) in body.rmatch_indices('\n') {
        if kept + 1 > max_lines || body.len() - (pos + 1) > max_bytes {
            break;
        }
        start = pos + 1;
        kept += 1;
    }
    if kept < max_lines && body.len() <= max_bytes {
        start = 0;
        kept += 1;
    }
    if kept == 0 {
        // One line longer than the budget: keep its end.
        let mut cut = body.len().saturating_sub(max_bytes);
        while !body.is_char_boundary(cut) {
            cut += 1;
        }
        return Truncated {
            text: body[cut..].to_string(),
            total_lines,
            kept_lines: 1,
            truncated: true,
        };
    }
    Truncated {
        text: body[start..].to_string(),
        total_lines,
        kept_lines: kept,
        truncated: true,
    }
}

pub fn count_lines(text: &str) -> usize {
    if text.is_empty() {
        return 0;
    }
    let newlines = text.bytes().filter(|b| *b == b'\n').count();
    if text.ends_with('\n') {
        newlines
    } else {
        newlines + 1
    }
}

/// Cut `text` to at most `max_bytes`, on a character boundary.
pub fn clip(text: &str, max_bytes: usize) -> &str {
    if text.len() <= max_bytes {
        return text;
    }
    let mut cut = max_bytes;
    while !text.is_char_boundary(cut) {
        cut -= 1;
    }
    &text[..cut]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keeps_the_tail_by_lines_and_bytes() {
        let text: String = (1..=10).map(|i| format!("line {i}\n")).collect();
        let t = tail(&text, 3, 1000);
        assert_eq!(t.text, "line 8\nline 9\nline 10");
        assert_eq!((t.total_lines, t.kept_lines, t.truncated), (10, 3, true));
        let t = tail(&text, 100, 16);
        assert_eq!(t.text, "line 9\nline 10");
        let t = tail(&text, 100, 1000);
        assert!(!t.truncated);
        assert_eq!(t.text, text);
        let t = tail(&"é".repeat(100), 10, 11);
        assert_eq!(t.text, "é".repeat(5));
        assert_eq!(clip("héllo", 2), "h");
    }
}
