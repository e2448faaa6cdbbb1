//! Finding the one place an edit's `oldText` occurs. Only an exact match counts; when there
//! is none, the error shows the lines of the file that come closest (by a character diff),
//! so the model can copy the real text — the file is never rewritten on a guess.

use similar::TextDiff;
use std::ops::Range;

#[derive(Debug, PartialEq)]
pub enum MatchError {
    /// No exact match; the text describes the closest lines (may be empty).
    NotFound(String),
    /// More than one match; the 1-based lines where they start.
    Ambiguous(Vec<usize>),
}

/// The byte range of the single occurrence of `needle` in `haystack`.
pub fn find_unique(haystack: &str, needle: &str) -> Result<Range<usize>, MatchError> {
    let starts: Vec<usize> = haystack.match_indices(needle).map(|(i, _)| i).collect();
    match starts.as_slice() {
        [start] => Ok(*start..*start + needle.len()),
        [] => Err(MatchError::NotFound(closest_lines(haystack, needle))),
        many => Err(MatchError::Ambiguous(
            many.iter().map(|&i| line_of(haystack, i)).collect(),
        )),
    }
}

/// The 1-based line holding byte `offset`.
pub fn line_of(text: &str, offset: usize) -> usize {
    text[..offset].matches('\n').count() + 1
}

/// Windows scored in full, after a cheap first pass.
const FINALISTS: usize = 8;
/// Below this similarity nothing is shown.
const MIN_SIMILARITY: f32 = 0.5;
/// Lines longer than this are compared by their first part only.
const COMPARE_CHARS: usize = 200;

/// A description of the lines of `text` that best resemble `wanted`, numbered; empty when
/// nothing comes close.
pub fn closest_lines(text: &str, wanted: &str) -> String {
    let lines: Vec<&str> = text.lines().collect();
    let wanted_lines: Vec<&str> = wanted.trim_matches('\n').lines().collect();
    if lines.is_empty() || wanted_lines.is_empty() {
        return String::new();
    }
    let height = wanted_lines.len().min(lines.len());
    let windows = lines.len() - height + 1;
    // First pass: first and last line of each window only.
    let mut rough: Vec<(f32, usize)> = (0..windows)
        .map(|start| {
            let first = similarity(lines[start], wanted_lines[0]);
            let last = similarity(lines[start + height - 1], wanted_lines[height - 1]);
            ((first + last) / 2.0, start)
        })
        .collect();
    rough.sort_by(|a, b| b.0.total_cmp(&a.0).then(a.1.cmp(&b.1)));
    let best = rough
        .iter()
        .take(FINALISTS)
        .map(|&(_, start)| {
            let total: f32 = (0..height)
                .map(|j| similarity(lines[start + j], wanted_lines[j]))
                .sum();
            (total / height as f32, start)
        })
        .max_by(|a, b| a.0.total_cmp(&b.0).then(b.1.cmp(&a.1)));
    let Some((score, start)) = best.filter(|(score, _)| *score >= MIN_SIMILARITY) else {
        return String::new();
    };
    let window = &lines[start..start + height];
    let whitespace_only = window
        .iter()
        .map(|l| l.split_whitespace().collect::<String>())
        .eq(wanted_lines
            .iter()
            .map(|l| l.split_whitespace().collect::<String>()));
    let mut out = if whitespace_only {
        format!(
            "Lines {}-{} differ from oldText only in whitespace or indentation; copy them exactly:\n",
            start + 1,
            start + height
        )
    } else {
        format!(
            "The closest lines are {}-{} ({:.0}% similar):\n",
            start + 1,
            start + height,
            score * 100.0
        )
    };
    for (i, line) in window.iter().enumerate() {
        out.push_str(&format!("{:>6}\t{}\n", start + i + 1, line));
    }
    out
}

/// How alike two lines are, from 0 to 1, ignoring surrounding whitespace.
fn similarity(a: &str, b: &str) -> f32 {
    let a = prefix(a.trim(), COMPARE_CHARS);
    let b = prefix(b.trim(), COMPARE_CHARS);
    if a == b {
        return 1.0;
    }
    TextDiff::from_chars(a, b).ratio()
}

fn prefix(text: &str, chars: usize) -> &str {
    match text.char_indices().nth(chars) {
        Some((cut, _)) => &text[..cut],
        None => text,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_exactly_one_occurrence() {
        let text = "fn a() {}\nfn b() {}\nfn a() {}\n";
        assert_eq!(find_unique(text, "fn b"), Ok(10..14));
        assert_eq!(
            find_unique(text, "fn a() {}"),
            Err(MatchError::Ambiguous(vec![1, 3]))
        );
    }

    #[test]
    fn shows_the_closest_lines_when_nothing_matches() {
        let text = "use std::io;\n\nfn main() {\n    let total = add(1, 2);\n    println!(\"{total}\");\n}\n";
        let Err(MatchError::NotFound(hint)) =
            find_unique(text, "let totl = add(1, 2);\nprintln!(\"{total}\");")
        else {
            panic!()
        };
        assert!(hint.starts_with("The closest lines are 4-5"), "{hint}");
        assert!(
            hint.contains("     4\t    let total = add(1, 2);\n"),
            "{hint}"
        );

        let Err(MatchError::NotFound(hint)) =
            find_unique(text, "fn  main() {\n  let total = add(1, 2);")
        else {
            panic!()
        };
        assert!(
            hint.starts_with("Lines 3-4 differ from oldText only in whitespace"),
            "{hint}"
        );

        let Err(MatchError::NotFound(hint)) = find_unique(text, "completely unrelated words here")
        else {
            panic!()
        };
        assert_eq!(hint, "");
    }
}
