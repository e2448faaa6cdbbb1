//! Tests of whole-document rendering: the text and styles of each construct, NO_COLOR, odd
//! input that must never panic, and insta snapshots of a typical answer. Streaming is tested in
//! `stream_tests`; the helpers here serve both.

use ratatui::style::{Color, Modifier};
use ratatui::text::Line;

use super::*;

pub(super) fn plain(lines: &[Line<'_>]) -> Vec<String> {
    lines.iter().map(|l| l.to_string()).collect()
}

pub(super) fn text(md: &str, width: u16) -> Vec<String> {
    plain(&render(md, width, &Theme::plain()))
}

/// A small deterministic pseudo-random sequence (64-bit LCG), enough for chunk sizes.
pub(super) struct Lcg(pub(super) u64);

impl Lcg {
    pub(super) fn next(&mut self, bound: usize) -> usize {
        self.0 = self
            .0
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        ((self.0 >> 33) as usize) % bound.max(1)
    }
}

/// Streams `md` in chunks whose sizes `chunk` picks, asking for the tail now and then, and
/// returns everything taken plus `finish`.
pub(super) fn stream(
    md: &str,
    width: u16,
    theme: Theme,
    mut chunk: impl FnMut() -> usize,
) -> Vec<Line<'static>> {
    let mut s = StreamingMarkdown::new(width, theme);
    let mut out = Vec::new();
    let chars: Vec<char> = md.chars().collect();
    let mut i = 0;
    while i < chars.len() {
        let n = chunk().max(1).min(chars.len() - i);
        let delta: String = chars[i..i + n].iter().collect();
        s.push(&delta);
        i += n;
        if i % 3 == 0 {
            let _ = s.tail();
        }
        if i % 2 == 0 {
            out.extend(s.take_stable());
        }
    }
    out.extend(s.take_stable());
    out.extend(s.finish());
    out
}

#[test]
fn headings_paragraphs_and_blank_lines() {
    let md = "\n\n# One\nText that wraps at the given width.\n\n\n\n### Three\n\nEnd.\n\n\n";
    assert_eq!(
        text(md, 16),
        [
            "# One",
            "",
            "Text that wraps",
            "at the given",
            "width.",
            "",
            "### Three",
            "",
            "End."
        ]
    );
    assert_eq!(text("", 10), Vec::<String>::new());
    assert_eq!(text("\n\n  \n", 10), Vec::<String>::new());
}

#[test]
fn inline_styles() {
    let lines = render("# H\n\n*i* **b** ~~s~~ `c`", 40, &Theme::colored());
    let span = |t: &str| {
        lines
            .iter()
            .flat_map(|l| l.spans.iter())
            .find(|s| s.content.contains(t))
            .map(|s| s.style)
            .unwrap_or_default()
    };
    assert!(span("# H").add_modifier.contains(Modifier::BOLD));
    assert!(span("i").add_modifier.contains(Modifier::ITALIC));
    assert!(span("b").add_modifier.contains(Modifier::BOLD));
    assert!(span("s").add_modifier.contains(Modifier::CROSSED_OUT));
    assert_eq!(span("c").fg, Theme::colored().inline_code().fg);
    assert_eq!(plain(&lines), ["# H", "", "i b s c"]);
}

#[test]
fn links_and_images() {
    let md = "[text](https://a.b) <https://c.d> [https://e.f](https://e.f) [](https://g.h) \
              <me@x.y> ![a cat](cat.png)";
    assert_eq!(
        text(md, 200),
        ["text (https://a.b) https://c.d https://e.f https://g.h me@x.y [image: a cat] (cat.png)"]
    );
    let lines = render("[text](https://a.b)", 80, &Theme::colored());
    let spans = &lines[0].spans;
    assert!(spans[0].style.add_modifier.contains(Modifier::UNDERLINED));
    assert!(spans[1].style.add_modifier.contains(Modifier::DIM));
    // Reference links resolve when the definition comes first.
    assert_eq!(text("[r]: /u\n\n[x][r]", 80), ["x (/u)"]);
}

#[test]
fn lists_with_hanging_indent_nesting_and_tasks() {
    let md = "- first item that wraps around\n- second\n  - nested item\n    1. deep\n\n  more text\n- [ ] todo\n- [x] done\n-\n\n8. eight\n9. nine\n10. ten\n";
    assert_eq!(
        text(md, 20),
        [
            "• first item that",
            "  wraps around",
            "• second",
            "  ◦ nested item",
            "    1. deep",
            "",
            "  more text",
            "• [ ] todo",
            "• [x] done",
            "•",
            "",
            "8. eight",
            "9. nine",
            "10. ten",
        ]
    );
    // Ordered lists count from their start even when every item says "1.".
    assert_eq!(text("1. a\n1. b\n1. c", 20), ["1. a", "2. b", "3. c"]);
}

#[test]
fn block_quotes_wrap_inside_their_bar() {
    let md = "> a quoted sentence that wraps\n>\n> > nested\n\nafter";
    assert_eq!(
        text(md, 14),
        [
            "│ a quoted",
            "│ sentence",
            "│ that wraps",
            "│",
            "│ │ nested",
            "",
            "after"
        ]
    );
    let lines = render("> q", 20, &Theme::colored());
    assert!(
        lines[0].spans[1]
            .style
            .add_modifier
            .contains(Modifier::ITALIC)
    );
}

#[test]
#[cfg_attr(
    not(feature = "syntect"),
    ignore = "highlighting needs the syntect feature"
)]
fn code_blocks_have_a_gutter_and_highlighting() {
    let md = "```rust\nfn main() {\n\tlet s = \"hi\";\n}\n```\n\n    indented\n\n```nosuchlang\nplain text\n```";
    assert_eq!(
        text(md, 40),
        [
            "  fn main() {",
            "      let s = \"hi\";",
            "  }",
            "",
            "  indented",
            "",
            "  plain text"
        ]
    );
    let colored = render(md, 40, &Theme::colored());
    let rgb = |l: &Line<'_>| {
        l.spans
            .iter()
            .any(|s| matches!(s.style.fg, Some(Color::Rgb(..))))
    };
    assert!(colored[..3].iter().any(rgb), "rust is highlighted");
    assert!(
        !colored[4..].iter().any(rgb),
        "indented and unknown languages are plain"
    );
}

#[test]
fn tables_align_or_fall_back_to_one_row_per_line() {
    let md = "| Name | Qty | Note |\n|:--|--:|:-:|\n| apple | 3 | ok |\n| kiwi | 12 | `x` |";
    assert_eq!(
        text(md, 40),
        [
            "Name  │ Qty │ Note",
            "──────┼─────┼─────",
            "apple │   3 │  ok",
            "kiwi  │  12 │  x"
        ]
    );
    assert_eq!(
        text(md, 12),
        [
            "Name │ Qty",
            "  │ Note",
            "apple │ 3",
            "  │ ok",
            "kiwi │ 12",
            "  │ x"
        ]
    );
    let lines = render(md, 40, &Theme::colored());
    assert!(
        lines[0].spans[0]
            .style
            .add_modifier
            .contains(Modifier::BOLD)
    );
}

#[test]
fn rules_and_raw_html() {
    assert_eq!(text("a\n\n---\n\nb", 5), ["a", "", "─────", "", "b"]);
    assert_eq!(
        text("<div>\n  <b>x</b>\n</div>\n\nsome <i>inline</i>", 40),
        ["<div>", "<b>x</b>", "</div>", "", "some <i>inline</i>"]
    );
}

/// Every markdown construct, for the NO_COLOR and odd-input tests.
const EVERYTHING: &str = "# H1\n## H2\n###### H6\n\n*e* **s** ~~x~~ `c` [l](u) ![i](p) <b>h</b>\n\n\
    > q\n\n- a\n  1. b\n- [x] t\n\n```rust\nfn f() {}\n```\n\n```python\ndef f(): pass\n```\n\n\
    | a | b |\n|---|---|\n| 1 | 2 |\n\n---\n\n<div>x</div>\n";

#[test]
fn no_color_means_no_colours_at_all() {
    let mut lines = render(EVERYTHING, 60, &Theme::plain());
    let mut s = StreamingMarkdown::new(60, Theme::plain());
    s.push(EVERYTHING);
    s.push("```rust\nlet x = 1;\nlet y");
    lines.extend(s.take_stable());
    lines.extend(s.tail().iter().cloned());
    lines.extend(s.finish());
    for line in &lines {
        assert_eq!(line.style.fg, None);
        for span in &line.spans {
            assert_eq!((span.style.fg, span.style.bg), (None, None), "{span:?}");
        }
    }
    // With colour, the same document does use colours.
    let colored = render(EVERYTHING, 60, &Theme::colored());
    assert!(
        colored
            .iter()
            .flat_map(|l| &l.spans)
            .any(|s| s.style.fg.is_some())
    );
}

fn assert_no_control_characters(lines: &[Line<'_>]) {
    for span in lines.iter().flat_map(|l| &l.spans) {
        assert!(
            !span.content.chars().any(|c| c.is_control()),
            "control character in {span:?}"
        );
    }
}

#[test]
fn odd_input_never_panics() {
    let controls: String = (0u8..0x20)
        .chain([0x7f])
        .map(char::from)
        .chain(['\u{85}', '\u{9b}'])
        .collect();
    let mut docs = vec![
        "```\nunclosed".to_string(),
        "~~~~\n```\n~~~\n".to_string(),
        "```".to_string(),
        "- ```\n  unclosed in item".to_string(),
        "> ```\n> in quote".to_string(),
        format!("{} x", ">".repeat(5000)),
        (0..100)
            .map(|i| format!("{}- x\n", "  ".repeat(i)))
            .collect(),
        (0..100)
            .map(|i| format!("{}1. x\n", "   ".repeat(i)))
            .collect(),
        "*".repeat(3000),
        "[".repeat(3000),
        // A table far wider than any terminal (the stream re-renders an open table whole).
        format!("{}\n{}\n", "|a".repeat(100), "|-".repeat(100))
            + &format!("{}\n", "|x".repeat(100)).repeat(30),
        format!("a{controls}b\n\n`{controls}`\n\n```\n{controls}\n```\n\n| {controls} |\n|-|\n"),
        "x".repeat(10_000),
        "👩‍👩‍👧‍👦 ZWJ, e\u{301}, \u{202e}RTL, \u{200b}zero width".to_string(),
        "-\n-\n-\n1.\n2.\n>\n#\n######\n####### seven\n".to_string(),
        "a\r\n\r\nb\rc".to_string(),
        "[x]: <>\n[y]:\n\n[x] [y] [z]: \n".to_string(),
        "<!-- unclosed comment\n\n# not a heading".to_string(),
        "\u{0}\u{feff}# BOM".to_string(),
    ];
    docs.push(EVERYTHING.to_string());
    for doc in &docs {
        for width in [0, 1, 2, 80] {
            let lines = render(doc, width, &Theme::colored());
            assert_no_control_characters(&lines);
        }
        let mut rng = Lcg(7);
        let streamed = stream(doc, 1, Theme::colored(), || 1 + rng.next(97));
        assert_eq!(streamed, render(doc, 1, &Theme::colored()));
    }
}

const ANSWER: &str = "\
# Fixing the flaky test

The test fails because **two threads** race on `COUNTER`. See [the docs](https://doc.rust-lang.org/std/sync/atomic/) for details.

## Steps

1. Replace the `static mut` with an `AtomicUsize`:
   ```rust
   static COUNTER: AtomicUsize = AtomicUsize::new(0);
   ```
2. Use `fetch_add` in the worker:
   - it is *lock-free*
   - it never tears
3. Re-run the tests.

> **Note:** `Ordering::Relaxed` is enough here, since nothing else is synchronised through the counter.

| Ordering | Cost | Use when |
|:---------|-----:|:---------|
| Relaxed | low | counters |
| SeqCst | high | unsure |

---

- [x] reproduce
- [ ] fix
";

#[test]
fn snapshot_of_a_typical_answer() {
    insta::assert_snapshot!("typical_answer_width_60", text(ANSWER, 60).join("\n"));
}

#[test]
fn snapshot_of_a_typical_answer_narrow() {
    insta::assert_snapshot!("typical_answer_width_24", text(ANSWER, 24).join("\n"));
}
