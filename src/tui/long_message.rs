//! A long user message shown again — a resumed session's conversation, `agent attach`'s
//! replay — is collapsed as the composer collapsed it when it was pasted (a chip for 10+
//! lines or 1,000+ characters, `composer::PASTE_LINES`/`PASTE_CHARS`): its first lines and
//! a note of how much more there is. Only the display: the session and the model keep the
//! whole text, and the transcript view (ctrl+o) shows it whole.

use super::composer::{PASTE_CHARS, PASTE_LINES, thousands};

/// Lines of a collapsed message that are shown.
const HEAD_LINES: usize = 3;
/// Characters of a collapsed message that are shown at most (a long single line).
const HEAD_CHARS: usize = 300;

/// A message cut for display: what is shown, and the note for the rest.
#[derive(Debug, PartialEq, Eq)]
pub struct Collapsed {
    pub head: String,
    pub rest: String,
}

/// `None` when `text` is short enough to be shown whole.
pub fn collapse(text: &str) -> Option<Collapsed> {
    let text = text.trim_end();
    let lines = text.split('\n').count();
    let chars = text.chars().count();
    if lines < PASTE_LINES && chars < PASTE_CHARS {
        return None;
    }
    let head: String = text
        .split('\n')
        .take(HEAD_LINES)
        .collect::<Vec<_>>()
        .join("\n");
    let head: String = head.chars().take(HEAD_CHARS).collect();
    let shown_lines = head.split('\n').count();
    let more = if lines > shown_lines {
        let hidden = lines - shown_lines;
        format!(
            "{} more line{}",
            thousands(hidden),
            if hidden == 1 { "" } else { "s" }
        )
    } else {
        format!(
            "{} more characters",
            thousands(chars - head.chars().count())
        )
    };
    Some(Collapsed {
        head: format!("{head}…"),
        rest: format!("… {more} (ctrl+o shows the whole message)"),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_message_as_long_as_a_paste_chip_is_collapsed() {
        let lines: Vec<String> = (1..=122).map(|i| format!("line {i}")).collect();
        let collapsed = collapse(&lines.join("\n")).unwrap();
        assert_eq!(collapsed.head, "line 1\nline 2\nline 3…");
        assert_eq!(
            collapsed.rest,
            "… 119 more lines (ctrl+o shows the whole message)"
        );
        let long = "x".repeat(3_400);
        let collapsed = collapse(&long).unwrap();
        assert_eq!(collapsed.head.chars().count(), HEAD_CHARS + 1);
        assert!(collapsed.rest.starts_with("… 3,100 more characters"));
    }

    #[test]
    fn a_short_message_is_shown_whole() {
        assert_eq!(collapse("one\ntwo\nthree"), None);
        let nine: Vec<&str> = ["a"; 9].to_vec();
        assert_eq!(collapse(&nine.join("\n")), None);
    }
}
