//! Display widths as the terminal and ratatui's buffer count them: per grapheme cluster (an
//! emoji ZWJ sequence, a flag, a letter with combining marks is one unit), so text is
//! wrapped, cut and moved through exactly as it is drawn.

use unicode_segmentation::UnicodeSegmentation;
use unicode_width::UnicodeWidthStr;

/// Columns one grapheme cluster takes (0 for control characters, which are never drawn).
pub fn grapheme_width(grapheme: &str) -> usize {
    if grapheme.chars().any(char::is_control) {
        0
    } else {
        grapheme.width()
    }
}

/// Columns `text` takes.
pub fn str_width(text: &str) -> usize {
    text.graphemes(true).map(grapheme_width).sum()
}

/// The grapheme clusters of `text` with their byte offsets and widths.
pub fn graphemes(text: &str) -> impl Iterator<Item = (usize, &str, usize)> {
    text.grapheme_indices(true)
        .map(|(at, g)| (at, g, grapheme_width(g)))
}

/// `text` cut to at most `max` columns, with an ellipsis when something was cut.
pub fn cut(text: &str, max: usize) -> String {
    if str_width(text) <= max {
        return text.to_string();
    }
    let mut out = String::new();
    let mut used = 0;
    for (_, g, w) in graphemes(text) {
        if used + w + 1 > max {
            break;
        }
        used += w;
        out.push_str(g);
    }
    out.push('…');
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_clusters_as_they_are_drawn() {
        assert_eq!(str_width("abc"), 3);
        assert_eq!(str_width("一丁"), 4);
        assert_eq!(str_width("e\u{301}"), 1);
        assert_eq!(str_width("🇫🇷"), 2);
        assert_eq!(str_width("👨\u{200d}👩\u{200d}👧"), 2);
        assert_eq!(str_width("❤\u{fe0f}"), 2);
        assert_eq!(str_width("a\u{1b}b"), 2);
    }

    #[test]
    fn cuts_whole_clusters() {
        assert_eq!(cut("hello", 5), "hello");
        assert_eq!(cut("hello world", 6), "hello…");
        assert_eq!(cut("一丁丂七", 5), "一丁…");
        assert_eq!(cut("e\u{301}e\u{301}e\u{301}", 2), "e\u{301}…");
    }
}
