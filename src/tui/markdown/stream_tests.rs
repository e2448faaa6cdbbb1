//! Tests of `StreamingMarkdown`: streaming in any chunking equals whole rendering (fixed and
//! generated documents), taken lines plus the tail equal the rendering so far, when blocks and
//! code lines become stable, and that the work done stays proportional to the delta.

use super::tests::{Lcg, plain, stream, text};
use super::*;

fn assert_stream_matches(md: &str, width: u16, theme: Theme, seed: u64) {
    let whole = render(md, width, &theme);
    let by_char = stream(md, width, theme, || 1);
    assert_eq!(
        plain(&by_char),
        plain(&whole),
        "one char at a time, width {width}:\n{md:?}"
    );
    assert_eq!(
        by_char, whole,
        "styles, one char at a time, width {width}:\n{md:?}"
    );
    let mut rng = Lcg(seed);
    let random = stream(md, width, theme, || 1 + rng.next(17));
    assert_eq!(
        random, whole,
        "random chunks (seed {seed}), width {width}:\n{md:?}"
    );
    let by_line = stream(md, width, theme, || 1 + md.len()); // all at once
    assert_eq!(by_line, whole);
}

const DOCS: [&str; 8] = [
    "# Title\n\nSome *emphasis*, **strong**, ~~gone~~ and `code`.\nA second line of the same paragraph that is long enough to wrap.\n\n## Sub\n\nText.\n",
    "- one\n- two\n  continued\n\n  second paragraph\n- three\n  - nested\n    - deeper\n- [ ] task\n- [x] done\n\n1. first\n1. second\n1. third\n\n10. ten\n11. eleven\n\nafter\n",
    "Intro:\n```rust\nfn main() {\n    let x = \"a string\"; // comment\n    println!(\"{x}\");\n}\n```\nand after.\n\n~~~\nplain ~~~ code\n~~~\n\n    indented code\n\n    more\n\ntext\n",
    "> quoted *text* that goes on and on for a while\n> > nested quote\n>\n> - list in quote\n\nnot quoted\n\n---\n\n***\n",
    "| Name | Value | Notes |\n|:-----|------:|:-----:|\n| a | 1 | centre |\n| longer name | 12345 | `x` |\n\npara after table\n| not | a table |\n",
    "[ref link][r] and [inline](https://example.com \"t\") and <https://auto.link> and ![alt text](img.png)\n\n[r]: https://ref.example\n\n[r] again, now defined, and [unknown][zz].\n\n<div>\nraw *html*\n</div>\n\ninline <b>bold</b> html\n",
    "Unclosed fence:\n\n```python\ndef f():\n    return 1\n",
    "Hard  \nbreak and back\\\nslash. Wide 日本語のテキストが続きます and e\u{301} combining. A verylongwordwithoutanyspacesthatmustbebrokenacrossrows end.\r\nCRLF line.\r\n",
];

#[test]
fn streaming_equals_whole_render() {
    for (n, doc) in DOCS.iter().enumerate() {
        for width in [80, 30, 12, 1, 0] {
            assert_stream_matches(doc, width, Theme::colored(), n as u64);
            assert_stream_matches(doc, width, Theme::plain(), n as u64 + 100);
        }
    }
}

/// Random documents assembled from fragments that stress block boundaries. `MD_FUZZ_SEEDS`
/// runs more of them (e.g. 20000 with `--release`).
#[test]
fn streaming_equals_whole_render_on_random_documents() {
    const FRAGMENTS: [&str; 56] = [
        "# h\n",
        "para text here\n",
        "\n",
        "\n",
        "- item\n",
        "  - nested\n",
        "1. one\n",
        "> quote\n",
        "```\n",
        "```rust\n",
        "code line\n",
        "    indented\n",
        "| a | b |\n",
        "|---|---|\n",
        "---\n",
        "***\n",
        "<div>\n",
        "</div>\n",
        "[r]: /url\n",
        "see [r]\n",
        "text  \n",
        "===\n",
        "~~~\n",
        "* star\n",
        "2) paren\n",
        "- [ ] task\n",
        "\t tab\n",
        "<!--\n",
        "-->\n",
        "   > lazy\n",
        "lazy continuation\n",
        "  continued item text\n",
        "Title\n",
        "-\n",
        "+ plus\n",
        "```\n",
        "  ```\n",
        "> ```\n",
        "> - quoted item\n",
        "[t]:\n",
        "/dest\n",
        "'title'\n",
        "*open emphasis\n",
        "closed*\n",
        "[link\n",
        "text](url)\n",
        "1) one\n",
        "\t- tab item\n",
        "    - deep\n",
        "> \n",
        "| x |\n",
        "a | b\n",
        "-|-\n",
        "<script>\n",
        "</script>\n",
        "***bold*** `code\n",
    ];
    let seeds = std::env::var("MD_FUZZ_SEEDS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(150u64);
    for seed in 0..seeds {
        let mut rng = Lcg(seed);
        let mut doc = String::new();
        for _ in 0..(5 + rng.next(25)) {
            doc.push_str(FRAGMENTS[rng.next(FRAGMENTS.len())]);
        }
        if rng.next(2) == 0 {
            doc.pop(); // no final newline
        }
        let width = [24, 7, 80][rng.next(3)];
        assert_stream_matches(&doc, width, Theme::colored(), seed);
        if seed % 10 == 0 {
            assert_tail_matches(&doc, width);
        }
    }
}

/// At every point of the stream, the lines taken so far followed by the tail look like the
/// whole rendering of what has arrived (except while a closing fence may be arriving, which the
/// tail hides).
fn assert_tail_matches(doc: &str, width: u16) {
    let doc = doc.replace('\r', "");
    let mut s = StreamingMarkdown::new(width, Theme::plain());
    let mut taken = Vec::new();
    for (i, c) in doc.char_indices() {
        s.push(c.encode_utf8(&mut [0; 4]));
        taken.extend(s.take_stable());
        let so_far = &doc[..i + c.len_utf8()];
        let partial = so_far.rsplit('\n').next().unwrap_or("");
        let fence_like = partial.trim_start().starts_with(['`', '~']);
        if fence_like || (!partial.is_empty() && partial.trim().is_empty()) {
            continue;
        }
        let mut shown = plain(&taken);
        shown.extend(plain(s.tail()));
        assert_eq!(shown, text(so_far, width), "after {so_far:?}");
    }
}

#[test]
fn taken_plus_tail_is_the_rendering_so_far() {
    for doc in DOCS {
        assert_tail_matches(doc, 40);
    }
}

#[test]
fn code_streams_into_stable_lines_one_by_one() {
    let mut s = StreamingMarkdown::new(40, Theme::plain());
    s.push("Intro\n\n```rust\nfn a() {}\nfn b");
    assert_eq!(plain(&s.take_stable()), ["Intro", "", "  fn a() {}"]);
    assert_eq!(plain(s.tail()), ["  fn b"]);
    s.push("() {}\n``");
    assert_eq!(plain(&s.take_stable()), ["  fn b() {}"]);
    assert_eq!(
        plain(s.tail()),
        Vec::<String>::new(),
        "a closing fence is not shown"
    );
    s.push("`\nafter");
    assert_eq!(plain(&s.take_stable()), Vec::<String>::new());
    assert_eq!(plain(s.tail()), ["", "after"]);
    assert_eq!(plain(&s.finish()), ["", "after"]);
}

#[test]
fn blocks_become_stable_when_the_next_starts_or_a_blank_line_ends_them() {
    let mut s = StreamingMarkdown::new(40, Theme::plain());
    s.push("# Title\n");
    assert_eq!(
        plain(&s.take_stable()),
        ["# Title"],
        "a heading is done at its newline"
    );
    s.push("para\n");
    assert!(s.take_stable().is_empty(), "a paragraph may go on");
    assert_eq!(plain(s.tail()), ["", "para"]);
    s.push("\n");
    assert_eq!(
        plain(&s.take_stable()),
        ["", "para"],
        "a blank line ends it"
    );
    s.push("- one\n\n");
    assert!(
        s.take_stable().is_empty(),
        "an item may go on after a blank line"
    );
    s.push("- two\n");
    assert_eq!(
        plain(&s.take_stable()),
        ["", "• one"],
        "the next item closes it"
    );
    s.push("- thr");
    assert_eq!(plain(s.tail()), ["• two", "• thr"]);
    assert_eq!(plain(&s.finish()), ["• two", "• thr"]);
}

#[test]
fn set_width_applies_to_later_lines() {
    let mut s = StreamingMarkdown::new(40, Theme::plain());
    s.push("one two three\n\n");
    assert_eq!(plain(&s.take_stable()), ["one two three"]);
    s.set_width(5);
    s.push("four five");
    assert_eq!(plain(s.tail()), ["", "four", "five"]);
    assert_eq!(plain(&s.finish()), ["", "four", "five"]);
}

/// Streaming work depends on the delta and the open block, never on the message length: a
/// 1-char delta into a 100 KB message re-renders nothing finished.
#[test]
fn work_is_proportional_to_the_delta_and_the_open_block() {
    let mut s = StreamingMarkdown::new(80, Theme::plain());
    let para = "Lorem ipsum dolor sit amet, consectetur adipiscing elit.\n\n";
    for _ in 0..(100_000 / para.len()) {
        s.push(para);
    }
    s.push("- an open item");
    let finished = s.take_stable().len();
    assert!(finished > 3000);
    let start = s.work();
    s.push("x");
    assert_eq!(s.work(), start, "no complete line: nothing parsed");
    assert!(s.take_stable().is_empty());
    assert_eq!(plain(s.tail()), ["", "• an open itemx"]);
    let after_tail = s.work();
    assert!(
        after_tail - start < 100,
        "the tail renders only the open item"
    );
    let _ = s.tail();
    assert_eq!(s.work(), after_tail, "the tail is cached");
    s.push("\n- next\n");
    assert!(s.work() - after_tail < 100);
    assert_eq!(plain(&s.take_stable()), ["", "• an open itemx"]);

    // A long code block: each line costs its own length.
    s.push("\n```rust\n");
    let _ = s.take_stable();
    for i in 0..2000 {
        let before = s.work();
        let line = format!("let v{i} = {i};\n");
        s.push(&line);
        assert_eq!(s.work() - before, line.len());
        assert_eq!(s.take_stable().len(), if i == 0 { 2 } else { 1 });
    }
}

#[test]
fn a_finished_stream_starts_the_next_message_afresh() {
    let mut s = StreamingMarkdown::new(40, Theme::plain());
    s.push("[r]: /u\n\n1. one\n2. two\n");
    assert_eq!(plain(&s.finish()), ["1. one", "2. two"]);
    s.push("3. three\n\n[x][r]");
    assert_eq!(plain(&s.finish()), ["3. three", "", "[x][r]"]);
}

#[test]
fn the_stream_can_move_between_threads() {
    fn assert_send<T: Send>() {}
    assert_send::<StreamingMarkdown>();
}

#[test]
fn a_long_paragraph_costs_linear_work() {
    let mut stream = StreamingMarkdown::new(80, Theme::plain());
    let line = "eleven words of ordinary prose that keep one paragraph going on\n";
    for _ in 0..3000 {
        stream.push(line);
    }
    let total = line.len() * 3000;
    // Re-parsing the open paragraph at every line would be ~3000 times the total.
    assert!(
        stream.work() < total * 4,
        "work {} for {} bytes",
        stream.work(),
        total
    );
    let rendered = stream.finish();
    assert!(rendered.len() > 2000);
}
